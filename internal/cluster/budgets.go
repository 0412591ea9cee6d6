package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"
)

// Shared budgets (docs/request-units.md, "In a cluster"). A physical
// partition's request-unit budget is its leader's token bucket: writes are
// evaluated and charged there. Reads are served where they arrive when
// their consistency allows, and each node meters what it serves; without
// sharing, three nodes could serve three budgets' worth of one partition's
// reads. So a node reports what it charges to partitions it does not lead
// to their leaders, every budgetInterval, and each leader debits its
// bucket with them and answers, for the partitions reported, how long
// their budget stays spent; the node then refuses their requests with 429
// until then, as the leader does. The budget is so shared within about
// one interval's requests.

// budgetInterval is how often a node reports its charges to the leaders.
const budgetInterval = 100 * time.Millisecond

// BudgetPath is the cluster listener's route of charge reports.
const BudgetPath = "/_partita/cluster/budget"

// maxBudgetBody bounds a charge report or its answer.
const maxBudgetBody = 4 << 20

// Budgets is a node's side of the shared budgets: the charges to report,
// by leader, and the partitions whose leaders said their budget is spent.
// It implements engine.SharedBudgets. It is safe for concurrent use.
type Budgets struct {
	now func() time.Time
	mu  sync.Mutex
	// pending: leader → partition key → request units charged here.
	pending map[uint64]map[string]float64
	// spent: partition key → until when its leader said it is spent.
	spent map[string]time.Time
}

// NewBudgets returns empty budgets reading the time from now (nil:
// time.Now).
func NewBudgets(now func() time.Time) *Budgets {
	if now == nil {
		now = time.Now
	}
	return &Budgets{now: now, pending: map[uint64]map[string]float64{}, spent: map[string]time.Time{}}
}

// Charged records ru request units charged here to partition key, whose
// leader is node leader.
func (b *Budgets) Charged(leader uint64, key string, ru float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.pending[leader]
	if m == nil {
		m = map[string]float64{}
		b.pending[leader] = m
	}
	m[key] += ru
}

// Spent reports how long partition key's leader last said its budget
// stays spent.
func (b *Budgets) Spent(key string) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	until, ok := b.spent[key]
	if !ok {
		return 0, false
	}
	wait := until.Sub(b.now())
	if wait <= 0 {
		delete(b.spent, key)
		return 0, false
	}
	return wait.Truncate(time.Millisecond) + time.Millisecond, true
}

// take returns the charges to report and forgets them.
func (b *Budgets) take() map[uint64]map[string]float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) == 0 {
		return nil
	}
	out := b.pending
	b.pending = map[uint64]map[string]float64{}
	return out
}

// answered records a leader's answer to a report: the partitions spent
// and for how long (milliseconds).
func (b *Budgets) answered(spent map[string]int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	for key, ms := range spent {
		if ms > 0 {
			b.spent[key] = now.Add(time.Duration(ms) * time.Millisecond)
		}
	}
}

// budgetReport is a charge report: request units by partition key. Its
// answer is budgetAnswer: milliseconds by the partitions spent.
type budgetReport struct {
	Charges map[string]float64 `json:"charges"`
}

type budgetAnswer struct {
	Spent map[string]int64 `json:"spent"`
}

// SetDebit makes debit the function that serves other nodes' charge
// reports: it debits a partition this node leads and returns how long its
// budget stays spent (engine.Engine.DebitRemote). Until it is set, reports
// are answered with 503 and their charges lost.
func (n *Node) SetDebit(debit func(key string, ru float64) time.Duration) {
	n.debit.Store(&debit)
}

// Budgets returns the node's shared budgets, for the engine
// (engine.Config.Budgets).
func (n *Node) Budgets() *Budgets { return n.budgets }

// reportBudgets sends the charges pending to their leaders (every
// budgetInterval: StartNode).
func (n *Node) reportBudgets(ctx context.Context) {
	var wg sync.WaitGroup
	for leader, charges := range n.budgets.take() {
		m, ok := n.member(leader)
		if !ok {
			continue
		}
		wg.Go(func() {
			if err := n.reportTo(ctx, m, charges); err != nil && ctx.Err() == nil {
				n.log.Debug("charges not reported to a partition's leader", "leader", nodeHex(leader), "err", err)
			}
		})
	}
	wg.Wait()
}

// reportTo sends charges to member m and records its answer.
func (n *Node) reportTo(ctx context.Context, m Member, charges map[string]float64) error {
	body, err := json.Marshal(budgetReport{Charges: charges})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+m.Addr+BudgetPath, bytes.NewReader(body))
	if err != nil {
		return err
	}
	_, data, err := peerCall(n.client, req, maxBudgetBody)
	if err != nil {
		return err
	}
	var a budgetAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		return err
	}
	n.budgets.answered(a.Spent)
	return nil
}

// serveBudget serves a charge report from another member (the cluster
// listener's mutual TLS authenticated it).
func (n *Node) serveBudget(w http.ResponseWriter, r *http.Request) {
	dp := n.debit.Load()
	if dp == nil {
		http.Error(w, "this node does not meter request units yet", http.StatusServiceUnavailable)
		return
	}
	var rep budgetReport
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBudgetBody)).Decode(&rep); err != nil {
		http.Error(w, "a charge report that is not JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	a := budgetAnswer{Spent: map[string]int64{}}
	for key, ru := range rep.Charges {
		if wait := (*dp)(key, ru); wait > 0 {
			a.Spent[key] = wait.Milliseconds() + 1
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(a)
}
