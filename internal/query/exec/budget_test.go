package exec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/query/parse"
)

// TestMemoryBounds: what a query builds and keeps is bounded (budget.go),
// so a few kilobytes of query and document cannot make gigabytes: each of
// these (from a robustness review, where they took the server past 3 GB)
// fails with a 400 naming the bound, while the same shapes over a little
// data still run and a subquery's state is charged for one evaluation at a
// time.
func TestMemoryBounds(t *testing.T) {
	// Bounds 16 times lower, for data 16 times smaller (-race is slow).
	maxValueBytes, maxRetainedBytes = MaxValueBytes/16, MaxRetainedBytes/16
	t.Cleanup(func() { maxValueBytes, maxRetainedBytes = MaxValueBytes, MaxRetainedBytes })
	nums := make([]string, 250)
	for i := range nums {
		nums[i] = fmt.Sprint(i)
	}
	s := strings.Repeat("x", 1000)
	doc := fmt.Sprintf(`{"id":"1","arr":[%s],"s":%q}`, strings.Join(nums, ","), s)
	arr := []byte("[" + strings.Join(nums, ",") + "]")
	for _, tc := range []struct {
		name, query string
		params      Params
		want        string // in the error
	}{
		{"GROUP BY over a JOIN", `SELECT COUNT(1) n FROM c JOIN a IN c.arr JOIN b IN c.arr GROUP BY CONCAT(c.s, ToString(a), ToString(b))`, nil, "GROUP BY"},
		{"DISTINCT over a JOIN", `SELECT DISTINCT VALUE CONCAT(c.s, ToString(a), ToString(b)) FROM c JOIN a IN c.arr JOIN b IN c.arr`, nil, "DISTINCT"},
		{"ARRAY of parameters", `SELECT VALUE LENGTH(ToString(ARRAY(SELECT VALUE @s FROM t IN (SELECT VALUE @arr) JOIN a IN t JOIN b IN t)))`,
			Params{"@arr": arr, "@s": []byte(fmt.Sprintf("%q", s))}, "ARRAY subquery"},
		{"ARRAY over a document", `SELECT VALUE ARRAY(SELECT VALUE c.s FROM a IN c.arr JOIN b IN c.arr) FROM c`, nil, "ARRAY subquery"},
		{"MAKELIST over a JOIN", `SELECT VALUE MAKELIST(c.s) FROM c JOIN a IN c.arr JOIN b IN c.arr`, nil, "MAKELIST"},
		{"ORDER BY over a JOIN", `SELECT VALUE {"s": c.s, "t": CONCAT(c.s, ToString(a))} FROM c JOIN a IN c.arr JOIN b IN c.arr ORDER BY a`, nil, "ORDER BY"},
	} {
		_, err := runQuery(t, tc.query, tc.params, []string{doc})
		var qe *Error
		if !errors.As(err, &qe) || !strings.Contains(qe.Msg, tc.want) {
			t.Errorf("%s: %v, want an *Error naming %s", tc.name, err, tc.want)
		}
	}
	// The same shapes over a little data run.
	small := `{"id":"1","arr":[1,2,3],"s":"ab"}`
	for _, q := range []string{
		`SELECT COUNT(1) n FROM c JOIN a IN c.arr JOIN b IN c.arr GROUP BY CONCAT(c.s, ToString(a), ToString(b))`,
		`SELECT VALUE ARRAY(SELECT VALUE c.s FROM a IN c.arr JOIN b IN c.arr) FROM c`,
		`SELECT DISTINCT VALUE a FROM c JOIN a IN c.arr JOIN b IN c.arr`,
	} {
		if _, err := runQuery(t, q, nil, []string{small}); err != nil {
			t.Errorf("%s over a small document: %v", q, err)
		}
	}
	// A subquery keeps its state for one evaluation at a time: DISTINCT
	// in a subquery of each of many documents is not charged for all of
	// them together.
	docs := make([]string, 3000)
	big := strings.Repeat("y", 50000/16)
	for i := range docs {
		docs[i] = fmt.Sprintf(`{"id":"%d","v":[%q,%q]}`, i, big+fmt.Sprint(i), big)
	}
	if _, err := runQuery(t, `SELECT VALUE ARRAY_LENGTH(ARRAY(SELECT DISTINCT VALUE x FROM x IN c.v)) FROM c`, nil, docs); err != nil {
		t.Errorf("a DISTINCT subquery per document (19 MB of distinct values over all documents, 6 KB in each): %v", err)
	}
}

// TestUDFResultBounded: a user-defined function's result past
// MaxValueBytes fails the query, as a built-in's does.
func TestUDFResultBounded(t *testing.T) {
	maxValueBytes = 1 << 20
	t.Cleanup(func() { maxValueBytes = MaxValueBytes })
	big := []byte(`"` + strings.Repeat("z", 2<<20) + `"`)
	lookup := func(name string) (UDF, bool) {
		return func(context.Context, [][]byte) ([]byte, error) { return big, nil }, name == "big"
	}
	q, err := parse.Parse(`SELECT VALUE udf.big(c.id) FROM c`)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(q, nil, WithUDFs(lookup))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Run(t.Context(), docsOf([]string{`{"id":"1"}`}, nil))
	var qe *Error
	if !errors.As(err, &qe) || !strings.Contains(qe.Msg, "udf.big") {
		t.Fatalf("%v, want an *Error naming udf.big's result", err)
	}
}

// TestBoundsCountMemory: the bounds count what a value takes in memory, not
// only its JSON (a security review: 1.4 GB held by one query whose GROUP BY
// keys, split from a 3 MB parameter, came to 60 MB of JSON; 2.5 GB taken by
// a 10 MB array parameter). Each shape below is well within the bounds as
// JSON and past them as values, and fails naming what passed them; a small
// version of each runs.
func TestBoundsCountMemory(t *testing.T) {
	maxValueBytes, maxRetainedBytes = 1<<20, 4<<20
	t.Cleanup(func() { maxValueBytes, maxRetainedBytes = MaxValueBytes, MaxRetainedBytes })
	commas := func(n int) []byte { return []byte(`"` + strings.Repeat(",", n) + `"`) }
	zeros := func(n int) []byte { return []byte("[" + strings.TrimSuffix(strings.Repeat("0,", n), ",") + "]") }
	docs := make([]string, 20)
	for i := range docs {
		docs[i] = fmt.Sprintf(`{"id":"%02d"}`, i)
	}
	for _, tc := range []struct {
		name, query string
		big, small  Params
		want        string
	}{
		// 300,000 pieces: 0.9 MB as JSON, 14 MB as values.
		{"STRINGSPLIT's pieces", `SELECT VALUE ARRAY_LENGTH(STRINGSPLIT(@s, ",")) FROM c WHERE c.id = "00"`,
			Params{"@s": commas(300_000)}, Params{"@s": commas(1000)}, "STRINGSPLIT"},
		// 100,000 numbers: 0.2 MB of JSON, 4.8 MB as values (and more parsed).
		{"an array parameter", `SELECT VALUE ARRAY_LENGTH(@a) FROM c WHERE c.id = "00"`,
			Params{"@a": zeros(100_000)}, Params{"@a": zeros(1000)}, "parameter @a"},
		// 20 groups whose keys are 15,000 pieces each: 1.8 MB counted as JSON
		// (twice the key's text), 15 MB as values.
		{"GROUP BY keys", `SELECT VALUE COUNT(1) FROM c GROUP BY STRINGSPLIT(CONCAT(@s, c.id), ",")`,
			Params{"@s": commas(15_000)}, Params{"@s": commas(100)}, "GROUP BY"},
		{"MAKESET's values", `SELECT VALUE MAKESET(STRINGSPLIT(CONCAT(@s, c.id), ",")) FROM c`,
			Params{"@s": commas(15_000)}, Params{"@s": commas(100)}, "MAKESET"},
		// 19,000 one-element arrays: 95 KB of JSON, 1.9 MB as values.
		{"an ARRAY subquery", `SELECT VALUE ARRAY_LENGTH(ARRAY(SELECT VALUE [x] FROM t IN (SELECT VALUE STRINGSPLIT(@s, ",")) JOIN x IN t)) FROM c WHERE c.id = "00"`,
			Params{"@s": commas(19_000)}, Params{"@s": commas(100)}, "ARRAY subquery"},
	} {
		_, err := runQuery(t, tc.query, tc.big, docs)
		var qe *Error
		if !errors.As(err, &qe) || !strings.Contains(qe.Msg, tc.want) {
			t.Errorf("%s: %v, want an *Error naming %s", tc.name, err, tc.want)
		}
		if _, err := runQuery(t, tc.query, tc.small, docs); err != nil {
			t.Errorf("%s, small: %v", tc.name, err)
		}
	}
}
