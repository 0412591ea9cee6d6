package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/document"
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
