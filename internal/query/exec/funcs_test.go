package exec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/parse"
)

// TestDocumentedFunctions: every example of the Cosmos DB pages of STRINGSPLIT,
// STRINGJOIN, LASTINDEXOF, CONTAINS_ALL_CI/CS, CONTAINS_ANY_CI/CS, CHOOSE, OBJECTTOARRAY,
// SETDIFFERENCE, SETEQUAL, ARRAY_MAX/MIN/SUM/AVG/MEDIAN, DAY, MONTH, YEAR and
// DATETIMETOTICKS, as the page writes it and with the result it shows (an undefined
// property is left out of an object), then undefined and wrong-typed arguments. One result
// is not the page's: CONTAINS_ALL_CS("Have a nice day!", "have", "nice", "day!") is true
// there, though "have" is not in the string case-sensitively and the page defines the
// function as CONTAINS(s, "have", false) AND ... (false); the definition is followed.
func TestDocumentedFunctions(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		// STRINGSPLIT.
		{`{
			seperateOnLetter: STRINGSPLIT("Handlebar", "e"),
			seperateOnSymbol: STRINGSPLIT("CARBON_STEEL_BIKE_WHEEL", "_"),
			seperateOnWhitespace: STRINGSPLIT("Road Bike", " "),
			seperateOnPhrase: STRINGSPLIT("xenmoun mountain bike", "moun"),
			undefinedSeperator: STRINGSPLIT("AluminumBikeFrame", undefined),
			emptySeparatorString: STRINGSPLIT("Helmet", ""),
			emptySourceString: STRINGSPLIT("", "")
		}`, `{"seperateOnLetter":["Handl","bar"],"seperateOnSymbol":["CARBON","STEEL","BIKE","WHEEL"],` +
			`"seperateOnWhitespace":["Road","Bike"],"seperateOnPhrase":["xen"," ","tain bike"],` +
			`"emptySeparatorString":["Helmet"],"emptySourceString":[""]}`},
		{`STRINGSPLIT("a,b,", ",")`, `["a","b",""]`},
		{`STRINGSPLIT(1, ",")`, ``},
		{`STRINGSPLIT("a", ["x"])`, ``},

		// STRINGJOIN.
		{`{
			joinUsingSpaces: STRINGJOIN(["Iropa", "Mountain", "Bike"], " "),
			joinUsingEmptyString: STRINGJOIN(["Iropa", "Mountain", "Bike"], ""),
			joinUsingUndefined: STRINGJOIN(["Iropa", "Mountain", "Bike"], undefined),
			joinUsingCharacter: STRINGJOIN(["6", "7", "4", "3"], "A"),
			joinUsingPhrase: STRINGJOIN(["Adventure", "LT"], "Works")
		}`, `{"joinUsingSpaces":"Iropa Mountain Bike","joinUsingEmptyString":"IropaMountainBike",` +
			`"joinUsingCharacter":"6A7A4A3","joinUsingPhrase":"AdventureWorksLT"}`},
		{`STRINGJOIN([], ",")`, `""`},
		{`STRINGJOIN(["a", 1], ",")`, ``},
		{`STRINGJOIN("a", ",")`, ``},
		{`STRINGJOIN(["a"], 1)`, ``},

		// LASTINDEXOF.
		{`{
			"case1": LASTINDEXOF("abcdeabc", "abc"),
			"case2": LASTINDEXOF("abcdeabc", "abc", 6),
			"case3": LASTINDEXOF("abcdeabc", "abc", 7),
			"case4": LASTINDEXOF("abcdeabc", "fg")
		}`, `{"case1":5,"case2":0,"case3":5,"case4":-1}`},
		{`[LASTINDEXOF("héhé", "é"), LASTINDEXOF("héhé", "é", 2), LASTINDEXOF("abc", "a", 100), LASTINDEXOF("abc", "a", -1)]`, `[3,1,0,-1]`},
		{`LASTINDEXOF("abc", "a", 1.5)`, ``},
		{`LASTINDEXOF(1, "a")`, ``},
		{`LASTINDEXOF("a", null)`, ``},

		// CONTAINS_ALL_CI, CONTAINS_ALL_CS, CONTAINS_ANY_CI, CONTAINS_ANY_CS.
		{`{
			"case1": CONTAINS_ALL_CI("Have a nice day!", "have", "nice", "day!"),
			"case2": CONTAINS_ALL_CI("Have a nice day!", "HAVE", "NICE", "DAY!"),
			"case3": CONTAINS_ALL_CI("Have a nice day!", "had", "nice", "day!"),
			"case4": CONTAINS_ALL_CI("Have a nice day!", undefined, "nice", "day!"),
			"case5": CONTAINS_ALL_CI("Have a nice day!", undefined, "had")
		}`, `{"case1":true,"case2":true,"case3":false,"case5":false}`},
		{`{
			"case1": CONTAINS_ALL_CS("Have a nice day!", "have", "nice", "day!"),
			"case2": CONTAINS_ALL_CS("Have a nice day!", "HAVE", "NICE", "DAY!"),
			"case3": CONTAINS_ALL_CS("Have a nice day!", "had", "nice", "day!"),
			"case4": CONTAINS_ALL_CS("Have a nice day!", undefined, "nice", "day!"),
			"case5": CONTAINS_ALL_CS("Have a nice day!", undefined, "had")
		}`, `{"case1":false,"case2":false,"case3":false,"case5":false}`}, // the page shows case1 true: see below
		{`{
			"case1": CONTAINS_ANY_CI("Have a nice day!", "have", "nice", "day!"),
			"case2": CONTAINS_ANY_CI("Have a nice day!", "HAVE", "NICE", "DAY!"),
			"case3": CONTAINS_ANY_CI("Have a nice day!", "had", "nice", "day!"),
			"case4": CONTAINS_ANY_CI("Have a nice day!", undefined, "nice", "day!"),
			"case5": CONTAINS_ANY_CI("Have a nice day!", undefined, "had")
		}`, `{"case1":true,"case2":true,"case3":true,"case4":true}`},
		{`{
			"case1": CONTAINS_ANY_CS("Have a nice day!", "have", "nice", "day!"),
			"case2": CONTAINS_ANY_CS("Have a nice day!", "HAVE", "NICE", "DAY!"),
			"case3": CONTAINS_ANY_CS("Have a nice day!", "had", "nice", "day!"),
			"case4": CONTAINS_ANY_CS("Have a nice day!", undefined, "nice", "day!"),
			"case5": CONTAINS_ANY_CS("Have a nice day!", undefined, "had")
		}`, `{"case1":true,"case2":false,"case3":true,"case4":true}`},
		{`[CONTAINS_ALL_CS(1, "a"), CONTAINS_ANY_CI(null, "a"), CONTAINS_ANY_CS("abc", 1, "x")]`, `[]`},
		{`[CONTAINS_ANY_CS("abc", "x"), CONTAINS_ALL_CS("abc", "a")]`, `[false,true]`},

		// CHOOSE: the new page's examples and the older page's.
		{`CHOOSE(1, "Vimero", "Hydration", "Pack")`, `"Vimero"`},
		{`{
			index_0: CHOOSE(0, "Mt.", "Hood", "Hydration", "Pack"),
			index_1: CHOOSE(1, "Mt.", "Hood", "Hydration", "Pack"),
			index_2: CHOOSE(2, "Mt.", "Hood", "Hydration", "Pack"),
			index_3: CHOOSE(3, "Mt.", "Hood", "Hydration", "Pack"),
			index_4: CHOOSE(4, "Mt.", "Hood", "Hydration", "Pack"),
			index_5: CHOOSE(5, "Mt.", "Hood", "Hydration", "Pack")
		}`, `{"index_1":"Mt.","index_2":"Hood","index_3":"Hydration","index_4":"Pack"}`},
		{`CHOOSE(1, "adventure", "works", true, [1])`, `"adventure"`},
		{`{
			index_0: CHOOSE(0, "abc", 1, true, [1]),
			index_1: CHOOSE(1, "abc", 1, true, [1]),
			index_2: CHOOSE(2, "abc", 1, true, [1]),
			index_3: CHOOSE(3, "abc", 1, true, [1]),
			index_4: CHOOSE(4, "abc", 1, true, [1]),
			index_5: CHOOSE(5, "abc", 1, true, [1])
		}`, `{"index_1":"abc","index_2":1,"index_3":true,"index_4":[1]}`},
		{`[CHOOSE("1", "a"), CHOOSE(1.5, "a", "b"), CHOOSE(-1, "a"), CHOOSE(undefined, "a"), CHOOSE(2, "a", undefined)]`, `[]`},

		// OBJECTTOARRAY.
		{`ObjectToArray({"a": "12345", "b": "67890"})`, `[{"k":"a","v":"12345"},{"k":"b","v":"67890"}]`},
		{`ObjectToArray({"a": "12345", "b": "67890"}, "name")`, `[{"name":"a","v":"12345"},{"name":"b","v":"67890"}]`},
		{`ObjectToArray({"a": "12345", "b": "67890"}, "key", "value")`, `[{"key":"a","value":"12345"},{"key":"b","value":"67890"}]`},
		{`ObjectToArray({})`, `[]`},
		{`[ObjectToArray([1]), ObjectToArray("a"), ObjectToArray({"a": 1}, 1), ObjectToArray({"a": 1}, "x", null), ObjectToArray({"a": 1}, "x", "x")]`, `[]`},

		// SETDIFFERENCE and SETEQUAL.
		{`{
			"case1": SETDIFFERENCE([1, 2, 3], [1, 2, 6, 7]),
			"case2": SETDIFFERENCE([1, 2, 6, 7], [1, 2, 3]),
			"case3": SETDIFFERENCE([1, 2, 3, 4], [1, 2, 3, 4, 5, 6]),
			"case4": SETDIFFERENCE([], [1, 2, 3]),
			"case5": SETDIFFERENCE([1, 2, 3], []),
			"case6": SETDIFFERENCE([1, 1, 1, 1], [2, 3, 4])
		}`, `{"case1":[3],"case2":[6,7],"case3":[],"case4":[],"case5":[1,2,3],"case6":[1]}`},
		{`{
			"case1": SETEQUAL([1, 2, 3], [1, 2, 3]),
			"case2": SETEQUAL([1, 2, 3], [3, 2, 1]),
			"case3": SETEQUAL([1, 2, 3, 3], [1, 2, 2, 3, 1, 2]),
			"case4": SETEQUAL([], [1, 2, 3]),
			"case5": SETEQUAL([1, true, 'abc'], [true, 1, 'abc']),
			"case6": SETEQUAL([1, 1, 1, 1], [2, 3, 4])
		}`, `{"case1":true,"case2":true,"case3":true,"case4":false,"case5":true,"case6":false}`},
		{`[SETDIFFERENCE([{"a": 1}, [2]], [{"a": 1}]), SETEQUAL([{"a": 1, "b": 2}], [{"b": 2, "a": 1}]), SETEQUAL([1], ["1"])]`, `[[[2]],true,false]`},
		{`[SETDIFFERENCE(1, [1]), SETDIFFERENCE([1], null), SETEQUAL([1], "1"), SETEQUAL(undefined, [])]`, `[]`},

		// ARRAY_MAX and ARRAY_MIN.
		{`{
			"case1": ARRAY_MAX([1, 2, 3, 4]),
			"case2": ARRAY_MAX(['abc', 'ABC', 'aBc', 'AbC']),
			"case3": ARRAY_MAX([true, false]),
			"case4": ARRAY_MAX([null, null]),
			"case5": ARRAY_MAX([12, 'abc', true, false, null, undefined])
		}`, `{"case1":4,"case2":"abc","case3":true,"case4":null,"case5":"abc"}`},
		{`{
			"case1": ARRAY_MIN([1, 2, 3, 4]),
			"case2": ARRAY_MIN(['abc', 'ABC', 'aBc', 'AbC']),
			"case3": ARRAY_MIN([true, false]),
			"case4": ARRAY_MIN([null, null]),
			"case5": ARRAY_MIN([12, 'abc', true, false, null, undefined])
		}`, `{"case1":1,"case2":"ABC","case3":false,"case4":null,"case5":null}`},
		{`[ARRAY_MAX([]), ARRAY_MIN([]), ARRAY_MAX([1, [2]]), ARRAY_MIN([{"a": 1}]), ARRAY_MAX("abc"), ARRAY_MIN(undefined)]`, `[]`},

		// ARRAY_SUM, ARRAY_AVG and ARRAY_MEDIAN.
		{`{
			"case1": ARRAY_SUM([1, 2, 3, 4]),
			"case2": ARRAY_SUM([1, 2, 3, 4, undefined]),
			"case3": ARRAY_SUM(['abc', 'ABC', 'aBc', 'AbC']),
			"case4": ARRAY_SUM([12, 'abc', true, false, null, undefined])
		}`, `{"case1":10,"case2":10}`},
		{`{
			"case1": ARRAY_AVG([1, 2, 3, 4]),
			"case2": ARRAY_AVG([1.0, 2.0, 3.3, 4.7]),
			"case3": ARRAY_AVG([1, -2.7, 3, -4, undefined]),
			"case4": ARRAY_AVG(['abc', 'ABC', 'aBc', 'AbC']),
			"case5": ARRAY_AVG([12, 'abc', true, false, null, undefined])
		}`, `{"case1":2.5,"case2":2.75,"case3":-0.675}`},
		{`{
			"case1": ARRAY_MEDIAN([1, 2, 3, 4]),
			"case2": ARRAY_MEDIAN([1.0, 2.0, 3.3, 4.7, 7.8]),
			"case3": ARRAY_MEDIAN([1, -2.7, 3, -4, undefined]),
			"case4": ARRAY_MEDIAN(['abc', 'ABC', 'aBc', 'AbC']),
			"case5": ARRAY_MEDIAN([12, 'abc', true, false, null, undefined])
		}`, `{"case1":2.5,"case2":3.3,"case3":-0.8500000000000001}`},
		{`[ARRAY_SUM([]), ARRAY_MEDIAN([3, 1, 2])]`, `[0,2]`},
		{`[ARRAY_AVG([]), ARRAY_MEDIAN([]), ARRAY_SUM("1"), ARRAY_AVG({"a": 1}), ARRAY_SUM([1e308, 1e308])]`, `[]`},

		// DAY, MONTH and YEAR.
		{`{
			"case1": DAY("2024-01-10"),
			"case2": DAY("2000-12-12T10:00:00"),
			"case3": DAY("1989-03-03T12:12:12.1234567Z")
		}`, `{"case1":10,"case2":12,"case3":3}`},
		{`{
			"case1": MONTH("2024-01-10"),
			"case2": MONTH("2000-12-12T10:00:00"),
			"case3": MONTH("1989-03-03T12:12:12.1234567Z")
		}`, `{"case1":1,"case2":12,"case3":3}`},
		{`{
			"case1": YEAR("2000-10-10"),
			"case2": YEAR("2024-01-10T14:15:20"),
			"case3": YEAR("1989-03-03T12:12:12.1234567Z")
		}`, `{"case1":2000,"case2":2024,"case3":1989}`},
		{`[DAY("not a date"), MONTH(20240110), YEAR(null), DAY(undefined)]`, `[]`},

		// DATETIMETOTICKS: ticks since the Unix epoch (the page's example), exact past 2^53.
		{`DATETIMETOTICKS("2015-05-19T12:00:00.0000000")`, `14320368000000000`},
		{`DATETIMETOTICKS("2024-01-15T10:20:30.1234567Z")`, `17053140301234567`},
		{`DATETIMETOTICKS("9999-12-31T23:59:59.9999999Z")`, `2534023007999999999`},
		{`DATETIMETOTICKS("0001-01-01T00:00:00Z")`, `-621355968000000000`},
		{`TICKSTODATETIME(DATETIMETOTICKS("2024-01-15T10:20:30.1234567Z"))`, `"2024-01-15T10:20:30.1234567Z"`},
		{`DATETIMETOTICKS("2024-01-15T10:20:30.1234567Z") = 17053140301234567`, `true`},
	} {
		got, err := runQuery(t, "SELECT VALUE "+tc.expr, nil, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if want := "[" + tc.want + "]"; got != want {
			t.Errorf("SELECT VALUE %s =\n  %s\nwant\n  %s", tc.expr, got, want)
		}
	}
}

// TestDocumentedFunctionsOverItems: the examples of CHOOSE and OBJECTTOARRAY that read a
// container's items.
func TestDocumentedFunctionsOverItems(t *testing.T) {
	for _, tc := range []struct {
		query string
		docs  []string
		want  string
	}{
		{`SELECT VALUE CHOOSE(3, p.category, p.name, p.sku) FROM products p WHERE p.detailCategory = "gear-hike-hydration-packs"`,
			[]string{
				`{"name":"Vimero Hydration Pack","category":"gear","sku":"69500","detailCategory":"gear-hike-hydration-packs"}`,
				`{"name":"Mt. Hood Hydration Pack","category":"gear","sku":"69501","detailCategory":"gear-hike-hydration-packs"}`,
			}, `["69500","69501"]`},
		{`SELECT CHOOSE(3, p.category, p.name, p.sku) AS barcode FROM products p WHERE p.category = "short-fins"`,
			[]string{`{"name":"Gremon Fins","sku":"73311","tags":["Science Blue","Turbo"],"category":"short-fins"}`},
			`[{"barcode":"73311"}]`},
		{`SELECT p.name, ObjectToArray(p.quantities, "size", "quantity") AS quantitiesBySize FROM products p WHERE p.category = "sport-helmets"`,
			[]string{`{"name":"Witalica helmet","category":"sport-helmets","quantities":{"small":15,"medium":24,"large":2,"xlarge":0}}`},
			`[{"name":"Witalica helmet","quantitiesBySize":[{"size":"small","quantity":15},{"size":"medium","quantity":24},{"size":"large","quantity":2},{"size":"xlarge","quantity":0}]}]`},
		{`SELECT VALUE [ARRAY_SUM(c.n), ARRAY_MAX(c.n), STRINGJOIN(c.s, "-"), SETEQUAL(c.n, [3, 1, 2])] FROM c`,
			[]string{`{"n":[1,2,3],"s":["a","b"]}`}, `[[6,3,"a-b",true]]`},
	} {
		got, err := runQuery(t, tc.query, nil, tc.docs)
		if err != nil || got != tc.want {
			t.Errorf("%s = %s, %v; want %s", tc.query, got, err, tc.want)
		}
	}
}

// TestNowAndAgo: the examples of the NOW and AGO pages, at their current time
// 2024-10-14T14:20:30.6668888Z; both read the run's clock, as GetCurrentDateTime does.
func TestNowAndAgo(t *testing.T) {
	now := time.Date(2024, 10, 14, 14, 20, 30, 666888800, time.UTC)
	for _, tc := range []struct{ expr, want string }{
		{`{
			"case1": AGO("yyyy", 1),
			"case2": AGO("yyyy", -1),
			"case3": AGO("ss", 30),
			"case4": AGO("ms", 4)
		}`, `{"case1":"2023-10-14T14:20:30.6668888Z","case2":"2025-10-14T14:20:30.6668888Z",` +
			`"case3":"2024-10-14T14:20:00.6668888Z","case4":"2024-10-14T14:20:30.6628888Z"}`},
		{`{
			"case1": NOW(),
			"case2": NOW("yyyy", 1),
			"case3": NOW("yyyy", -1),
			"case4": NOW("ss", 30),
			"case5": NOW("ms", 4)
		}`, `{"case1":"2024-10-14T14:20:30.6668888Z","case2":"2025-10-14T14:20:30.6668888Z",` +
			`"case3":"2023-10-14T14:20:30.6668888Z","case4":"2024-10-14T14:21:00.6668888Z","case5":"2024-10-14T14:20:30.6708888Z"}`},
		{`[NOW() = GetCurrentDateTime(), AGO("dd", 1) = DateTimeAdd("dd", -1, GetCurrentDateTime()), AGO("day", 0) = NOW("day", 0)]`, `[true,true,true]`},
		{`[AGO("xx", 1), AGO("dd", 1.5), AGO("dd", "1"), NOW("dd", undefined), NOW(1, 1), AGO("ns", -9223372036854775808)]`, `[]`},
		{`GetCurrentTicks()`, `17289156306668888`},
	} {
		q, err := parse.Parse("SELECT VALUE " + tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Compile(q, nil, WithClock(func() time.Time { return now }))
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		rows, err := p.Run(t.Context(), docsOf(nil, nil))
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		got := "[" + string(joinRows(rows)) + "]"
		if want := "[" + tc.want + "]"; got != want {
			t.Errorf("SELECT VALUE %s =\n  %s\nwant\n  %s", tc.expr, got, want)
		}
	}
}

func joinRows(rows [][]byte) []byte {
	var b []byte
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	return b
}

// TestRand: RAND() is a number in [0, 1), a new one at each call.
func TestRand(t *testing.T) {
	docs := make([]string, 200)
	for i := range docs {
		docs[i] = `{}`
	}
	got, err := runQuery(t, "SELECT VALUE RAND() FROM c", nil, docs)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range strings.Split(strings.Trim(got, "[]"), ",") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 0 || f >= 1 {
			t.Fatalf("RAND() = %s, want a number in [0, 1)", s)
		}
		seen[s] = true
	}
	if len(seen) < 190 {
		t.Errorf("200 calls of RAND() gave %d distinct numbers", len(seen))
	}
	if got, err := runQuery(t, "SELECT VALUE RAND() * 100 < 100", nil, nil); err != nil || got != "[true]" {
		t.Errorf("RAND() * 100 < 100 = %s, %v", got, err)
	}
}

// TestDocumentID: DOCUMENTID(root) is the number an item's _rid carries. The page's example
// (13, filtered between 5 and 15) with an item _rid as this server makes them.
func TestDocumentID(t *testing.T) {
	rid := func(seq uint64) string {
		coll := []byte{0xdf, 0xa6, 0x72, 0x00, 0xf5, 0xbe, 0xb8, 0xdf}
		return document.EncodeRID(binary.BigEndian.AppendUint64(coll, seq))
	}
	docs := []string{
		fmt.Sprintf(`{"id":"63700","name":"Joltage Kid's Vest","_rid":%q}`, rid(13)),
		fmt.Sprintf(`{"id":"63701","_rid":%q}`, rid(20)),
		fmt.Sprintf(`{"id":"big","_rid":%q}`, rid(1<<60+1)),
		`{"id":"none"}`,
		`{"id":"short","_rid":"AAAAJw=="}`,
		`{"id":"bad","_rid":"not a rid!"}`,
	}
	for _, tc := range []struct{ query, want string }{
		{`SELECT p.id, DOCUMENTID(p) AS documentId FROM product p WHERE p.id = "63700"`, `[{"id":"63700","documentId":13}]`},
		{`SELECT p.id, DOCUMENTID(p) AS documentId FROM product p WHERE DOCUMENTID(p) >= 5 AND DOCUMENTID(p) <= 15`, `[{"id":"63700","documentId":13}]`},
		{`SELECT VALUE DOCUMENTID(p) FROM p`, `[13,20,1152921504606846977]`},
		{`SELECT VALUE DOCUMENTID(p.name) FROM p`, `[]`},
	} {
		got, err := runQuery(t, tc.query, nil, docs)
		if err != nil || got != tc.want {
			t.Errorf("%s = %s, %v; want %s", tc.query, got, err, tc.want)
		}
	}
}

// TestSTArea: the ST_AREA page's example, to within 1e-6 of its value (the area is taken on
// the authalic sphere: 735970283.11 for 735970283.0522614), and the page's other rules: 0
// for a Point or LineString, a clockwise ring covers the rest of the world.
func TestSTArea(t *testing.T) {
	area := func(expr string) (float64, bool) {
		t.Helper()
		got, err := runQuery(t, "SELECT VALUE ST_AREA("+expr+")", nil, nil)
		if err != nil {
			t.Fatalf("ST_AREA(%s): %v", expr, err)
		}
		if got == "[]" {
			return 0, false
		}
		f, err := strconv.ParseFloat(strings.Trim(got, "[]"), 64)
		if err != nil {
			t.Fatalf("ST_AREA(%s) = %s", expr, got)
		}
		return f, true
	}
	box := `[[31.8, -5], [32, -5], [32, -4.7], [31.8, -4.7], [31.8, -5]]`
	clockwise := `[[31.8, -5], [31.8, -4.7], [32, -4.7], [32, -5], [31.8, -5]]`
	const want = 735970283.0522614
	const earth = 5.100656217240886e14 // the WGS-84 ellipsoid's surface, m²
	near := func(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }
	if got, ok := area(`{"type": "Polygon", "coordinates": [` + box + `]}`); !ok || !near(got, want, 1e-6) {
		t.Errorf("the page's polygon: %v, %v; want %v", got, ok, want)
	}
	square := `[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]`
	hole := `[[0.25, 0.25], [0.25, 0.75], [0.75, 0.75], [0.75, 0.25], [0.25, 0.25]]`
	holeCCW := `[[0.25, 0.25], [0.75, 0.25], [0.75, 0.75], [0.25, 0.75], [0.25, 0.25]]`
	sq, _ := area(`{"type": "Polygon", "coordinates": [` + square + `]}`)
	inner, _ := area(`{"type": "Polygon", "coordinates": [` + holeCCW + `]}`)
	if !near(sq, 1.2308e10, 1e-3) || !near(inner, sq/4, 1e-3) {
		t.Errorf("a 1° square at the equator: %v m², its middle quarter %v m²", sq, inner)
	}
	if got, ok := area(`{"type": "MultiPolygon", "coordinates": [[` + box + `], [` + square + `]]}`); !ok || !near(got, want+sq, 1e-6) {
		t.Errorf("a MultiPolygon: %v, %v; want the sum of its polygons' areas, %v", got, ok, want+sq)
	}
	if got, ok := area(`{"type": "Polygon", "coordinates": [` + square + `, ` + hole + `]}`); !ok || !near(got, sq-inner, 1e-9) {
		t.Errorf("a polygon with a hole: %v, %v; want its shell's area less its hole's, %v", got, ok, sq-inner)
	}
	if got, ok := area(`{"type": "Polygon", "coordinates": [` + clockwise + `]}`); !ok || !near(got, earth-want, 1e-9) {
		t.Errorf("a clockwise ring: %v, %v; want the rest of the world, %v", got, ok, earth-want)
	}
	for _, zero := range []string{
		`{"type": "Point", "coordinates": [31.8, -5]}`,
		`{"type": "LineString", "coordinates": [[31.8, -5], [32, -5]]}`,
	} {
		if got, ok := area(zero); !ok || got != 0 {
			t.Errorf("ST_AREA(%s) = %v, %v; want 0", zero, got, ok)
		}
	}
	for _, bad := range []string{
		`{"type": "Polygon", "coordinates": [[[31.8, -5], [32, -5], [32, -4.7], [31.8, -4.7]]]}`, // open ring
		`{"type": "Point", "coordinates": [0, 95]}`,
		`{"type": "Circle", "coordinates": [0, 0]}`,
		`"POLYGON"`, `undefined`, `null`,
	} {
		if got, ok := area(bad); ok {
			t.Errorf("ST_AREA(%s) = %v, want undefined", bad, got)
		}
	}
}

// TestNewFunctionsBounded: STRINGJOIN, STRINGSPLIT and OBJECTTOARRAY measure their results
// before making them: one past MaxValueBytes fails the query naming the function, though
// each argument is well within it (a separator repeated per element, a string split into
// one-character pieces, names repeated per property).
func TestNewFunctionsBounded(t *testing.T) {
	maxValueBytes = 1 << 20
	t.Cleanup(func() { maxValueBytes = MaxValueBytes })
	many := make([]string, 1000)
	for i := range many {
		many[i] = `"x"`
	}
	props := make([]string, 1000)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":1`, i)
	}
	params := Params{
		"@many":   []byte("[" + strings.Join(many, ",") + "]"),
		"@sep":    []byte(`"` + strings.Repeat("-", 2000) + `"`),
		"@commas": []byte(`"` + strings.Repeat(",", 400_000) + `"`),
		"@obj":    []byte("{" + strings.Join(props, ",") + "}"),
		"@name":   []byte(`"` + strings.Repeat("n", 2000) + `"`),
	}
	for _, tc := range []struct{ query, fn string }{
		{`SELECT VALUE STRINGJOIN(@many, @sep)`, "STRINGJOIN"},
		{`SELECT VALUE STRINGSPLIT(@commas, ",")`, "STRINGSPLIT"},
		{`SELECT VALUE OBJECTTOARRAY(@obj, @name)`, "OBJECTTOARRAY"},
	} {
		_, err := runQuery(t, tc.query, params, nil)
		var qe *Error
		if !errors.As(err, &qe) || !strings.Contains(qe.Msg, tc.fn) || !strings.Contains(qe.Msg, "16 MiB") {
			t.Errorf("%s: %v, want an *Error naming %s's result", tc.query, err, tc.fn)
		}
	}
	for _, q := range []string{
		`SELECT VALUE LENGTH(STRINGJOIN(@many, "-"))`,
		`SELECT VALUE ARRAY_LENGTH(STRINGSPLIT(STRINGJOIN(@many, ","), ","))`,
		`SELECT VALUE ARRAY_LENGTH(OBJECTTOARRAY(@obj))`,
	} {
		if got, err := runQuery(t, q, params, nil); err != nil || (got != "[1999]" && got != "[1000]") {
			t.Errorf("%s = %s, %v", q, got, err)
		}
	}
}

// TestNewFunctionsArity: the new functions' argument counts are checked when compiling.
func TestNewFunctionsArity(t *testing.T) {
	for _, text := range []string{
		"SELECT VALUE RAND(1)", "SELECT VALUE NOW(\"dd\")", "SELECT VALUE NOW(\"dd\", 1, 2)", "SELECT VALUE AGO(\"dd\")",
		"SELECT VALUE CHOOSE(1)", "SELECT VALUE OBJECTTOARRAY({}, \"a\", \"b\", \"c\")", "SELECT VALUE STRINGSPLIT(\"a\")",
		"SELECT VALUE STRINGJOIN([])", "SELECT VALUE LASTINDEXOF(\"a\")", "SELECT VALUE CONTAINS_ALL_CI(\"a\")",
		"SELECT VALUE SETEQUAL([])", "SELECT VALUE ARRAY_MEDIAN()", "SELECT VALUE DAY()", "SELECT VALUE DOCUMENTID()",
		"SELECT VALUE ST_AREA()",
	} {
		q, err := parse.Parse(text)
		if err != nil {
			t.Fatal(text, err)
		}
		_, err = Compile(q, nil)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(e.Msg, "called with") {
			t.Errorf("Compile(%q) = %v, want a wrong number of arguments", text, err)
		}
	}
}

// TestTextWordsLongToken: a run of a million letters is cut into tokens of
// maxTokenRunes before stemming, which so takes linear time (the stemmer's
// time grows with the square of a run of "y": 70 s for such an item, past
// every query limit), and the cut tokens are whole runes.
func TestTextWordsLongToken(t *testing.T) {
	words := textWords(strings.Repeat("y", 1_000_000) + " foxes " + strings.Repeat("é", 600))
	if len(words) != 1_000_000/maxTokenRunes+1+1+3 || !slices.Contains(words, "fox") {
		t.Errorf("%d words (want the cut tokens, fox and 3 of é), fox in them: %v", len(words), slices.Contains(words, "fox"))
	}
	for _, w := range words {
		if !utf8.ValidString(w) {
			t.Fatalf("a cut token is not whole runes: %q", w)
		}
	}
}
