package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/query/parse"
)

// TestRunParallelMatchesRun: for grouped queries, folding sources in
// parallel and merging gives exactly what one sequential run over the
// concatenated sources gives, however the documents are split.
func TestRunParallelMatchesRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var docs [][]byte
	for i := range 400 {
		var b strings.Builder
		fmt.Fprintf(&b, `{"id":"%d","n":%d`, i, rng.IntN(100)-50)
		switch i % 6 {
		case 0:
			b.WriteString(`,"cat":"a"`)
		case 1, 2:
			b.WriteString(`,"cat":"b"`)
		case 3:
			b.WriteString(`,"cat":null`)
		case 4:
			b.WriteString(`,"cat":1`)
		}
		if i%7 == 0 {
			b.WriteString(`,"mixed":"s"`)
		} else {
			fmt.Fprintf(&b, `,"mixed":%d`, i%11)
		}
		fmt.Fprintf(&b, `,"tags":["t%d","t%d"]}`, i%3, i%5)
		docs = append(docs, []byte(b.String()))
	}
	queries := []string{
		"SELECT VALUE COUNT(1) FROM c",
		"SELECT COUNT(1) AS n, SUM(c.n) AS s, AVG(c.n) AS a, MIN(c.n) AS lo, MAX(c.n) AS hi FROM c",
		"SELECT VALUE SUM(c.mixed) FROM c",
		"SELECT VALUE MIN(c.mixed) FROM c",
		"SELECT VALUE MAX(c.cat) FROM c",
		"SELECT VALUE COUNT(1) FROM c WHERE c.n > 1000",
		"SELECT VALUE AVG(c.n) FROM c WHERE c.n > 1000",
		"SELECT c.cat, COUNT(1) AS n, SUM(c.n) AS s, MIN(c.mixed) AS m FROM c GROUP BY c.cat",
		"SELECT c.cat, COUNT(1) AS n FROM c GROUP BY c.cat ORDER BY c.cat DESC",
		"SELECT TOP 2 c.cat, MAX(c.n) AS m FROM c GROUP BY c.cat",
		"SELECT t, COUNT(1) AS n FROM c JOIN t IN c.tags GROUP BY t",
		"SELECT VALUE MakeList(c.cat) FROM c WHERE c.n < -40",
		"SELECT VALUE MakeSet(c.cat) FROM c",
		"SELECT VALUE COUNTIF(c.n > 0) FROM c",
		"SELECT c.cat, ARRAY(SELECT VALUE 1) AS one, AVG(c.n) AS a FROM c GROUP BY c.cat OFFSET 1 LIMIT 2",
	}
	for _, text := range queries {
		ast, err := parse.Parse(text)
		if err != nil {
			t.Fatalf("Parse(%q): %v", text, err)
		}
		prog, err := Compile(ast, nil)
		if err != nil {
			t.Fatalf("Compile(%q): %v", text, err)
		}
		if !prog.Parallel() {
			t.Fatalf("%q: Parallel() = false, want true", text)
		}
		want, err := prog.Run(context.Background(), sliceDocs(docs))
		if err != nil {
			t.Fatal(err)
		}
		for _, parts := range []int{1, 2, 3, 7} {
			var sources []func(func([]byte) bool) error
			for i := range parts {
				lo, hi := i*len(docs)/parts, (i+1)*len(docs)/parts
				sources = append(sources, sliceDocs(docs[lo:hi]))
			}
			got, err := prog.RunParallel(context.Background(), sources, 3)
			if err != nil {
				t.Fatalf("RunParallel(%q, %d parts): %v", text, parts, err)
			}
			if g, w := fmt.Sprintf("%s", got), fmt.Sprintf("%s", want); g != w {
				t.Errorf("RunParallel(%q, %d parts) = %s, want %s", text, parts, g, w)
			}
		}
	}
	for _, text := range []string{"SELECT * FROM c", "SELECT c.id FROM c ORDER BY c.n", "SELECT COUNT(1) FROM (SELECT DISTINCT VALUE c.cat FROM c) x"} {
		ast, _ := parse.Parse(text)
		prog, err := Compile(ast, nil)
		if err != nil {
			t.Fatal(err)
		}
		if prog.Parallel() {
			t.Errorf("%q: Parallel() = true, want false", text)
		}
	}
}

// TestRunParallelError: a failing source fails the run with its error.
func TestRunParallelError(t *testing.T) {
	ast, _ := parse.Parse("SELECT VALUE COUNT(1) FROM c")
	prog, err := Compile(ast, nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := fmt.Errorf("disk on fire")
	sources := []func(func([]byte) bool) error{
		sliceDocs([][]byte{[]byte(`{}`)}),
		func(func([]byte) bool) error { return bad },
		sliceDocs([][]byte{[]byte(`{}`)}),
	}
	if _, err := prog.RunParallel(context.Background(), sources, 2); err != bad {
		t.Errorf("RunParallel with a failing source: err %v, want %v", err, bad)
	}
}

func sliceDocs(docs [][]byte) func(func([]byte) bool) error {
	return func(yield func([]byte) bool) error {
		for _, d := range docs {
			if !yield(d) {
				return nil
			}
		}
		return nil
	}
}

// TestRunSortedPageMatchesRun: following RunSortedPage's positions page by
// page gives exactly Run's order, ties broken by input order, for any page
// size; a position survives a JSON round trip.
func TestRunSortedPageMatchesRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var docs [][]byte
	for i := range 150 {
		var b strings.Builder
		fmt.Fprintf(&b, `{"id":"%d","n":%d,"tags":["x","y"]`, i, rng.IntN(10))
		switch i % 5 {
		case 0:
			b.WriteString(`,"m":"s"`)
		case 1:
			b.WriteString(`,"m":null`)
		case 2:
			fmt.Fprintf(&b, `,"m":%d`, i%4)
		case 3:
			b.WriteString(`,"m":[1]`)
		}
		b.WriteString("}")
		docs = append(docs, []byte(b.String()))
	}
	feed := func(yield func(doc, tie []byte) bool) error {
		for i, d := range docs {
			if !yield(d, []byte{byte(i >> 8), byte(i)}) {
				return nil
			}
		}
		return nil
	}
	for _, text := range []string{
		"SELECT c.id, c.n FROM c ORDER BY c.n",
		"SELECT VALUE c.id FROM c ORDER BY c.n DESC",
		"SELECT c.id, c.m FROM c ORDER BY c.m, c.n DESC",
		"SELECT c.id, t FROM c JOIN t IN c.tags WHERE c.n > 3 ORDER BY c.n DESC, t",
		"SELECT VALUE c.m FROM c ORDER BY c.m DESC",
	} {
		ast, _ := parse.Parse(text)
		prog, err := Compile(ast, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !prog.Sortable() {
			t.Fatalf("%q: Sortable() = false", text)
		}
		want, err := prog.Run(context.Background(), sliceDocs(docs))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 4, 33, 1000} {
			var got [][]byte
			var after *Cursor
			for pages := 0; ; pages++ {
				rows, err := prog.RunSortedPage(context.Background(), feed, after, n)
				if err != nil {
					t.Fatalf("%q page %d: %v", text, pages, err)
				}
				if len(rows) > n {
					t.Fatalf("%q: page of %d rows, asked for %d", text, len(rows), n)
				}
				for _, r := range rows {
					got = append(got, r.Row)
				}
				if len(rows) < n {
					break
				}
				raw, _ := json.Marshal(rows[len(rows)-1].At)
				after = new(Cursor)
				if err := json.Unmarshal(raw, after); err != nil {
					t.Fatal(err)
				}
			}
			if g, w := fmt.Sprintf("%s", got), fmt.Sprintf("%s", want); g != w {
				t.Errorf("%q in pages of %d:\n got %s\nwant %s", text, n, g, w)
			}
		}
	}
	ast, _ := parse.Parse("SELECT * FROM c ORDER BY c.n")
	prog, _ := Compile(ast, nil)
	for _, c := range []Cursor{{Keys: []byte(`[1,2]`)}, {Keys: []byte(`{`)}, {Keys: []byte(`[1]`), Undef: 2}} {
		if _, err := prog.RunSortedPage(context.Background(), feed, &c, 3); err == nil {
			t.Errorf("RunSortedPage(after %v) = nil error, want one", c)
		}
	}
}

// TestRunSortedPageLongStrings: keys longer than maxCursorString are held by
// their first bytes in a position (a 200 KB key made a 267 KB continuation:
// a hostile-query hunt), and paging still gives Run's order exactly, many
// keys sharing those first bytes, ascending and descending, with JOINs;
// when the position's document is gone, the next page repeats rows that
// share the position's first bytes and skips none.
func TestRunSortedPageLongStrings(t *testing.T) {
	long := strings.Repeat("é", maxCursorString) // two bytes a character: the cut lands inside one
	var docs [][]byte
	for i := range 60 {
		s := fmt.Sprintf("%s%03d", long, (i*37)%60)
		if i%7 == 0 {
			s = fmt.Sprintf("z%d", i) // short keys among them
		}
		docs = append(docs, fmt.Appendf(nil, `{"id":"%d","s":%q,"t":[1,2]}`, i, s))
	}
	feed := func(docs [][]byte) func(yield func(doc, tie []byte) bool) error {
		return func(yield func(doc, tie []byte) bool) error {
			for i, d := range docs {
				if d != nil && !yield(d, []byte{byte(i)}) {
					return nil
				}
			}
			return nil
		}
	}
	for _, text := range []string{
		"SELECT VALUE c.id FROM c ORDER BY c.s",
		"SELECT VALUE c.id FROM c ORDER BY c.s DESC",
		"SELECT c.id, t FROM c JOIN t IN c.t ORDER BY c.s DESC, t",
	} {
		ast, _ := parse.Parse(text)
		prog, err := Compile(ast, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := prog.Run(context.Background(), sliceDocs(docs))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 7} {
			var got [][]byte
			var after *Cursor
			for pages := 0; pages < 200; pages++ {
				rows, err := prog.RunSortedPage(context.Background(), feed(docs), after, n)
				if err != nil {
					t.Fatalf("%q page %d: %v", text, pages, err)
				}
				for _, r := range rows {
					got = append(got, r.Row)
				}
				if len(rows) < n {
					break
				}
				raw, _ := json.Marshal(rows[len(rows)-1].At)
				if len(raw) > 2*maxCursorString+200 {
					t.Fatalf("%q: a position of %d bytes", text, len(raw))
				}
				after = new(Cursor)
				if err := json.Unmarshal(raw, after); err != nil {
					t.Fatal(err)
				}
			}
			if g, w := fmt.Sprintf("%s", got), fmt.Sprintf("%s", want); g != w {
				t.Errorf("%q in pages of %d:\n got %s\nwant %s", text, n, g, w)
			}
		}
	}
	// The position's document deleted between pages: nothing skipped.
	ast, _ := parse.Parse("SELECT VALUE c.id FROM c ORDER BY c.s")
	prog, _ := Compile(ast, nil)
	want, _ := prog.Run(context.Background(), sliceDocs(docs))
	first, err := prog.RunSortedPage(context.Background(), feed(docs), nil, 10)
	if err != nil || len(first) != 10 || first[9].At.Cut == 0 {
		t.Fatalf("first page: %d rows, cut %v, %v", len(first), first[len(first)-1].At.Cut, err)
	}
	// The position's document deleted, or changed to a key with the same
	// first bytes that sorts later (a cluster hunt: the position moved to
	// it, past every row between): nothing skipped.
	for _, change := range []string{"deleted", "changed"} {
		docs2 := slices.Clone(docs)
		at := first[9].At.Tie[0]
		if change == "deleted" {
			docs2[at] = nil
		} else {
			docs2[at] = fmt.Appendf(nil, `{"id":"%d","s":%q,"t":[1,2]}`, at, long+"999")
		}
		rest, err := prog.RunSortedPage(context.Background(), feed(docs2), &first[9].At, 100)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, r := range append(first, rest...) {
			seen[string(r.Row)] = true
		}
		for _, w := range want {
			if !seen[string(w)] && string(w) != string(first[9].Row) {
				t.Errorf("row %s skipped after the position's document was %s", w, change)
			}
		}
	}
}

// TestStreamAtResumes: resuming a document's rows at any row's position
// (StreamAt) gives the rows from it on, or after it with after, exactly as
// a run of the whole document orders them, with FROM … IN, JOINs and a
// filter; a position of another length is refused.
func TestStreamAtResumes(t *testing.T) {
	doc := []byte(`{"id":"d","x":[1,2,3,4],"y":["a","b","c"],"z":[{"w":[5,6]},{"w":[]},{"w":[7]}]}`)
	for _, text := range []string{
		"SELECT VALUE [a, b] FROM c JOIN a IN c.x JOIN b IN c.y WHERE a != 2",
		"SELECT VALUE [z, w] FROM z IN c.z JOIN w IN z.w",
		"SELECT VALUE c.id FROM c",
	} {
		ast, _ := parse.Parse(text)
		prog, err := Compile(ast, nil)
		if err != nil {
			t.Fatal(err)
		}
		type row struct {
			v  string
			at RowPos
		}
		run := func(start RowPos, after bool) []row {
			var out []row
			err := prog.StreamAt(context.Background(), false, func(yield func([]byte, RowPos, bool) bool) error {
				yield(doc, start, after)
				return nil
			}, func(r []byte, at RowPos) bool {
				out = append(out, row{string(r), slices.Clone(at)})
				return true
			})
			if err != nil {
				t.Fatalf("%q: %v", text, err)
			}
			return out
		}
		all := run(nil, false)
		if len(all) == 0 || len(all[0].at) != prog.Positions() {
			t.Fatalf("%q: rows %v, positions %d", text, all, prog.Positions())
		}
		for i, r := range all {
			from, after := run(r.at, false), run(r.at, true)
			if fmt.Sprint(from) != fmt.Sprint(all[i:]) || fmt.Sprint(after) != fmt.Sprint(all[i+1:]) {
				t.Errorf("%q at %v: from %v, after %v; want %v and %v", text, r.at, from, after, all[i:], all[i+1:])
			}
		}
		err = prog.StreamAt(context.Background(), false, func(yield func([]byte, RowPos, bool) bool) error {
			yield(doc, make(RowPos, prog.Positions()+1), false)
			return nil
		}, func([]byte, RowPos) bool { return true })
		if err == nil {
			t.Errorf("%q: a position of the wrong length was accepted", text)
		}
	}
}
