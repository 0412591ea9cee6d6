package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/fnv"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/query/exec"
	"github.com/partitadb/partita/internal/query/parse"
	"github.com/partitadb/partita/internal/query/plan"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/store"
	"github.com/partitadb/partita/internal/throughput"
)

// queryToken is the continuation of a query, and the position a page
// starts at. A streamed query (exec.Program.Streamable) resumes at a
// document: Key in the span [Lo, Hi) of item keys, after the first Rows rows
// of that document. Any other query is evaluated whole and resumes after
// Skip result rows.
type queryToken struct {
	Hash uint64 `json:"h"`
	Skip int    `json:"s,omitempty"`

	Lo   []byte `json:"l,omitempty"`
	Hi   []byte `json:"u,omitempty"`
	Key  []byte `json:"k,omitempty"`
	Rows int    `json:"r,omitempty"`
	// Done counts the rows the query produced before this position, for
	// OFFSET, LIMIT and TOP.
	Done int `json:"n,omitempty"`
	// Ordered marks a position in an index scan in ORDER BY order, where
	// Key is an index entry's key.
	Ordered bool `json:"o,omitempty"`
	// Sort is the position of a sorted query's last row (see sortedPage).
	Sort *exec.Cursor `json:"c,omitempty"`
}

func (q Query) hash() uint64 {
	h := fnv.New64a()
	h.Write([]byte(q.Text))
	for _, k := range slices.Sorted(maps.Keys(q.Params)) {
		h.Write([]byte{0})
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write(q.Params[k])
	}
	return h.Sum64()
}

// token decodes q's continuation (the zero token for none).
func (q Query) token() (queryToken, error) {
	tok := queryToken{Hash: q.hash()}
	if q.Continuation == "" {
		return tok, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(q.Continuation)
	var got queryToken
	if err != nil || json.Unmarshal(raw, &got) != nil || got.Hash != tok.Hash || got.Skip < 0 || got.Rows < 0 || got.Done < 0 {
		return queryToken{}, status.BadRequest("invalid continuation token for this query")
	}
	return got, nil
}

func (t queryToken) encode() string {
	raw, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(raw)
}

// QueryItems runs a query over a container's items within scope.
//
// A query not scoped to one logical partition needs EnableCrossPartition
// (else 400); if it also needs merging across partitions (ORDER BY,
// aggregates, GROUP BY, DISTINCT, TOP, OFFSET/LIMIT) it is refused with
// 400/1004 as Cosmos DB's gateway does, unless the engine runs with
// GatewayQueryFull.
//
// Documents are read in Cosmos DB's order: a physical partition's in
// creation (_rid) order, partitions in EPK order; one logical partition's in
// id order. A streamable query reads only as far as its page needs and
// resumes where it stopped; others are evaluated whole for each page.
func (e *Engine) QueryItems(ctx context.Context, db, coll string, scope Scope, q Query) (Page, error) {
	start := time.Now()
	c, err := e.container(db, coll)
	if err != nil {
		return Page{}, err
	}
	ast, prog, err := compile(q, exec.WithUDFs(e.udfLookup(c)))
	if err != nil {
		return Page{}, err
	}
	if err := plan.CheckOrderBy(ast, c.Policy()); err != nil {
		return Page{}, status.BadRequest("%v", err)
	}
	compiled := time.Now()
	// A filter that pins the partition key routes the query to that logical
	// partition, as the gateway does (protocol doc §6.2).
	if scope.PK == nil && scope.RangeID == "" {
		if pk, ok := plan.PartitionKey(ast, c.PK.Paths, q.Params); ok {
			scope.PK = pk
		}
	}
	r, err := resolveScope(c, scope)
	if err != nil {
		return Page{}, err
	}
	if scope.PK == nil && scope.RangeID == "" {
		// A filter that confines the query to a key prefix or a list of
		// keys leaves it cross-partition, but only the physical partitions
		// owning those keys need reading.
		if keys, ok := plan.PartitionKeys(ast, c.PK.Paths, q.Params); ok {
			if r, err = narrowScope(c, r, keys); err != nil {
				return Page{}, err
			}
		}
	}
	if err := e.admit(c, r.ranges...); err != nil {
		return Page{}, err
	}
	p, err := e.runQuery(ctx, c, ast, prog, r, scope, q, start, compiled)
	if err != nil {
		e.chargeFailed(c, 0, r.ranges...)
		return Page{}, err
	}
	e.charge(c, p.RU, r.ranges...)
	return p, nil
}

// runQuery is QueryItems once the query is compiled and its scope resolved.
func (e *Engine) runQuery(ctx context.Context, c *catalog.Container, ast *parse.Query, prog *exec.Program, r resolved, scope Scope, q Query, start, compiled time.Time) (Page, error) {
	cross := r.cross && scope.RangeID == ""
	if cross && !q.EnableCrossPartition {
		return Page{}, status.BadRequest("Cross partition query is required but disabled. Please set x-ms-documentdb-query-enablecrosspartition to true, specify x-ms-documentdb-partitionkey, or revise your query to avoid this exception.")
	}
	f := prog.Features()
	if cross && !e.cfg.GatewayQueryFull && (f.OrderBy || f.Aggregate || f.GroupBy || f.Distinct || f.Top || f.OffsetLimit) {
		// The refusal carries the query plan, which the JS SDK then runs
		// range by range (protocol doc §6.3).
		info, err := queryPlanJSON(c, ast, q.Params)
		if err != nil {
			return Page{}, err // a 400 naming what cannot be planned
		}
		refused := crossPartitionRefused()
		refused.Extra = string(info)
		return Page{}, refused
	}
	tok, err := q.token()
	if err != nil {
		return Page{}, err
	}
	lp := scope.PK != nil && len(scope.PK) == len(c.PK.Paths)
	src := docSource{e: e, c: c, r: r, byID: lp, expired: e.expiredFilter(c)}
	if c.IndexCurrent() {
		// One logical partition is read in id order, unless an equality or
		// IN lookup narrows it: a large logical partition (all of a day's
		// readings) is then not scanned for a few items.
		if scan, ok := plan.Index(ast, q.Params, c.Policy()); ok && (!lp || scan.Kind == "equality" || scan.Kind == "in") {
			src.scan, src.byID = scan, false
		}
	}
	if src.scan == nil && prog.OrderFree() {
		// An aggregate over the whole scope: read the items sequentially in
		// key order rather than by point reads in creation order.
		src.byID = true
	}
	run := queryRun{e: e, q: q, prog: prog, src: src, cross: cross, start: start}
	if !src.byID && c.IndexCurrent() {
		// An index that yields the ORDER BY order serves a query that
		// needs only its first rows, or that it filters best anyway.
		if o, desc, ok := plan.OrderedIndex(ast, q.Params, c.Policy()); ok && !f.GroupBy && !f.Aggregate && !f.Distinct {
			if _, take := prog.Window(); take >= 0 || src.scan == nil || src.scan.Kind == o.Kind {
				run.ordered, run.desc = o, desc
			}
		}
	}
	var p Page
	switch {
	case prog.Streamable() || run.ordered != nil:
		p, err = run.streamed(ctx, tok)
	case prog.Sortable():
		p, err = run.sortedPage(ctx, tok)
	default:
		p, err = run.whole(ctx, tok)
	}
	if err != nil {
		return Page{}, err
	}
	size := 0
	for _, it := range p.Items {
		size += len(it)
	}
	p.ContainerRID, p.Session, p.Loaded, p.Elapsed = c.RID, e.sessionFor(r.ranges), run.loaded, time.Since(start)
	p.Metrics = QueryMetrics{Entries: run.entries, LoadedBytes: run.loadedBytes, Compile: compiled.Sub(start), Load: run.loadTime}
	switch {
	case run.ordered != nil:
		p.Metrics.IndexPath = indexPathSpec(run.ordered.Path)
	case src.scan != nil:
		p.Metrics.IndexPath = indexPathSpec(src.scan.Path)
	}
	p.RU = throughput.QueryWorkCost(throughput.QueryWork{Entries: run.entries, Items: run.loaded, InBytes: run.loadedBytes,
		OutBytes: size, Partitions: len(r.ranges)})
	return p, nil
}

// docSource reads the documents of a query's scope in order.
type docSource struct {
	e    *Engine
	c    *catalog.Container
	r    resolved
	byID bool            // read the scope in key order (for one logical partition: id order)
	scan *plan.IndexScan // nil: no index lookup narrows the scope
	// expired, unless nil, reports documents past their time to live,
	// which the source skips.
	expired func(doc []byte) bool
}

// gone reports whether doc has expired (and must not be seen).
func (s docSource) gone(doc []byte) bool { return s.expired != nil && s.expired(doc) }

// docFunc receives a document, the span of item keys it was read from, and
// its key there (an item key, or an order key for creation order); it
// returns false to stop. All slices are valid only during the call.
type docFunc func(lo, hi, key, doc []byte) bool

// narrowScope restricts a container-wide scope r to the physical partitions
// owning keys (full keys, or one hierarchical prefix); the result is still
// cross-partition.
func narrowScope(c *catalog.Container, r resolved, keys []document.PartitionKey) (resolved, error) {
	if len(keys) == 1 && len(keys[0]) < len(c.PK.Paths) {
		n, err := resolveScope(c, Scope{PK: keys[0]})
		if err != nil {
			return resolved{}, err
		}
		n.cross = true
		return n, nil
	}
	var owners []partition.Range
	for _, k := range keys {
		loc, err := locate(c, k, "")
		if err != nil {
			return resolved{}, err
		}
		if !slices.ContainsFunc(owners, func(o partition.Range) bool { return o.ID == loc.rng.ID }) {
			owners = append(owners, loc.rng)
		}
	}
	slices.SortFunc(owners, func(a, b partition.Range) int { return bytes.Compare(a.Min, b.Min) })
	r.ranges = owners
	return r, nil
}

// spans returns the item-key spans of the scope that start at or after from,
// in order: one per physical partition the scope touches.
func (s docSource) spans(from []byte) []store.Span {
	var out []store.Span
	for _, rng := range s.r.ranges {
		sp := intersect(store.EPKSpan(s.c.Internal, rng.Min, rng.Max), s.r.span)
		if from != nil {
			sp = intersect(sp, store.Span{Lower: from, Upper: sp.Upper})
		}
		if bytes.Compare(sp.Lower, sp.Upper) < 0 {
			out = append(out, sp)
		}
	}
	return out
}

func intersect(a, b store.Span) store.Span {
	if bytes.Compare(b.Lower, a.Lower) > 0 {
		a.Lower = b.Lower
	}
	if bytes.Compare(b.Upper, a.Upper) < 0 {
		a.Upper = b.Upper
	}
	return a
}

// maxGather bounds how many index entries a multi-term index lookup (IN, a
// range, a prefix) collects per physical partition to put them in creation
// order; a lookup finding more reads the partition in order instead, which
// is then the cheaper plan anyway.
const maxGather = 1 << 16

// read calls fn with every document of the scope from position at (the zero
// token: the start), counting the documents it loads in *loaded and the
// index entries it reads in *entries.
//
// In creation order (all scopes but one logical partition) a document's
// key is its sequence number, 8 bytes big-endian, whether it was found by
// an order scan or an index lookup: both give the same order, and a
// continuation made by one resumes the other.
func (s docSource) read(ctx context.Context, at queryToken, loaded, entries *int, fn docFunc) error {
	if s.byID {
		sp := s.r.span
		if at.Key != nil {
			sp = intersect(sp, store.Span{Lower: at.Key, Upper: sp.Upper})
		}
		return s.e.data.Scan(ctx, sp, nil, func(k, v []byte) bool {
			*loaded++
			return s.gone(v) || fn(sp.Lower, sp.Upper, k, v)
		})
	}
	var spans []store.Span
	if at.Hi != nil {
		// Resume inside the span the token names (whatever the ranges are
		// now: a split or merge since does not move items), then go on with
		// today's ranges after it.
		spans = append([]store.Span{{Lower: at.Lo, Upper: at.Hi}}, s.spans(at.Hi)...)
	} else {
		spans = s.spans(nil)
	}
	var from uint64
	if len(at.Key) == 8 {
		from = binary.BigEndian.Uint64(at.Key)
	}
	for i, sp := range spans {
		if i > 0 {
			from = 0
		}
		if stopped, err := s.readSpan(ctx, sp, from, loaded, entries, fn); err != nil || stopped {
			return err
		}
	}
	return nil
}

// readSpan calls fn with the documents of one physical partition's span sp,
// in creation order from sequence number from on (in key order for a
// key-order source, then from is ignored), until fn returns false.
func (s docSource) readSpan(ctx context.Context, sp store.Span, from uint64, loaded, entries *int, fn docFunc) (stopped bool, err error) {
	if s.byID {
		err := s.e.data.Scan(ctx, sp, nil, func(k, v []byte) bool {
			*loaded++
			if !s.gone(v) && !fn(sp.Lower, sp.Upper, k, v) {
				stopped = true
				return false
			}
			return true
		})
		return stopped, err
	}
	var r spanReader = s.orderScan
	if s.scan != nil {
		r = s.indexScan
	}
	return r(ctx, sp, from, entries, func(seq uint64, itemKey []byte) (bool, error) {
		doc, err := s.e.data.Get(itemKey)
		if errors.Is(err, store.ErrNotFound) {
			return true, nil // deleted since the entry was read
		}
		if err != nil {
			return false, err
		}
		*loaded++
		if s.gone(doc) {
			return true, nil
		}
		var key [8]byte
		binary.BigEndian.PutUint64(key[:], seq)
		return fn(sp.Lower, sp.Upper, key[:], doc), nil
	})
}

// readOrdered calls fn with the scope's documents that index scan finds,
// in the order of its terms (then of sequence numbers), backwards when desc,
// from position at: a document's key is its index entry's key.
func (s docSource) readOrdered(ctx context.Context, scan *plan.IndexScan, desc bool, at queryToken, loaded, entries *int, fn docFunc) error {
	spans := make([]store.Span, 0, len(scan.Spans))
	for _, ts := range scan.Spans {
		sp := store.IndexSpan(s.c.Internal, ts.Lower, ts.Upper)
		switch {
		case at.Key == nil:
		case desc:
			sp = intersect(sp, store.Span{Lower: sp.Lower, Upper: append(bytes.Clone(at.Key), 0)})
		default:
			sp = intersect(sp, store.Span{Lower: at.Key, Upper: sp.Upper})
		}
		if bytes.Compare(sp.Lower, sp.Upper) < 0 {
			spans = append(spans, sp)
		}
	}
	scanFn := func(sp store.Span, f func(k, v []byte) bool) error { return s.e.data.Scan(ctx, sp, nil, f) }
	if desc {
		slices.Reverse(spans)
		scanFn = func(sp store.Span, f func(k, v []byte) bool) error { return s.e.data.ScanReverse(ctx, sp, f) }
	}
	for _, sp := range spans {
		stopped := false
		var failed error
		err := scanFn(sp, func(k, itemKey []byte) bool {
			*entries++
			if !s.r.span.Contains(itemKey) {
				return true
			}
			doc, err := s.e.data.Get(itemKey)
			if errors.Is(err, store.ErrNotFound) {
				return true
			}
			if err != nil {
				failed = err
				return false
			}
			*loaded++
			if s.gone(doc) {
				return true
			}
			if !fn(nil, nil, k, doc) {
				stopped = true
				return false
			}
			return true
		})
		if err == nil {
			err = failed
		}
		if err != nil || stopped {
			return err
		}
	}
	return nil
}

// spanReader calls emit, in sequence-number order, with the key of every
// item in span sp whose sequence number is from or later, until emit
// returns false (then stopped is true) or an error.
type spanReader func(ctx context.Context, sp store.Span, from uint64, entries *int, emit func(seq uint64, itemKey []byte) (bool, error)) (stopped bool, err error)

// orderScan reads a span's items through the container's order entries.
func (s docSource) orderScan(ctx context.Context, sp store.Span, from uint64, entries *int, emit func(uint64, []byte) (bool, error)) (bool, error) {
	os := store.OrderSpan(s.c.Internal)
	if from > 0 {
		os.Lower = store.OrderKey(s.c.Internal, from)
	}
	stopped := false
	var failed error
	err := s.e.data.Scan(ctx, os, nil, func(k, itemKey []byte) bool {
		*entries++
		if !sp.Contains(itemKey) {
			return true
		}
		seq, err := store.EntrySeq(k)
		if err == nil {
			var more bool
			if more, err = emit(seq, itemKey); err == nil && !more {
				stopped = true
				return false
			}
		}
		failed = err
		return err == nil
	})
	if err == nil {
		err = failed
	}
	return stopped, err
}

// indexScan reads a span's items that the query's index lookup finds. A
// single-term lookup streams its entries, already in sequence order; others
// gather and sort them, up to maxGather, beyond which it reads the span in
// order instead.
func (s docSource) indexScan(ctx context.Context, sp store.Span, from uint64, entries *int, emit func(uint64, []byte) (bool, error)) (bool, error) {
	type hit struct {
		seq uint64
		key []byte
	}
	var hits []hit
	stopped, tooMany := false, false
	var failed error
	for _, ts := range s.scan.Spans {
		err := s.e.data.Scan(ctx, store.IndexSpan(s.c.Internal, ts.Lower, ts.Upper), nil, func(k, itemKey []byte) bool {
			*entries++
			seq, err := store.EntrySeq(k)
			if err != nil {
				failed = err
				return false
			}
			if seq < from || !sp.Contains(itemKey) {
				return true
			}
			if s.scan.Point() {
				more, err := emit(seq, itemKey)
				failed, stopped = err, err == nil && !more
				return more && err == nil
			}
			if len(hits) == maxGather {
				tooMany = true
				return false
			}
			hits = append(hits, hit{seq, bytes.Clone(itemKey)})
			return true
		})
		if err == nil {
			err = failed
		}
		if err != nil || stopped || tooMany {
			if tooMany {
				return s.orderScan(ctx, sp, from, entries, emit)
			}
			return stopped, err
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Compare(a.seq, b.seq) })
	for _, h := range hits {
		more, err := emit(h.seq, h.key)
		if err != nil || !more {
			return !more, err
		}
	}
	return false, nil
}

// queryRun is one page of one query.
type queryRun struct {
	e           *Engine
	q           Query
	prog        *exec.Program
	src         docSource
	cross       bool
	start       time.Time
	loaded      int // documents read
	loadedBytes int // their size
	// entries counts the order and index entries read.
	entries int
	// loadTime is the time spent reading from storage.
	loadTime time.Duration
	// ordered, when set, is an index scan that reads documents in the
	// query's ORDER BY order (descending when desc).
	ordered *plan.IndexScan
	desc    bool
}

// read reads the query's documents from position at. The time spent in fn
// (evaluating) is not counted as load time.
//
// Reading and evaluating take turns with other queries (Engine.queries):
// the page waits for a slot before its first document and hands it on every
// few milliseconds.
func (run *queryRun) read(ctx context.Context, at queryToken, fn docFunc) error {
	t0 := time.Now()
	var inFn time.Duration
	tn := turn{g: run.e.queries}
	defer tn.end()
	var waitErr error
	counted := func(lo, hi, key, doc []byte) bool {
		if waitErr = tn.take(ctx); waitErr != nil {
			return false
		}
		run.loadedBytes += len(doc)
		t := time.Now()
		more := fn(lo, hi, key, doc)
		inFn += time.Since(t)
		return more
	}
	var err error
	if run.ordered != nil {
		err = run.src.readOrdered(ctx, run.ordered, run.desc, at, &run.loaded, &run.entries, counted)
	} else {
		err = run.src.read(ctx, at, &run.loaded, &run.entries, counted)
	}
	run.loadTime += time.Since(t0) - inFn
	if err == nil {
		err = waitErr
	}
	return err
}

// indexPathSpec writes an index path as indexing policies do: /a/"b c"/?.
func indexPathSpec(path []string) string {
	var b strings.Builder
	for _, seg := range path {
		b.WriteByte('/')
		if strings.ContainsAny(seg, "/\" \t") {
			b.WriteString(strconv.Quote(seg))
		} else {
			b.WriteString(seg)
		}
	}
	b.WriteString("/?")
	return b.String()
}

// streamed returns the page of a streamable query that starts at tok. It
// reads documents only until the page is full (one row more for a
// partition-scoped query, to know whether a continuation is due), or until
// the page's time is up. A page holds at least one document's rows, so a
// query always progresses.
func (run *queryRun) streamed(ctx context.Context, tok queryToken) (Page, error) {
	if (tok.Key != nil && tok.Ordered != (run.ordered != nil)) || tok.Sort != nil || tok.Skip != 0 {
		// The plan changed under the continuation (the indexing policy did).
		return Page{}, status.BadRequest("the continuation token is no longer valid for this query: the container's indexing policy changed; restart the query")
	}
	skip, take := run.prog.Window()
	limit := run.e.pageLimit(run.q.MaxItems)
	maxBytes := run.e.cfg.MaxPageBytes
	p := Page{Items: [][]byte{}}
	done, size := tok.Done, 0
	var next *queryToken // where the next page starts, if anywhere
	var lo, hi, key []byte
	rowIdx, skipRows, docs := 0, 0, 0
	finished := take >= 0 && done >= skip+take
	here := func(rows int) *queryToken {
		return &queryToken{Hash: tok.Hash, Lo: bytes.Clone(lo), Hi: bytes.Clone(hi), Key: bytes.Clone(key), Rows: rows, Done: done, Ordered: run.ordered != nil}
	}
	feed := func(yield func([]byte) bool) error {
		return run.read(ctx, tok, func(l, h, k, doc []byte) bool {
			if docs > 0 && time.Since(run.start) > run.e.cfg.QueryPageTime {
				lo, hi, key = l, h, k
				next = here(0)
				return false
			}
			docs++
			lo, hi, key = l, h, k
			rowIdx, skipRows = 0, 0
			if tok.Key != nil && bytes.Equal(k, tok.Key) {
				skipRows = tok.Rows
			}
			return yield(doc)
		})
	}
	var err error
	if !finished {
		stream := run.prog.Stream
		if run.ordered != nil {
			stream = run.prog.StreamOrdered
		}
		err = stream(ctx, feed, func(row []byte) bool {
			if rowIdx++; rowIdx <= skipRows {
				return true
			}
			if take >= 0 && done >= skip+take {
				finished = true
				return false
			}
			if done < skip {
				done++
				return true
			}
			if len(p.Items) >= limit || (len(p.Items) > 0 && size+len(row) > maxBytes) {
				next = here(rowIdx - 1) // a partition-scoped query's look-ahead row
				return false
			}
			done++
			p.Items = append(p.Items, bytes.Clone(row))
			size += len(row)
			if take >= 0 && done >= skip+take {
				finished = true
				return false
			}
			if run.cross && run.q.MaxItems > 0 && len(p.Items) >= limit {
				// The gateway does not look ahead on a full page of a
				// cross-partition query: the next page may be empty
				// (protocol doc §6.2).
				next = here(rowIdx)
				return false
			}
			return true
		})
	}
	if err != nil {
		return Page{}, translate(err)
	}
	if next != nil {
		p.Continuation = next.encode()
	}
	return p, nil
}

// maxSortedPage bounds the rows a sorted page holds, so a page's memory
// stays bounded when the client asks for unbounded pages (-1).
const maxSortedPage = 10000

// sortedPage returns the page of an ORDER BY query that no index serves in
// order (exec.Program.Sortable): it reads the whole scope but keeps only
// the rows of this page, those after the position of the previous page's
// last row (its sort keys, then the document's storage key, then its row
// index), so memory is bounded by the page and rows written between pages
// are neither lost nor repeated unless their sort keys moved. OFFSET rows
// are passed over in chunks of maxSortedPage.
func (run *queryRun) sortedPage(ctx context.Context, tok queryToken) (Page, error) {
	if tok.Key != nil || tok.Ordered || tok.Skip != 0 {
		return Page{}, status.BadRequest("the continuation token is no longer valid for this query: the container's indexing policy changed; restart the query")
	}
	ctx, cancel := context.WithTimeout(ctx, run.e.cfg.QueryMaxTime)
	defer cancel()
	feed := func(yield func(doc, tie []byte) bool) error {
		return run.read(ctx, queryToken{}, func(_, _, key, doc []byte) bool { return yield(doc, key) })
	}
	fetch := func(after *exec.Cursor, n int) ([]exec.SortedRow, error) {
		rows, err := run.prog.RunSortedPage(ctx, feed, after, n)
		switch {
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
			return nil, run.timedOut()
		case err != nil:
			return nil, translate(err)
		}
		return rows, nil
	}
	skip, take := run.prog.Window()
	done, after := tok.Done, tok.Sort
	p := Page{Items: [][]byte{}}
	for done < skip {
		chunk := min(skip-done, maxSortedPage)
		rows, err := fetch(after, chunk)
		if err != nil {
			return Page{}, err
		}
		if len(rows) == 0 {
			return p, nil
		}
		done, after = done+len(rows), &rows[len(rows)-1].At
		if len(rows) < chunk {
			return p, nil
		}
	}
	limit := min(run.e.pageLimit(run.q.MaxItems), maxSortedPage)
	if take >= 0 {
		if limit = min(limit, skip+take-done); limit <= 0 {
			return p, nil
		}
	}
	rows, err := fetch(after, limit+1) // one more: are there more?
	if err != nil {
		return Page{}, err
	}
	size, used := 0, 0
	for _, r := range rows[:min(len(rows), limit)] {
		if len(p.Items) > 0 && size+len(r.Row) > run.e.cfg.MaxPageBytes {
			break
		}
		p.Items = append(p.Items, r.Row)
		size += len(r.Row)
		done, after, used = done+1, &r.At, used+1
	}
	finished := take >= 0 && done >= skip+take
	full := len(p.Items) == run.e.pageLimit(run.q.MaxItems)
	if !finished && (used < len(rows) || (run.cross && full && run.q.MaxItems > 0)) {
		p.Continuation = queryToken{Hash: tok.Hash, Sort: after, Done: done}.encode()
	}
	return p, nil
}

func (run *queryRun) timedOut() *status.Error {
	return status.Newf(http.StatusRequestTimeout, "the query ran for longer than %v; queries that sort, group, aggregate or de-duplicate read their whole scope for every page: narrow it with a partition key or an indexed filter", run.e.cfg.QueryMaxTime)
}

// whole evaluates the query over the whole scope and returns the page of
// results after tok.Skip rows.
func (run *queryRun) whole(ctx context.Context, tok queryToken) (Page, error) {
	if tok.Key != nil || tok.Sort != nil {
		return Page{}, status.BadRequest("invalid continuation token for this query")
	}
	ctx, cancel := context.WithTimeout(ctx, run.e.cfg.QueryMaxTime)
	defer cancel()
	buffers, limit := run.prog.BuffersInput(), run.e.cfg.QueryMaxSortBytes
	var tooBig bool
	feed := func(yield func([]byte) bool) error {
		return run.read(ctx, queryToken{}, func(_, _, _, doc []byte) bool {
			if buffers && run.loadedBytes > limit {
				tooBig = true
				return false
			}
			return yield(doc)
		})
	}
	var rows [][]byte
	var err error
	if spans := run.src.spans(nil); run.prog.Parallel() && len(spans) > 1 {
		rows, err = run.parallel(ctx, spans)
	} else {
		rows, err = run.prog.Run(ctx, feed)
	}
	switch {
	case tooBig:
		return Page{}, status.BadRequest("the query must sort more than %d MiB of documents; add a TOP or LIMIT, or a filter on the indexed ORDER BY path", limit>>20)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return Page{}, run.timedOut()
	case err != nil:
		return Page{}, translate(err)
	}
	return run.e.page(rows, tok, run.q.MaxItems, run.cross), nil
}

// parallel evaluates a grouped query (exec.Program.Parallel) over spans,
// one physical partition each, reading and folding up to QueryWorkers of
// them at a time; the partial groups are merged into the result.
func (run *queryRun) parallel(ctx context.Context, spans []store.Span) ([][]byte, error) {
	type counts struct {
		loaded, entries, bytes int
		load                   time.Duration
	}
	cs := make([]counts, len(spans))
	sources := make([]func(func([]byte) bool) error, len(spans))
	for i, sp := range spans {
		sources[i] = func(yield func([]byte) bool) error {
			c := &cs[i]
			t0 := time.Now()
			var inFn time.Duration
			tn := turn{g: run.e.queries} // each worker takes its own turns
			defer tn.end()
			var waitErr error
			_, err := run.src.readSpan(ctx, sp, 0, &c.loaded, &c.entries, func(_, _, _, doc []byte) bool {
				if waitErr = tn.take(ctx); waitErr != nil {
					return false
				}
				c.bytes += len(doc)
				t := time.Now()
				more := yield(doc)
				inFn += time.Since(t)
				return more
			})
			c.load = time.Since(t0) - inFn
			if err == nil {
				err = waitErr
			}
			return err
		}
	}
	rows, err := run.prog.RunParallel(ctx, sources, run.e.cfg.QueryWorkers)
	for _, c := range cs {
		run.loaded += c.loaded
		run.entries += c.entries
		run.loadedBytes += c.bytes
		run.loadTime += c.load
	}
	return rows, err
}

// page cuts the page after tok.Skip rows out of a query's results.
// Partition-scoped queries get a continuation only when results remain;
// cross-partition ones whenever a page is full, as Cosmos DB's gateway does
// (protocol doc §6.2).
func (e *Engine) page(rows [][]byte, tok queryToken, maxItems int, cross bool) Page {
	limit := e.pageLimit(maxItems)
	start := min(tok.Skip, len(rows))
	end := start
	size := 0
	for end < len(rows) && end-start < limit && (end == start || size+len(rows[end]) <= e.cfg.MaxPageBytes) {
		size += len(rows[end])
		end++
	}
	p := Page{Items: rows[start:end]}
	full := end-start == limit
	if end < len(rows) || (cross && full && maxItems > 0) {
		tok.Skip = end
		p.Continuation = tok.encode()
	}
	return p
}
