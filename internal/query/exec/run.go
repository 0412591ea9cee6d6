package exec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/valyala/fastjson"
)

// ctxCheckEvery is how many documents (and, separately, how many joined rows) Run processes
// between checks of its context.
const ctxCheckEvery = 256

// runCtx is the per-Run state shared by all query levels.
type runCtx struct {
	ctx    context.Context
	docs   func(yield func(doc []byte) bool) error
	parser fastjson.Parser // reused across documents unless the query retains values
	now    time.Time       // for GetCurrentDateTime and friends
	ndocs  int
	nrows  int
	err    error // the first error; once set, every loop unwinds
	// retained is what the run keeps across rows (retain).
	retained int
	// rows is the caller's count of rows bound (WithRowCount), looked up
	// in ctx at the first row; nil when there is none.
	rows      *atomic.Int64
	rowsKnown bool
	// pause is the caller's WithPause function, looked up with rows.
	pause func()

	// pos is the current row's position among its document's rows (the
	// index of the element each FROM … IN and JOIN source of the outermost
	// query binds), kept when the caller asks for positions (StreamAt).
	pos RowPos
	// start is where the current document's rows begin (StreamAt), while
	// startLive: every level bound so far is at its start index. With
	// startAfter the row at start itself is passed over too.
	start      RowPos
	startLive  bool
	startAfter bool

	// rowKey is the key of the outermost query's row being emitted, when
	// its rows have keys (Program.Keyed): its group's, or its DISTINCT
	// value's encoding.
	rowKey []byte

	// curDoc and curRoot are the document being processed, while its bytes are valid (inside
	// the docs callback), so that SELECT * can copy the original text.
	curDoc  []byte
	curRoot *fastjson.Value
}

func (rc *runCtx) fail(err error) {
	if rc.err == nil {
		rc.err = err
	}
}

// tick counts a unit of work and checks the context every ctxCheckEvery units. It reports
// whether the run must stop.
func (rc *runCtx) tick(n *int) bool {
	if rc.err != nil {
		return true
	}
	if *n%ctxCheckEvery == 0 {
		if err := rc.ctx.Err(); err != nil {
			rc.fail(err)
			return true
		}
	}
	*n++
	return false
}

// countRow adds a bound row to the caller's count, if it keeps one, and
// calls the caller's pause every ctxCheckEvery rows.
func (rc *runCtx) countRow() {
	if !rc.rowsKnown {
		rc.rows, _ = rc.ctx.Value(rowCountKey{}).(*atomic.Int64)
		rc.pause, _ = rc.ctx.Value(pauseKey{}).(func())
		rc.rowsKnown = true
	}
	if rc.rows != nil {
		rc.rows.Add(1)
	}
	if rc.pause != nil && rc.nrows%ctxCheckEvery == 0 {
		rc.pause()
	}
}

type (
	rowCountKey struct{}
	pauseKey    struct{}
)

// WithPause returns ctx carrying pause, which every run under it calls once
// per ctxCheckEvery rows its FROM and JOIN sources bind, so that the caller
// can let other work run while one document's JOINs expand (a cross product
// of its arrays is evaluated without returning to the caller). pause must
// be safe for concurrent use: RunParallel's workers call it.
func WithPause(ctx context.Context, pause func()) context.Context {
	return context.WithValue(ctx, pauseKey{}, pause)
}

// WithRowCount returns ctx carrying n: every run under it adds to n one per
// row its FROM and JOIN sources bind before WHERE is evaluated — one per
// document without JOINs, the product of the joined arrays' lengths with
// them — so that the caller can charge for the work a JOIN's cross
// product does, which the documents read do not show. Runs in parallel
// add to it concurrently.
func WithRowCount(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, rowCountKey{}, n)
}

// env holds the variable bindings of a run: one slot per alias of every query level.
type env struct {
	slots  []value
	stack  []value // function arguments
	groups []value // the GROUP BY values of the group being projected
	aggs   []value // the aggregate results of the group being projected
	rc     *runCtx
}

// Run evaluates the program over docs, each a JSON document (for example an item with its
// system properties), and returns the result rows as JSON: raw values for SELECT VALUE,
// objects otherwise. SELECT * (and SELECT VALUE c) return each document's own bytes when
// streaming, and an equivalent re-encoding after ORDER BY. The caller owns the result.
//
// docs must call yield once per document until yield returns false, and return nil or the
// error that stopped it, which Run returns. Run stops reading early once TOP or LIMIT is
// satisfied (without ORDER BY). It checks ctx every 256 documents and returns ctx.Err() if
// it is done. A document that is not valid JSON fails the run with a non-*Error error.
func (p *Program) Run(ctx context.Context, docs func(yield func(doc []byte) bool) error) ([][]byte, error) {
	rows, _, err := p.run(ctx, docs, false)
	return rows, err
}

// RowKey identifies a row of a Keyed program among its rows: a hash of its
// group's key or of its DISTINCT value.
type RowKey [16]byte

func rowKeyOf(k []byte) RowKey {
	s := sha256.Sum256(k)
	return RowKey(s[:16])
}

// Keyed reports whether each result row of the program has a key no other
// row of the same run has (RunKeyed): its rows are DISTINCT, or one per
// group of a GROUP BY. A position after a row's key means the same however
// many rows before it were added or removed since, where a count of rows
// does not (a concurrency hunt: a paged DISTINCT or GROUP BY skipped a row
// when an item before the page's end was deleted).
func (p *Program) Keyed() bool {
	q := p.q
	return q.distinct || (q.grouped && len(q.groupBy) > 0)
}

// KeysOrderFree reports whether a Keyed program's rows have no order of
// their own (no ORDER BY): a caller may return them in the order of their
// keys, which rows added or removed elsewhere in the result never change.
func (p *Program) KeysOrderFree() bool { return p.Keyed() && len(p.q.orderBy) == 0 }

// RunKeyed is Run that also returns each row's key, for a Keyed program
// (else the keys are nil).
func (p *Program) RunKeyed(ctx context.Context, docs func(yield func(doc []byte) bool) error) ([][]byte, []RowKey, error) {
	return p.run(ctx, docs, p.Keyed())
}

func (p *Program) run(ctx context.Context, docs func(yield func(doc []byte) bool) error, keyed bool) ([][]byte, []RowKey, error) {
	rc := &runCtx{ctx: ctx, docs: docs, now: p.now()}
	e := &env{slots: make([]value, p.nslots), rc: rc}
	out := [][]byte{}
	var keys []RowKey
	p.q.exec(e, func(v value) bool {
		if rc.curDoc != nil && v.j != nil && v.j == rc.curRoot {
			out = append(out, slices.Clone(rc.curDoc))
		} else {
			out = append(out, appendJSON(nil, v))
		}
		if keyed {
			keys = append(keys, rowKeyOf(rc.rowKey))
		}
		return true
	})
	if rc.err != nil {
		return nil, nil, rc.err
	}
	return out, keys, nil
}

// Match reports whether doc passes the query's WHERE clause, with the FROM alias bound to
// the whole document (true when there is no WHERE). It ignores the projection and the other
// clauses. It returns an *Error if the query's FROM is not a plain alias (FROM c or
// FROM root r) or it has JOINs, a non-*Error error if doc is not valid JSON, and ctx's
// error when ctx ends before the WHERE clause is evaluated.
// Match is safe for concurrent use.
func (p *Program) Match(ctx context.Context, doc []byte) (bool, error) {
	q := p.q
	if q.from == nil || q.from.in || q.from.sub != nil || len(q.joins) > 0 {
		return false, &Error{Msg: "the query cannot be used as a document filter"}
	}
	if q.where == nil {
		return true, nil
	}
	parser := p.pool.Get()
	defer p.pool.Put(parser)
	root, err := parser.ParseBytes(doc)
	if err != nil {
		return false, fmt.Errorf("exec: parse document: %w", err)
	}
	rc := &runCtx{ctx: ctx, now: p.now()}
	e := &env{slots: make([]value, p.nslots), rc: rc}
	v := fromJSON(root)
	e.slots[q.rootSlot] = v
	if bound := q.from.path(e); bound.k != kUndef {
		e.slots[q.from.slot] = bound
	} else {
		return false, nil
	}
	ok := q.where(e).isTrue()
	return ok, rc.err
}

// exec runs q with the outer bindings already in e and sends each result row to emit until
// emit returns false. Errors are recorded in e.rc.
func (q *cquery) exec(e *env, emit func(value) bool) {
	// What this evaluation keeps (its groups, DISTINCT values, buffered
	// rows) is garbage once it returns: a subquery evaluated for every row
	// of its outer query is charged for one evaluation at a time.
	defer func(n int) { e.rc.retained = n }(e.rc.retained)
	if q.grouped {
		q.execGrouped(e, emit)
		return
	}
	if len(q.orderBy) == 0 {
		lim := q.newLimiter(e.rc)
		if lim.done() {
			return
		}
		q.forRows(e, func() bool {
			v := q.proj(e)
			if v.k == kUndef {
				return true
			}
			return lim.push(v, emit)
		})
		return
	}
	// With TOP or LIMIT only the first rows in sort order matter: prune the buffer to them
	// now and then, so memory stays proportional to the limit, not to the input.
	need := q.sortedRowsNeeded()
	var rows []sortRow
	q.forRows(e, func() bool {
		v := q.proj(e)
		if v.k == kUndef {
			return true
		}
		keys := make([]value, len(q.orderBy))
		for i, o := range q.orderBy {
			keys[i] = o.fn(e)
		}
		size := rowSize(v, keys)
		if !e.rc.retain(size, "ORDER BY's rows") {
			return false
		}
		rows = append(rows, sortRow{keys: keys, v: v, size: size})
		if need >= 0 && len(rows) >= 2*need+64 {
			q.sortRows(rows)
			for _, r := range rows[need:] {
				e.rc.retained -= r.size
			}
			clear(rows[need:])
			rows = rows[:need]
		}
		return true
	})
	q.emitSorted(e, rows, emit)
}

// sortedRowsNeeded returns how many rows, in sort order, can reach the output, or -1 if all
// can. DISTINCT makes it unknowable (duplicates do not count).
func (q *cquery) sortedRowsNeeded() int {
	if q.distinct {
		return -1
	}
	switch {
	case q.limit >= 0 && q.topN >= 0:
		return q.offset + min(q.limit, q.topN)
	case q.limit >= 0:
		return q.offset + q.limit
	}
	return q.topN
}

// sortRows sorts rows by the ORDER BY keys, stably: rows with equal keys keep input order.
func (q *cquery) sortRows(rows []sortRow) {
	slices.SortStableFunc(rows, func(a, b sortRow) int {
		for i, o := range q.orderBy {
			if c := compareValues(a.keys[i], b.keys[i]); c != 0 {
				if o.desc {
					return -c
				}
				return c
			}
		}
		return bytes.Compare(a.rk, b.rk) // 0 unless the rows are keyed
	})
}

type sortRow struct {
	keys []value
	v    value
	size int // what it retains (rowSize)
	// rk is the row's key for the outermost query of a Keyed program (its
	// group's, or its DISTINCT value's encoding): ties of the ORDER BY are
	// ordered by it, so that a row's place does not depend on the order the
	// documents came in, and a page resumes after a row's key exactly.
	rk []byte
}

// rowSize is what a buffered row retains beyond the documents it refers to
// (which the engine bounds as it reads them): the values built for it.
func rowSize(v value, keys []value) int {
	n := 48 + builtSize(v)
	for _, k := range keys {
		n += 16 + builtSize(k)
	}
	return n
}

// builtSize is sizeOf for a value the query built, 16 for a reference to a
// document's value.
func builtSize(v value) int {
	if v.j != nil {
		return 16
	}
	return sizeOf(v, maxRetainedBytes)
}

func (q *cquery) emitSorted(e *env, rows []sortRow, emit func(value) bool) {
	if e.rc.err != nil {
		return
	}
	if q.top && q.distinct {
		for i := range rows {
			if rows[i].rk == nil {
				rows[i].rk = appendKey(nil, rows[i].v)
			}
		}
	}
	q.sortRows(rows)
	lim := q.newLimiter(e.rc)
	for _, r := range rows {
		if q.top && r.rk != nil {
			e.rc.rowKey = r.rk
		}
		if lim.done() || !lim.push(r.v, emit) {
			return
		}
	}
}

// forRows binds every combination of the FROM and JOIN sources that passes WHERE and calls
// fn for each until fn returns false. It reports whether the caller should go on.
func (q *cquery) forRows(e *env, fn func() bool) bool {
	rc := e.rc
	joined := func() bool { return q.joinRows(e, 0, fn) }
	switch {
	case q.from == nil:
		return q.joinRows(e, 0, fn)
	case q.top && q.from.sub == nil:
		err := rc.docs(func(doc []byte) bool {
			if rc.tick(&rc.ndocs) {
				return false
			}
			p := &rc.parser
			if q.retain {
				p = new(fastjson.Parser) // values from this document outlive it
			}
			root, err := p.ParseBytes(doc)
			if err != nil {
				rc.fail(fmt.Errorf("exec: parse document: %w", err))
				return false
			}
			e.slots[q.rootSlot] = fromJSON(root)
			rc.curDoc, rc.curRoot = doc, root
			cont := q.bindAt(e, q.from, 0, joined)
			rc.curDoc, rc.curRoot = nil, nil
			return cont && rc.err == nil
		})
		if err != nil {
			rc.fail(err)
		}
		return rc.err == nil
	default:
		return q.bind(e, q.from, joined)
	}
}

// bind binds src's alias to each of its values in turn and calls fn, until fn returns false.
// It reports whether the caller should go on.
func (q *cquery) bind(e *env, src *csource, fn func() bool) bool {
	return q.bindAt(e, src, -1, fn)
}

// bindAt is bind for the source at level depth of the outermost query's rows
// (0 its FROM, i+1 its JOIN i), which records the element's index in
// rc.pos and begins at rc.start's index while rc.startLive; depth -1 (a
// subquery's sources) does neither.
func (q *cquery) bindAt(e *env, src *csource, depth int, fn func() bool) bool {
	rc := e.rc
	if depth >= len(rc.pos) {
		depth = -1
	}
	idx := 0
	// at binds the element of index idx and calls fn, or passes it over
	// when it lies before the start.
	at := func() bool {
		defer func() { idx++ }()
		if depth < 0 {
			return fn()
		}
		live := rc.startLive
		if live {
			switch st := rc.start[depth]; {
			case idx < st:
				return true
			case idx > st:
				rc.startLive = false
			}
		}
		rc.pos[depth] = idx
		cont := fn()
		if live {
			rc.startLive = false // the elements after this one are past the start
		}
		return cont
	}
	if src.sub != nil {
		cont := true
		src.sub.exec(e, func(v value) bool {
			e.slots[src.slot] = v
			cont = at()
			return cont
		})
		return cont && e.rc.err == nil
	}
	v := src.path(e)
	if !src.in {
		if v.k == kUndef {
			return true
		}
		e.slots[src.slot] = v
		return at()
	}
	if v.k != kArr {
		return true
	}
	cont := true
	v.each(func(_ string, el value) bool {
		e.slots[src.slot] = el
		cont = at()
		return cont
	})
	return cont
}

func (q *cquery) joinRows(e *env, i int, fn func() bool) bool {
	if i == len(q.joins) {
		if q.top && e.rc.startLive {
			// The row at the start: the first of the document's rows to
			// evaluate, or the last one evaluated before (startAfter).
			e.rc.startLive = false
			if e.rc.startAfter {
				return true
			}
		}
		if e.rc.tick(&e.rc.nrows) {
			return false
		}
		e.rc.countRow()
		if q.where != nil && !q.where(e).isTrue() {
			return true
		}
		return fn()
	}
	depth := -1
	if q.top {
		depth = i + 1
	}
	return q.bindAt(e, q.joins[i], depth, func() bool { return q.joinRows(e, i+1, fn) })
}

// limiter applies DISTINCT, OFFSET, LIMIT and TOP, in that order, to a stream of rows.
type limiter struct {
	rc   *runCtx // charged for seen; nil: not charged
	seen map[string]struct{}
	key  []byte
	skip int
	left int // rows still to emit; -1 for no limit
	// top: the outermost query's, whose DISTINCT keys are its rows' keys
	// (runCtx.rowKey).
	top bool
}

func (q *cquery) newLimiter(rc *runCtx) *limiter {
	l := &limiter{rc: rc, skip: q.offset, left: q.limit, top: q.top}
	if q.topN >= 0 && (l.left < 0 || q.topN < l.left) {
		l.left = q.topN
	}
	if q.distinct {
		l.seen = make(map[string]struct{})
	}
	return l
}

func (l *limiter) done() bool { return l.left == 0 }

// push passes v to emit unless it is a duplicate or skipped, and reports whether more rows
// are wanted.
func (l *limiter) push(v value, emit func(value) bool) bool {
	if l.seen != nil {
		l.key = appendKey(l.key[:0], v)
		if _, dup := l.seen[string(l.key)]; dup {
			return true
		}
		if l.rc != nil && !l.rc.retain(len(l.key)+48, "DISTINCT's values") {
			return false
		}
		l.seen[string(l.key)] = struct{}{}
		if l.top && l.rc != nil {
			l.rc.rowKey = l.key
		}
	}
	if l.skip > 0 {
		l.skip--
		return true
	}
	if l.left > 0 {
		l.left--
	}
	return emit(v) && l.left != 0
}

type aggKind uint8

const (
	aggCount aggKind = iota + 1
	aggSum
	aggAvg
	aggMin
	aggMax
	aggCountIf  // rows where the argument is true
	aggMakeList // array of the defined values
	aggMakeSet  // array of the distinct defined values
)

type aggSpec struct {
	kind aggKind
	arg  evalFn
}

// aggState accumulates one aggregate of one group. Undefined inputs are ignored.
type aggState struct {
	n, sum float64
	bad    bool // SUM/AVG saw a non-number, MIN/MAX an array or object: the result is undefined
	best   value
	list   []value         // MAKELIST, MAKESET
	seen   map[string]bool // MAKESET: canonical keys of list
}

// rc, when not nil, is charged for what MAKELIST and MAKESET keep.
func (s *aggState) add(rc *runCtx, k aggKind, v value) {
	if v.k == kUndef || s.bad {
		return
	}
	switch k {
	case aggCount:
		s.n++
	case aggCountIf:
		if v.isTrue() {
			s.n++
		}
	case aggMakeList:
		if rc != nil && !rc.retain(sizeOf(v, maxValueBytes)+16, "MAKELIST's values") {
			return
		}
		s.list = append(s.list, owned(v))
	case aggMakeSet:
		k := string(appendKey(nil, v))
		if s.seen == nil {
			s.seen = make(map[string]bool)
		}
		if !s.seen[k] {
			if rc != nil && !rc.retain(len(k)+64+sizeOf(v, maxValueBytes), "MAKESET's values") {
				return
			}
			s.seen[k] = true
			s.list = append(s.list, owned(v))
		}
	case aggSum, aggAvg:
		if v.k != kNum {
			s.bad = true
			return
		}
		s.sum += v.n
		s.n++
	case aggMin, aggMax:
		if v.k == kArr || v.k == kObj {
			s.bad = true
			return
		}
		c := compareValues(v, s.best)
		if s.n == 0 || (k == aggMin && c < 0) || (k == aggMax && c > 0) {
			s.best = owned(v) // v may alias a parser that the next document reuses
		}
		s.n++
	}
}

func (s *aggState) result(k aggKind) value {
	switch {
	case k == aggCount || k == aggCountIf:
		return num(s.n)
	case k == aggMakeList || k == aggMakeSet:
		return arrayOf(append([]value{}, s.list...))
	case s.bad:
		return undef
	case k == aggSum:
		return num(s.sum)
	case k == aggAvg:
		if s.n == 0 {
			return undef
		}
		return num(s.sum / s.n)
	case s.n == 0:
		return undef
	}
	return s.best
}

type group struct {
	key    string // canonical encoding of keys
	keys   []value
	states []aggState
}

// execGrouped folds the rows into groups (one group in all when there is no GROUP BY), then
// projects, orders and limits one row per group. Groups come out in first-seen order.
func (q *cquery) execGrouped(e *env, emit func(value) bool) {
	groups := q.fold(e)
	if e.rc.err != nil {
		return
	}
	q.emitGroups(e, groups, emit)
}

// fold reads the rows and folds them into groups, in first-seen order.
func (q *cquery) fold(e *env) []*group {
	var groups []*group
	index := make(map[string]*group)
	var key []byte
	keys := make([]value, len(q.groupBy))
	q.forRows(e, func() bool {
		key = key[:0]
		for i, fn := range q.groupBy {
			keys[i] = fn(e)
			key = appendKey(key, keys[i])
			key = append(key, ',')
		}
		g := index[string(key)]
		if g == nil {
			// The key's text (the index's and the group's), a copy of each
			// key value, the group and its aggregates' states.
			cost := len(key) + 64 + 48*len(q.aggs)
			for _, k := range keys {
				cost += sizeOf(k, maxRetainedBytes) + elemBytes
			}
			if !e.rc.retain(cost, "GROUP BY's groups") {
				return false
			}
			gk := make([]value, len(keys))
			for i, k := range keys {
				gk[i] = owned(k) // k may alias a parser that the next document reuses
			}
			g = &group{key: string(key), keys: gk, states: make([]aggState, len(q.aggs))}
			index[g.key] = g
			groups = append(groups, g)
		}
		for i, a := range q.aggs {
			g.states[i].add(e.rc, a.kind, a.arg(e))
		}
		return true
	})
	return groups
}

// emitGroups projects, orders and limits one row per group.
func (q *cquery) emitGroups(e *env, groups []*group, emit func(value) bool) {
	// A grouped subquery in our projection would overwrite these; restore them for the caller.
	outerGroups, outerAggs := e.groups, e.aggs
	defer func() { e.groups, e.aggs = outerGroups, outerAggs }()

	if len(q.groupBy) == 0 && len(groups) == 0 {
		// Aggregates over no rows still yield one row: COUNT is 0, MIN is undefined.
		groups = append(groups, &group{states: make([]aggState, len(q.aggs))})
	}
	rows := make([]sortRow, 0, len(groups))
	var gkeys []string // the rows' groups' keys, for the outermost query's rowKey
	for _, g := range groups {
		aggs := make([]value, len(q.aggs))
		for i, a := range q.aggs {
			aggs[i] = g.states[i].result(a.kind)
		}
		e.groups, e.aggs = g.keys, aggs
		v := q.proj(e)
		if v.k == kUndef {
			continue
		}
		var okeys []value
		for _, o := range q.orderBy {
			e.groups, e.aggs = g.keys, aggs
			okeys = append(okeys, o.fn(e))
		}
		rows = append(rows, sortRow{keys: okeys, v: v, rk: []byte(g.key)})
		gkeys = append(gkeys, g.key)
	}
	if len(q.orderBy) > 0 {
		q.emitSorted(e, rows, emit)
		return
	}
	lim := q.newLimiter(e.rc)
	for i, r := range rows {
		if q.top && len(q.groupBy) > 0 {
			e.rc.rowKey = []byte(gkeys[i])
		}
		if lim.done() || !lim.push(r.v, emit) {
			return
		}
	}
}
