package engine

import (
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/index"
	"github.com/partitadb/partita/internal/query/exec"
	"github.com/partitadb/partita/internal/query/plan"
	"github.com/partitadb/partita/internal/replica"
	"github.com/valyala/fastjson"
)

// view is one page's reads: a snapshot of each keyspace it reads, taken on
// first use, so that every entry and document the page sees comes from one
// consistent state of that keyspace (docs/storage-seams.md).
//
// A view is safe for concurrent use (parallel reads of one page share it).
type view struct {
	e *Engine
	// ctx is the read's: when it asks for linearizable reads (Strong), each
	// keyspace is synced (replica.Replica.Sync) before its snapshot.
	ctx context.Context
	// c is the catalog's entry of the container read, which mapped its
	// ranges to the keyspaces read (checkFences).
	c     *catalog.Container
	mu    sync.Mutex
	snaps map[uint64]replica.Snapshot
}

func (e *Engine) newView(ctx context.Context, c *catalog.Container) *view {
	return &view{e: e, ctx: ctx, c: c, snaps: map[uint64]replica.Snapshot{}}
}

// reader returns the snapshot of keyspace ks. In a cluster it fails with
// errRangeMoved when the snapshot fences a range v.c maps to ks.
func (v *view) reader(ks uint64) (replica.Snapshot, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.snaps[ks]; ok {
		return s, nil
	}
	rep, err := v.e.readReplica(v.ctx, ks)
	if err != nil {
		return nil, err
	}
	s, err := rep.Snapshot()
	if err != nil {
		return nil, err
	}
	if err := v.e.checkFences(s, v.c, ks); err != nil {
		s.Close()
		return nil, err
	}
	v.snaps[ks] = s
	return s, nil
}

func (v *view) close() {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, s := range v.snaps {
		s.Close()
	}
	v.snaps = nil
}

// A unit is a part of a scope read as one: the scope's ranges that share a
// keyspace, consecutive in EPK order, whose entries are read once for all
// of them. A unit resumed from a continuation may span several keyspaces
// (parts), read together in sequence order.
type unit struct {
	hull  replica.Span // from the first item key of the unit to past its last
	parts []part
}

// part is what a unit reads of one keyspace: the item-key spans of its
// ranges there.
type part struct {
	ks    uint64
	spans []replica.Span
}

// holds reports whether key lies in one of p's spans.
func (p part) holds(key []byte) bool {
	for _, s := range p.spans {
		if s.Contains(key) {
			return true
		}
	}
	return false
}

// units returns the scope's units in EPK order, restricted to item keys at
// or after from (nil: all).
func (s docSource) units(from []byte) []unit {
	var out []unit
	for _, rng := range s.r.ranges {
		sp := intersect(epkSpan(rng.Min, rng.Max), s.r.span)
		if from != nil {
			sp = intersect(sp, replica.Span{Lower: from, Upper: sp.Upper})
		}
		if sp.Empty() {
			continue
		}
		ks, _ := s.c.Keyspace(rng.ID)
		if n := len(out); n > 0 && out[n-1].parts[0].ks == ks {
			u := &out[n-1]
			u.hull.Upper = sp.Upper
			u.parts[0].spans = append(u.parts[0].spans, sp)
			continue
		}
		out = append(out, unit{hull: sp, parts: []part{{ks: ks, spans: []replica.Span{sp}}}})
	}
	return out
}

// resumed returns the unit reading the item keys of hull that the scope
// holds, from whichever keyspaces hold them now (a split since the
// continuation moves no data; a separation would put them in two).
func (s docSource) resumed(hull replica.Span) unit {
	hull = intersect(hull, s.r.span)
	u := unit{hull: hull}
	for _, rng := range s.r.ranges {
		sp := intersect(epkSpan(rng.Min, rng.Max), hull)
		if sp.Empty() {
			continue
		}
		ks, _ := s.c.Keyspace(rng.ID)
		i := slices.IndexFunc(u.parts, func(p part) bool { return p.ks == ks })
		if i < 0 {
			u.parts = append(u.parts, part{ks: ks})
			i = len(u.parts) - 1
		}
		u.parts[i].spans = append(u.parts[i].spans, sp)
	}
	return u
}

// docSource reads the documents of a query's scope in order, from one view.
type docSource struct {
	e    *Engine
	c    *catalog.Container
	r    resolved
	v    *view
	byID bool            // read the scope in key order (for one logical partition: id order)
	desc bool            // read it backwards (byID only)
	scan *plan.IndexScan // nil: no index lookup narrows the scope
	// access says how scan's entries are read: plan.IndexPoint,
	// IndexMerge, IndexGather or IndexIntersect (with also's).
	access plan.Access
	also   []*plan.IndexScan
	// gathered: an intersection's first lookup (scan, a range or prefix)
	// has its entries gathered rather than its terms merged; gather is the
	// most entries of a keyspace it gathers of a range or prefix of also's
	// (plan.Physical.LeadGathered, Gather).
	gathered bool
	gather   int
	// hidden, unless nil, reports documents that must not be seen (past
	// their time to live, or hidden by a partition key delete), which the
	// source skips (Engine.goneFilter).
	hidden func(key, doc []byte) bool
	// blind: the lookups decide the query's filter and nothing else reads
	// a document (plan.Physical.Blind): each document found is an empty
	// object, none loaded. Where a part is read in order instead of
	// through its lookup (orderStream.instead), its documents are loaded
	// and only those filter (the query's own program, whose WHERE clause
	// the blind program lacks) matches count.
	blind  bool
	filter *exec.Program
	// wide, unless nil, is set when an intersection leaves a range or
	// prefix out of a part for its many terms (intersectStream.loose);
	// eager: the intersection's ranges and prefixes are opened at once
	// (intersectLater).
	wide  *atomic.Bool
	eager bool
}

// isWide reports whether an intersection left a range or prefix out of a
// part for its many terms.
func (s docSource) isWide() bool { return s.wide != nil && s.wide.Load() }

// gone reports whether doc, stored under item key key, must not be seen.
func (s docSource) gone(key, doc []byte) bool { return s.hidden != nil && s.hidden(key, doc) }

// docFunc receives a document, the span of item keys it was read from (its
// unit), and its key there (an item key in key order, its _rid sequence
// number as 8 bytes in creation order, its index entry's key in ORDER BY
// order); it returns false to stop. All slices are valid only during the
// call, except doc when the source ownsDocs.
type docFunc func(lo, hi, key, doc []byte) bool

// ownsDocs reports whether the documents s reads are copies that a docFunc
// may keep and that nothing else writes: those loaded through an order or
// index entry with replica.Reader.Get, which returns a copy (creation and
// index order). In key order they are the iterator's, valid only during
// the call.
func (s docSource) ownsDocs() bool { return !s.byID }

// maxGather bounds how many index entries a gathering lookup
// (plan.IndexGather) collects per keyspace to put them in creation order; a
// lookup finding more (the plan's statistics are out of date) reads the
// unit in order instead, which is then the cheaper plan anyway.
const maxGather = 1 << 16

// read calls fn with every document of the scope from position at (the zero
// token: the start), counting the documents it loads in *loaded and the
// index and order entries it reads in *entries.
//
// In creation order (all scopes but one logical partition) a document's
// key is its sequence number, 8 bytes big-endian, whether it was found by
// an order scan or an index lookup: both give the same order, and a
// continuation made by one resumes the other.
func (s docSource) read(ctx context.Context, at queryToken, loaded, entries *int, fn docFunc) error {
	if s.byID {
		units := s.units(at.Key)
		if s.desc {
			units = s.units(nil) // readByKey trims them to at.Key
			slices.Reverse(units)
		}
		for _, u := range units {
			if stopped, err := s.readUnit(ctx, u, 0, at.Key, loaded, entries, fn); err != nil || stopped {
				return err
			}
		}
		return nil
	}
	var units []unit
	if at.Hi != nil {
		// Resume inside the unit the token names, whatever the ranges are
		// now, then go on with today's units after it.
		units = append([]unit{s.resumed(replica.Span{Lower: at.Lo, Upper: at.Hi})}, s.units(at.Hi)...)
	} else {
		units = s.units(nil)
	}
	var from uint64
	if len(at.Key) == 8 {
		from = binary.BigEndian.Uint64(at.Key)
	}
	for i, u := range units {
		if i > 0 {
			from = 0
		}
		if stopped, err := s.readUnit(ctx, u, from, nil, loaded, entries, fn); err != nil || stopped {
			return err
		}
	}
	return nil
}

// readUnit calls fn with the documents of unit u: in key order from item
// key after on (inclusive) for a key-order source, else in creation order
// from sequence number from on, until fn returns false.
func (s docSource) readUnit(ctx context.Context, u unit, from uint64, after []byte, loaded, entries *int, fn docFunc) (stopped bool, err error) {
	if s.byID {
		return s.readByKey(ctx, u, after, loaded, fn)
	}
	streams := make([]seqStream, 0, len(u.parts))
	loose := make([]interface{ inexact() bool }, 0, len(u.parts))
	defer func() {
		for _, st := range streams {
			st.close()
		}
	}()
	for _, p := range u.parts {
		r, err := s.v.reader(p.ks)
		if err != nil {
			return false, err
		}
		var st seqStream
		if s.scan != nil {
			st, err = s.indexStream(ctx, r, p, from, entries)
		} else {
			st = newOrderStream(r, p, from, entries)
		}
		if err != nil {
			return false, err
		}
		// loose: the stream may find documents its lookups do not all
		// hold, a part read in order instead of through its lookup
		// (orderStream.instead) or an intersection without one of its
		// lookups (intersectStream.inexact); asked of each head.
		x, _ := st.(interface{ inexact() bool })
		loose = append(loose, x)
		if br, ok := r.(replica.BatchReader); ok && !s.blind {
			st = &prefetchStream{src: st, r: br}
		}
		streams = append(streams, st)
	}
	var key [8]byte
	// last is each stream's last sequence number read: a lookup on an
	// array's any-element wildcard (ARRAY_CONTAINS, a JOIN alias) with
	// several terms (an IN, a range) finds a document once per element
	// in it, the entries adjacent in sequence order; it is read once (a
	// differential run: COUNT(t) … JOIN t IN c.arr WHERE t > @p counted
	// 15 for 13).
	last := make([]uint64, len(streams))
	read := make([]bool, len(streams))
	for {
		i := -1
		for j, st := range streams {
			if !st.valid() {
				continue
			}
			if i < 0 || st.head().seq < streams[i].head().seq {
				i = j
			}
		}
		if i < 0 {
			break
		}
		h := streams[i].head()
		if read[i] && h.seq == last[i] {
			streams[i].advance()
			continue
		}
		last[i], read[i] = h.seq, true
		var doc []byte
		var err error
		blind := s.blind && (loose[i] == nil || !loose[i].inexact())
		if blind {
			doc = []byte{'{', '}'} // a copy of its own: docs are owned (ownsDocs)
		} else {
			doc, err = loadDoc(h.r, h.itemKey, h.doc, h.fetched)
		}
		match := true
		if err == nil && s.blind && !blind {
			match, err = s.filter.Match(ctx, doc)
		}
		switch {
		case errors.Is(err, replica.ErrNotFound):
			// The entry and the item come from one snapshot, so this
			// means a damaged store: skip it (Check reports it).
		case err != nil:
			return false, err
		default:
			if !blind {
				*loaded++
			}
			if match && !s.gone(h.itemKey, doc) {
				binary.BigEndian.PutUint64(key[:], h.seq)
				if !fn(u.hull.Lower, u.hull.Upper, key[:], doc) {
					return true, nil
				}
			}
		}
		streams[i].advance()
		if n := *loaded; n%256 == 255 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
	}
	for _, st := range streams {
		if err := st.err(); err != nil {
			return false, err
		}
	}
	return false, nil
}

// readByKey reads unit u's items in key order, from item key after on
// (inclusive; nil: the start); backwards, down from it, when s.desc.
func (s docSource) readByKey(ctx context.Context, u unit, after []byte, loaded *int, fn docFunc) (stopped bool, err error) {
	type piece struct {
		ks   uint64
		span replica.Span
	}
	var pieces []piece
	for _, p := range u.parts {
		for _, sp := range p.spans {
			switch {
			case after == nil:
			case s.desc:
				// Up to after itself: its successor, since no key lies
				// between a key and the key extended by 0x00.
				sp = intersect(sp, replica.Span{Lower: sp.Lower, Upper: append(bytes.Clone(after), 0)})
			default:
				sp = intersect(sp, replica.Span{Lower: after, Upper: sp.Upper})
			}
			if !sp.Empty() {
				pieces = append(pieces, piece{p.ks, sp})
			}
		}
	}
	slices.SortFunc(pieces, func(a, b piece) int { return bytes.Compare(a.span.Lower, b.span.Lower) })
	scan := replica.Scan
	if s.desc {
		slices.Reverse(pieces)
		scan = replica.ScanReverse
	}
	for _, pc := range pieces {
		r, err := s.v.reader(pc.ks)
		if err != nil {
			return false, err
		}
		err = scan(ctx, r, pc.span, func(k, v []byte) bool {
			*loaded++
			if !s.gone(k, v) && !fn(u.hull.Lower, u.hull.Upper, k, v) {
				stopped = true
				return false
			}
			return true
		})
		if err != nil || stopped {
			return stopped, err
		}
	}
	return false, nil
}

// seqEntry is an item found through an order or index entry: its _rid
// sequence number, its key and the snapshot holding it; and, once fetched
// ahead (prefetchStream), the item itself (nil: not found).
type seqEntry struct {
	seq     uint64
	itemKey []byte
	r       replica.Reader
	doc     []byte
	fetched bool
}

// prefetchStream reads ahead of a stream whose reader fetches each item
// with a round trip (replica.BatchReader: a keyspace another node holds),
// fetching the items of its next entries in one request: 16 first, then
// twice as many each time up to 256, so that a page that stops early has
// not read much ahead.
type prefetchStream struct {
	src    seqStream
	r      replica.BatchReader
	buf    []seqEntry
	n      int
	failed error
}

func (st *prefetchStream) fill() {
	if len(st.buf) > 0 || st.failed != nil {
		return
	}
	st.n = min(max(2*st.n, 16), 256)
	var keys [][]byte
	for len(keys) < st.n && st.src.valid() {
		h := st.src.head()
		h.itemKey = bytes.Clone(h.itemKey) // the source's may not outlive its advance
		st.buf = append(st.buf, h)
		keys = append(keys, h.itemKey)
		st.src.advance()
	}
	if len(keys) == 0 {
		return
	}
	docs, err := st.r.GetMany(keys)
	if err != nil {
		st.buf, st.failed = nil, err
		return
	}
	for i := range st.buf {
		st.buf[i].doc, st.buf[i].fetched = docs[i], true
	}
}

func (st *prefetchStream) valid() bool {
	st.fill()
	return len(st.buf) > 0
}
func (st *prefetchStream) head() seqEntry { return st.buf[0] }
func (st *prefetchStream) advance()       { st.buf = st.buf[1:] }
func (st *prefetchStream) close()         { st.src.close() }
func (st *prefetchStream) err() error {
	if st.failed != nil {
		return st.failed
	}
	return st.src.err()
}

// seqStream yields a part's items in sequence-number order.
type seqStream interface {
	valid() bool
	head() seqEntry
	advance()
	err() error
	close()
}

// orderStream reads a part's items through its keyspace's order entries,
// skipping those of other ranges sharing the keyspace.
type orderStream struct {
	p       part
	r       replica.Reader
	it      replica.Iter
	cur     seqEntry
	ok      bool
	entries *int
	failed  error
	// instead: read in place of a lookup that would hold too many
	// iterators or entries (mergeOf, indexStream), so every document of
	// the part, not only the lookup's: a blind read must filter them.
	instead bool
}

func (st *orderStream) inexact() bool { return st.instead }

// readInstead is newOrderStream in place of a lookup (orderStream.instead).
func readInstead(r replica.Reader, p part, from uint64, entries *int) *orderStream {
	st := newOrderStream(r, p, from, entries)
	st.instead = true
	return st
}

func newOrderStream(r replica.Reader, p part, from uint64, entries *int) *orderStream {
	st := &orderStream{p: p, r: r, it: r.NewIter(orderSpan(from), false), entries: entries}
	st.advance()
	return st
}

func (st *orderStream) valid() bool    { return st.ok }
func (st *orderStream) head() seqEntry { return st.cur }
func (st *orderStream) err() error {
	if st.failed != nil {
		return st.failed
	}
	return st.it.Err()
}
func (st *orderStream) close() { _ = st.it.Close() }

func (st *orderStream) advance() {
	st.ok = false
	for st.it.Next() {
		*st.entries++
		v := st.it.Value()
		if !st.p.holds(v) {
			continue
		}
		seq, err := entrySeq(st.it.Key())
		if err != nil {
			st.failed = err
			return
		}
		st.cur, st.ok = seqEntry{seq: seq, itemKey: v, r: st.r}, true
		return
	}
}

// sliceStream yields gathered entries, sorted by sequence number, read
// through r. hits may be shared (queryMemo.gathered): it is resliced,
// never written.
type sliceStream struct {
	hits []seqEntry
	r    replica.Reader
}

// newSliceStream streams hits from sequence number from on.
func newSliceStream(hits []seqEntry, r replica.Reader, from uint64) *sliceStream {
	n, _ := slices.BinarySearchFunc(hits, from, func(e seqEntry, seq uint64) int { return cmp.Compare(e.seq, seq) })
	return &sliceStream{hits: hits[n:], r: r}
}

func (st *sliceStream) valid() bool { return len(st.hits) > 0 }
func (st *sliceStream) head() seqEntry {
	e := st.hits[0]
	e.r = st.r
	return e
}
func (st *sliceStream) advance()   { st.hits = st.hits[1:] }
func (st *sliceStream) err() error { return nil }
func (st *sliceStream) close()     {}

// indexStream reads a part's items that the query's index lookup finds,
// from sequence number from on, as the plan says: one term streamed or
// several merged (each term's entries read from from on), or the entries gathered and sorted (up to maxGather, beyond
// which it reads the part in order instead).
func (s docSource) indexStream(ctx context.Context, r replica.Reader, p part, from uint64, entries *int) (seqStream, error) {
	if s.access != plan.IndexIntersect {
		return s.lookupStream(ctx, r, p, s.scan, s.access, from, entries)
	}
	access := plan.IndexMerge
	if s.gathered {
		access = plan.IndexGather
	}
	lead, err := s.lookupStream(ctx, r, p, s.scan, access, from, entries)
	if err != nil {
		return nil, err
	}
	return newIntersectStream(ctx, r, p, lead, s.also, from, s.eager, s.gather, s.wide, s.memo(), entries)
}

// memo is the engine's query memo, which keeps gathered entries for a
// query's next pages (queryMemo.gathered); nil when the source has no
// engine (tests).
func (s docSource) memo() *queryMemo {
	if s.e == nil {
		return nil
	}
	return &s.e.memo
}

// lookupStream streams a part's entries of scan from sequence number from
// on, in creation order, as access says: IndexPoint or IndexMerge (mergeOf:
// an equality's or IN's spans are a term each, a range's or prefix's terms
// are found by seeking), or IndexGather (gathered and sorted, at most
// maxGather, beyond which the part is read in order instead).
func (s docSource) lookupStream(ctx context.Context, r replica.Reader, p part, scan *plan.IndexScan, access plan.Access, from uint64, entries *int) (seqStream, error) {
	if access != plan.IndexGather {
		return mergeOf(ctx, r, p, scan, access == plan.IndexPoint || scan.Kind != "range" && scan.Kind != "prefix", from, entries)
	}
	hits, ok, err := s.memo().gathered(ctx, r, p, scan, 0, entries)
	if err != nil {
		return nil, err
	}
	if !ok {
		return readInstead(r, p, from, entries), nil
	}
	return newSliceStream(hits, r, from), nil
}

// gather reads the entries of scan's spans in r: the part's (and, for a
// match lookup, those whose terms its test passes) sorted by sequence
// number, and n, how many entries it read. With most above zero it stops
// (complete false) once it has read more than most entries; it stops too
// once the part's exceed maxGather.
func gather(ctx context.Context, r replica.Reader, p part, scan *plan.IndexScan, most int, entries *int) (hits []seqEntry, n int, complete bool, err error) {
	var g gathering
	limit := 0
	if most > 0 {
		limit = most + 1 // read one past most to tell "exactly most" from "more"
	}
	done, _, err := g.step(ctx, r, p, scan, limit, entries)
	if err != nil || !done || most > 0 && g.n > most {
		return nil, g.n, false, err
	}
	slices.SortFunc(g.hits, func(a, b seqEntry) int { return cmp.Compare(a.seq, b.seq) })
	return g.hits, g.n, true, nil
}

// gathering is a gather (gather) that can stop and go on: the entries it
// kept so far, unsorted, how many it read, and where it stands (the span
// of scan.Spans it reads, and the last key it read there).
type gathering struct {
	hits  []seqEntry
	n     int
	span  int
	after []byte
	size  int // the bytes of hits, for the query memo
}

// step reads on from where g stands until it has read limit entries in
// all (limit above zero) or every span (done). over reports that the
// part's entries exceed maxGather: the gather can never be done.
func (g *gathering) step(ctx context.Context, r replica.Reader, p part, scan *plan.IndexScan, limit int, entries *int) (done, over bool, err error) {
	for ; g.span < len(scan.Spans); g.span, g.after = g.span+1, nil {
		ts := scan.Spans[g.span]
		sp := indexSpan(ts.Lower, ts.Upper)
		if g.after != nil {
			sp.Lower = append(slices.Clip(g.after), 0) // the next key after it
		}
		stopped := false
		var failed error
		err := replica.Scan(ctx, r, sp, func(k, itemKey []byte) bool {
			if limit > 0 && g.n >= limit {
				stopped = true
				return false
			}
			*entries++
			g.n++
			g.after = append(g.after[:0], k...)
			seq, err := entrySeq(k)
			if err != nil {
				failed = err
				return false
			}
			if !p.holds(itemKey) || !matched(scan, k) {
				return true
			}
			if len(g.hits) == maxGather {
				over = true
				return false
			}
			g.hits = append(g.hits, seqEntry{seq: seq, itemKey: bytes.Clone(itemKey)})
			g.size += int(unsafe.Sizeof(seqEntry{})) + len(itemKey)
			return true
		})
		if err == nil {
			err = failed
		}
		if err != nil || over || stopped {
			return false, over, err
		}
	}
	return true, false, nil
}

// matched reports whether index entry key's term may satisfy scan's test
// (plan.IndexScan.Match): always without one, and for a term it cannot
// decode (the filter decides).
func matched(scan *plan.IndexScan, key []byte) bool {
	if scan.Match == nil {
		return true
	}
	v, err := index.TermValue(key[1:])
	return err != nil || scan.Match.Candidate(v)
}

// mergeOf streams a part's entries of scan's terms from sequence
// number from on, merged by sequence number: each term's entries are in
// sequence order already (index keys are term, seq), so a heap of one
// iterator per term, each positioned at its first entry at or after from,
// yields them in creation order with no sort, reading only as far as the
// page needs. A point lookup is the merge of one term; an IN lookup's
// spans are one term each; a range's or a
// prefix's terms are found by seeking from one term to the next (plan.Choose
// merges them only when a keyspace holds few).
//
// Only the streams with an entry are kept open, at most maxMergeStreams of
// them: an IN of 16,000 values held an iterator per value, found or not, and
// ten such queries took a server to 2.3 GB (a hostile-query hunt).
func mergeOf(ctx context.Context, r replica.Reader, p part, scan *plan.IndexScan, oneTerm bool, from uint64, entries *int) (seqStream, error) {
	m, fits, err := mergeTerms(ctx, r, p, scan, oneTerm, from, 0, entries)
	if err != nil {
		return nil, err
	}
	if !fits {
		// The plan's statistics (from a continuation) are out of date:
		// read the part in order instead, which yields the lookup's
		// documents in the same order, among the others (the filter drops
		// those).
		return readInstead(r, p, from, entries), nil
	}
	return m, nil
}

// mergeTerms is mergeOf without its fallback: it reports fits false (and
// no stream) when the merge would keep more than maxMergeStreams streams,
// or, with most above zero, when scan's spans hold more than most terms
// in the part's keyspace (found by seeking from term to term, whether the
// part holds their entries or not).
func mergeTerms(ctx context.Context, r replica.Reader, p part, scan *plan.IndexScan, oneTerm bool, from uint64, most int, entries *int) (m *mergeStream, fits bool, err error) {
	m = &mergeStream{}
	at := binary.BigEndian.AppendUint64(nil, from)
	// open opens term's stream and keeps it if it has an entry; it reports
	// whether to go on: false with no error when the merge would need more
	// than maxMergeStreams.
	opened := 0
	open := func(term, end []byte) (bool, error) {
		if opened++; opened%64 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		st := &termStream{orderStream: orderStream{p: p, r: r, entries: entries}, term: term, end: end}
		st.it = r.NewIter(replica.Span{Lower: append(bytes.Clone(term), at...), Upper: end}, false)
		if st.advance(); !st.ok {
			err := st.err()
			st.close()
			return err == nil, err
		}
		if len(m.all) == maxMergeStreams {
			st.close()
			return false, nil
		}
		m.all = append(m.all, st)
		m.h = append(m.h, st)
		return true, nil
	}
	if most > 0 && !oneTerm {
		// Find the terms before opening any: a lookup of more than most is
		// given up for the price of finding most+1.
		var terms []replica.Span
		for _, ts := range scan.Spans {
			sp := indexSpan(ts.Lower, ts.Upper)
			for lo := sp.Lower; ; {
				t, ok, err := firstTerm(r, replica.Span{Lower: lo, Upper: sp.Upper})
				if err != nil {
					return nil, false, err
				}
				if !ok {
					break
				}
				*entries++
				if len(terms) == most {
					return nil, false, nil
				}
				lo = replica.PrefixSpan(t).Upper
				terms = append(terms, replica.Span{Lower: t, Upper: lo})
			}
		}
		for _, t := range terms {
			if on, err := open(t.Lower, t.Upper); !on {
				m.close()
				return nil, false, err
			}
		}
	} else {
		for _, ts := range scan.Spans {
			sp := indexSpan(ts.Lower, ts.Upper)
			for lo := sp.Lower; ; {
				term, end := sp.Lower, sp.Upper
				if !oneTerm {
					t, ok, err := firstTerm(r, replica.Span{Lower: lo, Upper: sp.Upper})
					if err != nil {
						m.close()
						return nil, false, err
					}
					if !ok {
						break
					}
					*entries++
					term, end = t, replica.PrefixSpan(t).Upper
				}
				if on, err := open(term, end); !on {
					m.close()
					return nil, false, err
				}
				if oneTerm {
					break
				}
				lo = end
			}
		}
	}
	heap.Init(&m.h)
	if testHookMergeStreams != nil {
		testHookMergeStreams(len(m.all))
	}
	return m, true, nil
}

// intersectStream streams the sequence numbers that every one of several
// lookups (on different paths: plan.IndexIntersect) holds in a part, in
// creation order: each lookup's entries are merged by sequence number
// (mergeTerms), and a lookup behind the others skips ahead to the largest
// head, a step at a time for a few entries, then by seeking each of its
// terms' streams to that sequence number, so the work follows the
// smallest lookup: a zig-zag join.
//
// The first lookup is an equality or an IN, whose spans are one term
// each, as are the other equalities' and INs', or, when the query has
// none, the range or prefix of fewest entries, merged or gathered as the
// plan measured (lookupStream). A range or a prefix after the first is
// opened once the others have found a few documents (intersectLater): its
// entries gathered and sorted where the part's keyspace holds at most
// gather of them (plan.Physical.Gather), else its terms found by seeking from one to the
// next and merged; where the keyspace holds more than plan.MaxMergeTerms
// of them, the lookup is left out of the intersection (loose), and the
// query's next pages plan without it (docSource.wide, queryToken.Wide). A
// later page of the query opens them at once (eager). Until they are open,
// and without one, the stream finds a superset of the documents: a
// filtered query drops the others, and a blind one must load them
// (inexact).
type intersectStream struct {
	ctx     context.Context
	r       replica.Reader
	p       part
	entries *int
	subs    []seqStream
	ok      bool
	failed  error
	// pending are the ranges and prefixes not opened yet (intersectLater),
	// found counts the documents the stream has found.
	pending []*plan.IndexScan
	found   int
	loose   bool
	gather  int          // the most entries of a pending lookup gathered
	wide    *atomic.Bool // told of a range or prefix left out, unless nil
	memo    *queryMemo   // keeps what it gathers, unless nil
	// matches are the match lookups not opened yet (payMatches).
	matches []*pendingMatch
}

// pendingMatch is a match lookup of an intersection whose gather is under
// way: credit is the entries the lead's documents have paid for and the
// gather has not read yet.
type pendingMatch struct {
	scan   *plan.IndexScan
	g      gathering
	credit int
	// read and passed are the entries the gather has read, and kept, so
	// far (this page's or an earlier one's): σ is passed/read.
	read, passed int
}

// A match reads every string of its path in the keyspace, however few
// documents the other lookups find (an equality on an id finds one), and
// saves loading the documents it refuses. So it is gathered a step at a
// time as the intersection finds documents, each paying for
// plan.LoadCost·(1−σ) of its entries, σ the share of the strings read so
// far that passed its test (the most a completed gather could save per
// document, were the lead's documents like the path's strings), and joins
// the intersection once done. A selective match is gathered after the
// lead has found 1/LoadCost of the path's strings' worth of documents;
// an unselective one is paid little; and a match that is never done costs
// at most what its lead's documents cost again (LoadCost entries per
// document). matchStep is the fewest entries a step reads.
const matchStep = 64

// intersectSteps is how many entries a lookup behind the others steps
// through before it seeks instead.
const intersectSteps = 8

// newIntersectStream intersects lead, the first lookup's stream (opened
// by lookupStream), with others from sequence number from on; gather is
// the most entries of a keyspace it gathers of a range or prefix of
// others (plan.Physical.Gather).
func newIntersectStream(ctx context.Context, r replica.Reader, p part, lead seqStream, others []*plan.IndexScan, from uint64, eager bool, gather int, wide *atomic.Bool, memo *queryMemo, entries *int) (seqStream, error) {
	st := &intersectStream{ctx: ctx, r: r, p: p, entries: entries, gather: gather, wide: wide, memo: memo, subs: []seqStream{lead}}
	for _, scan := range others {
		if scan.Kind == "range" || scan.Kind == "prefix" {
			st.pending = append(st.pending, scan)
			continue
		}
		if scan.Match != nil {
			// Opened at once if a page gathered it whole already.
			m := &pendingMatch{scan: scan}
			hits, done, _, read, passed, err := memo.gatherPart(ctx, r, p, scan, &m.g, 0, entries)
			m.read, m.passed = read, passed
			if err != nil {
				st.close()
				return nil, err
			}
			if done {
				st.subs = append(st.subs, newSliceStream(hits, r, from))
			} else {
				st.matches = append(st.matches, m)
			}
			continue
		}
		sub, fits, err := mergeTerms(ctx, r, p, scan, true, from, 0, entries)
		if err != nil {
			st.close()
			return nil, err
		}
		if !fits {
			st.loose = true
			continue
		}
		st.subs = append(st.subs, sub)
	}
	if eager && len(st.pending) > 0 {
		if err := st.openPending(from); err != nil {
			st.close()
			return nil, err
		}
	}
	st.settle()
	return st, st.failed
}

// intersectLater is how many documents the equalities and INs of an
// intersection find in a part before its ranges and prefixes are opened:
// finding their terms takes a seek each, up to plan.MaxMergeTerms of them,
// more than loading a few documents costs (WHERE c.id = @id AND c.n > 1
// finds one).
const intersectLater = 8

// openPending opens the ranges and prefixes of the intersection at
// sequence number from: each one's entries gathered (at most
// st.gather), else a merge of its terms (at most plan.MaxMergeTerms),
// else none (loose).
func (st *intersectStream) openPending(from uint64) error {
	for _, scan := range st.pending {
		if hits, ok, err := st.memo.gathered(st.ctx, st.r, st.p, scan, max(st.gather, 1), st.entries); err != nil {
			return err
		} else if ok {
			st.subs = append(st.subs, newSliceStream(hits, st.r, from))
			continue
		}
		sub, fits, err := mergeTerms(st.ctx, st.r, st.p, scan, false, from, plan.MaxMergeTerms, st.entries)
		if err != nil {
			return err
		}
		if !fits {
			st.loose = true
			if st.wide != nil {
				st.wide.Store(true)
			}
			continue
		}
		st.subs = append(st.subs, sub)
	}
	st.pending = nil
	return nil
}

// inexact reports whether the stream's head may be a document that its
// lookups do not all hold: a lookup not opened yet (pending) or left out
// (loose), or the part read in order instead.
func (st *intersectStream) inexact() bool {
	if st.loose || len(st.pending) > 0 || len(st.matches) > 0 {
		return true
	}
	o, ok := st.subs[0].(*orderStream)
	return ok && o.instead
}

// seek moves lookup i's merge to its first entry at or after sequence
// number from.
func (st *intersectStream) seek(i int, from uint64) error {
	switch sub := st.subs[i].(type) {
	case *mergeStream:
		sub.seek(from)
		return sub.err()
	case *sliceStream:
		n, _ := slices.BinarySearchFunc(sub.hits, from, func(e seqEntry, seq uint64) int { return cmp.Compare(e.seq, seq) })
		sub.hits = sub.hits[n:]
		return nil
	}
	// An order read in place of the lookup (mergeTerms did not fit):
	// opened again at from.
	st.subs[i].close()
	st.subs[i] = readInstead(st.r, st.p, from, st.entries)
	return st.subs[i].err()
}

// settle moves the lookups forward until they all stand at one sequence
// number (ok), or one has no entry left.
func (st *intersectStream) settle() {
	st.ok = false
	for n := 0; ; n++ {
		var target uint64
		for _, sub := range st.subs {
			if !sub.valid() {
				st.failed = sub.err()
				return
			}
			target = max(target, sub.head().seq)
		}
		behind := false
		for i, sub := range st.subs {
			steps := 0
			for sub.valid() && sub.head().seq < target && steps < intersectSteps {
				sub.advance()
				steps++
			}
			if sub.valid() && sub.head().seq < target {
				if err := st.seek(i, target); err != nil {
					st.failed = err
					return
				}
			}
			if s := st.subs[i]; !s.valid() || s.head().seq != target {
				behind = true
			}
		}
		if !behind {
			st.ok = true
			return
		}
		if n%256 == 255 {
			if err := st.ctx.Err(); err != nil {
				st.failed = err
				return
			}
		}
	}
}

func (st *intersectStream) valid() bool    { return st.ok }
func (st *intersectStream) head() seqEntry { return st.subs[0].head() }
func (st *intersectStream) advance() {
	at := st.subs[0].head().seq
	st.subs[0].advance()
	if st.found++; len(st.pending) > 0 && st.found >= intersectLater {
		if err := st.openPending(at + 1); err != nil {
			st.ok, st.failed = false, err
			return
		}
	}
	if err := st.payMatches(at + 1); err != nil {
		st.ok, st.failed = false, err
		return
	}
	st.settle()
}

// payMatches credits each pending match with the document just found
// (see pendingMatch) and, once its credit makes a step (matchStep), gathers
// that many more of its entries; a match whose gather is done joins the
// intersection at sequence number from, one that can never be done
// (more than maxGather entries pass its test) is left out.
func (st *intersectStream) payMatches(from uint64) error {
	kept := st.matches[:0]
	for _, m := range st.matches {
		pay := plan.LoadCost
		if m.read > 0 {
			pay -= plan.LoadCost * m.passed / m.read
		}
		if m.credit += pay; m.credit < matchStep {
			kept = append(kept, m)
			continue
		}
		hits, done, over, read, passed, err := st.memo.gatherPart(st.ctx, st.r, st.p, m.scan, &m.g, m.credit, st.entries)
		m.credit, m.read, m.passed = 0, read, passed
		switch {
		case err != nil:
			return err
		case done:
			st.subs = append(st.subs, newSliceStream(hits, st.r, from))
		case over:
			st.loose = true
		default:
			kept = append(kept, m)
		}
	}
	st.matches = kept
	return nil
}
func (st *intersectStream) err() error {
	if st.failed != nil {
		return st.failed
	}
	for _, sub := range st.subs {
		if sub != nil {
			if err := sub.err(); err != nil {
				return err
			}
		}
	}
	return nil
}
func (st *intersectStream) close() {
	for _, sub := range st.subs {
		if sub != nil {
			sub.close()
		}
	}
}

// testHookMergeStreams, when set (by tests), is told how many streams a
// merge keeps open.
var testHookMergeStreams func(open int)

// maxMergeStreams bounds the iterators a merge opens per part: plan.Choose
// merges at most plan.MaxMergeTerms terms per keyspace, but the terms may
// have grown since the first page measured them, or a continuation may
// carry forged statistics.
const maxMergeStreams = 16 * plan.MaxMergeTerms

// firstTerm returns the term (with the index kind byte) of the first index
// entry in span, if any.
func firstTerm(r replica.Reader, span replica.Span) (term []byte, ok bool, err error) {
	it := r.NewIter(span, false)
	defer it.Close()
	if !it.Next() {
		return nil, false, it.Err()
	}
	k := it.Key()
	if len(k) < 9 || k[0] != kindIndex {
		return nil, false, errBadKey
	}
	return bytes.Clone(k[:len(k)-8]), true, nil
}

// termStream is one term's entries held by a part, in sequence order:
// the index keys of span term … end.
type termStream struct {
	orderStream
	term, end []byte
}

// seek opens the stream again at its first entry at or after sequence
// number from.
func (st *termStream) seek(from uint64) {
	_ = st.it.Close()
	st.it = st.r.NewIter(replica.Span{Lower: binary.BigEndian.AppendUint64(bytes.Clone(st.term), from), Upper: st.end}, false)
	st.advance()
}

func (st *termStream) advance() {
	st.ok = false
	for st.it.Next() {
		*st.entries++
		if !st.p.holds(st.it.Value()) {
			continue
		}
		seq, err := entrySeq(st.it.Key())
		if err != nil {
			st.failed = err
			return
		}
		st.cur, st.ok = seqEntry{seq: seq, itemKey: st.it.Value(), r: st.r}, true
		return
	}
}

// termHeap orders term streams by their head's sequence number.
type termHeap []*termStream

func (h termHeap) Len() int           { return len(h) }
func (h termHeap) Less(i, j int) bool { return h[i].cur.seq < h[j].cur.seq }
func (h termHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *termHeap) Push(x any)        { *h = append(*h, x.(*termStream)) }
func (h *termHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergeStream is the k-way merge of term streams (docSource.mergeStream).
type mergeStream struct {
	h   termHeap      // the streams with entries left
	all []*termStream // every stream, for errors and closing
}

func (m *mergeStream) valid() bool    { return len(m.h) > 0 }
func (m *mergeStream) head() seqEntry { return m.h[0].cur }

func (m *mergeStream) advance() {
	top := m.h[0]
	if top.advance(); top.ok {
		heap.Fix(&m.h, 0)
	} else {
		heap.Pop(&m.h)
	}
}

// seek moves the merge to its first entry at or after sequence number
// from: each term's stream behind it seeks there.
func (m *mergeStream) seek(from uint64) {
	for len(m.h) > 0 && m.h[0].cur.seq < from {
		top := m.h[0]
		if top.seek(from); top.ok {
			heap.Fix(&m.h, 0)
		} else {
			heap.Pop(&m.h)
		}
	}
}

func (m *mergeStream) err() error {
	for _, st := range m.all {
		if err := st.err(); err != nil {
			return err
		}
	}
	return nil
}

func (m *mergeStream) close() {
	for _, st := range m.all {
		st.close()
	}
}

// measure counts what plan.Choose needs to choose how to read lookup's
// entries over the scope in pages of page rows (plan.Stats): the most
// distinct terms in one keyspace, up to plan.MaxMergeTerms+1, found by
// seeking from term to term (and no further once a keyspace has more); then, only if there are more, each keyspace's
// items (its logical partitions' statistics entries) and the lookup's
// entries there, up to plan.EntryLimit+1. The entries it reads are counted
// in *entries (they are charged). Terms and entries of sibling ranges
// sharing a keyspace are counted too: the estimate is an upper bound. A
// match lookup (plan.IndexScan.Match) counts the entries whose terms it
// may match, reading every string entry of its path, not its terms. The
// entries it finds in a keyspace it reads whole are kept for the page's
// gathers (queryMemo.keep).
//
// With counted set (a scope of one logical partition, which plan.Choose
// reads through the index only when the lookup's entries are few beside
// the partition's items) it counts the entries and the scope's items
// whatever the terms.
//
// most, unless zero, bounds the entries it reads counting them, in all:
// one cut short reports at least most/plan.LoadCost+1 entries (reading
// them costs more than loading that many documents) and keeps nothing.
func (s docSource) measure(ctx context.Context, lookup *plan.IndexScan, page int, counted bool, most int, entries *int) (plan.Stats, error) {
	var st plan.Stats
	total := 0 // entries read counting, in all keyspaces
	parts := map[uint64][]replica.Span{}
	ksParts := map[uint64][]part{}
	var order []uint64
	for _, u := range s.units(nil) {
		for _, p := range u.parts {
			if _, ok := parts[p.ks]; !ok {
				order = append(order, p.ks)
			}
			parts[p.ks] = append(parts[p.ks], p.spans...)
			ksParts[p.ks] = append(ksParts[p.ks], p)
		}
	}
	readers := make([]replica.Reader, len(order))
	for i, ks := range order {
		r, err := s.v.reader(ks)
		if err != nil {
			return plan.Stats{}, err
		}
		readers[i] = r
		if lookup.Match != nil {
			st.Terms = plan.MaxMergeTerms + 1 // a match is never merged: its terms are not counted
		}
		if st.Terms > plan.MaxMergeTerms {
			continue // known already: Terms is the most of any keyspace
		}
		terms := 0
		for _, ts := range lookup.Spans {
			sp := indexSpan(ts.Lower, ts.Upper)
			for lo := sp.Lower; terms <= plan.MaxMergeTerms; {
				term, ok, err := firstTerm(r, replica.Span{Lower: lo, Upper: sp.Upper})
				if err != nil {
					return plan.Stats{}, err
				}
				if !ok {
					break
				}
				*entries++
				terms++
				lo = replica.PrefixSpan(term).Upper
			}
		}
		st.Terms = max(st.Terms, terms)
	}
	if st.Terms <= plan.MaxMergeTerms && !counted {
		return st, nil
	}
	for i, ks := range order {
		items, err := scopeItems(ctx, readers[i], parts[ks])
		if err != nil {
			return plan.Stats{}, err
		}
		// What it reads of a keyspace whose entries are few enough is what
		// a gather of each of its parts reads: kept (queryMemo.keep), so
		// that a page that gathers them reads none again.
		limit, n, read := plan.EntryLimit(lookup, items, page), 0, 0
		found := make([][]seqEntry, len(ksParts[ks]))
		var failed error
		cut := false
		for _, ts := range lookup.Spans {
			if n > limit || cut {
				break
			}
			err := replica.Scan(ctx, readers[i], indexSpan(ts.Lower, ts.Upper), func(k, itemKey []byte) bool {
				*entries++
				read++
				if total++; most > 0 && total > most {
					cut = true
					return false
				}
				if !matched(lookup, k) {
					return true
				}
				if n++; n > limit {
					return false
				}
				seq, err := entrySeq(k)
				if err != nil {
					failed = err
					return false
				}
				for j, p := range ksParts[ks] {
					if p.holds(itemKey) {
						found[j] = append(found[j], seqEntry{seq: seq, itemKey: bytes.Clone(itemKey)})
					}
				}
				return true
			})
			if err == nil {
				err = failed
			}
			if err != nil {
				return plan.Stats{}, err
			}
		}
		if n > limit {
			// This keyspace is scanned, so the query is.
			st.Entries, st.Items = n, items
			return st, nil
		}
		if cut {
			st.Entries, st.Items = max(st.Entries, n, most/plan.LoadCost+1), items
			return st, nil
		}
		for j, p := range ksParts[ks] {
			slices.SortFunc(found[j], func(a, b seqEntry) int { return cmp.Compare(a.seq, b.seq) })
			s.memo().keep(readers[i], p, lookup, found[j], read)
		}
		if i == 0 || n > st.Entries {
			st.Entries, st.Items = n, items
		}
	}
	return st, nil
}

// measureIntersect is measure, counted, for the intersection of lookup and
// others (plan.IndexIntersect): per keyspace, its items and the sequence
// numbers all the lookups hold there (read by the intersection itself), up
// to plan.GatherLimit+1; Entries and Items are those of the keyspace with
// the most, or the first past the limit, as measure's.
func (s docSource) measureIntersect(ctx context.Context, lookup *plan.IndexScan, others []*plan.IndexScan, page int, entries *int) (plan.Stats, error) {
	parts := map[uint64][]replica.Span{}
	var order []uint64
	for _, u := range s.units(nil) {
		for _, p := range u.parts {
			if _, ok := parts[p.ks]; !ok {
				order = append(order, p.ks)
			}
			parts[p.ks] = append(parts[p.ks], p.spans...)
		}
	}
	st := plan.Stats{Terms: 1, Counted: true}
	for i, ks := range order {
		r, err := s.v.reader(ks)
		if err != nil {
			return plan.Stats{}, err
		}
		items, err := scopeItems(ctx, r, parts[ks])
		if err != nil {
			return plan.Stats{}, err
		}
		limit, n := plan.GatherLimit(items, page), 0
		p := part{ks: ks, spans: parts[ks]}
		lead, err := s.lookupStream(ctx, r, p, lookup, plan.IndexMerge, 0, entries)
		if err != nil {
			return plan.Stats{}, err
		}
		is, err := newIntersectStream(ctx, r, p, lead, others, 0, false, plan.IntersectGather, nil, s.memo(), entries)
		if err != nil {
			return plan.Stats{}, err
		}
		for ; is.valid() && n <= limit; is.advance() {
			n++
		}
		err = is.err()
		is.close()
		if err != nil {
			return plan.Stats{}, err
		}
		if n > limit {
			st.Entries, st.Items = n, items
			return st, nil
		}
		if i == 0 || n > st.Entries {
			st.Entries, st.Items = n, items
		}
	}
	return st, nil
}

// covered reports whether every document of the scope has a term in scan's
// spans (those of an ORDER BY's path: a document has at most one there,
// its scalar), so that reading them in order finds every document. Per
// keyspace, it compares the scope's items (its logical partitions'
// statistics entries) with the entries whose items the scope holds,
// counted up to one more than the items; the entries it reads are counted
// in *entries (charged). More entries than items (stored by a release
// that accepted duplicate member names) count as not covered too.
func (s docSource) covered(ctx context.Context, scan *plan.IndexScan, entries *int) (bool, error) {
	var parts []part
	for _, u := range s.units(nil) {
		for _, p := range u.parts {
			i := slices.IndexFunc(parts, func(q part) bool { return q.ks == p.ks })
			if i < 0 {
				parts = append(parts, part{ks: p.ks})
				i = len(parts) - 1
			}
			parts[i].spans = append(parts[i].spans, p.spans...)
		}
	}
	for _, p := range parts {
		r, err := s.v.reader(p.ks)
		if err != nil {
			return false, err
		}
		items, err := scopeItems(ctx, r, p.spans)
		if err != nil {
			return false, err
		}
		var n int64
		for _, ts := range scan.Spans {
			err := replica.Scan(ctx, r, indexSpan(ts.Lower, ts.Upper), func(_, item []byte) bool {
				*entries++
				if p.holds(item) {
					n++
				}
				return n <= items
			})
			if err != nil {
				return false, err
			}
		}
		if n != items {
			return false, nil
		}
	}
	return true, nil
}

// dense reports whether the scope's entries in scan's spans (those of an
// ORDER BY's path, over one logical partition: plan.Physical.Probe) are
// dense enough in their keyspace's index to read the scope in that order:
// whether, reading the entries in order (backwards when desc), want of the
// scope's items, or all of them if fewer, are found within
// plan.ProbeBudget of the scope's item count. An empty scope is not dense
// (sorting it reads nothing). The entries it reads are counted in
// *entries (charged).
func (s docSource) dense(ctx context.Context, scan *plan.IndexScan, desc bool, want int, entries *int) (bool, error) {
	for _, u := range s.units(nil) {
		for _, p := range u.parts {
			r, err := s.v.reader(p.ks)
			if err != nil {
				return false, err
			}
			items, err := scopeItems(ctx, r, p.spans)
			if err != nil {
				return false, err
			}
			need := min(int64(want), items)
			if need <= 0 {
				return false, nil
			}
			found, all, err := probeEntries(ctx, r, p, scan, desc, need, plan.ProbeBudget(items), entries)
			if err != nil || (found < need && !all) {
				return false, err
			}
		}
	}
	return true, nil
}

// probeEntries reads scan's entries through r in order (backwards when
// desc), counting those whose items p holds, until it has found need of
// them or read budget entries; it returns how many it found, and whether
// it read all of them (an ordered read then reads no more than it did).
func probeEntries(ctx context.Context, r replica.Reader, p part, scan *plan.IndexScan, desc bool, need int64, budget int, entries *int) (found int64, all bool, err error) {
	spans := slices.Clone(scan.Spans)
	if desc {
		slices.Reverse(spans)
	}
	read := 0
	for _, ts := range spans {
		it := r.NewIter(scanSpan(scan, ts), desc)
		more := false
		for found < need && it.Next() {
			if read >= budget {
				more = true
				break
			}
			read++
			*entries++
			if p.holds(it.Value()) {
				found++
			}
		}
		err := it.Err()
		_ = it.Close()
		if err != nil {
			return found, false, err
		}
		if more {
			return found, false, nil
		}
		if found >= need {
			return found, false, nil
		}
		if err := ctx.Err(); err != nil {
			return found, false, err
		}
	}
	return found, true, nil
}

// scopeItems returns the items in spans (item-key spans of one keyspace,
// read through r): the sum of their logical partitions' statistics
// entries.
func scopeItems(ctx context.Context, r replica.Reader, spans []replica.Span) (int64, error) {
	var items int64
	for _, sp := range spans {
		var failed error
		err := replica.Scan(ctx, r, statsSpanOf(sp), func(_, v []byte) bool {
			ls, err := decodeStats(v)
			if err != nil {
				failed = err
				return false
			}
			items += ls.items
			return true
		})
		if err == nil {
			err = failed
		}
		if err != nil {
			return 0, err
		}
	}
	return items, nil
}

// statsSpanOf returns the span of the statistics entries of the logical
// partitions whose items lie in sp, a span of item keys: statistics keys
// are item keys' EPK and partition key under another kind.
func statsSpanOf(sp replica.Span) replica.Span {
	lo, hi := []byte{kindStats}, []byte{kindStats + 1}
	if len(sp.Lower) > 0 && sp.Lower[0] == kindItem {
		lo = append(lo, sp.Lower[1:]...)
	}
	if len(sp.Upper) > 0 && sp.Upper[0] == kindItem {
		hi = append([]byte{kindStats}, sp.Upper[1:]...)
	}
	return replica.Span{Lower: lo, Upper: hi}
}

// scanSpan is the store span of the entries of scan's term span ts: the
// range index's, or a composite index's (plan.IndexScan.Composite).
func scanSpan(scan *plan.IndexScan, ts index.Span) replica.Span {
	if scan.Composite != nil {
		return termSpan(kindComposite, ts.Lower, ts.Upper)
	}
	return indexSpan(ts.Lower, ts.Upper)
}

// readOrdered calls fn with the scope's documents that index scan finds,
// in the order of its terms (then of sequence numbers), backwards when desc,
// from position at: a document's key is its index entry's key. The
// keyspaces of the scope are read at once and merged by index key. A run
// of entries whose order their keys do not give (runOf) is read whole and
// sorted by the documents' values (readBucket).
func (s docSource) readOrdered(ctx context.Context, scan *plan.IndexScan, desc bool, at queryToken, loaded, entries *int, fn docFunc) error {
	// A position inside a run resumes that run's entries from their start:
	// they are sorted by value before they are read (bucket).
	resume := at.Key
	if b := runOf(scan, at.Key); b != nil {
		resume = b
	}
	var spans []replica.Span
	for _, ts := range scan.Spans {
		sp := scanSpan(scan, ts)
		switch {
		case at.Key == nil:
		case desc:
			sp = intersect(sp, replica.Span{Lower: sp.Lower, Upper: afterEntries(resume)})
		default:
			sp = intersect(sp, replica.Span{Lower: resume, Upper: sp.Upper})
		}
		if !sp.Empty() {
			spans = append(spans, sp)
		}
	}
	if desc {
		slices.Reverse(spans)
	}
	var streams []*orderedStream
	defer func() {
		for _, st := range streams {
			st.close()
		}
	}()
	for _, u := range s.units(nil) {
		for _, p := range u.parts {
			r, err := s.v.reader(p.ks)
			if err != nil {
				return err
			}
			i := slices.IndexFunc(streams, func(st *orderedStream) bool { return st.ks == p.ks })
			if i >= 0 {
				streams[i].p.spans = append(streams[i].p.spans, p.spans...)
				continue
			}
			st := &orderedStream{ks: p.ks, p: p, r: r, spans: spans, desc: desc, entries: entries}
			st.br, _ = r.(replica.BatchReader)
			streams = append(streams, st)
		}
	}
	for _, st := range streams {
		st.advance()
	}
	for n := 0; ; n++ {
		i := -1
		for j, st := range streams {
			if !st.ok {
				continue
			}
			if i < 0 {
				i = j
				continue
			}
			c := bytes.Compare(st.key, streams[i].key)
			if (!desc && c < 0) || (desc && c > 0) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		st := streams[i]
		if b := runOf(scan, st.key); b != nil {
			// A copy: st.key is the iterator's, which reading moves.
			stopped, err := s.readBucket(ctx, scan, desc, bytes.Clone(b), at, streams, loaded, entries, fn)
			if err != nil || stopped {
				return err
			}
			continue
		}
		if testHookOrderedEntry != nil {
			testHookOrderedEntry()
		}
		if !matched(scan, st.key) {
			// A match lookup's term its test refuses: not loaded.
			st.advance()
			continue
		}
		doc, err := loadDoc(st.r, st.item, st.doc, st.fetched)
		switch {
		case errors.Is(err, replica.ErrNotFound):
		case err != nil:
			return err
		default:
			*loaded++
			if !s.gone(st.item, doc) && !fn(nil, nil, st.key, doc) {
				return nil
			}
		}
		st.advance()
		if n%256 == 255 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	for _, st := range streams {
		if st.failed != nil {
			return st.failed
		}
	}
	return nil
}

// loadDoc returns the document of item key item read through r, or doc when
// fetched (prefetched with the entry: nil for not found); the error is
// replica.ErrNotFound for a missing one.
func loadDoc(r replica.Reader, item, doc []byte, fetched bool) ([]byte, error) {
	switch {
	case !fetched:
		return r.Get(item)
	case doc == nil:
		return nil, replica.ErrNotFound
	}
	return doc, nil
}

// runOf returns, when the entry key of scan's index lies in a run of
// entries whose order their keys do not give, the store-key prefix the
// run's entries share: a bounded string's bucket (boundedTermOf), or a
// composite term's up to its first inexact component (index.CompositeRun).
// Else nil.
func runOf(scan *plan.IndexScan, key []byte) []byte {
	if scan.Composite == nil {
		return boundedTermOf(key)
	}
	if len(key) < 1+2+8 || key[0] != kindComposite {
		return nil
	}
	n, exact, err := index.CompositeRun(key[1:len(key)-8], len(scan.Composite.Paths))
	if err != nil || exact {
		return nil
	}
	return key[:1+n]
}

// boundedTermOf returns, when index entry key's term is bounded
// (index.StringTermBytes), the store-key prefix of its bucket: kindIndex and
// the term without its hash, which the entries of every string with the
// same first bytes share (they are ordered by hash, not by value). Else nil.
func boundedTermOf(key []byte) []byte {
	if len(key) < 19 || key[0] != kindIndex || key[len(key)-18] != 0x00 || key[len(key)-17] != 0x03 {
		// A bounded term's string ends in 0x00 0x03 and its 8-byte hash,
		// before the entry's 8-byte sequence number; most keys are told
		// apart here, undecoded.
		return nil
	}
	n, bounded, err := index.BoundedTerm(key[1:])
	if err != nil || !bounded {
		return nil
	}
	return key[:1+n]
}

// afterEntries returns the smallest key above every key that starts with p
// (an index entry's key, or a run's prefix of one).
func afterEntries(p []byte) []byte { return replica.PrefixSpan(p).Upper }

// bucketEntry is an entry of a run read in ORDER BY order: its key, its
// document, and the document's value in the run's order (orderValue).
type bucketEntry struct {
	key, doc, value []byte
}

// maxBucketRound is the most entries of one bounded term that an ordered
// read sorts at a time, and maxBucketBytes the most bytes of their
// documents it holds: a term with more is read in rounds, each scanning
// all its entries for the next ones in order (readBucket).
const (
	maxBucketRound = 4096
	maxBucketBytes = 32 << 20
)

// readBucket reads the entries of the bucket b (a store-key prefix,
// boundedTermOf), at which the streams stand or which they have not
// reached, and calls fn with their documents in the order of their full
// values on scan's path (then of their keys; both backwards when desc):
// the bucket's terms order its strings by hash, not by value. A
// position at (a continuation) inside b resumes at its entry; if that
// entry is gone (its item deleted or changed since), after where its value
// (at.Val) and key put it. It reports whether fn stopped.
//
// The entries the streams hold are sorted at once when they are few (the
// common case: a long string's term holds it alone); a term with more
// than a round's worth is read in rounds, each scanning the whole term
// again for the next entries after the last one read, as a sort of the
// whole scope does (no more than a round's documents are held).
func (s docSource) readBucket(ctx context.Context, scan *plan.IndexScan, desc bool, b []byte, at queryToken, streams []*orderedStream, loaded, entries *int, fn docFunc) (bool, error) {
	sel := bucketSelect{desc: desc, limit: cmp.Or(s.e.bucketRound, maxBucketRound)}
	if bytes.HasPrefix(at.Key, b) {
		sel.after = &bucketEntry{key: at.Key, value: at.Val}
		sel.inclusive = true
		if len(at.Val) == maxTokenValue {
			// The continuation holds the value's first bytes alone; the
			// position's own entry, still there, has the rest.
			v, err := s.positionValue(scan, at.Key, streams)
			if err != nil {
				return false, err
			}
			// It is the position's only if it is still the value the
			// continuation was made from, whose sum it carries: a long
			// string's term holds the string's hash, but an array's or an
			// object's composite component only its tag, so a document
			// whose array changed, its first bytes kept, still had the
			// position's entry, and the page resumed after its new value,
			// passing over every row between (a bug hunt: six of ten rows
			// lost).
			if v != nil && bytes.HasPrefix(v, at.Val) && bytes.Equal(valueSum(v), at.ValSum) {
				sel.after.value = v
			} else {
				sel.cut = true
			}
		}
	}
	for _, st := range streams {
		for st.ok && bytes.HasPrefix(st.key, b) {
			if testHookOrderedEntry != nil {
				testHookOrderedEntry()
			}
			doc, err := loadDoc(st.r, st.item, st.doc, st.fetched)
			switch {
			case errors.Is(err, replica.ErrNotFound):
			case err != nil:
				return false, err
			default:
				*loaded++
				if !s.gone(st.item, doc) {
					sel.offer(bucketEntry{key: bytes.Clone(st.key), doc: doc, value: s.orderValue(scan, doc)})
				}
			}
			st.advance()
		}
		if st.failed != nil {
			return false, st.failed
		}
	}
	es, more := sel.take()
	for {
		for i, e := range es {
			if !fn(nil, nil, e.key, e.doc) {
				return true, nil
			}
			if i%256 == 255 {
				if err := ctx.Err(); err != nil {
					return false, err
				}
			}
		}
		if !more || len(es) == 0 {
			return false, nil
		}
		// The term holds more than a round: scan it again, in every
		// keyspace of the scope, for the entries after the last read.
		last := es[len(es)-1]
		sel = bucketSelect{desc: desc, limit: sel.limit, after: &last}
		if err := s.scanBucket(ctx, scan, b, &sel, loaded, entries); err != nil {
			return false, err
		}
		es, more = sel.take()
	}
}

// positionValue returns the whole value on scan's path of the document
// whose index entry is key, a continuation's position inside a bounded
// term, when that entry is still in one of the streams' keyspaces and its
// document still has the value the entry was made for (the term holds the
// value's hash); else nil.
func (s docSource) positionValue(scan *plan.IndexScan, key []byte, streams []*orderedStream) ([]byte, error) {
	for _, st := range streams {
		item, err := st.r.Get(key)
		switch {
		case errors.Is(err, replica.ErrNotFound):
			continue
		case err != nil:
			return nil, err
		case !st.p.holds(item):
			return nil, nil
		}
		doc, err := st.r.Get(item)
		switch {
		case errors.Is(err, replica.ErrNotFound):
			return nil, nil
		case err != nil:
			return nil, err
		case s.gone(item, doc):
			return nil, nil
		}
		if scan.Composite != nil {
			term, exact, err := s.c.Policy().CompositeOrder(doc, scan.Composite.Number)
			if err != nil || len(key) < 9 || !bytes.Equal(key[1:len(key)-8], term) {
				return nil, nil // changed since its entry was made
			}
			return exact, nil
		}
		v := stringAt(doc, scan.Path)
		if v == nil || !bytes.HasPrefix(key[1:], index.Term(scan.Path, index.StringValue(string(v)))) {
			return nil, nil // changed since its entry was made
		}
		return v, nil
	}
	return nil, nil
}

// scanBucket offers sel every entry of the bounded term b that the scope
// holds, reading each keyspace of the scope.
func (s docSource) scanBucket(ctx context.Context, scan *plan.IndexScan, b []byte, sel *bucketSelect, loaded, entries *int) error {
	seen := map[uint64]bool{}
	for _, u := range s.units(nil) {
		for _, p := range u.parts {
			if seen[p.ks] {
				continue
			}
			seen[p.ks] = true
			// Every part of the keyspace: its entries are filtered by the
			// spans of all the scope's parts there.
			var ps part
			ps.ks = p.ks
			for _, u2 := range s.units(nil) {
				for _, q := range u2.parts {
					if q.ks == p.ks {
						ps.spans = append(ps.spans, q.spans...)
					}
				}
			}
			r, err := s.v.reader(p.ks)
			if err != nil {
				return err
			}
			var failed error
			err = replica.Scan(ctx, r, replica.Span{Lower: b, Upper: afterEntries(b)}, func(key, item []byte) bool {
				*entries++
				if !ps.holds(item) {
					return true
				}
				doc, err := r.Get(item)
				switch {
				case errors.Is(err, replica.ErrNotFound):
					return true
				case err != nil:
					failed = err
					return false
				}
				*loaded++
				if !s.gone(item, doc) {
					sel.offer(bucketEntry{key: bytes.Clone(key), doc: doc, value: s.orderValue(scan, doc)})
				}
				return true
			})
			if err = cmp.Or(err, failed); err != nil {
				return err
			}
		}
	}
	return nil
}

// bucketSelect keeps the first limit entries of a bounded term, in
// readBucket's order, that come after a position: the next round's.
type bucketSelect struct {
	desc  bool
	limit int
	// after, when set, is the position: the last entry read (more rounds
	// follow it), or a continuation's (inclusive: its entry itself is
	// read; cut: its value is only the continuation's first bytes).
	after          *bucketEntry
	inclusive, cut bool
	es             []bucketEntry // sorted when taken
	bytes          int
	more           bool // an entry after the position was not kept
}

// compare orders entries as readBucket reads them.
func (sel *bucketSelect) compare(x, y bucketEntry) int {
	c := cmp.Or(bytes.Compare(x.value, y.value), bytes.Compare(x.key, y.key))
	if sel.desc {
		return -c
	}
	return c
}

// offer keeps e if it comes after the position and among the first
// entries after it.
func (sel *bucketSelect) offer(e bucketEntry) {
	if sel.after != nil && !sel.follows(e) {
		return
	}
	sel.es = append(sel.es, e)
	sel.bytes += len(e.doc)
	if len(sel.es) > 2*sel.limit || sel.bytes > 2*maxBucketBytes {
		sel.trim()
	}
}

// follows reports whether e comes after the position (at it, when
// inclusive and it is the position's own entry).
func (sel *bucketSelect) follows(e bucketEntry) bool {
	at := sel.after
	if bytes.Equal(e.key, at.key) {
		return sel.inclusive
	}
	v := e.value
	if sel.cut && len(v) > len(at.value) && bytes.Equal(v[:len(at.value)], at.value) {
		// The position's value is known only to its first bytes, which
		// e's share: whether e comes first is not known, and it is read
		// (it may be read twice, never missed).
		return true
	}
	c := cmp.Or(bytes.Compare(v, at.value), bytes.Compare(e.key, at.key))
	if sel.desc {
		return c < 0
	}
	return c > 0
}

// trim sorts the kept entries and keeps the first limit of them (and no
// more than maxBucketBytes of documents, at least one).
func (sel *bucketSelect) trim() {
	slices.SortFunc(sel.es, sel.compare)
	n, size := 0, 0
	for n < len(sel.es) && n < sel.limit && (n == 0 || size+len(sel.es[n].doc) <= maxBucketBytes) {
		size += len(sel.es[n].doc)
		n++
	}
	if n < len(sel.es) {
		sel.more = true
		clear(sel.es[n:])
		sel.es = sel.es[:n]
	}
	sel.bytes = size
}

// take returns the kept entries in order, and whether entries after them
// were not kept (another round must look for them).
func (sel *bucketSelect) take() ([]bucketEntry, bool) {
	sel.trim()
	return sel.es, sel.more
}

// valueSum is the sum a continuation carries of a value longer than
// maxTokenValue (queryToken.ValSum): the first 16 bytes of its SHA-256.
func valueSum(v []byte) []byte {
	if len(v) < maxTokenValue {
		return nil
	}
	sum := sha256.Sum256(v)
	return sum[:16]
}

// maxTokenValue bounds the value a continuation carries (queryToken.Val).
const maxTokenValue = 1024

// orderValue returns doc's value in the order of a run of scan's entries
// (runOf): the string at its path (a bounded string's bucket), or its exact
// key in a composite index (index.Policy.CompositeOrder); nil when there is
// none.
func (s docSource) orderValue(scan *plan.IndexScan, doc []byte) []byte {
	if scan.Composite == nil {
		return stringAt(doc, scan.Path)
	}
	_, exact, err := s.c.Policy().CompositeOrder(doc, scan.Composite.Number)
	if err != nil {
		return nil
	}
	return exact
}

// stringAt returns the string at path in doc (a JSON object), unescaped; nil
// when there is none (the item changed since its index entry was read).
func stringAt(doc []byte, path []string) []byte {
	v, err := fastjson.ParseBytes(doc)
	if err != nil {
		return nil
	}
	if v = v.Get(path...); v == nil || v.Type() != fastjson.TypeString {
		return nil
	}
	b, _ := v.StringBytes()
	return b
}

// testHookOrderedEntry, when set (by tests), runs after an ordered read
// found an index entry and before it loads the document.
var testHookOrderedEntry func()

// orderedStream walks one keyspace's index spans in order (or backwards),
// yielding the entries of the items its part holds.
type orderedStream struct {
	ks      uint64
	p       part
	r       replica.Reader
	spans   []replica.Span
	desc    bool
	it      replica.Iter
	next    int // the next span to open
	key     []byte
	item    []byte
	ok      bool
	entries *int
	failed  error

	// With a reader whose point reads cost a round trip
	// (replica.BatchReader), the items of the next entries are fetched
	// at once, as prefetchStream does: doc is the current entry's item
	// (nil: not found) when fetched is set.
	br      replica.BatchReader
	ahead   []orderedEntry
	n       int
	doc     []byte
	fetched bool
}

// orderedEntry is an entry an orderedStream read ahead, with its item.
type orderedEntry struct {
	key, item, doc []byte
}

func (st *orderedStream) advance() {
	if st.br == nil {
		st.advanceRaw()
		return
	}
	if len(st.ahead) == 0 && st.failed == nil {
		st.n = min(max(2*st.n, 16), 256)
		var keys [][]byte
		for len(keys) < st.n {
			if st.advanceRaw(); !st.ok {
				break
			}
			st.ahead = append(st.ahead, orderedEntry{key: bytes.Clone(st.key), item: bytes.Clone(st.item)})
			keys = append(keys, st.ahead[len(st.ahead)-1].item)
		}
		if len(keys) > 0 {
			docs, err := st.br.GetMany(keys)
			if err != nil {
				st.failed, st.ahead = err, nil
			}
			for i := range st.ahead {
				st.ahead[i].doc = docs[i]
			}
		}
	}
	if len(st.ahead) == 0 {
		st.ok = false
		return
	}
	e := st.ahead[0]
	st.ahead = st.ahead[1:]
	st.key, st.item, st.doc, st.fetched, st.ok = e.key, e.item, e.doc, true, true
}

// advanceRaw moves to the next entry the part holds.
func (st *orderedStream) advanceRaw() {
	st.ok = false
	for {
		if st.it == nil {
			if st.next >= len(st.spans) {
				return
			}
			st.it = st.r.NewIter(st.spans[st.next], st.desc)
			st.next++
		}
		for st.it.Next() {
			*st.entries++
			if st.p.holds(st.it.Value()) {
				st.key, st.item, st.ok = st.it.Key(), st.it.Value(), true
				return
			}
		}
		if err := st.it.Err(); err != nil {
			st.failed = err
			return
		}
		_ = st.it.Close()
		st.it = nil
	}
}

func (st *orderedStream) close() {
	if st.it != nil {
		_ = st.it.Close()
		st.it = nil
	}
}
