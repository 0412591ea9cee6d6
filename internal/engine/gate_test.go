package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/script"
)

// TestLoopingScriptsTakeTurns: eight stored procedures that loop until
// their time limit never run more than ScriptSlots at once. Each either runs
// and times out (408) or, having waited a whole time limit for a slot, is
// told to retry (429); point operations are never held up behind them (they
// take no slot) and succeed meanwhile.
func TestLoopingScriptsTakeTurns(t *testing.T) {
	e := testEngineWith(t, Config{ScriptSlots: 1, ScriptLimits: script.Limits{Timeout: 300 * time.Millisecond}})
	def, _ := json.Marshal(map[string]string{"id": "spin", "body": `function spin() { while (true) {} }`})
	if _, err := e.CreateScript("db", "k", StoredProcedures, def); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var wg sync.WaitGroup
	codes := make([]int, 8)
	for i := range codes {
		wg.Go(func() {
			pk := document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("p%d", i)}}
			_, err := e.ExecuteStoredProcedure(ctx, "db", "k", "spin", pk, []byte("[]"), false)
			codes[i] = code(err)
		})
	}
	pk := document.PartitionKey{{Kind: document.String, String: "reader"}}
	for i := range 20 {
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Upsert, PK: pk, Body: fmt.Appendf(nil, `{"id":"r","pk":"reader","n":%d}`, i)}); err != nil {
			t.Fatalf("upsert while scripts loop: %v", err)
		}
	}
	wg.Wait()
	ran := 0
	for i, c := range codes {
		switch c {
		case http.StatusRequestTimeout:
			ran++
		case http.StatusTooManyRequests:
		default:
			t.Errorf("execution %d: status %d, want 408 (ran out of time) or 429 (no slot in time)", i, c)
		}
	}
	if ran == 0 {
		t.Errorf("no execution ran: %v", codes)
	}
	if p := e.scripts.peak.Load(); p != 1 {
		t.Errorf("%d stored procedures ran at once, want at most 1", p)
	}
}

// TestQueriesTakeTurns: concurrent query pages read and evaluate in turns
// of the query gate (never more than QuerySlots at once), and each still
// returns its exact result.
func TestQueriesTakeTurns(t *testing.T) {
	e := testEngineWith(t, Config{QuerySlots: 1, GatewayQueryFull: true})
	ctx := t.Context()
	for i := range 300 {
		body := fmt.Appendf(nil, `{"id":"%d","pk":"p%d","arr":[1,2,3,4,5,6,7,8,9,10]}`, i, i%7)
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, Body: body, PK: document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("p%d", i%7)}}}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	results := make([]string, 6)
	errs := make([]error, 6)
	for i := range results {
		wg.Go(func() {
			q := Query{Text: "SELECT VALUE COUNT(1) FROM c JOIN a IN c.arr JOIN b IN c.arr", EnableCrossPartition: true}
			if i%2 == 1 {
				q.Text = "SELECT VALUE c.id FROM c JOIN a IN c.arr WHERE a = 3"
			}
			var all []string
			for {
				p, err := e.QueryItems(context.WithoutCancel(ctx), "db", "k", Scope{}, q)
				if err != nil {
					errs[i] = err
					return
				}
				for _, it := range p.Items {
					all = append(all, string(it))
				}
				if p.Continuation == "" {
					break
				}
				q.Continuation = p.Continuation
			}
			results[i] = fmt.Sprint(len(all), " ", all[0])
		})
	}
	wg.Wait()
	for i, r := range results {
		want := "1 30000" // 300 items × 10 × 10 joined rows
		if i%2 == 1 {
			want = "300 \"0\""
		}
		if errs[i] != nil || r != want {
			t.Errorf("query %d: %q, %v; want %q", i, r, errs[i], want)
		}
	}
	if p := e.queries.peak.Load(); p != 1 {
		t.Errorf("%d query pages evaluated at once, want at most 1", p)
	}
}

// TestQueryYieldsInsideJoins: a query page expanding one document's JOINs
// hands its slot on while it does (exec.WithPause), so another query's page
// runs meanwhile: with one slot, a 400³-row JOIN over one item held it
// until its 408, and every other query waited (a hostile-query hunt). The
// small query must answer before the large one ends (it ends at
// QueryMaxTime, long after).
func TestQueryYieldsInsideJoins(t *testing.T) {
	e := testEngineWith(t, Config{QuerySlots: 1, GatewayQueryFull: true, QueryMaxTime: 4 * time.Second})
	ctx := t.Context()
	arr := make([]string, 400)
	for i := range arr {
		arr[i] = strconv.Itoa(i)
	}
	for _, body := range []string{
		`{"id":"big","pk":"big","arr":[` + strings.Join(arr, ",") + `]}`,
		`{"id":"small","pk":"small","n":1}`,
	} {
		var doc struct{ PK string }
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatal(err)
		}
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, Body: []byte(body), PK: document.PartitionKey{{Kind: document.String, String: doc.PK}}}); err != nil {
			t.Fatal(err)
		}
	}
	bigDone := make(chan error, 1)
	go func() {
		q := Query{Text: "SELECT VALUE a FROM c JOIN a IN c.arr JOIN b IN c.arr JOIN x IN c.arr WHERE a + b + x = -1"}
		_, err := e.QueryItems(context.WithoutCancel(ctx), "db", "k", Scope{PK: document.PartitionKey{{Kind: document.String, String: "big"}}}, q)
		bigDone <- err
	}()
	// Wait until the large query holds the slot.
	for e.queries.inUse.Load() == 0 {
		select {
		case err := <-bigDone:
			t.Fatalf("the large query ended before it was seen running: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	p, err := e.QueryItems(ctx, "db", "k", Scope{PK: document.PartitionKey{{Kind: document.String, String: "small"}}}, Query{Text: "SELECT VALUE c.n FROM c"})
	select {
	case bigErr := <-bigDone:
		t.Fatalf("the small query answered (%v, %v) only after the large one ended (%v)", p.Items, err, bigErr)
	default:
	}
	if err != nil || len(p.Items) != 1 || string(p.Items[0]) != "1" {
		t.Errorf("small query = %v, %v; want [1]", p.Items, err)
	}
	if err := <-bigDone; code(err) != http.StatusRequestTimeout {
		t.Errorf("large query: %v, want 408 at QueryMaxTime", err)
	}
}
