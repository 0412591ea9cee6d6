package engine

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/throughput"
)

// Splits (docs/partitions.md). The children of a split share their
// parent's keyspace (docs/storage-seams.md), so a split only replaces the
// parent's record in the catalog by its children's, in one batch.

// rangeStorage is what a physical partition holds: its logical partitions'
// EPKs in order with their item bytes.
type rangeStorage struct {
	epks  [][]byte
	bytes []int64
	total int64
	items int64
	lps   []lpStats // every logical partition, in EPK order
}

func (e *Engine) rangeStorage(ctx context.Context, c *catalog.Container, r partition.Range) (rangeStorage, error) {
	var rs rangeStorage
	rep, err := e.replicaOf(c, r)
	if err != nil {
		return rs, err
	}
	var failed error
	err = replica.Scan(ctx, rep, statsEPKSpan(r.Min, r.Max), func(k, v []byte) bool {
		epk, _, err := decodeStatsKey(k)
		if err == nil {
			var st lpStats
			if st, err = decodeStats(v); err == nil {
				rs.lps = append(rs.lps, st)
				rs.items += st.items
				if n := len(rs.epks); n > 0 && bytes.Equal(rs.epks[n-1], epk) {
					rs.bytes[n-1] += st.bytes // logical partitions sharing an EPK stay together
				} else {
					rs.epks, rs.bytes = append(rs.epks, epk), append(rs.bytes, st.bytes)
				}
				rs.total += st.bytes
				return true
			}
		}
		failed = err
		return false
	})
	if err == nil {
		err = failed
	}
	return rs, err
}

// rangeTotals sums the item bytes and items of range r of container c,
// read from its logical partitions' statistics (linear in them) without
// keeping any: what the split check needs to know whether to split.
// rangeStorage keeps each one (at 10^7 logical partitions, slices of 10^7
// entries and 900 MB of memory, for about twice the CPU of the sums); it
// is read only to split.
func (e *Engine) rangeTotals(ctx context.Context, c *catalog.Container, r partition.Range) (bytes, items int64, err error) {
	rs, err := e.rangeTop(ctx, c, r, 0)
	return rs.total, rs.items, err
}

// midpoint returns the EPK before which about half of the range's bytes
// lie: the shortest boundary between the last logical partition of the
// lower child and the first of the upper (separator). It is false when the
// range holds fewer than two logical partitions (EPKs).
func (rs rangeStorage) midpoint() (partition.EPK, bool) {
	if len(rs.epks) < 2 {
		return nil, false
	}
	var run int64
	for i := 1; i < len(rs.epks); i++ {
		run += rs.bytes[i-1]
		if 2*run >= rs.total {
			return separator(rs.epks[i-1], rs.epks[i]), true
		}
	}
	n := len(rs.epks)
	return separator(rs.epks[n-2], rs.epks[n-1]), true
}

// separator returns the shortest EPK s with lo < s ≤ hi (lo < hi): hi up
// to and including its first byte that differs from lo. A boundary exactly
// at hi would put hi's logical partition in the upper child by a margin of
// nothing: @azure/cosmos computes the version-1 EPK of some numbers (0, 2)
// without the trailing 00 byte the service's encoding ends with, a prefix
// of the true EPK that sorts before such a boundary, so the SDK looked for
// that key in the lower child (a feed range, or a range id sent with the
// key, found nothing).
func separator(lo, hi []byte) partition.EPK {
	i := 0
	for i < len(lo) && i < len(hi) && lo[i] == hi[i] {
		i++
	}
	return partition.EPK(bytes.Clone(hi[:min(i+1, len(hi))]))
}

// SplitRange splits physical partition rangeID of db/coll in two at its
// storage midpoint, on a boundary between logical partitions. A range
// being moved to replicas of its own (a separation's copy) is waited for,
// up to moveWait, as a split for throughput is (it answered 503 at once: a
// test splitting right after a split met it under load). Errors: 404 for
// an unknown container or range, 400 when the range holds fewer than two
// logical partitions.
func (e *Engine) SplitRange(ctx context.Context, db, coll, rangeID string) ([]PKRange, error) {
	tried := false
	err := e.splitUntil(ctx, db, coll, func(c *catalog.Container) (partition.Range, partition.EPK, bool, error) {
		r, ok := c.Map().ByID(rangeID)
		switch {
		case !ok && tried:
			return partition.Range{}, nil, false, nil // split: its id is gone
		case !ok:
			return partition.Range{}, nil, false, status.NotFound()
		}
		rs, err := e.rangeStorage(ctx, c, r)
		if err != nil {
			return partition.Range{}, nil, false, translate(err)
		}
		at, ok := rs.midpoint()
		if !ok {
			return partition.Range{}, nil, false, status.New(http.StatusBadRequest, "partition key range "+rangeID+" holds fewer than two logical partitions and cannot be split")
		}
		tried = true // asked again after the split, or after a wait for a move
		return r, at, true, nil
	})
	if err != nil {
		return nil, err
	}
	ranges, _, _, err := e.PKRanges(db, coll)
	return ranges, err
}

// forgetRange drops what the engine keeps of range r of c, which split.
func (e *Engine) forgetRange(c *catalog.Container, r partition.Range) {
	if e.limit != nil {
		e.limit.Forget(rangeKey(c, r))
	}
	e.hot.forget(rangeKey(c, r))
	e.sizes.forget(rangeKey(c, r))
}

// splitRange is split without listing the ranges after it.
func (e *Engine) splitRange(c *catalog.Container, r partition.Range, at partition.EPK) error {
	k, err := e.cat.SplitRange(c.DB, c.ID, r.ID, at)
	if err != nil {
		return translate(err)
	}
	e.forgetRange(c, r)
	e.log.Info("partition split", "db", c.DB, "container", c.ID, "range", r.ID, "at", at.String(), "ranges", k.Map().Len())
	return nil
}

// sizeRescan is how old a range's size estimate may get before the split
// check scans its statistics again, whatever the estimate says; at least
// rescanCost times as long as the last scan took, so that the rescans of a
// range with many logical partitions take at most 1/rescanCost of a core
// (at 10^7 logical partitions a scan takes seconds: every minute, it took
// a core from the requests and tripled their p99).
const (
	sizeRescan = time.Minute
	rescanCost = 60
)

// rangeSizes estimates the item bytes of each range between split checks:
// the total its last statistics scan found, plus what committed
// transactions added since. The split check scans a range (all its logical
// partitions' statistics: linear in them) only when the estimate is
// unknown, past the size limit, or older than sizeRescan, instead of every
// check for every range written to. An estimate is a hint: a split always
// follows a scan.
type rangeSizes struct {
	mu sync.Mutex
	m  map[string]*rangeSize // rangeKey → estimate
}

type rangeSize struct {
	bytes   int64
	scanned time.Time
	took    time.Duration // how long that scan took
}

// add adds delta bytes to the range's estimate, if it has one.
func (s *rangeSizes) add(key string, delta int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rs := s.m[key]; rs != nil {
		rs.bytes += delta
	}
}

// fresh reports whether the range's estimate is known, at most limit, and
// from a scan less than sizeRescan (or rescanCost times that scan's
// duration) before now.
func (s *rangeSizes) fresh(key string, limit int64, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.m[key]
	return rs != nil && rs.bytes <= limit && now.Sub(rs.scanned) < max(sizeRescan, rescanCost*rs.took)
}

// set records the total of a scan that started at start and ended at now.
func (s *rangeSizes) set(key string, total int64, start, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*rangeSize{}
	}
	s.m[key] = &rangeSize{bytes: total, scanned: now, took: now.Sub(start)}
}

// keys lists the ranges (rangeKeys) with an estimate.
func (s *rangeSizes) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.m))
	for k := range s.m {
		out = append(out, k)
	}
	return out
}

// forget drops the estimate of a range that split, or whose container is
// gone.
func (s *rangeSizes) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

// testHookRangeScan, if set, is called when the split check scans a
// range's statistics.
var testHookRangeScan func(rangeID string)

// grown is the set of containers whose logical partitions grew since the
// split check last looked.
type grown struct {
	mu sync.Mutex
	m  map[uint64]bool
}

func (g *grown) mark(c uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[uint64]bool{}
	}
	g.m[c] = true
}

func (g *grown) take() map[uint64]bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.m
	g.m = nil
	return m
}

// Run does the engine's background work until ctx is done: every
// SplitCheckInterval, it splits the physical partitions of recently written
// containers whose item bytes exceed PartitionMaxBytes; every
// TTLPurgeInterval it deletes expired items (ttl.go); and it finishes
// partition key deletes (pkdelete.go).
func (e *Engine) Run(ctx context.Context) {
	// A restart may have interrupted the splits of containers written
	// before it: look at every container once.
	for _, d := range e.cat.Databases() {
		colls, _ := e.cat.Containers(d.ID)
		for _, c := range colls {
			e.grown.mark(c.Internal)
		}
	}
	purger := make(chan struct{})
	go func() {
		defer close(purger)
		e.runPurger(ctx, e.cfg.TTLPurgeInterval)
	}()
	defer func() { <-purger }()
	pkDeleter := make(chan struct{})
	go func() {
		defer close(pkDeleter)
		e.runPKDeletes(ctx)
	}()
	defer func() { <-pkDeleter }()
	if e.cfg.Replicated {
		reconciler := make(chan struct{})
		go func() {
			defer close(reconciler)
			e.runReconcile(ctx)
		}()
		defer func() { <-reconciler }()
		prefetcher := make(chan struct{})
		go func() {
			defer close(prefetcher)
			e.runPrefetch(ctx)
		}()
		defer func() { <-prefetcher }()
	}
	t := time.NewTicker(e.cfg.SplitCheckInterval)
	defer t.Stop()
	forget := time.NewTicker(forgetInterval)
	defer forget.Stop()
	tried := map[uint64]int{} // checkThroughput's
	for {
		select {
		case <-ctx.Done():
			return
		case <-forget.C:
			e.forgetGone()
		case <-t.C:
			e.checkSplits(ctx)
			e.checkAlignment(ctx)
			e.checkThroughput(ctx, tried)
			e.checkSeparations(ctx)
		}
	}
}

// checkSplits splits, once each, the oversized ranges of the containers
// written since the last check; a container that split is checked again
// next time, so a range far past the limit splits repeatedly.
func (e *Engine) checkSplits(ctx context.Context) {
	written := e.grown.take()
	if e.cfg.LoadSplits {
		// Throttled partitions are checked whether or not they grew.
		for k := range e.hot.throttledSince() {
			if written == nil {
				written = map[uint64]bool{}
			}
			written[k] = true
		}
	}
	if len(written) == 0 {
		return
	}
	for _, d := range e.cat.Databases() {
		colls, err := e.cat.Containers(d.ID)
		if err != nil {
			continue
		}
		for _, c := range colls {
			if !written[c.Internal] {
				continue
			}
			for _, r := range c.Map().Ranges() {
				// A sharing container's partition draws on its database's
				// budget, which a split of it would not grow.
				if e.cfg.LoadSplits && c.OfferID != "" && e.splitHot(ctx, c, r) {
					e.grown.mark(c.Internal)
					continue
				}
				key := rangeKey(c, r)
				if e.sizes.fresh(key, e.cfg.PartitionMaxBytes, e.now()) {
					continue
				}
				start := e.now()
				if testHookRangeScan != nil {
					testHookRangeScan(r.ID)
				}
				total, _, err := e.rangeTotals(ctx, c, r)
				if err != nil {
					if !storeRefused(err) {
						e.log.Warn("split check", "db", c.DB, "container", c.ID, "range", r.ID, "err", err)
					}
					continue
				}
				e.sizes.set(key, total, start, e.now())
				if total <= e.cfg.PartitionMaxBytes {
					continue
				}
				rs, err := e.rangeStorage(ctx, c, r)
				if err != nil {
					if !storeRefused(err) {
						e.log.Warn("split check", "db", c.DB, "container", c.ID, "range", r.ID, "err", err)
					}
					continue
				}
				at, ok := rs.midpoint()
				if !ok {
					e.log.Warn("partition over its size limit holds one logical partition and cannot split",
						"db", c.DB, "container", c.ID, "range", r.ID, "bytes", rs.total)
					continue
				}
				if err := e.splitRange(c, r, at); err != nil {
					if !storeRefused(err) {
						e.log.Warn("split", "db", c.DB, "container", c.ID, "range", r.ID, "err", err)
					}
					continue
				}
				e.grown.mark(c.Internal)
			}
		}
	}
}

// splitForThroughput splits container db/coll's physical partitions until
// each serves at most PartitionMaxRU of ru RU/s: the widest range first
// (fewest ancestors), in half of its hash space as Cosmos DB's even splits
// do, or at its storage midpoint where the hash space cannot be halved.
func (e *Engine) splitForThroughput(ctx context.Context, db, coll string, ru int) error {
	want := (ru + e.cfg.PartitionMaxRU - 1) / e.cfg.PartitionMaxRU
	if c, err := e.cat.Container(db, coll); err == nil && c.PK.SystemKey {
		return nil // not split for throughput (catalog.MaxSystemKeyThroughput)
	}
	return e.splitUntil(ctx, db, coll, func(c *catalog.Container) (partition.Range, partition.EPK, bool, error) {
		ranges := c.Map().Ranges()
		if len(ranges) >= want {
			return partition.Range{}, nil, false, nil
		}
		r := ranges[0]
		for _, x := range ranges[1:] {
			if len(x.Parents) < len(r.Parents) {
				r = x
			}
		}
		at, ok := partition.Midpoint(c.PK, r.Min, r.Max)
		if !ok {
			rs, err := e.rangeStorage(ctx, c, r)
			if err != nil {
				return r, nil, false, translate(err)
			}
			if at, ok = rs.midpoint(); !ok {
				e.log.Warn("cannot split for throughput", "db", db, "container", coll, "range", r.ID)
			}
		}
		return r, at, ok, nil
	})
}

// splitUntil splits container db/coll's partitions one at a time, where
// next says (the range and the EPK to split it at), until it says there is
// nothing more to split or fails. A range held by a separation (its copy)
// is waited for, up to moveWait.
func (e *Engine) splitUntil(ctx context.Context, db, coll string,
	next func(c *catalog.Container) (r partition.Range, at partition.EPK, ok bool, err error)) error {
	start := time.Now()
	for {
		c, err := e.container(db, coll)
		if err != nil {
			return err
		}
		r, at, ok, err := next(c)
		if err != nil || !ok {
			return err
		}
		if testHookSplitUntil != nil {
			testHookSplitUntil(c, r)
		}
		if err := e.splitRange(c, r, at); err != nil {
			if cur, cerr := e.container(db, coll); cerr == nil && cur.Internal == c.Internal {
				if _, ok := cur.Map().ByID(r.ID); !ok {
					// Split meanwhile by another caller (the background
					// split check, or another raise): go on from there.
					continue
				}
			}
			if errors.Is(err, catalog.ErrMoving) && time.Since(start) < moveWait {
				// A separation holds the range for a moment (its copy).
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			return err
		}
	}
}

// testHookSplitUntil, when set (by tests), runs before splitUntil splits
// range r of c.
var testHookSplitUntil func(c *catalog.Container, r partition.Range)

// moveWait bounds how long a split for throughput waits for a range's
// separation to end.
const moveWait = 30 * time.Second

// hotRangeTicks is how many consecutive split checks a partition must have
// throttled in before it splits for load.
const hotRangeTicks = 3

// splitHot splits range r of c for load when it has throttled in the last
// hotRangeTicks checks (beyond Cosmos DB, with LoadSplits): when one logical
// partition takes most of its request units, that partition is isolated
// (split off on both sides, so it has a whole partition's budget, and
// reported); otherwise the range splits where its tracked request units
// are halved. It reports whether it split.
func (e *Engine) splitHot(ctx context.Context, c *catalog.Container, r partition.Range) bool {
	key := rangeKey(c, r)
	if !e.hot.sustained(key, hotRangeTicks) {
		return false
	}
	top, total := e.hot.recentSketch(key).Top(hotKeysTracked) // lately: where the load is now
	if len(top) == 0 || total <= 0 {
		return false
	}
	type loadAt struct {
		epk partition.EPK
		ru  float64
	}
	var loads []loadAt
	for _, h := range top {
		pk, err := document.ParsePKHeader(h.Key)
		if err != nil {
			continue
		}
		epk, err := c.PK.Hash(pk)
		if err != nil || !r.Contains(epk) {
			continue
		}
		loads = append(loads, loadAt{epk, h.Weight - h.Err})
	}
	if len(loads) == 0 {
		return false
	}
	slices.SortFunc(loads, func(a, b loadAt) int { return bytes.Compare(a.epk, b.epk) })
	var at partition.EPK
	if hot := slices.MaxFunc(loads, func(a, b loadAt) int { return cmp.Compare(a.ru, b.ru) }); hot.ru > total/2 {
		// Isolate the hot logical partition: split before it, or, when it
		// already starts the range, after it (the next check splits the
		// other side).
		rs, err := e.rangeStorage(ctx, c, r)
		if err != nil {
			return false
		}
		switch i := slices.IndexFunc(rs.epks, func(x []byte) bool { return bytes.Equal(x, hot.epk) }); {
		case i > 0:
			at = separator(rs.epks[i-1], hot.epk)
		case !bytes.Equal(hot.epk, r.Min) && bytes.Compare(hot.epk, r.Min) > 0 && i != 0:
			at = hot.epk // not stored yet
		case i >= 0 && i+1 < len(rs.epks):
			at = separator(hot.epk, rs.epks[i+1])
		default:
			return false // alone in its range already
		}
		e.log.Warn("isolating a hot logical partition", "db", c.DB, "container", c.ID, "range", r.ID,
			"partition_key", slices.MaxFunc(top, func(a, b throughput.Heavy) int { return cmp.Compare(a.Weight, b.Weight) }).Key)
	} else {
		var run float64
		for i, l := range loads {
			if i > 0 && 2*run >= total {
				at = separator(loads[i-1].epk, l.epk)
				break
			}
			run += l.ru
		}
		if at == nil {
			if n := len(loads); n > 1 {
				at = separator(loads[n-2].epk, loads[n-1].epk)
			} else {
				at = loads[0].epk
			}
		}
		if bytes.Equal(at, r.Min) {
			return false
		}
	}
	if err := e.splitRange(c, r, at); err != nil {
		if !storeRefused(err) {
			e.log.Warn("load split", "db", c.DB, "container", c.ID, "range", r.ID, "err", err)
		}
		return false
	}
	return true
}
