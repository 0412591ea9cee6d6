package document

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestValidateID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"a", true},
		{"item-1 with spaces", true},
		{"日本語😀", true},
		{strings.Repeat("x", 255), true},
		{strings.Repeat("é", 255), true}, // 510 bytes, 255 characters
		{"", false},
		{strings.Repeat("x", 256), false},
		{"a/b", false},
		{`a\b`, false},
		{"a?b", false},
		{"#", false},
		{"bad\xff", false},
	}
	for _, tt := range tests {
		err := ValidateID(tt.id)
		if tt.ok && err != nil {
			t.Errorf("ValidateID(%q) = %v, want nil", tt.id, err)
		}
		if !tt.ok {
			if _, ok := errors.AsType[*InvalidError](err); !ok {
				t.Errorf("ValidateID(%q) = %v, want *InvalidError", tt.id, err)
			}
		}
	}
}

func TestParseItem(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		paths []string
		id    string
		pk    PartitionKey
	}{
		{"string", `{"id":"1","pk":"a"}`, []string{"/pk"}, "1", key(str("a"))},
		{"number", `{"id":"1","pk":-1.5e3}`, []string{"/pk"}, "1", key(num(-1500))},
		{"numbers at a double's limits", `{"id":"1","pk":1,"big":1.7976931348623157e308,"tiny":1e-400,"long":1` + strings.Repeat("0", 308) + `}`, []string{"/pk"}, "1", key(num(1))},
		{"true", `{"id":"1","pk":true}`, []string{"/pk"}, "1", key(boolean(true))},
		{"false", `{"id":"1","pk":false}`, []string{"/pk"}, "1", key(boolean(false))},
		{"null", `{"id":"1","pk":null}`, []string{"/pk"}, "1", key(null())},
		{"missing", `{"id":"1","other":"a"}`, []string{"/pk"}, "1", key(undefined())},
		{"no paths", `{"id":"1","pk":"a"}`, nil, "1", key()},
		{"id as pk", `{"id":"x"}`, []string{"/id"}, "x", key(str("x"))},
		{"nested", `{"id":"1","a":{"b":{"c":7}}}`, []string{"/a/b/c"}, "1", key(num(7))},
		{"nested missing", `{"id":"1","a":{"x":1}}`, []string{"/a/b"}, "1", key(undefined())},
		{"through string", `{"id":"1","a":"s"}`, []string{"/a/b"}, "1", key(undefined())},
		{"through array", `{"id":"1","a":[{"b":1}]}`, []string{"/a/b"}, "1", key(undefined())},
		{"through null", `{"id":"1","a":null}`, []string{"/a/b"}, "1", key(undefined())},
		{"quoted segment", `{"id":"1","my-field":"v"}`, []string{`/"my-field"`}, "1", key(str("v"))},
		{"quoted slash", `{"id":"1","a/b":"v","a":{"b":"w"}}`, []string{`/"a/b"`, "/a/b"}, "1", key(str("v"), str("w"))},
		{"quoted nested", `{"id":"1","x y":{"z":1}}`, []string{`/"x y"/z`}, "1", key(num(1))},
		// As the SDKs' path parsers read it: the text between the quotes
		// as written, the backslash included (the property q\").
		{"quoted escape", `{"id":"1","q\\\"":2,"q\"":3}`, []string{`/"q\""`}, "1", key(num(2))},
		{"single quotes", `{"id":"1","my key":4}`, []string{`/'my key'`}, "1", key(num(4))},
		{"quoted unicode escape", `{"id":"1","a\\u0041":5,"aA":6}`, []string{`/"a\u0041"`}, "1", key(num(5))},
		{"hierarchical", `{"id":"1","tenant":"t","user":"u","session":3}`, []string{"/tenant", "/user", "/session"}, "1",
			key(str("t"), str("u"), num(3))},
		{"hierarchical partial", `{"id":"1","tenant":"t"}`, []string{"/tenant", "/user"}, "1", key(str("t"), undefined())},
		{"escaped key", `{"id":"1","p\u006b":"a"}`, []string{"/pk"}, "1", key(str("a"))},
		{"escaped id key", `{"\u0069d":"1"}`, nil, "1", key()},
		{"escaped id value", `{"id":"\u00e9\ud83d\ude00\n"}`, nil, "é😀\n", key()},
		{"escaped pk value", `{"id":"1","pk":"\u00dcn\u00ef\ud83d\ude00"}`, []string{"/pk"}, "1", key(str("Ünï😀"))},
		{"lone surrogate", `{"id":"1","pk":"\ud800"}`, []string{"/pk"}, "1", key(str("\uFFFD"))},
		{"same name in different objects", `{"id":"1","a":{"id":2,"a":{"a":3}},"b":[{"a":1},{"a":2}]}`, []string{"/a/a/a"}, "1", key(num(3))},
		{"whitespace", " \n{ \"id\" : \"1\" ,\t\"pk\" : 2 } \r\n", []string{"/pk"}, "1", key(num(2))},
		{"big number", `{"id":"1","pk":12345678901234567890}`, []string{"/pk"}, "1", key(num(12345678901234567890))},
		{"underflow", `{"id":"1","pk":1e-999}`, []string{"/pk"}, "1", key(num(0))},
		{"array elsewhere", `{"id":"1","tags":[1,[2,{}]],"pk":"a"}`, []string{"/pk"}, "1", key(str("a"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, err := ParseItem([]byte(tt.body), tt.paths)
			if err != nil {
				t.Fatalf("ParseItem(%s, %q) error %v", tt.body, tt.paths, err)
			}
			if it.ID != tt.id || !it.PK.Equal(tt.pk) {
				t.Errorf("ParseItem(%s, %q) = id %q pk %v, want id %q pk %v", tt.body, tt.paths, it.ID, it.PK, tt.id, tt.pk)
			}
			pk, err := ExtractPK([]byte(tt.body), tt.paths)
			if err != nil || !pk.Equal(tt.pk) {
				t.Errorf("ExtractPK(%s, %q) = %v, %v; want %v", tt.body, tt.paths, pk, err, tt.pk)
			}
		})
	}
}

func TestParseItemErrors(t *testing.T) {
	deep := `{"id":"1","a":` + strings.Repeat("[", 129) + strings.Repeat("]", 129) + "}"
	tests := []struct {
		body  string
		paths []string
		msg   string // a fragment of Msg, so a wrong-reason rejection fails
	}{
		{``, nil, "not valid JSON"},
		{`   `, nil, "not valid JSON"},
		{`{`, nil, "not valid JSON"},
		{`{"id":"1",}`, nil, "not valid JSON"},
		{`{"id":"1"} {}`, nil, "not valid JSON"},
		{`{"id":"1"}x`, nil, "not valid JSON"},
		{`{"id":'1'}`, nil, "not valid JSON"},
		{`{id:"1"}`, nil, "not valid JSON"},
		{`{"id":"1","n":01}`, nil, "not valid JSON"},
		{`{"id":"1","n":NaN}`, nil, "not valid JSON"},
		{`{"id":"1","s":"\x41"}`, nil, "not valid JSON"},
		{`{"id":"1","s":"\a"}`, nil, "not valid JSON"},
		{"{\"id\":\"1\",\"s\":\"a\tb\"}", nil, "not valid JSON"},
		{"{\"id\":\"1\",\"s\":\"\xff\"}", nil, "not valid JSON"},
		{"\xef\xbb\xbf{\"id\":\"1\"}", nil, "not valid JSON"}, // BOM
		{`{"id":"1","a":[1,]}`, nil, "not valid JSON"},
		{`{"id":"1","a":tru}`, nil, "not valid JSON"},
		{deep, nil, "not valid JSON"},
		{`[]`, nil, "must be a JSON object"},
		{`"id"`, nil, "must be a JSON object"},
		{`null`, nil, "must be a JSON object"},
		{`42`, nil, "must be a JSON object"},
		{`{}`, nil, "has no id"},
		{`{"ID":"1"}`, nil, "has no id"},
		{`{"a":{"id":"1"}}`, nil, "has no id"},
		{`{"id":1}`, nil, "must be a string"},
		{`{"id":null}`, nil, "must be a string"},
		{`{"id":["1"]}`, nil, "must be a string"},
		// Duplicate names, at any depth and however escaped, would give an
		// item two identities (readers disagree on which one counts).
		{`{"id":"1","id":2}`, nil, `duplicate property name "id" at offset 10`},
		{`{"id":"dupA","pk":"k1","id":"dupB"}`, []string{"/pk"}, `duplicate property name "id"`},
		{`{"id":"a","pk":"k1","pk":"k2"}`, []string{"/pk"}, `duplicate property name "pk"`},
		{`{"id":"a","\u0069d":"b"}`, nil, `duplicate property name "id"`},
		{`{"id":"a","x":{"b":1,"c":[{"d":1,"d":2}]}}`, nil, `duplicate property name "d"`},
		{`{"id":"a","p":1,"q":2,"r":3,"s":4,"t":5,"u":6,"v":7,"w":8,"x":9,"y":10,"z":11,"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"\u0070":8}`, nil, `duplicate property name "p"`},
		{`{"id":""}`, nil, "empty"},
		{`{"id":"a/b"}`, nil, "contains '/'"},
		{`{"id":"a\\b"}`, nil, `contains '\'`},
		{`{"id":"a?"}`, nil, "contains '?'"},
		{`{"id":"#"}`, nil, "contains '#'"},
		{`{"id":"."}`, nil, "cannot be named in a URL"},
		{`{"id":".."}`, nil, "cannot be named in a URL"},
		{`{"id":"` + strings.Repeat("x", 256) + `"}`, nil, "longer than 255"},
		{`{"id":"1","pk":1e400}`, []string{"/pk"}, "out of the range"},
		// Numbers anywhere are doubles: too large for one is refused.
		{`{"id":"1","v":1e400}`, nil, "the number 1e400 at offset 14 is out of the range of a double"},
		{`{"id":"1","v":{"w":[-1.5E+309]}}`, nil, "the number -1.5E+309 at offset 20 is out of the range"},
		{`{"id":"1","v":1` + strings.Repeat("0", 309) + `}`, nil, "the number 1000000000000000000000000000000000000... at offset 14 is out of the range"},
		{`{"id":"1"}`, []string{""}, "invalid partition key path"},
		{`{"id":"1"}`, []string{"pk"}, "invalid partition key path"},
		{`{"id":"1"}`, []string{"/"}, "invalid partition key path"},
		{`{"id":"1"}`, []string{"/a//b"}, "invalid partition key path"},
		{`{"id":"1"}`, []string{"/a/"}, "invalid partition key path"},
		{`{"id":"1"}`, []string{`/"a`}, "invalid partition key path"},
		{`{"id":"1"}`, []string{`/"a"b`}, "invalid partition key path"},
		{`{"id":"1"}`, []string{`/a"b`}, "invalid partition key path"},
		{`{"id":"1"}`, []string{`/x/"a`}, "invalid partition key path"}, // checked past a missing segment
	}
	for _, tt := range tests {
		it, err := ParseItem([]byte(tt.body), tt.paths)
		ie, ok := errors.AsType[*InvalidError](err)
		if !ok {
			t.Errorf("ParseItem(%.60q, %q) = %v, %v; want *InvalidError", tt.body, tt.paths, it, err)
			continue
		}
		if !strings.Contains(ie.Msg, tt.msg) {
			t.Errorf("ParseItem(%.60q, %q) error %q, want one about %q", tt.body, tt.paths, ie.Msg, tt.msg)
		}
	}
}

func TestParseItemDepthLimit(t *testing.T) {
	ok := `{"id":"1","a":` + strings.Repeat("[", 128) + strings.Repeat("]", 128) + "}"
	if _, err := ParseItem([]byte(ok), nil); err != nil {
		t.Errorf("ParseItem(128 levels) = %v, want nil", err)
	}
}

func TestValidatePKPath(t *testing.T) {
	tests := []struct {
		path string
		pos  int // -1: valid; -2: refused as a system property
	}{
		{"/pk", -1}, {"/a/b/c", -1}, {`/"my-field"`, -1}, {`/"a/b"/c`, -1}, {"/id", -1},
		{"/_partitionKey", -1}, {"/a/_ts", -1}, {"/ÜnÏ9_x", -1}, {`/"a b"`, -1},
		{"", 0}, {"pk", 0}, {"id", 0}, {" /pk", 1}, {"/", 1}, {"//a", 1}, {"/a/", 3}, {"/*", 1},
		{"/a/*", 3}, {"/a/?", 3}, {"/id ds", 4}, {"/asdwqr31 @#$#$WRadf", 10}, {"/id ", 4},
		{"/my-field", 3}, {"/a.b", 2}, {"/a+b", 2}, {`/"a`, 3}, {`/a"`, 2}, {`/"a"b`, 4},
		{"/_ts", -2}, {"/_rid", -2}, {"/_etag/x", -2}, {`/"_self"`, -2}, {"/_attachments", -2},
	}
	for _, tt := range tests {
		err := ValidatePKPath(tt.path)
		ie, isInvalid := errors.AsType[*InvalidError](err)
		switch {
		case tt.pos == -1:
			if err != nil {
				t.Errorf("ValidatePKPath(%q) = %v, want nil", tt.path, err)
			}
		case !isInvalid:
			t.Errorf("ValidatePKPath(%q) = %v, want an *InvalidError", tt.path, err)
		case tt.pos == -2:
			if !strings.Contains(ie.Msg, "system property") {
				t.Errorf("ValidatePKPath(%q) = %q, want a system property error", tt.path, ie.Msg)
			}
		default:
			want := fmt.Sprintf("The partition key component definition path '%s' could not be accepted, failed near position '%d'. "+
				"Partition key paths must contain only valid characters and not contain a trailing slash or wildcard character.", tt.path, tt.pos)
			if ie.Msg != want {
				t.Errorf("ValidatePKPath(%q) = %q, want %q", tt.path, ie.Msg, want)
			}
		}
	}
}

// TestParseItemNonPrimitivePK checks that an object or array at a partition
// key path is the Undefined component, as Cosmos DB extracts it.
func TestParseItemNonPrimitivePK(t *testing.T) {
	tests := []struct {
		body  string
		paths []string
		want  PartitionKey
	}{
		{`{"id":"1","pk":{}}`, []string{"/pk"}, PartitionKey{{Kind: Undefined}}},
		{`{"id":"1","pk":[1]}`, []string{"/pk"}, PartitionKey{{Kind: Undefined}}},
		{`{"id":"1","a":{"b":{"c":1}}}`, []string{"/a/b"}, PartitionKey{{Kind: Undefined}}},
		{`{"id":"1","t":"acme","u":{}}`, []string{"/t", "/u"}, PartitionKey{{Kind: String, String: "acme"}, {Kind: Undefined}}},
		{`{"id":"1","t":"acme"}`, []string{"/t", "/u", "/v"}, PartitionKey{{Kind: String, String: "acme"}, {Kind: Undefined}, {Kind: Undefined}}},
	}
	for _, tt := range tests {
		it, err := ParseItem([]byte(tt.body), tt.paths)
		if err != nil || !it.PK.Equal(tt.want) {
			t.Errorf("ParseItem(%s, %q).PK = %v, %v; want %v", tt.body, tt.paths, it, err, tt.want)
		}
	}
}

// TestTTLValidation checks the item ttl rule and Cosmos DB's message.
func TestTTLValidation(t *testing.T) {
	tests := []struct {
		body    string
		ttl     int64
		present bool
		bad     string // the quoted value in the error; "" when valid
	}{
		{`{"id":"1"}`, 0, false, ""},
		{`{"id":"1","ttl":-1}`, -1, true, ""},
		{`{"id":"1","ttl":1}`, 1, true, ""},
		{`{"id":"1","ttl":2147483647}`, 2147483647, true, ""},
		{`{"id":"1","ttl":null}`, 0, false, "null"},
		{`{"id":"1","ttl":0}`, 0, false, "0"},
		{`{"id":"1","ttl":-2}`, 0, false, "-2"},
		{`{"id":"1","ttl":1.5}`, 0, false, "1.5"},
		{`{"id":"1","ttl":"10"}`, 0, false, `"10"`},
		{`{"id":"1","ttl":2147483648}`, 0, false, "2147483648"},
		{`{"id":"1","ttl":true}`, 0, false, "true"},
		{`{"id":"1","ttl":-1,"a":{"ttl":0}}`, -1, true, ""},
		{`{"id":"1","t\u0074l":7}`, 7, true, ""},
	}
	for _, tt := range tests {
		it, err := ParseItem([]byte(tt.body), []string{"/pk"})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []struct {
			name string
			ttl  func() (int64, bool, error)
		}{
			{"TTL", func() (int64, bool, error) { return TTL([]byte(tt.body)) }},
			{"Item.TTL", it.TTL},
		} {
			ttl, present, err := f.ttl()
			if tt.bad == "" {
				if err != nil || ttl != tt.ttl || present != tt.present {
					t.Errorf("%s(%s) = %d, %v, %v; want %d, %v, nil", f.name, tt.body, ttl, present, err, tt.ttl, tt.present)
				}
				continue
			}
			want := "The input ttl '" + tt.bad + "' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."
			if ie, ok := errors.AsType[*InvalidError](err); !ok || ie.Msg != want {
				t.Errorf("%s(%s) error = %v, want %q", f.name, tt.body, err, want)
			}
		}
	}
}

// testProps returns the SystemProps whose JSON is testSysJSON.
func testProps() SystemProps {
	return SystemProps{
		RID:  "2Ro5AKZvbAABAAAAAAAAAA==",
		Self: "dbs/2Ro5AA==/colls/2Ro5AKZvbAA=/docs/2Ro5AKZvbAABAAAAAAAAAA==/",
		ETag: `"00000000-0000-0000-0000-000000000001"`,
		TS:   1700000000,
	}
}

const testSysJSON = `"_rid":"2Ro5AKZvbAABAAAAAAAAAA==",` +
	`"_self":"dbs/2Ro5AA==/colls/2Ro5AKZvbAA=/docs/2Ro5AKZvbAABAAAAAAAAAA==/",` +
	`"_etag":"\"00000000-0000-0000-0000-000000000001\"","_ts":1700000000,"_attachments":"attachments/"`

func TestMarshal(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"minimal", `{"id":"1"}`, `{"id":"1",` + testSysJSON + `}`},
		{"keeps order and values",
			`{ "z" : 1.50 , "id" : "1", "a" : [ 1 , "x y" , { "k" : 1e2 } ], "s":"\u00e9\n", "n": null }`,
			`{"z":1.50,"id":"1","a":[1,"x y",{"k":1e2}],"s":"\u00e9\n","n":null,` + testSysJSON + `}`},
		{"replaces system props",
			`{"_rid":"x","id":"1","_self":"s","_etag":"e","_ts":1.5,"_attachments":{},"_lsn":7,"_other":1}`,
			`{"id":"1","_lsn":7,"_other":1,` + testSysJSON + `}`},
		{"escaped system key", `{"_r\u0069d":"x","id":"1"}`, `{"id":"1",` + testSysJSON + `}`},
		{"nested system names kept", `{"id":"1","a":{"_ts":1}}`, `{"id":"1","a":{"_ts":1},` + testSysJSON + `}`},
		{"big numbers verbatim", `{"id":"1","n":123456789012345678901234567890}`,
			`{"id":"1","n":123456789012345678901234567890,` + testSysJSON + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, err := ParseItem([]byte(tt.body), []string{"/pk"})
			if err != nil {
				t.Fatal(err)
			}
			got := it.Marshal(testProps())
			if string(got) != tt.want {
				t.Errorf("Marshal(%s) = %s, want %s", tt.body, got, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("Marshal(%s) = %s, not valid JSON", tt.body, got)
			}
			sp, err := Props(got)
			if err != nil {
				t.Fatalf("Props(%s) error %v", got, err)
			}
			if diff := cmp.Diff(testProps(), sp); diff != "" {
				t.Errorf("Props(Marshal(...)) mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMarshalEscapesProps(t *testing.T) {
	it, err := ParseItem([]byte(`{"id":"1"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	sp := SystemProps{RID: "r\"\\", Self: "é\n", ETag: `"x"`, TS: -5}
	got := it.Marshal(sp)
	if !json.Valid(got) {
		t.Fatalf("Marshal(%+v) = %s, not valid JSON", sp, got)
	}
	back, err := Props(got)
	if err != nil || back != sp {
		t.Errorf("Props(%s) = %+v, %v; want %+v", got, back, err, sp)
	}
	var m map[string]any
	if err := json.Unmarshal(got, &m); err != nil || m["_etag"] != `"x"` || m["_ts"] != float64(-5) {
		t.Errorf("json.Unmarshal(%s) = %v, %v", got, m, err)
	}
}

func TestPropsErrors(t *testing.T) {
	full := map[string]string{
		"_rid": `"r"`, "_self": `"s"`, "_etag": `"e"`, "_ts": `1`,
	}
	build := func(drop, replace, with string) string {
		var parts []string
		for _, k := range []string{"_rid", "_self", "_etag", "_ts"} {
			v := full[k]
			if k == drop {
				continue
			}
			if k == replace {
				v = with
			}
			parts = append(parts, fmt.Sprintf("%q:%s", k, v))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	if _, err := Props([]byte(build("", "", ""))); err != nil {
		t.Fatalf("Props(%s) = %v, want nil", build("", "", ""), err)
	}
	tests := []string{
		`not json`, `[]`, `{"_rid":"r"`,
		build("_rid", "", ""), build("_self", "", ""), build("_etag", "", ""), build("_ts", "", ""),
		build("", "_rid", "1"), build("", "_etag", "null"), build("", "_ts", "1.5"), build("", "_ts", `"1"`),
		build("", "_ts", "1e3"), build("", "_ts", "99999999999999999999"),
	}
	for _, in := range tests {
		if sp, err := Props([]byte(in)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Props(%s) = %+v, %v; want ErrCorrupt", in, sp, err)
		}
	}
}

func TestExtractPKFromStored(t *testing.T) {
	it, err := ParseItem([]byte(`{"id":"1","t":{"u":"x"},"n":2,"_ts":99}`), []string{"/t/u", "/n"})
	if err != nil {
		t.Fatal(err)
	}
	stored := it.Marshal(testProps())
	pk, err := ExtractPK(stored, []string{"/t/u", "/n"})
	if err != nil || !pk.Equal(it.PK) {
		t.Errorf("ExtractPK(%s) = %v, %v; want %v", stored, pk, err, it.PK)
	}
	for _, in := range []string{`[]`, `{`} {
		if pk, err := ExtractPK([]byte(in), []string{"/pk"}); err == nil {
			t.Errorf("ExtractPK(%s) = %v, want an error", in, pk)
		} else if _, ok := errors.AsType[*InvalidError](err); !ok {
			t.Errorf("ExtractPK(%s) error %T, want *InvalidError", in, err)
		}
	}
}

func FuzzParseItem(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","pk":"a"}`, `{"id":"1","a":{"b":null}}`, `{"id":"é","x y":1.5e3,"pk":true}`,
		`{"id":"1","pk":[1]}`, `{"_rid":"x","id":"\u0031","_ts":1}`, `[]`, `{"id":1}`,
		`{"id":"1","pk":"\ud800","a":[{"b":2}]}`, `{"id":"1","id":"2","pk":1,"pk":2}`,
		`{"id":"1","ttl":5}`, `{"id":"1","ttl": [ 1, {"a" : 2} ]}`, `{"id":"1","t\u0074l":-1,"a":{"ttl":3}}`,
	} {
		f.Add([]byte(s), uint8(0))
	}
	// The partition key path sets the fuzzer picks from.
	fuzzPaths := [][]string{{"/pk"}, {"/a/b"}, {"/id"}, {`/"x y"`, "/pk", "/a"}, {"/a"}}
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		paths := fuzzPaths[int(which)%len(fuzzPaths)]
		it, err := ParseItem(body, paths)
		if err != nil {
			if _, ok := errors.AsType[*InvalidError](err); !ok {
				t.Fatalf("ParseItem(%q) error %T %v, want *InvalidError", body, err, err)
			}
			// encoding/json accepts invalid UTF-8; ParseItem does not.
			if json.Valid(body) && utf8.Valid(body) && strings.Contains(err.Error(), "not valid JSON") && !tooDeep(body) {
				t.Fatalf("ParseItem(%q) says invalid JSON, encoding/json disagrees: %v", body, err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("ParseItem(%q) accepted invalid JSON", body)
		}
		if pk, err := ExtractPK(body, paths); err != nil || !pk.Equal(it.PK) {
			t.Fatalf("ExtractPK(%q) = %v, %v; want %v", body, pk, err, it.PK)
		}
		out := it.Marshal(testProps())
		if !json.Valid(out) {
			t.Fatalf("Marshal of %q = %q, not valid JSON", body, out)
		}
		again, err := ParseItem(out, paths)
		if err != nil {
			t.Fatalf("ParseItem(Marshal(%q)) error %v", body, err)
		}
		if again.ID != it.ID || !again.PK.Equal(it.PK) {
			t.Fatalf("ParseItem(Marshal(%q)) = %q %v, want %q %v", body, again.ID, again.PK, it.ID, it.PK)
		}
		sp, err := Props(out)
		if err != nil || sp.RID != testProps().RID || sp.Self != testProps().Self || sp.ETag != testProps().ETag || sp.TS != testProps().TS {
			t.Fatalf("Props(%q) = %+v, %v", out, sp, err)
		}
		if out2 := again.Marshal(testProps()); string(out2) != string(out) {
			t.Fatalf("Marshal not idempotent:\n%s\n%s", out, out2)
		}
		ttl, present, err := it.TTL()
		wttl, wpresent, werr := TTL(out)
		if ttl != wttl || present != wpresent || (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("Item.TTL of %q = %d, %v, %v; TTL(Marshal) = %d, %v, %v", body, ttl, present, err, wttl, wpresent, werr)
		}
		if sp.HasTTL != present || sp.TTL != ttl {
			t.Fatalf("Props(%q) has ttl %d, %v; Item.TTL = %d, %v", out, sp.TTL, sp.HasTTL, ttl, present)
		}
	})
}

// tooDeep reports whether the JSON body nests deeper than maxDepth below its
// root, which ParseItem refuses though it is valid JSON.
func tooDeep(body []byte) bool {
	d, maxD := 0, 0
	inStr, esc := false, false
	for _, c := range body {
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case !inStr && (c == '{' || c == '['):
			d++
			maxD = max(maxD, d)
		case !inStr && (c == '}' || c == ']'):
			d--
		}
	}
	return maxD > maxDepth+1
}

// item1KB is a realistic item body of about 1 KB.
func item1KB() []byte {
	var sb strings.Builder
	sb.WriteString(`{"id":"order-000123","pk":"customer-42","type":"order","status":"shipped",`)
	sb.WriteString(`"createdAt":"2024-05-01T12:34:56.789Z","total":1234.56,"currency":"EUR","lines":[`)
	for i := range 6 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"sku":"SKU-%05d","name":"Product number %d with a name","qty":%d,"price":%d.99,"tags":["a","b"]}`, i*7919, i, i+1, i*10)
	}
	sb.WriteString(`],"address":{"street":"Main Street 1","city":"Oslo","zip":"0150","country":"NO"},`)
	sb.WriteString(`"notes":"Leave at the door. \u00c5pent hele dagen.","flags":{"gift":false,"express":true}}`)
	return []byte(sb.String())
}

func BenchmarkParseItem1KB(b *testing.B) {
	body := item1KB()
	paths := []string{"/pk"}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseItem(body, paths); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshal1KB(b *testing.B) {
	body := item1KB()
	it, err := ParseItem(body, []string{"/pk"})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		_ = it.Marshal(testProps())
	}
}

func BenchmarkExtractPK1KB(b *testing.B) {
	body := item1KB()
	paths := []string{"/pk"}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ExtractPK(body, paths); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseItemLenientIDs(t *testing.T) {
	for _, id := range []string{`a/b`, `a\\b`, `a?`, `#`} {
		body := []byte(`{"id":"` + id + `"}`)
		if _, err := ParseItem(body, []string{"/pk"}); err == nil {
			t.Errorf("ParseItem(%s) accepted the id", body)
		}
		it, err := ParseItemWith(body, []string{"/pk"}, LenientIDs)
		if err != nil {
			t.Errorf("ParseItemWith(%s, LenientIDs) = %v, want success", body, err)
		} else if it.ID == "" {
			t.Errorf("ParseItemWith(%s, LenientIDs) lost the id", body)
		}
	}
	if _, err := ParseItemWith([]byte(`{"id":""}`), nil, LenientIDs); err == nil {
		t.Errorf("ParseItemWith(empty id, LenientIDs) succeeded")
	}
}

// FuzzProps checks Props against its validating form, propsScan: on any
// input that is valid JSON they agree (result, or an ErrCorrupt each); on
// any other input Props neither panics nor returns another error.
func FuzzProps(f *testing.F) {
	for _, s := range []string{
		`{"id":"1","_rid":"r","_self":"s","_etag":"\"e\"","_ts":1,"_attachments":"attachments/"}`,
		`{"id":"1","ttl":5,"a":{"_rid":"x"},"_rid":"r","_self":"s","_etag":"e","_ts":12}`,
		`{"_rid":"r","_rid":"q","_self":"s\u0041","_etag":"e","_ts":-3,"ttl":-1}`,
		`{"\u005frid":"r","_self":"s","_etag":"e","_ts":1}`, `{"_rid":"r","_self":"s","_etag":"e","_ts":1.5}`,
		`{"a":[1,{"b":"]"}],"_rid":"r","_self":"s","_etag":"e","_ts":1}`, `{"_rid":"r"`, `[]`, `{}`, ` {"_rid" : "r" , "_self":"s","_etag":"e","_ts":1 } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := Props(in)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Props(%q) error %v, want ErrCorrupt", in, err)
		}
		if _, verr := scanRoot(in, nil, false); verr != nil {
			return
		}
		want, werr := propsScan(in)
		if (err == nil) != (werr == nil) || got != want {
			t.Fatalf("Props(%q) = %+v, %v; propsScan = %+v, %v", in, got, err, want, werr)
		}
	})
}

// BenchmarkProps1KB reads the system properties of a stored 1 KB item: Props
// (one pass) and propsScan (the validating scan it falls back to).
func BenchmarkProps1KB(b *testing.B) {
	it, err := ParseItem(item1KB(), []string{"/pk"})
	if err != nil {
		b.Fatal(err)
	}
	stored := it.Marshal(testProps())
	for _, f := range []struct {
		name string
		fn   func([]byte) (SystemProps, error)
	}{{"fast", Props}, {"scan", propsScan}} {
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(len(stored)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.fn(stored); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestValueCount(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{`0`, 1},
		{`"a,b[{"`, 1},
		{`"a\"b,c"`, 1},
		{`"a\\",1`, 2},
		{`[0,0,0]`, 4},
		{`{"a":1,"b":[1,2],"c":{"d":"x,y"}}`, 7},
		{`{}`, 2},
		{`"unterminated`, 1},
		{`"esc at end\`, 1},
	} {
		if got := ValueCount([]byte(tc.in)); got != tc.want {
			t.Errorf("ValueCount(%s) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func BenchmarkValueCount(b *testing.B) {
	doc := []byte(`{"id":"user-1234","pk":"tenant-7","name":"Alice Example","email":"alice@example.com","tags":["a","b","c"],"address":{"street":"1 Main St","city":"Springfield","zip":"12345"},"data":"` + strings.Repeat("lorem ipsum dolor sit amet ", 30) + `","n":42,"v":3.14,"ok":true}`)
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		ValueCount(doc)
	}
}
