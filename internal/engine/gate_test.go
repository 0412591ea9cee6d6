package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
