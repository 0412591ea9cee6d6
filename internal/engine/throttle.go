package engine

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/throughput"
)

// Rate limiting (docs/request-units.md): every physical partition draws on
// a budget (budget.go): an equal share of its container's provisioned
// throughput, or, for a container sharing its database's throughput, the
// database's budget for its slice of the hash space. A request is
// admitted when each partition it needs has budget left and refused with
// 429 otherwise, before it does anything; its charge is debited once known.

// SharedBudgets shares the physical partitions' budgets between the nodes
// of a cluster (Config.Budgets; cluster.Budgets implements it).
type SharedBudgets interface {
	// Charged records that this node charged ru request units to partition
	// key (rangeKey), whose keyspace node leader leads, to report to it.
	Charged(leader uint64, key string, ru float64)
	// Spent reports how long partition key's leader last said its budget
	// stays spent; false when it has not said so, or that time is past.
	Spent(key string) (time.Duration, bool)
	// SpentLow is Spent for low-priority requests: how long the keeper
	// last said its bucket stays at or below the reserve they leave.
	SpentLow(key string) (time.Duration, bool)
}

func rangeKey(c *catalog.Container, r partition.Range) string {
	return string(appendRangeKey(nil, c, r))
}

// appendRangeKey appends rangeKey(c, r) to dst.
func appendRangeKey(dst []byte, c *catalog.Container, r partition.Range) []byte {
	dst = strconv.AppendUint(dst, c.Internal, 16)
	return append(append(dst, '/'), r.ID...)
}

// admit returns a 429 (with the time to wait) when one of the physical
// partitions a request needs has spent its budget.
func (e *Engine) admit(ctx context.Context, c *catalog.Container, ranges ...partition.Range) error {
	if e.limit == nil {
		return nil
	}
	for _, r := range ranges {
		b := e.budgetOf(c, r)
		var wait time.Duration
		var ok bool
		switch {
		case lowPriority(ctx):
			wait, ok = e.limit.AdmitLow(b.key, b.rate)
		case e.cfg.AdaptiveCapacity:
			sib := e.siblings(c, b)
			maxRate := min(float64(e.cfg.PartitionMaxRU), b.rate*float64(len(sib)))
			wait, ok = e.limit.AdmitAdaptive(b.key, sib, b.rate, maxRate)
		default:
			wait, ok = e.limit.Admit(b.key, b.rate)
		}
		if ok && e.cfg.Budgets != nil {
			// The keeper's bucket is the budget: this node's requests and
			// the other nodes' may have spent it (for a low-priority
			// request, down to the reserve it leaves).
			var spent bool
			if wait, spent = e.cfg.Budgets.Spent(b.key); spent {
				ok = false
			} else if lowPriority(ctx) {
				if wait, spent = e.cfg.Budgets.SpentLow(b.key); spent {
					ok = false
				}
			}
		}
		if !ok {
			e.hot.noteThrottled(c.Internal, rangeKey(c, r))
			e.warnHot(c, r)
			return status.Throttled(wait)
		}
	}
	return nil
}

// lowPriorityKey marks a context's requests as low priority.
type lowPriorityKey struct{}

// LowPriority returns ctx with its requests marked low priority (Cosmos
// DB's priority-based execution, x-ms-cosmos-priority-level: Low): when
// their partition's budget runs low they are refused with 429 first, the
// rest of it left to the others (throughput.Limiter.AdmitLow).
func LowPriority(ctx context.Context) context.Context {
	return context.WithValue(ctx, lowPriorityKey{}, true)
}

func lowPriority(ctx context.Context) bool {
	low, _ := ctx.Value(lowPriorityKey{}).(bool)
	return low
}

// admitLP is admit for a request on logical partition pk of physical
// partition r; a refusal also counts against pk among the partition's
// throttled keys.
func (e *Engine) admitLP(ctx context.Context, c *catalog.Container, r partition.Range, pk document.PartitionKey) error {
	err := e.admit(ctx, c, r)
	if err != nil {
		e.hot.refusedSketch(rangeKey(c, r)).Add(pk.String(), 1)
	}
	return err
}

// hotKeys tracks, per physical partition, the logical partitions that use
// the most request units and those refused most often (a bounded sketch
// each), and when a hot one was last reported.
type hotKeys struct {
	mu    sync.Mutex
	now   func() time.Time    // the recent sketches' clock
	parts map[string]*hotPart // by rangeKey
}

// hotPart is what hotKeys knows of one physical partition. Its fields are
// guarded by hotKeys.mu; the sketches have locks of their own.
type hotPart struct {
	// charged is every request unit charged to the partition; total and
	// recent what its logical partitions took, since it was made and
	// lately (a decaying sketch, hotHalfLife). Made with the part.
	charged       float64
	total, recent *throughput.Sketch
	// refused counts 429s by logical partition (made when first needed);
	// refused429 counts every request refused with 429 since the
	// partition was made (its budget may be its database's, shared).
	refused    *throughput.Sketch
	refused429 int64
	warned     time.Time // when a hot key was last reported (warnHot)
	// throttled: the partition refused a request since the last split
	// check, of container throttledIn; streak counts the consecutive
	// checks in which it did.
	throttled   bool
	throttledIn uint64
	streak      int
}

// part returns partition k's record (k: a rangeKey's bytes), making it;
// the key's string is made only then: this runs on every charge. The
// caller holds h.mu.
func (h *hotKeys) part(k []byte) *hotPart {
	if p := h.parts[string(k)]; p != nil {
		return p
	}
	if h.parts == nil {
		h.parts = map[string]*hotPart{}
	}
	p := &hotPart{total: throughput.NewSketch(hotKeysTracked),
		recent: throughput.NewDecayingSketch(hotKeysTracked, hotHalfLife, h.now)}
	h.parts[string(k)] = p
	return p
}

// keys lists the partitions (rangeKeys) hot keys are kept of.
func (h *hotKeys) keys() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Collect(maps.Keys(h.parts))
}

// forget drops what is known about a partition that no longer exists.
func (h *hotKeys) forget(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.parts, key)
}

// noteThrottled records that partition key of container c refused a request.
func (h *hotKeys) noteThrottled(c uint64, key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.part([]byte(key))
	p.throttled, p.throttledIn = true, c
	p.refused429++
}

// refusals is how many requests partition key refused with 429.
func (h *hotKeys) refusals(key string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.parts[key]; p != nil {
		return p.refused429
	}
	return 0
}

// throttledSince ends a check period: it returns the containers that
// throttled in it and updates every partition's streak.
func (h *hotKeys) throttledSince() map[uint64]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[uint64]bool{}
	for _, p := range h.parts {
		if !p.throttled {
			p.streak = 0
			continue
		}
		p.streak++
		p.throttled = false
		out[p.throttledIn] = true
	}
	return out
}

// sustained reports whether partition key throttled in the last n checks.
func (h *hotKeys) sustained(key string, n int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.parts[key]
	return p != nil && p.streak >= n
}

// hotKeysTracked is how many logical partitions each sketch tracks.
const hotKeysTracked = 32

// hotHalfLife is how fast the recent sketches forget: what a key took
// hotHalfLife ago weighs half.
const hotHalfLife = 5 * time.Second

// addCharged counts ru charged to range r of c, and, when pk is not "", to
// its logical partition pk, since the partition was made and lately.
func (h *hotKeys) addCharged(c *catalog.Container, r partition.Range, pk string, ru float64) {
	var buf [64]byte
	k := appendRangeKey(buf[:0], c, r)
	h.mu.Lock()
	p := h.part(k)
	p.charged += ru
	h.mu.Unlock()
	if pk != "" {
		p.total.Add(pk, ru)
		p.recent.Add(pk, ru)
	} else {
		p.recent.AddUntracked(ru) // in the total the keys' shares are of
	}
}

// chargedTo is what partition key was charged.
func (h *hotKeys) chargedTo(key string) float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.part([]byte(key)).charged
}

// sketch is partition key's sketch of request units by logical partition
// since the partition was made.
func (h *hotKeys) sketch(key string) *throughput.Sketch {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.part([]byte(key)).total
}

// recentSketch is partition key's decaying sketch of request units by
// logical partition.
func (h *hotKeys) recentSketch(key string) *throughput.Sketch {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.part([]byte(key)).recent
}

// refusedSketch is partition key's sketch of 429s by logical partition.
func (h *hotKeys) refusedSketch(key string) *throughput.Sketch {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.part([]byte(key))
	if p.refused == nil {
		p.refused = throughput.NewSketch(hotKeysTracked)
	}
	return p.refused
}

// chargeLP charges ru to physical partition r for work on logical
// partition pk.
func (e *Engine) chargeLP(c *catalog.Container, r partition.Range, pk string, ru float64) {
	e.chargeKeyed(c, ru, pk, r)
}

// chargeScope charges ru for a query or feed over ranges, within scope: in
// one logical partition it counts against that key too, as a point
// operation's charge does (a partition hammered by queries of one key was
// throttled with none named).
func (e *Engine) chargeScope(c *catalog.Container, ru float64, scope Scope, ranges ...partition.Range) {
	if len(ranges) == 1 && len(scope.PK) == len(c.PK.Paths) {
		e.chargeLP(c, ranges[0], scope.PK.String(), ru)
		return
	}
	e.charge(c, ru, ranges...)
}

// warnHot logs, at most once a minute per partition, that a throttled
// partition's budget goes mostly to one logical partition, naming it.
func (e *Engine) warnHot(c *catalog.Container, r partition.Range) {
	key := rangeKey(c, r)
	top, total := e.hot.recentSketch(key).Top(1) // lately: a key hot long ago is not named
	if len(top) == 0 || total <= 0 || top[0].Weight-top[0].Err < total/2 {
		return
	}
	now := time.Now()
	e.hot.mu.Lock()
	p := e.hot.part([]byte(key))
	if !p.warned.IsZero() && now.Sub(p.warned) < time.Minute {
		e.hot.mu.Unlock()
		return
	}
	p.warned = now
	e.hot.mu.Unlock()
	e.log.Warn("hot logical partition: one key takes most of a throttled partition's request units",
		"db", c.DB, "container", c.ID, "range", r.ID, "partition_key", top[0].Key,
		"share", top[0].Weight/total)
}

// charge debits ru request units, spread evenly over the partitions a
// request used, from their budgets. In a cluster, the share of a budget
// another node keeps is reported to it too (Config.Budgets).
func (e *Engine) charge(c *catalog.Container, ru float64, ranges ...partition.Range) {
	e.chargeKeyed(c, ru, "", ranges...)
}

// chargeKeyed is charge, counting the charge lately against logical
// partition pk too when it is not "".
func (e *Engine) chargeKeyed(c *catalog.Container, ru float64, pk string, ranges ...partition.Range) {
	if len(ranges) == 0 {
		return
	}
	share := ru / float64(len(ranges))
	for _, r := range ranges {
		e.hot.addCharged(c, r, pk, share)
	}
	if e.limit == nil {
		return
	}
	for _, r := range ranges {
		b := e.budgetOf(c, r)
		e.limit.Charge(b.key, b.rate, share)
		if e.cfg.Budgets != nil && b.rate > 0 {
			if leader := e.budgetLeader(c, r, b); leader != 0 {
				e.cfg.Budgets.Charged(leader, b.key, share)
			}
		}
	}
}

// leaderOf returns the node that leads the keyspace of c's partition r
// when another node does (0 when this node leads it, or no leader is
// known: nothing to report to).
func (e *Engine) leaderOf(c *catalog.Container, r partition.Range) uint64 {
	rep, err := e.replicaOf(c, r)
	if err != nil {
		return 0
	}
	var nl *replica.NotLeaderError
	if errors.As(rep.Lead(), &nl) {
		return nl.Leader
	}
	return 0
}

// DebitRemote debits ru request units that another node charged to budget
// key (a rangeKey or sharedBudgetKey of a budget this node keeps) and
// returns how long the budget stays spent (0: not spent), and how long
// below the reserve low-priority requests leave (throughput.Limiter.Debit). A key of no
// container or database known here, or of one without throughput, debits
// nothing.
func (e *Engine) DebitRemote(key string, ru float64) (spent, low time.Duration) {
	if e.limit == nil {
		return 0, 0
	}
	rate, ok := e.rateOfKey(key)
	if !ok {
		return 0, 0
	}
	return e.limit.Debit(key, rate, ru)
}

// chargeFailed charges a request that failed after admission the work it
// did, at least the minimum charge.
func (e *Engine) chargeFailed(c *catalog.Container, ru float64, ranges ...partition.Range) {
	e.charge(c, max(ru, throughput.MinimumCost()), ranges...)
}
