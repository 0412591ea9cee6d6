package engine

import (
	"cmp"
	"container/list"
	"context"
	"encoding/binary"
	"slices"
	"sync"
	"unsafe"

	"github.com/partitadb/partita/internal/query/exec"
	"github.com/partitadb/partita/internal/query/plan"
	"github.com/partitadb/partita/internal/replica"
)

// queryMemo keeps the rows of queries evaluated whole (DISTINCT, GROUP BY,
// aggregates, OFFSET/LIMIT over a subquery …: queryRun.whole), so that the
// next page of such a query over a scope that has not changed since is cut
// from the rows evaluated for the previous one, not evaluated again: the
// query's cost is then its scope once, not once per page (draining 1,000
// groups of 20,000 items in pages of 10 read the 20,000 items a hundred
// times; docs/query-engine.md, "Pages of a query evaluated whole").
//
// An evaluation is kept under its program's key (one compiled text and
// parameters: queryCache.keyOf; a program the cache does not keep is not
// memoized) and the state it read: the container's definition (RID, etag,
// the policy its index entries reflect), the executor, the plan's lookups'
// spans (a blind program holds no filter: plan.Physical.Blind), and for
// each keyspace part of the scope, its spans and the version of the
// snapshot read (replica.Snapshot.Version). A page whose
// snapshots have those versions reads exactly the documents the kept
// evaluation read, and its run would give the same rows in the same order
// (exec.Program.Repeatable), so reusing them changes nothing a client can
// see but the cost. Nothing is kept when a version is unknown (a write was
// under way, a keyspace read from another node), when documents may be
// hidden by time (a time to live) or by a partition key delete under way
// (docSource.hidden), nor for a result of one page.
//
// It also keeps the rows a sorted page read ahead (queryRun.sortedPage),
// under the same state and the continuation of the page they follow,
// until the next page takes them; and the index entries a page gathers
// (gathered), under the keyspace's version and the spans read.
//
// The memo holds at most budget bytes of rows (and their keys), evicting
// the least recently used evaluation; one of more than a quarter of the
// budget is not kept. Entries whose state has since changed are never hit
// again and age out.
type queryMemo struct {
	mu     sync.Mutex
	budget int
	used   int
	lru    list.List // of *memoEntry, the most recently used first
	byKey  map[memoKey]*list.Element
}

// memoKey names an evaluation: its program's key in the query cache
// (queryCache.keyOf: a program the cache does not keep is never memoized,
// and no entry keeps a program alive) and the state it read
// (queryRun.memoKey).
type memoKey struct {
	prog  string
	state string
}

// memoEntryOverhead is what an entry costs beyond its rows and key: the
// entry, its list element and its map slot, roughly.
const memoEntryOverhead = 256

type memoEntry struct {
	key  memoKey
	rows [][]byte
	keys []exec.RowKey
	// ahead, for a sorted page (queryRun.sortedPage), are the rows read
	// ahead after the page whose continuation the key names; all says
	// they are every row left.
	ahead []exec.SortedRow
	all   bool
	// hits, for a gather (queryMemo.gathered), are the entries it kept
	// and n how many it read.
	hits []seqEntry
	n    int
	// partial, for a gather under way (queryMemo.gatherPart), is where it
	// stands; hits and n are then unset.
	partial *gathering
	size    int
}

// memoRowOverhead is what a kept row costs beyond its bytes: its slice
// header.
const memoRowOverhead = int(unsafe.Sizeof([]byte(nil)))

// get returns the rows and keys kept under k. They are shared: callers
// must not modify them.
func (m *queryMemo) get(k memoKey) ([][]byte, []exec.RowKey, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byKey[k]
	if !ok {
		return nil, nil, false
	}
	m.lru.MoveToFront(el)
	e := el.Value.(*memoEntry)
	return e.rows, e.keys, true
}

// put keeps rows and keys (which nothing may modify from now on) under k,
// evicting the least recently used evaluations to make room; an
// evaluation larger than a quarter of the budget is not kept.
func (m *queryMemo) put(k memoKey, rows [][]byte, keys []exec.RowKey) {
	size := len(keys)*int(unsafe.Sizeof(exec.RowKey{})) + k.size()
	for _, r := range rows {
		size += len(r) + memoRowOverhead
	}
	m.keepEntry(&memoEntry{key: k, rows: rows, keys: keys, size: size})
}

// putAhead keeps the rows a sorted page read ahead (see memoEntry.ahead).
func (m *queryMemo) putAhead(k memoKey, ahead []exec.SortedRow, all bool) {
	size := k.size()
	for _, r := range ahead {
		size += len(r.Row) + len(r.At.Keys) + len(r.At.Tie) + len(r.At.CutSum) + int(unsafe.Sizeof(r))
	}
	m.keepEntry(&memoEntry{key: k, ahead: ahead, all: all, size: size})
}

// takeAhead returns and forgets the rows read ahead under k.
func (m *queryMemo) takeAhead(k memoKey) ([]exec.SortedRow, bool, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.byKey[k]
	if !ok {
		return nil, false, false
	}
	e := m.lru.Remove(el).(*memoEntry)
	delete(m.byKey, k)
	m.used -= e.size
	return e.ahead, e.all, true
}

// gathered returns the entries of scan's spans that gather keeps for part
// p of snapshot r (every one read: none past most, when most is above
// zero, nor maxGather of the part's), sorted by sequence number, or ok
// false when there are more. A gather of a snapshot whose version is
// known is kept (gatherKey), so that the next page of the query, over a
// keyspace unchanged since, reads none of them again: a gathered lookup
// drained in pages of 10 read its spans for every page. The entries are
// shared: callers must not modify them. A nil memo keeps nothing.
func (m *queryMemo) gathered(ctx context.Context, r replica.Reader, p part, scan *plan.IndexScan, most int, entries *int) (hits []seqEntry, ok bool, err error) {
	k, keep := gatherKey(r, p, scan)
	keep = keep && m != nil
	if keep {
		m.mu.Lock()
		el, found := m.byKey[k]
		if found {
			m.lru.MoveToFront(el)
			e := el.Value.(*memoEntry)
			hits, ok = e.hits, most <= 0 || e.n <= most
			found = e.partial == nil // a gather under way: gathered whole here
		}
		m.mu.Unlock()
		if found {
			return hits, ok, nil
		}
	}
	hits, n, complete, err := gather(ctx, r, p, scan, most, entries)
	if err != nil || !complete {
		return nil, false, err
	}
	if keep {
		m.keepHits(k, hits, n)
	}
	return hits, true, nil
}

// gatherPart is gathered a step at a time, for a match lookup that an
// intersection gathers as its lead's documents pay for it
// (intersectStream.payMatches): it returns the entries of a gather that is
// done (kept, or completed by this step), else reads at most budget more
// entries, going on from where the last step stopped — g, or the query's
// previous page's gather, kept in the memo while the keyspace is
// unchanged — and keeps where it stands (the memo takes g's state, and g
// is reset: one gather has one owner; when the memo does not take it, g
// keeps it for the next step). A budget of zero only looks. over
// reports a gather that can never be done (more than maxGather of the
// part's entries pass). read and passed are how many entries the gather
// under way has read, and kept (its hits), so far.
func (m *queryMemo) gatherPart(ctx context.Context, r replica.Reader, p part, scan *plan.IndexScan, g *gathering, budget int, entries *int) (hits []seqEntry, done, over bool, read, passed int, err error) {
	k, keep := gatherKey(r, p, scan)
	keep = keep && m != nil
	if keep {
		m.mu.Lock()
		if el, ok := m.byKey[k]; ok {
			e := el.Value.(*memoEntry)
			if e.partial == nil {
				m.lru.MoveToFront(el)
				m.mu.Unlock()
				return e.hits, true, false, e.n, len(e.hits), nil
			}
			read, passed = e.partial.n, len(e.partial.hits)
			if budget > 0 && e.partial.n > g.n {
				*g = *e.partial // taken: a concurrent page starts its own
				m.lru.Remove(el)
				delete(m.byKey, k)
				m.used -= e.size
			}
		}
		m.mu.Unlock()
	}
	if budget <= 0 {
		return nil, false, false, max(read, g.n), max(passed, len(g.hits)), nil
	}
	done, over, err = g.step(ctx, r, p, scan, g.n+budget, entries)
	read, passed = g.n, len(g.hits)
	if err != nil || over {
		return nil, false, over, read, passed, err
	}
	if !done {
		if keep {
			kept := *g
			if m.keepEntry(&memoEntry{key: k, partial: &kept, size: k.size() + kept.size + len(kept.after)}) {
				*g = gathering{}
			} // else g goes on keeping it (the memo is off, or it is too big)
		}
		return nil, false, false, read, passed, nil
	}
	slices.SortFunc(g.hits, func(a, b seqEntry) int { return cmp.Compare(a.seq, b.seq) })
	if keep {
		m.keepHits(k, g.hits, g.n)
	}
	return g.hits, true, false, read, passed, nil
}

// keep keeps what a gather of scan's spans in part p of snapshot r finds
// (hits, sorted, having read n entries), as gathered would, for the pages
// that gather it: read by another way (docSource.measure). A nil memo
// keeps nothing.
func (m *queryMemo) keep(r replica.Reader, p part, scan *plan.IndexScan, hits []seqEntry, n int) {
	if k, ok := gatherKey(r, p, scan); ok && m != nil {
		m.keepHits(k, hits, n)
	}
}

func (m *queryMemo) keepHits(k memoKey, hits []seqEntry, n int) {
	size := k.size()
	for _, h := range hits {
		size += int(unsafe.Sizeof(h)) + len(h.itemKey)
	}
	m.keepEntry(&memoEntry{key: k, hits: hits, n: n, size: size})
}

// gatherKey names a gather of scan's spans in part p of snapshot r: the
// keyspace, the snapshot's version, the part's spans, the scan's spans and
// its test (plan.Match); false when the version is unknown (a write under
// way, a keyspace read from another node).
func gatherKey(r replica.Reader, p part, scan *plan.IndexScan) (memoKey, bool) {
	sn, ok := r.(replica.Snapshot)
	if !ok {
		return memoKey{}, false
	}
	v, ok := sn.Version()
	if !ok {
		return memoKey{}, false
	}
	b := make([]byte, 0, 128)
	b = binary.BigEndian.AppendUint64(b, p.ks)
	b = binary.BigEndian.AppendUint64(b, v.Epoch)
	b = binary.BigEndian.AppendUint64(b, v.N)
	bytes := func(x []byte) {
		b = binary.AppendUvarint(b, uint64(len(x)))
		b = append(b, x...)
	}
	b = binary.AppendUvarint(b, uint64(len(p.spans)))
	for _, sp := range p.spans {
		bytes(sp.Lower)
		bytes(sp.Upper)
	}
	b = binary.AppendUvarint(b, uint64(len(scan.Spans)))
	for _, sp := range scan.Spans {
		bytes(sp.Lower)
		bytes(sp.Upper)
	}
	if m := scan.Match; m != nil {
		bytes([]byte(m.Func))
		bytes([]byte(m.Arg))
		if m.Fold {
			b = append(b, 1)
		}
	}
	return memoKey{prog: "\x00gather", state: string(b)}, true
}

// size is what k costs an entry: its strings and the entry's overhead.
func (k memoKey) size() int { return len(k.prog) + len(k.state) + memoEntryOverhead }

// keepEntry adds e (see put), and reports whether it did: not when e is
// too big, or a concurrent page keeps the same evaluation, as far along.
func (m *queryMemo) keepEntry(e *memoEntry) bool {
	k, size := e.key, e.size
	if size > m.budget/4 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byKey == nil {
		m.byKey = map[memoKey]*list.Element{}
	}
	if el, ok := m.byKey[k]; ok { // a concurrent page evaluated it too
		old := el.Value.(*memoEntry)
		if old.partial == nil || e.partial != nil && e.partial.n <= old.partial.n {
			m.lru.MoveToFront(el)
			return false
		}
		m.lru.Remove(el) // a gather under way, overtaken
		delete(m.byKey, k)
		m.used -= old.size
	}
	for m.used+size > m.budget {
		last := m.lru.Back()
		e := m.lru.Remove(last).(*memoEntry)
		delete(m.byKey, e.key)
		m.used -= e.size
	}
	m.byKey[k] = m.lru.PushFront(e)
	m.used += size
	return true
}

// memoKey returns the key of the evaluation this page would make, and
// false when it may not be kept or reused (see queryMemo). It takes the
// snapshots of the scope's keyspaces, which the page then reads.
func (run *queryRun) memoKey() (memoKey, bool) {
	src := run.src
	if run.e.memo.budget <= 0 || !run.prog.Repeatable() || src.hidden != nil {
		return memoKey{}, false
	}
	pk, ok := run.e.qcache.keyOf(run.prog)
	if !ok {
		return memoKey{}, false
	}
	c := src.c
	b := make([]byte, 0, 128)
	for _, s := range []string{c.RID, c.ETag, c.Indexed} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = append(b, byte(run.plan.Executor))
	span := func(x []byte) {
		b = binary.AppendUvarint(b, uint64(len(x)))
		b = append(b, x...)
	}
	// A blind program has no filter: the lookups' spans are it.
	for _, l := range append([]*plan.IndexScan{run.plan.Lookup}, run.plan.Intersect...) {
		if l == nil {
			continue
		}
		b = append(b, 'l')
		b = binary.AppendUvarint(b, uint64(len(l.Spans)))
		for _, s := range l.Spans {
			span(s.Lower)
			span(s.Upper)
		}
	}
	for _, u := range src.units(nil) {
		b = append(b, 'u')
		for _, p := range u.parts {
			r, err := src.v.reader(p.ks)
			if err != nil {
				return memoKey{}, false
			}
			v, ok := r.Version()
			if !ok {
				return memoKey{}, false
			}
			b = binary.BigEndian.AppendUint64(b, p.ks)
			b = binary.BigEndian.AppendUint64(b, v.Epoch)
			b = binary.BigEndian.AppendUint64(b, v.N)
			b = binary.AppendUvarint(b, uint64(len(p.spans)))
			for _, s := range p.spans {
				span(s.Lower)
				span(s.Upper)
			}
		}
	}
	return memoKey{prog: pk, state: string(b)}, true
}
