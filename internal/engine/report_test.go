package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/partition"
)

func pkS(s string) document.PartitionKey {
	return document.PartitionKey{{Kind: document.String, String: s}}
}

// TestReportHotNow, on a fake clock: the partitions report counts every
// charge in chargedRU (queries too: it counted point operations alone) and
// a query scoped to one logical partition against that key; and its
// topKeysByRUNow names a key that turns hot after others were busy a
// minute before, while topKeysByRU (totals) still lists the old keys
// first. Neither was so: queries were nobody's, and the new key was
// invisible until its total passed the old keys'.
func TestReportHotNow(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	e := testEngineAt(t, Config{}, clock.now)
	write := func(pk string, i int) {
		t.Helper()
		if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "k", Kind: Upsert, PK: pkS(pk),
			Body: fmt.Appendf(nil, `{"id":"x%d","pk":%q}`, i, pk)}); err != nil {
			t.Fatal(err)
		}
	}
	// Three old keys in the partition of "hot": busy, then idle for a
	// minute.
	c, _ := e.cat.Container("db", "k")
	hotRange, _ := locate(c, pkS("hot"), "")
	var old []string
	for i := 0; len(old) < 3; i++ {
		k := fmt.Sprint("old", i)
		if l, _ := locate(c, pkS(k), ""); l.rng.ID == hotRange.rng.ID {
			old = append(old, k)
		}
	}
	for i := range 100 {
		for _, k := range old {
			write(k, i)
		}
	}
	clock.advance(time.Minute)
	for i := range 40 {
		write("hot", i)
		clock.advance(100 * time.Millisecond)
	}
	q, err := e.QueryItems(t.Context(), "db", "k", Scope{PK: pkS("hot")}, Query{Text: "SELECT * FROM c"})
	if err != nil {
		t.Fatal(err)
	}
	reps, err := e.Partitions(t.Context(), "db", "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range reps {
		if p.ID != hotRange.rng.ID {
			continue
		}
		if len(p.TopKeysByRUNow) == 0 || p.TopKeysByRUNow[0].Key != `["hot"]` || p.TopKeysByRUNow[0].Weight < 0.5 {
			t.Errorf("topKeysByRUNow = %+v, want [\"hot\"] first, with most of the partition's charges lately", p.TopKeysByRUNow)
		}
		if len(p.TopKeysByRU) == 0 || p.TopKeysByRU[0].Key == `["hot"]` {
			t.Errorf("topKeysByRU = %+v: the totals should still list an old key first", p.TopKeysByRU)
		}
		var keyed float64
		for _, k := range p.TopKeysByRU {
			keyed += k.Weight
		}
		if p.ChargedRU < keyed || p.ChargedRU < q.RU {
			t.Errorf("chargedRU %.2f: less than its keys' %.2f", p.ChargedRU, keyed)
		}
		for _, k := range p.TopKeysByRU {
			if k.Key == `["hot"]` && k.Weight < 40*5+q.RU {
				t.Errorf("[\"hot\"] weighs %.2f: its query's %.2f RU is not counted", k.Weight, q.RU)
			}
		}
		return
	}
	t.Fatalf("no report of partition %s", hotRange.rng.ID)
}

// TestReportShareOfEverything: a key's share lately is of everything its
// partition was charged, queries over several logical partitions included:
// one write beside 50 cross-partition queries is a small share. It was
// measured against keyed charges alone: 100%.
func TestReportShareOfEverything(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	e := testEngineAt(t, Config{}, clock.now)
	if _, err := e.WriteItem(t.Context(), Write{DB: "db", Container: "k", Kind: Upsert, PK: pkS("small"),
		Body: []byte(`{"id":"x","pk":"small"}`)}); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		queryAll(t, e, Scope{}, Query{Text: "SELECT * FROM c WHERE c.nothing = 1", EnableCrossPartition: true})
	}
	reps, err := e.Partitions(t.Context(), "db", "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range reps {
		for _, k := range p.TopKeysByRUNow {
			if k.Key == `["small"]` && k.Weight > 0.2 {
				t.Errorf("partition %s: [\"small\"] has %.2f of its charges lately, beside 50 queries' %.2f RU", p.ID, k.Weight, p.ChargedRU)
			}
		}
	}
}

// TestReportTopByStorage: each partition's report counts its logical
// partitions and lists the largest by bytes (ties by key), as sorting all
// of them would, while keeping only those it lists (rangeTop: /metrics
// reports every range at every scrape).
func TestReportTopByStorage(t *testing.T) {
	e := testEngine(t)
	ctx := t.Context()
	c, _ := e.cat.Container("db", "k")
	want := map[string][]LogicalPartitionUsage{} // range id → every logical partition
	for i := range 60 {
		pk := fmt.Sprintf("k%02d", i)
		items, pad := 1+i%3, i%7 // sizes repeat: ties by key
		for j := range items {
			if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pkS(pk),
				Body: fmt.Appendf(nil, `{"id":"i%d","pk":%q,"pad":"%s"}`, j, pk, strings.Repeat("x", 50*pad))}); err != nil {
				t.Fatal(err)
			}
		}
		l, _ := locate(c, pkS(pk), "")
		want[l.rng.ID] = append(want[l.rng.ID], LogicalPartitionUsage{Key: fmt.Sprintf(`[%q]`, pk), Items: int64(items)})
	}
	reps, err := e.Partitions(ctx, "db", "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, rep := range reps {
		all := want[rep.ID]
		if rep.LogicalPartitions != len(all) {
			t.Errorf("range %s: %d logical partitions, want %d", rep.ID, rep.LogicalPartitions, len(all))
		}
		rs, err := e.rangeStorage(ctx, c, mustRange(t, c, rep.ID))
		if err != nil {
			t.Fatal(err)
		}
		lps := slices.Clone(rs.lps)
		slices.SortFunc(lps, func(a, b lpStats) int { return cmp.Or(cmp.Compare(b.bytes, a.bytes), cmp.Compare(a.key, b.key)) })
		var top []LogicalPartitionUsage
		for _, lp := range lps[:min(reportTop, len(lps))] {
			top = append(top, LogicalPartitionUsage{Key: lp.key, Bytes: lp.bytes, Items: lp.items})
		}
		if !slices.Equal(rep.TopKeysByStorage, top) || rep.StorageBytes != rs.total || rep.Items != rs.items {
			t.Errorf("range %s: top %v, bytes %d, items %d; want %v, %d, %d", rep.ID, rep.TopKeysByStorage, rep.StorageBytes, rep.Items, top, rs.total, rs.items)
		}
	}
}

func mustRange(t *testing.T, c *catalog.Container, id string) partition.Range {
	t.Helper()
	r, ok := c.Map().ByID(id)
	if !ok {
		t.Fatalf("no range %s", id)
	}
	return r
}
