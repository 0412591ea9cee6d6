package advise

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestMasterToken checks the signature against the wire protocol's worked
// examples (docs/cosmos-wire-protocol.md §2.3).
func TestMasterToken(t *testing.T) {
	key, _ := base64.StdEncoding.DecodeString("dsZQi3KtZmCv1ljt3VNWNm7sQUF1y5rJfC6kv5JiwvW0EndXdDku/dkKBp8/ufDToSxLzR4y+O/0H/t4bQtVNw==")
	const date = "Thu, 27 Apr 2017 00:51:12 GMT"
	tests := []struct {
		verb, path, sig string
	}{
		{"GET", "/", "rp533/e+AfAi87cI2Vg1QmCqQY1Ki3ryYkABWMvF9xw="},
		{"GET", "/dbs/ToDoList", "c09PEVJrgp2uQRkr934kFbTqhByc7TVr3OHyqlu+c+c="},
		{"GET", "/dbs/ToDoList/colls/coll/docs/doc%201", "xi4cdfrOU/4qZXiql2QRqeaiIsjPtThys7rabUH/huA="},
		{"GET", "/dbs/ToDoList/colls/coll/pkranges", "TxpZBZZNEangw5HGdv1a6YiW2CO//pjmQHy9l4SKrC0="},
	}
	for _, tt := range tests {
		typ, link := resourceOf(tt.path)
		got, _ := url.QueryUnescape(masterToken(key, tt.verb, typ, link, date))
		if want := "type=master&ver=1.0&sig=" + tt.sig; got != want {
			t.Errorf("masterToken(%s %s) = %q, want %q", tt.verb, tt.path, got, want)
		}
	}
}

func TestResourceOf(t *testing.T) {
	tests := []struct{ path, typ, link string }{
		{"/", "", ""},
		{"/dbs", "dbs", ""},
		{"/dbs/d1/colls/c1/docs", "docs", "dbs/d1/colls/c1"},
		{"/dbs/d1/colls/c1/docs/doc%201", "docs", "dbs/d1/colls/c1/docs/doc 1"},
		{"/_partita/dbs/d/colls/c/partitions", "c", "_partita/dbs/d/colls/c/partitions"},
	}
	for _, tt := range tests {
		if typ, link := resourceOf(tt.path); typ != tt.typ || link != tt.link {
			t.Errorf("resourceOf(%q) = %q, %q, want %q, %q", tt.path, typ, link, tt.typ, tt.link)
		}
	}
}

func TestHotKeys(t *testing.T) {
	body := `{"partitions":[
	  {"id":"0","ruPerSecond":200,"chargedRU":1000,"throttled":0,
	   "topKeysByRU":[{"key":"[\"a\"]","weight":300}]},
	  {"id":"1","ruPerSecond":200,"chargedRU":1000,"throttled":7,
	   "topKeysByRU":[{"key":"[\"b\"]","weight":500},{"key":"[\"c\"]","weight":450}],
	   "topKeysByThrottles":[{"key":"[\"c\"]","weight":7}]},
	  {"id":"2","ruPerSecond":200,"chargedRU":1000,"throttled":0,
	   "topKeysByRU":[{"key":"[\"d\"]","weight":900}]},
	  {"id":"3","chargedRU":0,"topKeysByRU":[]},
	  {"id":"4","chargedRU":5.5,"topKeysByRU":[{"key":"[\"once\"]","weight":5.5}]}
	]}`
	parts, err := decodePartitions([]byte(body))
	if err != nil || len(parts) != 5 {
		t.Fatalf("decodePartitions = %d, %v", len(parts), err)
	}
	if bare, err := decodePartitions([]byte(`[{"id":"9"}]`)); err != nil || len(bare) != 1 || bare[0].ID != "9" {
		t.Errorf("decodePartitions(bare array) = %+v, %v", bare, err)
	}
	hot := HotKeys(parts)
	// Partition 1 is throttled: the key its 429s name comes first. Partition
	// 2's key takes 90% of its RU; partition 0's only 30%: not hot; nor
	// partition 4's one write, though 100% of its RU.
	if len(hot) != 2 || hot[0].Key != `["c"]` || !hot[0].Now || hot[0].Share != 0.45 || hot[1].Key != `["d"]` || hot[1].Now {
		t.Fatalf("HotKeys = %+v", hot)
	}
	r := &Report{CurrentKey: []string{"/pk"}, Candidates: []*Candidate{
		{Key: "/id", Rank: 1, Strategy: Single, Paths: []string{"/id"}, Build: "B1"},
		{Key: "/pk.hash(/id,100)", Rank: 2, Strategy: HashSuffix, Paths: []string{"/pk"}, HashPaths: []string{"/id"}, Build: "B2"},
	}}
	r.AddHotKeys(hot)
	if len(r.HotKeys) != 2 || !strings.Contains(r.HotKeys[0].Advice, `["c"] is hot now`) || !strings.Contains(r.HotKeys[0].Advice, "/pk.hash(/id,100)") ||
		!strings.Contains(r.HotKeys[1].Advice, "(not throttled)") {
		t.Errorf("AddHotKeys advice = %q", []string{r.HotKeys[0].Advice, r.HotKeys[1].Advice})
	}
}

// TestHotNowAfterHistory: a key that turns hot after others were busy long
// ago is named from the reports' topKeysByRUNow (the server's shares of
// what each key took lately). The deltas of the totals could not name it:
// the old keys filled the listed top, and it was absent from both reports
// (a bug hunt: 394 RU/s of a 400 RU/s partition, 14,713 429s, no hot key).
func TestHotNowAfterHistory(t *testing.T) {
	old := `[{"key":"[\"old0\"]","weight":12700},{"key":"[\"old1\"]","weight":12690},{"key":"[\"old2\"]","weight":12680}]`
	base, err := decodePartitions([]byte(`[{"id":"0","ruPerSecond":400,"chargedRU":38070,"throttled":0,"topKeysByRU":` + old + `}]`))
	if err != nil {
		t.Fatal(err)
	}
	last, err := decodePartitions([]byte(`[{"id":"0","ruPerSecond":400,"chargedRU":42070,"throttled":14713,"topKeysByRU":` + old + `,
	  "topKeysByRUNow":[{"key":"[\"hotw\"]","weight":0.98,"maxOverestimate":0},{"key":"[\"old0\"]","weight":0.01,"maxOverestimate":0}],
	  "topKeysByThrottles":[{"key":"[\"hotw\"]","weight":14713}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	var h HotNow
	at := time.Unix(1000, 0)
	h.Observe(at, base)
	h.Observe(at.Add(10*time.Second), last)
	hot := h.Hot()
	if len(hot) != 1 || hot[0].Key != `["hotw"]` || !hot[0].Now || hot[0].Rate < 390 {
		t.Fatalf("Hot() = %+v, want [\"hotw\"] hot now at about 392 RU/s", hot)
	}
}
