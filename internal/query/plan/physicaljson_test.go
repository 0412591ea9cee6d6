package plan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/index"
)

// reflectJSON is Physical's JSON as encoding/json writes it from the
// equivalent struct: what MarshalJSON must write.
func reflectJSON(p Physical) ([]byte, error) {
	type lookup struct {
		Kind  string `json:"kind"`
		Pred  string `json:"predicate"`
		Spans int    `json:"spans"`
	}
	type other struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
		Pred string `json:"predicate"`
	}
	out := struct {
		Access    string   `json:"access"`
		Path      string   `json:"path,omitempty"`
		Desc      bool     `json:"descending,omitempty"`
		Lookup    *lookup  `json:"lookup,omitempty"`
		Intersect []other  `json:"intersect,omitempty"`
		Gathered  bool     `json:"leadGathered,omitempty"`
		Why       string   `json:"why"`
		Stats     *Stats   `json:"stats,omitempty"`
		Blind     bool     `json:"blind,omitempty"`
		Implied   []string `json:"implied,omitempty"`
		Executor  string   `json:"executor"`
		Token     string   `json:"token"`
		Cross     bool     `json:"crossPartition"`
		Ranges    int      `json:"physicalPartitions"`
	}{Access: p.Access.String(), Desc: p.Desc, Gathered: p.LeadGathered, Why: p.Why, Stats: p.Stats, Blind: p.Blind, Implied: p.Implied, Executor: p.Executor.String(), Token: p.Token.String(), Cross: p.Cross, Ranges: p.Ranges}
	if p.Lookup != nil {
		out.Path = "/" + strings.Join(p.Lookup.Path, "/")
		out.Lookup = &lookup{Kind: p.Lookup.Kind, Pred: p.Lookup.Pred, Spans: len(p.Lookup.Spans)}
	}
	for _, o := range p.Intersect {
		out.Intersect = append(out.Intersect, other{Path: o.Target(), Kind: o.Kind, Pred: o.Pred})
	}
	return json.Marshal(out)
}

// TestMarshalJSONMatchesReflection checks that Physical.MarshalJSON, and
// json.Marshal of a Physical, write what encoding/json writes for the
// equivalent struct.
func TestMarshalJSONMatchesReflection(t *testing.T) {
	odd := "a\"b\\c<d>e&f\u2028g\u2029h\x00\x1f\b\f\n\r\t\x7fé😀\xff\xc3"
	plans := []Physical{
		{},
		{Access: IndexMerge, Executor: Sorted, Token: TokenSort, Cross: true, Ranges: 4, PassThrough: true, NeedStats: true,
			Lookup: &IndexScan{Path: []string{"n", odd}, Spans: make([]index.Span, 3), Kind: "range", Pred: "n >= " + odd},
			Stats:  &Stats{Terms: 65, Entries: 11595, Items: 1 << 40}, Why: "why " + odd, Desc: true, Implied: []string{"c.pk = " + odd, "c.k = 1"}},
		{Access: IndexOrdered, Executor: Folded, Token: TokenOffset, Lookup: &IndexScan{Path: []string{"_ts"}, Kind: "path", Pred: "every _ts"},
			Why: "ORDER BY _ts read in index order"},
		{Access: IndexPoint, Executor: Whole, Token: TokenOffset, Lookup: &IndexScan{Path: []string{"cat"}, Spans: make([]index.Span, 1), Kind: "equality", Pred: "cat = \"a\""},
			Why: "a lookup", Blind: true, Implied: []string{"c.pk = 1"}},
		{Access: IndexIntersect, LeadGathered: true, Gather: 900, Lookup: &IndexScan{Path: []string{"a"}, Spans: make([]index.Span, 1), Kind: "range", Pred: "a > " + odd},
			Intersect: []*IndexScan{{Path: []string{"b"}, Kind: "prefix", Pred: "STARTSWITH(b, " + odd + ")"}, {Path: []string{"c", odd}, Kind: "range", Pred: "c < 2"}},
			Stats:     &Stats{Terms: 65, Entries: 300, Items: 5000, Counted: true, Lead: 2}, Why: "led by " + odd},
	}
	for _, p := range plans {
		want, err := reflectJSON(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.MarshalJSON()
		if err != nil || string(got) != string(want) {
			t.Errorf("MarshalJSON() = %s, %v, want %s", got, err, want)
		}
		viaJSON, err := json.Marshal(p)
		if err != nil || string(viaJSON) != string(want) {
			t.Errorf("json.Marshal = %s, %v, want %s", viaJSON, err, want)
		}
	}
}

// FuzzAppendJSONString checks appendJSONString against encoding/json.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"b\s`, "<a href='x'>&amp;</a>", "\u2028\u2029", "\x00\x01\x1f\x7f", "\b\f\n\r\t", "é😀", "\xff", "\xed\xa0\x80", "a\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}
