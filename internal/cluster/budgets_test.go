package cluster

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestBudgetsReport: a node's charges to partitions it does not lead go
// to their leader, which debits them and answers which partitions are
// spent and for how long; the node refuses them until then, and forgets
// the charges it reported.
func TestBudgetsReport(t *testing.T) {
	var (
		mu      sync.Mutex
		debited = map[string]float64{}
	)
	leader := &Node{log: slog.New(slog.DiscardHandler)}
	srv := httptest.NewTLSServer(http.HandlerFunc(leader.serveBudget))
	defer srv.Close()
	now := time.Unix(1000, 0)
	follower := &Node{log: slog.New(slog.DiscardHandler), client: srv.Client(), budgets: NewBudgets(func() time.Time { return now })}
	m := Member{ID: 7, Addr: srv.Listener.Addr().String()}

	// A leader not metering yet refuses the report.
	if err := follower.reportTo(t.Context(), m, map[string]float64{"a/0": 1}); err == nil {
		t.Error("a report accepted by a node without a debit function")
	}
	leader.SetDebit(func(key string, ru float64) (time.Duration, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		debited[key] += ru
		switch key {
		case "hot/0":
			return 1500 * time.Millisecond, 2000 * time.Millisecond
		case "cold/0":
			return 0, 300 * time.Millisecond // below the low-priority reserve only
		}
		return 0, 0
	})
	follower.budgets.Charged(7, "hot/0", 10)
	follower.budgets.Charged(7, "hot/0", 5)
	follower.budgets.Charged(7, "cold/0", 2)
	pending := follower.budgets.take()
	if len(pending) != 1 || len(pending[7]) != 2 {
		t.Fatalf("pending charges %v, want two partitions for leader 7", pending)
	}
	if again := follower.budgets.take(); again != nil {
		t.Errorf("charges taken twice: %v", again)
	}
	if err := follower.reportTo(t.Context(), m, pending[7]); err != nil {
		t.Fatal(err)
	}
	if debited["hot/0"] != 15 || debited["cold/0"] != 2 {
		t.Errorf("the leader debited %v, want hot/0 15, cold/0 2", debited)
	}
	if w, ok := follower.budgets.Spent("hot/0"); !ok || w < 1500*time.Millisecond || w > 1510*time.Millisecond {
		t.Errorf("Spent(hot/0) = %v, %v; want about 1.5 s", w, ok)
	}
	if _, ok := follower.budgets.Spent("cold/0"); ok {
		t.Error("a partition with budget left reported spent")
	}
	// Low-priority requests wait for the keeper's reserve too.
	if w, ok := follower.budgets.SpentLow("cold/0"); !ok || w < 300*time.Millisecond || w > 310*time.Millisecond {
		t.Errorf("SpentLow(cold/0) = %v, %v; want about 0.3 s", w, ok)
	}
	if w, ok := follower.budgets.SpentLow("hot/0"); !ok || w < 2000*time.Millisecond {
		t.Errorf("SpentLow(hot/0) = %v, %v; want about 2 s", w, ok)
	}
	// A budget below the reserve is asked about again, with no charge of
	// this node's, so that the answer stays fresh while the leader's own
	// load keeps it low.
	if again := follower.budgets.take(); len(again[7]) != 2 || again[7]["cold/0"] != 0 {
		t.Errorf("charges to report with nothing charged = %v, want cold/0 and hot/0 at 0 for leader 7", again)
	}
	now = now.Add(1600 * time.Millisecond)
	if w, ok := follower.budgets.Spent("hot/0"); ok {
		t.Errorf("still spent %v after the wait the leader gave", w)
	}
}

// TestBudgetsForgetLeaders: a partition's leader is kept for leaderKeep
// after its last charge, or while its budget is low: every partition ever
// charged through a node stayed in memory before.
func TestBudgetsForgetLeaders(t *testing.T) {
	now := time.Unix(1000, 0)
	b := NewBudgets(func() time.Time { return now })
	for i := range 100 {
		b.Charged(7, "c/"+string(rune('a'+i%26))+string(rune('a'+i/26)), 1)
	}
	out := b.take()
	if len(out[7]) != 100 {
		t.Fatalf("took %d charges, want 100", len(out[7]))
	}
	b.answered(out[7], budgetAnswer{Low: map[string]int64{"c/aa": 500}})
	for end := now.Add(2 * leaderKeep); now.Before(end); now = now.Add(500 * time.Millisecond) {
		b.answered(b.take()[7], budgetAnswer{Low: map[string]int64{"c/aa": 500}}) // still low: asked again
	}
	b.mu.Lock()
	n, kept := len(b.leaders), b.leaders["c/aa"].id
	b.mu.Unlock()
	if n != 1 || kept != 7 {
		t.Errorf("after the reports, %d partitions' leaders kept (c/aa's: %d), want only the low one's, 7", n, kept)
	}
}
