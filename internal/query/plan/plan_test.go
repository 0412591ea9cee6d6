package plan

import (
	"slices"
	"testing"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/parse"
)

func TestPartitionKey(t *testing.T) {
	str := func(s string) document.PKValue { return document.PKValue{Kind: document.String, String: s} }
	num := func(f float64) document.PKValue { return document.PKValue{Kind: document.Number, Number: f} }
	params := map[string][]byte{"@pk": []byte(`"p9"`), "@n": []byte(`7`), "@obj": []byte(`{"a":1}`)}
	tests := []struct {
		query string
		paths []string
		want  document.PartitionKey // nil: not pinned
	}{
		{"select * from c where c.pk = '1' order by c.id", []string{"/pk"}, document.PartitionKey{str("1")}},
		{"SELECT * FROM c WHERE '1' = c.pk", []string{"/pk"}, document.PartitionKey{str("1")}},
		{"SELECT * FROM root r WHERE r.pk = @pk AND r.x > 3", []string{"/pk"}, document.PartitionKey{str("p9")}},
		{"SELECT * FROM c WHERE c.a.b = -2", []string{"/a/b"}, document.PartitionKey{num(-2)}},
		{`SELECT * FROM c WHERE c["my key"] = @n`, []string{`/"my key"`}, document.PartitionKey{num(7)}},
		{"SELECT * FROM c WHERE c.t = 'a' AND (c.u = 'b' AND c.z = 1)", []string{"/t", "/u"}, document.PartitionKey{str("a"), str("b")}},
		{"SELECT * FROM c WHERE c.pk = null", []string{"/pk"}, document.PartitionKey{{Kind: document.Null}}},
		{"SELECT * FROM c WHERE c.t = 'a'", []string{"/t", "/u"}, nil},           // a prefix only
		{"SELECT * FROM c WHERE c.pk = '1' OR c.pk = '2'", []string{"/pk"}, nil}, // OR: fan out
		{"SELECT * FROM c WHERE c.pk = '1' AND c.pk = '2'", []string{"/pk"}, nil},
		{"SELECT * FROM c WHERE c.pk != '1'", []string{"/pk"}, nil},
		{"SELECT * FROM c WHERE c.pk = c.other", []string{"/pk"}, nil},
		{"SELECT * FROM c WHERE c.pk = @obj", []string{"/pk"}, nil},
		{"SELECT * FROM c WHERE c.pk = @missing", []string{"/pk"}, nil},
		{"SELECT * FROM c WHERE d.pk = '1'", []string{"/pk"}, nil},
		{"SELECT * FROM x IN c.kids WHERE x.pk = '1'", []string{"/pk"}, nil},
		{"SELECT * FROM c", []string{"/pk"}, nil},
		{"SELECT * FROM c WHERE NOT (c.pk = '1')", []string{"/pk"}, nil},
	}
	for _, tt := range tests {
		q, err := parse.Parse(tt.query)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.query, err)
		}
		got, ok := PartitionKey(q, tt.paths, params)
		if (tt.want == nil) != !ok || (ok && !got.Equal(tt.want)) {
			t.Errorf("PartitionKey(%q, %v) = %v, %v; want %v", tt.query, tt.paths, got, ok, tt.want)
		}
	}
}

func TestPartitionKeys(t *testing.T) {
	str := func(s string) document.PKValue { return document.PKValue{Kind: document.String, String: s} }
	params := map[string][]byte{"@pk": []byte(`"p9"`), "@obj": []byte(`{"a":1}`)}
	pk := func(vs ...string) document.PartitionKey {
		k := document.PartitionKey{}
		for _, v := range vs {
			k = append(k, str(v))
		}
		return k
	}
	tests := []struct {
		query string
		paths []string
		want  []document.PartitionKey // nil: not confined
	}{
		{"SELECT * FROM c WHERE c.t = 'a'", []string{"/t", "/u"}, []document.PartitionKey{pk("a")}},
		{"SELECT * FROM c WHERE c.t = 'a' AND c.v = 'x'", []string{"/t", "/u", "/v"}, []document.PartitionKey{pk("a")}},
		{"SELECT * FROM c WHERE c.u = 'b'", []string{"/t", "/u"}, nil}, // not a leading prefix
		{"SELECT * FROM c WHERE c.pk IN ('a', @pk, 'c')", []string{"/pk"}, []document.PartitionKey{pk("a"), pk("p9"), pk("c")}},
		{"SELECT * FROM c WHERE c.x > 1 AND c.pk IN ('a')", []string{"/pk"}, []document.PartitionKey{pk("a")}},
		{"SELECT * FROM c WHERE c.pk NOT IN ('a', 'b')", []string{"/pk"}, nil},
		{"SELECT * FROM c WHERE c.pk IN ('a', @obj)", []string{"/pk"}, nil},
		{"SELECT * FROM c WHERE c.pk IN ('a', c.other)", []string{"/pk"}, nil},
		{"SELECT * FROM c WHERE c.t IN ('a', 'b')", []string{"/t", "/u"}, nil},
		{"SELECT * FROM c WHERE c.pk IN ('a') OR c.x = 1", []string{"/pk"}, nil},
		{"SELECT * FROM c WHERE c.t = 'a' AND c.t = 'b'", []string{"/t", "/u"}, nil},
		{"SELECT * FROM c", []string{"/pk"}, nil},
	}
	for _, tt := range tests {
		q, err := parse.Parse(tt.query)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.query, err)
		}
		got, ok := PartitionKeys(q, tt.paths, params)
		same := ok == (tt.want != nil) && len(got) == len(tt.want)
		for i := range got {
			same = same && i < len(tt.want) && got[i].Equal(tt.want[i])
		}
		if !same {
			t.Errorf("PartitionKeys(%q, %v) = %v, %v; want %v", tt.query, tt.paths, got, ok, tt.want)
		}
	}
}

// TestRouting checks that Routing answers as PartitionKey, then
// PartitionKeys when no key is pinned, on the queries of both tests.
func TestRouting(t *testing.T) {
	params := map[string][]byte{"@pk": []byte(`"p9"`), "@n": []byte("7"), "@obj": []byte(`{"a":1}`)}
	queries := []string{
		"select * from c where c.pk = '1' order by c.id", "SELECT * FROM c WHERE '1' = c.pk", "SELECT * FROM root r WHERE r.pk = @pk AND r.x > 3",
		"SELECT * FROM c WHERE c.a.b = -2", `SELECT * FROM c WHERE c["my key"] = @n`, "SELECT * FROM c WHERE c.t = 'a' AND (c.u = 'b' AND c.z = 1)",
		"SELECT * FROM c WHERE c.pk = null", "SELECT * FROM c WHERE c.t = 'a'", "SELECT * FROM c WHERE c.pk = '1' OR c.pk = '2'",
		"SELECT * FROM c WHERE c.pk = '1' AND c.pk = '2'", "SELECT * FROM c WHERE c.pk = c.other", "SELECT * FROM c WHERE c.pk = @obj",
		"SELECT * FROM c WHERE c.pk = @missing", "SELECT * FROM x IN c.kids WHERE x.pk = '1'", "SELECT * FROM c",
		"SELECT * FROM c WHERE c.t = 'a' AND c.v = 'x'", "SELECT * FROM c WHERE c.u = 'b'", "SELECT * FROM c WHERE c.pk IN ('a', @pk, 'c')",
		"SELECT * FROM c WHERE c.x > 1 AND c.pk IN ('a')", "SELECT * FROM c WHERE c.pk IN ('a', @obj)", "SELECT * FROM c WHERE c.t IN ('a', 'b')",
		"SELECT * FROM c WHERE c.t = 'a' AND c.t = 'b'", "SELECT * FROM c WHERE c.x = @obj AND c.pk = @pk",
	}
	for _, text := range queries {
		q, err := parse.Parse(text)
		if err != nil {
			t.Fatalf("Parse(%q): %v", text, err)
		}
		for _, paths := range [][]string{{"/pk"}, {"/t", "/u"}, {"/t", "/u", "/v"}, {"/a/b"}, {`/"my key"`}} {
			pinned, keys := Routing(q, paths, params)
			wantPinned, ok := PartitionKey(q, paths, params)
			var wantKeys []document.PartitionKey
			if !ok {
				wantKeys, _ = PartitionKeys(q, paths, params)
			}
			if !pinned.Equal(wantPinned) || (pinned == nil) != !ok || !slices.EqualFunc(keys, wantKeys, document.PartitionKey.Equal) || (keys == nil) != (wantKeys == nil) {
				t.Errorf("Routing(%q, %v) = %v, %v; want %v, %v", text, paths, pinned, keys, wantPinned, wantKeys)
			}
		}
	}
}
