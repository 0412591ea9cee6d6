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
	// spent: partition key → until when its leader said it is spent;
	// low: until when it said it is at or below the low-priority reserve.
	spent, low map[string]time.Time
	// leaders: partition key → the leader its charges were last reported
	// to, to ask again about a budget below the low-priority reserve, and
	// when; kept for leaderKeep after the last charge (every partition
	// ever charged through the node stayed for good before).
	leaders map[string]chargedTo
}

// chargedTo is the leader a partition's charges last went to, and when.
type chargedTo struct {
	id uint64
	at time.Time
}

// leaderKeep is how long a partition's leader is remembered after its
// last charge here (or after its budget was last low): far longer than a
// report and its answer take.
const leaderKeep = time.Minute

// NewBudgets returns empty budgets reading the time from now (nil:
// time.Now).
func NewBudgets(now func() time.Time) *Budgets {
	if now == nil {
		now = time.Now
	}
	return &Budgets{now: now, pending: map[uint64]map[string]float64{}, spent: map[string]time.Time{}, low: map[string]time.Time{},
		leaders: map[string]chargedTo{}}
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
	b.leaders[key] = chargedTo{leader, b.now()}
}

// Spent reports how long partition key's leader last said its budget
// stays spent.
func (b *Budgets) Spent(key string) (time.Duration, bool) {
	return b.until(b.spent, key, true)
}

// SpentLow reports how long partition key's leader last said its budget
// stays at or below the reserve low-priority requests leave
// (throughput.LowPriorityReserve): a node's low-priority requests wait
// for the keeper's bucket, not only for its own.
func (b *Budgets) SpentLow(key string) (time.Duration, bool) {
	return b.until(b.low, key, false) // take forgets it, after lowRecheck
}

// until reports how long m's time for key is ahead, forgetting a past one
// when forget is set.
func (b *Budgets) until(m map[string]time.Time, key string, forget bool) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	until, ok := m[key]
	if !ok {
		return 0, false
	}
	wait := until.Sub(b.now())
	if wait <= 0 {
		if forget {
			delete(m, key)
		}
		return 0, false
	}
	return wait.Truncate(time.Millisecond) + time.Millisecond, true
}

// lowRecheck is how long after its leader last said a budget was below
// the low-priority reserve a node keeps asking about it, with no charge of
// its own to report: the wait the leader gives assumes nothing more is
// spent, so without a fresh answer the node's low-priority requests were
// admitted again as it passed, while the leader's own load kept the budget
// low (a review: a follower's low-priority reader took 81% of a budget).
const lowRecheck = time.Second

// take returns the charges to report and forgets them, with a charge of 0
// for each budget its leader said lately was below the low-priority
// reserve, so that its answer is fresh.
func (b *Budgets) take() map[uint64]map[string]float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	for key, until := range b.low {
		if now.Sub(until) > lowRecheck {
			delete(b.low, key)
			continue
		}
		leader, ok := b.leaders[key]
		if !ok {
			continue
		}
		b.leaders[key] = chargedTo{leader.id, now}
		m := b.pending[leader.id]
		if m == nil {
			m = map[string]float64{}
			b.pending[leader.id] = m
		}
		m[key] += 0
	}
	for key, l := range b.leaders {
		if now.Sub(l.at) > leaderKeep {
			delete(b.leaders, key)
		}
	}
	if len(b.pending) == 0 {
		return nil
	}
	out := b.pending
	b.pending = map[uint64]map[string]float64{}
	return out
}

// answered records a leader's answer to a report of charges: the
// partitions spent, and those below the low-priority reserve, and for how
// long (milliseconds); a partition reported and named in neither is not
// (any more).
func (b *Budgets) answered(charges map[string]float64, a budgetAnswer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	for key := range charges {
		if ms := a.Spent[key]; ms > 0 {
			b.spent[key] = now.Add(time.Duration(ms) * time.Millisecond)
		} else {
			delete(b.spent, key)
		}
		if ms := a.Low[key]; ms > 0 {
			b.low[key] = now.Add(time.Duration(ms) * time.Millisecond)
		} else {
			delete(b.low, key)
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
	// Low: milliseconds by the partitions at or below the low-priority
	// reserve (a member of an older release answers none).
	Low map[string]int64 `json:"low,omitempty"`
}

// SetDebit makes debit the function that serves other nodes' charge
// reports: it debits a partition this node leads and returns how long its
// budget stays spent, and how long below the low-priority reserve
// (engine.Engine.DebitRemote). Until it is set, reports are answered with
// 503 and their charges lost.
func (n *Node) SetDebit(debit func(key string, ru float64) (spent, low time.Duration)) {
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
	n.budgets.answered(charges, a)
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
	a := budgetAnswer{Spent: map[string]int64{}, Low: map[string]int64{}}
	for key, ru := range rep.Charges {
		spent, low := (*dp)(key, ru)
		if spent > 0 {
			a.Spent[key] = spent.Milliseconds() + 1
		}
		if low > 0 {
			a.Low[key] = low.Milliseconds() + 1
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(a)
}
