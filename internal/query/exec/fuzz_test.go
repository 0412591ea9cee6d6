package exec

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/valyala/fastjson"

	"github.com/partitadb/partita/internal/query/parse"
)

// FuzzRun runs arbitrary query text over the fixture: it must never panic, every error must
// be a *parse.SyntaxError or an *Error (or the deadline), and every row must be valid JSON.
func FuzzRun(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM c WHERE c.age > 26",
		"SELECT VALUE c.id FROM c ORDER BY c.age DESC, c.id",
		"SELECT c.city, COUNT(1) AS n, AVG(c.age) FROM c GROUP BY c.city",
		"SELECT DISTINCT TOP 3 VALUE t FROM c JOIN t IN c.tags OFFSET 1 LIMIT 2",
		"SELECT VALUE ARRAY(SELECT VALUE k.name FROM k IN c.kids WHERE k.age > @a) FROM c",
		"SELECT * FROM c WHERE FullTextContains(c.title, @s) OR c.name LIKE '%o_'",
		"SELECT VALUE [c.age ?? 1, c.x ? 1 : 2, c.tags[0] || 'x', ~c.age << 2, SUBSTRING(c.name, 1, 2)] FROM c",
		"SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE c.city FROM c) s",
		"SELECT VALUE {a: c.address, b: EXISTS(SELECT VALUE 1 FROM t IN c.tags)} FROM c WHERE ARRAY_CONTAINS(@arr, c.age)",
		"SELECT VALUE [STRINGSPLIT(c.name, 'o'), STRINGJOIN(c.tags, '-'), LASTINDEXOF(c.name, 'a', 2), CONTAINS_ANY_CI(c.name, 'A', c.city)] FROM c",
		"SELECT VALUE [CHOOSE(2, c.age, c.name), OBJECTTOARRAY(c.address, 'key', 'val'), SETDIFFERENCE(c.tags, @arr), SETEQUAL(c.tags, c.tags)] FROM c",
		"SELECT VALUE [ARRAY_MAX(c.tags), ARRAY_MEDIAN([c.age, 1, 2]), DAY('2024-01-15T10:20:30Z'), AGO('dd', 1) > NOW(), DOCUMENTID(c)] FROM c",
		"SELECT VALUE ST_AREA({type: 'Polygon', coordinates: [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]]}) FROM c",
	} {
		f.Add(s)
	}
	params := Params{"@a": []byte("1"), "@s": []byte(`"search"`), "@arr": []byte(`[30,"35",null]`)}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 1024 {
			return
		}
		q, err := parse.Parse(text)
		if err != nil {
			if !errors.As(err, new(*parse.SyntaxError)) {
				t.Fatalf("Parse(%q) error %T", text, err)
			}
			return
		}
		p, err := Compile(q, params)
		if err != nil {
			if !errors.As(err, new(*Error)) {
				t.Fatalf("Compile(%q) error %T: %v", text, err, err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		rows, err := p.Run(ctx, docsOf(fixture, nil))
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Run(%q) error: %v", text, err)
			}
			return
		}
		for _, r := range rows {
			if err := fastjson.ValidateBytes(r); err != nil {
				t.Fatalf("Run(%q) produced invalid JSON %q: %v", text, r, err)
			}
		}
	})
}

func BenchmarkRunFilter(b *testing.B) {
	docs := make([][]byte, 1000)
	for i := range docs {
		d := fixture[i%len(fixture)]
		docs[i] = []byte(d)
	}
	iter := func(yield func([]byte) bool) error {
		for _, d := range docs {
			if !yield(d) {
				return nil
			}
		}
		return nil
	}
	for _, bc := range []struct{ name, query string }{
		{"eq", "SELECT * FROM c WHERE c.city = @city"},
		{"and-in-func", "SELECT c.id, c.name FROM c WHERE c.age > 20 AND c.city IN ('Oslo', 'Rome') AND STARTSWITH(c.name, 'A')"},
		{"order-by", "SELECT VALUE c.id FROM c WHERE IS_DEFINED(c.age) ORDER BY c.age DESC"},
		{"count", "SELECT VALUE COUNT(1) FROM c WHERE c.active = true"},
	} {
		b.Run(bc.name+"/docs=1000", func(b *testing.B) {
			q, err := parse.Parse(bc.query)
			if err != nil {
				b.Fatal(err)
			}
			p, err := Compile(q, Params{"@city": []byte(`"Rome"`)})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Run(context.Background(), iter); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
