package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/fnv"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/query/exec"
	"github.com/partitadb/partita/internal/query/parse"
	"github.com/partitadb/partita/internal/query/plan"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/throughput"
)

// queryToken is the continuation of a query, and the position a page
// starts at. A streamed query (exec.Program.Streamable) resumes at a
// document: Key in the unit [Lo, Hi) of item keys, after the first Rows rows
// of that document. Any other query is evaluated whole and resumes after
// Skip result rows.
//
// A token is bound to its scope: Hash covers the query and the container,
// and [ScopeLo, ScopeHi) is the span of item keys the query read. A request
// resumes only the part of its own scope inside that span, so a child range
// continuing its parent's token reads exactly its own remaining rows, and a
// token from another range or partition key is refused.
type queryToken struct {
	Hash    uint64 `json:"h"`
	ScopeLo []byte `json:"a,omitempty"`
	ScopeHi []byte `json:"b,omitempty"`
	Skip    int    `json:"s,omitempty"`

	Lo   []byte `json:"l,omitempty"`
	Hi   []byte `json:"u,omitempty"`
	Key  []byte `json:"k,omitempty"`
	Rows int    `json:"r,omitempty"`
	// At is, in place of Rows, the position among the document's rows
	// (exec.RowPos) of the first row to evaluate, or with AtAfter of the
	// last one evaluated: the page resumes there without evaluating the
	// rows before it (a query with JOINs; exec.Program.StreamAt).
	At      exec.RowPos `json:"j,omitempty"`
	AtAfter bool        `json:"ja,omitempty"`
	// Done counts the rows the query produced before this position, for
	// OFFSET, LIMIT and TOP.
	Done int `json:"n,omitempty"`
	// Ordered marks a position in an index scan in ORDER BY order, where
	// Key is an index entry's key.
	Ordered bool `json:"o,omitempty"`
	// ByKey marks a position in a read in item key order (one logical
	// partition's, by id), where Key, and a sorted query's tie-breaking
	// key in Sort, is an item's key rather than its sequence number. A
	// page whose plan reads in the other order (the indexing policy
	// changed) refuses the token: read there, the position would start
	// the scope over.
	ByKey bool `json:"y,omitempty"`
	// Val is, for a position inside a bounded index term (ordered reads),
	// the first maxTokenValue bytes of the ORDER BY value of the document
	// at Key: where to resume if that document is gone; a longer value is
	// read whole from the document, when it is there (readBucket).
	Val []byte `json:"v,omitempty"`
	// ValSum is, when Val holds only the value's first bytes, the whole
	// value's sum (valueSum): the position's document is taken to hold
	// the value the continuation was made from only if its value has it.
	ValSum []byte `json:"vs,omitempty"`
	// Index fingerprints the composite index of a position in an ordered
	// read of one (indexPrint): a policy that replaces it with another of
	// the same number and other directions would read the position's key
	// in another order.
	Index uint64 `json:"i,omitempty"`
	// Sort is the position of a sorted query's last row (see sortedPage).
	Sort *exec.Cursor `json:"c,omitempty"`
	// Stats are the measurements the first page chose its plan from
	// (plan.Stats), so that every page runs the same plan without
	// measuring again. Forged ones can only choose another plan with the
	// same results.
	Stats *plan.Stats `json:"x,omitempty"`
	// Wide: a page found a part whose keyspace holds more terms of an
	// intersected range or prefix than a merge takes (intersectStream
	// left it out there): the next pages plan without intersecting them
	// (plan.Input.Wide), rather than find their terms again in every part.
	Wide bool `json:"wr,omitempty"`
	// Layout fingerprints the physical partitions a query evaluated whole
	// across logical partitions read (layoutOf): it reads them one after
	// another, each in creation order, so a split changes the order of its
	// rows, and Skip would count rows of another order.
	Layout uint64 `json:"p,omitempty"`
	// Order fingerprints an ORDER BY query without its WHERE clause
	// (orderHash). A position in an ORDER BY query's order means the same
	// whatever the filter, so a query that differs from the token's only in
	// its filter may resume it (resumable): that is how the SDKs resume a
	// cross-partition ORDER BY, sending the range's token with the
	// rewritten query's filter placeholder filled with a resume filter
	// (c.f >= v) rather than with true.
	Order uint64 `json:"g,omitempty"`
	// Last is, for a query evaluated whole whose rows have keys
	// (exec.Program.Keyed: DISTINCT, GROUP BY), the key of the last row
	// returned, and Next the key of the row after it: the next page starts
	// after Last wherever it now is, else at Next, else after Skip rows
	// less one (a row may repeat; none is lost). With KeyOrder the rows,
	// which have no order of their own (exec.Program.KeysOrderFree), are
	// paged in the order of their keys, so the next page starts at the
	// first key after Last whatever was added or removed since.
	Last     []byte `json:"w,omitempty"`
	Next     []byte `json:"wn,omitempty"`
	KeyOrder bool   `json:"wk,omitempty"`

	// refiltered: the token was made for the same query with another
	// filter (Order matched, Hash did not); resumable decides whether its
	// position can be resumed.
	refiltered bool
}

// indexPrint fingerprints the composite index an ordered read reads (its
// number, paths and directions: plan.IndexScan.Target); 0 for a single
// path's index.
func indexPrint(scan *plan.IndexScan) uint64 {
	if scan.Composite == nil {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(scan.Target()))
	return h.Sum64() | 1 // never 0, "none"
}

// layoutOf fingerprints ranges, by id: a split gives its children new ids.
func layoutOf(ranges []partition.Range) uint64 {
	h := fnv.New64a()
	for _, r := range ranges {
		h.Write([]byte(r.ID))
		h.Write([]byte{0})
	}
	return h.Sum64() | 1 // never 0, "none"
}

func (q Query) hash(container uint64) uint64 { return q.hashText(container, q.Text) }

// orderHash is Order for ast, a parse of q.Text: the hash of the query
// printed without its WHERE clause, or 0 for a query without ORDER BY.
func (q Query) orderHash(container uint64, ast *parse.Query) uint64 {
	if ast == nil || len(ast.OrderBy) == 0 {
		return 0
	}
	unfiltered := *ast
	unfiltered.Where = nil
	return q.hashText(container, unfiltered.String()) | 1 // never 0, "none"
}

func (q Query) hashText(container uint64, text string) uint64 {
	h := fnv.New64a()
	h.Write(binary.BigEndian.AppendUint64(nil, container))
	h.Write([]byte(text))
	for _, k := range slices.Sorted(maps.Keys(q.Params)) {
		h.Write([]byte{0})
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write(q.Params[k])
	}
	return h.Sum64()
}

// token decodes q's continuation (the zero token for none) for a query of
// container (0 for metadata resources); ast is q.Text parsed. A token made
// for the same ORDER BY query with another filter is returned refiltered,
// for resumable to decide on once the plan is chosen.
func (q Query) token(container uint64, ast *parse.Query) (queryToken, error) {
	tok := queryToken{Hash: q.hash(container), Order: q.orderHash(container, ast)}
	if q.Continuation == "" {
		return tok, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(q.Continuation)
	var got queryToken
	switch {
	case err != nil || json.Unmarshal(raw, &got) != nil || got.Skip < 0 || got.Rows < 0 || got.Done < 0:
		return queryToken{}, invalidContinuation("it is not a continuation this server made")
	case got.Hash == tok.Hash:
	case tok.Order != 0 && got.Order == tok.Order:
		got.Hash, got.refiltered = tok.Hash, true // the next page's token is this query's
	default:
		return queryToken{}, invalidContinuation("it belongs to another query or container")
	}
	return got, nil
}

// resumable reports whether a refiltered token's position can be resumed
// by plan p: only a position in the ORDER BY order itself (an index
// entry's key, a sort position, an item key in id order). A row offset
// (Skip, a query evaluated whole) counts rows that another filter may not
// produce; so does a position after some of a document's rows (Rows,
// Sort.Sub) when the query has JOINs. Without them a document has at most
// one row, which the other filter keeps or drops: the position after it
// means the same.
func (t queryToken) resumable(p plan.Physical, joins bool) bool {
	if t.Skip != 0 || (joins && (t.Rows != 0 || t.At != nil || (t.Sort != nil && t.Sort.Sub != 0))) {
		return false
	}
	switch p.Token {
	case plan.TokenIndexKey:
		return t.Ordered && t.Sort == nil
	case plan.TokenSort:
		return t.Sort != nil && !t.Ordered && t.Key == nil
	case plan.TokenItemKey:
		return t.Key != nil && t.ByKey && !t.Ordered && t.Sort == nil
	}
	return false
}

// invalidContinuation is the answer to a continuation token that does not
// fit its request; the SDKs and their tests look for the phrase.
func invalidContinuation(why string) *status.Error {
	return status.BadRequest("Invalid Continuation Token: %s", why)
}

// bind narrows r to the scope of a continuation token, and stamps a fresh
// token with r's. A token whose scope does not cover r's is refused; so is
// a token of a query evaluated whole (exact) unless the scopes are equal,
// as its Skip counts rows of its own scope.
func (t *queryToken) bind(r *resolved, exact bool) error {
	layout := uint64(0)
	if exact && r.cross {
		layout = layoutOf(r.ranges)
	}
	if t.ScopeHi == nil {
		t.ScopeLo, t.ScopeHi, t.Layout = r.span.Lower, r.span.Upper, layout
		return nil
	}
	if t.Layout != layout {
		return invalidContinuation("the container's partitions split since the previous page, and a query evaluated whole reads them " +
			"one after another, so its rows now come in another order; restart the query")
	}
	sc, err := resumeScope(replica.Span{Lower: t.ScopeLo, Upper: t.ScopeHi}, r.span)
	if err != nil {
		return err
	}
	if exact && (!bytes.Equal(sc.Lower, t.ScopeLo) || !bytes.Equal(sc.Upper, t.ScopeHi) || !bytes.Equal(sc.Lower, r.span.Lower) || !bytes.Equal(sc.Upper, r.span.Upper)) {
		return invalidContinuation("the query's partition key range changed (a split) since the previous page, and a query evaluated whole cannot resume in part of it; restart the query")
	}
	r.span = sc
	t.ScopeLo, t.ScopeHi = sc.Lower, sc.Upper
	return nil
}

// resumeScope returns the scope in which a continuation made for scope
// token resumes a request for scope req: req, which must lie within token
// (a child range resumes its parent's token after a split). A request
// wider than the token is refused, as the rest of it would be skipped (a
// bug hunt: a hierarchical prefix's token resumed a whole-container query,
// and a read feed, with that prefix's rows alone), and so is one apart
// from it. Queries and read feeds resume alike.
func resumeScope(token, req replica.Span) (replica.Span, error) {
	sc := intersect(token, req)
	if sc.Empty() || !bytes.Equal(sc.Lower, req.Lower) || !bytes.Equal(sc.Upper, req.Upper) {
		return replica.Span{}, invalidContinuation("it was made for another partition key range or partition key")
	}
	return sc, nil
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
// 400/1004 and the query plan as Cosmos DB's gateway does (a plain 400 when
// the plan needs merges q.SupportedFeatures lacks), unless the engine runs
// with GatewayQueryFull or the query asks to be run whole (q.Whole).
//
// Documents are read in Cosmos DB's order: a physical partition's in
// creation (_rid) order, partitions in EPK order; one logical partition's in
// id order. A streamable query reads only as far as its page needs and
// resumes where it stopped; others are evaluated whole for each page.
func (e *Engine) QueryItems(ctx context.Context, db, coll string, scope Scope, q Query) (Page, error) {
	start := time.Now()
	c, release, err := e.readContainer(ctx, db, coll, scope.RangeID)
	if err != nil {
		return Page{}, err
	}
	defer release()
	ast, prog, r, scope, err := e.compileQuery(c, scope, q)
	if err != nil {
		return Page{}, err
	}
	compiled := time.Now()
	if err := e.admit(ctx, c, r.ranges...); err != nil {
		return Page{}, err
	}
	p, ru, err := e.runQuery(ctx, c, ast, prog, r, scope, q, start, compiled)
	if err != nil {
		// A page that failed (408 past QueryMaxTime, a sort too large)
		// is charged the work it did, or a query that reads for 10 s
		// would cost what a refused one costs.
		e.chargeFailed(c, ru, r.ranges...)
		return Page{}, err
	}
	e.chargeScope(c, p.RU, scope, r.ranges...)
	return p, nil
}

// compileQuery parses q, resolves its scope (routeQuery) and compiles it
// for that scope: in one logical partition, without the WHERE clause's
// conjuncts that the partition's key makes true (plan.Implied), so that
// SELECT * FROM c WHERE c.pk = @pk, scoped to that key, evaluates no filter
// and parses no document.
func (e *Engine) compileQuery(c *catalog.Container, scope Scope, q Query) (*parse.Query, *exec.Program, resolved, Scope, error) {
	scope.PK = scopeKey(c, scope.PK)
	ast, err := e.qcache.parse(q.Text)
	if err != nil {
		return nil, nil, resolved{}, scope, translate(err)
	}
	written := ast
	ast, key, err := e.withComputed(c, ast, q.Text)
	if err != nil {
		return nil, nil, resolved{}, scope, err
	}
	r, scope, err := routeQuery(c, ast, scope, q)
	if err != nil {
		return nil, nil, resolved{}, scope, err
	}
	rest, implied := plan.Implied(ast, q.Params, planScope(c, scope))
	prog, err := e.qcache.compile(key, ast, q.Params, rest, implied, exec.WithUDFs(e.udfLookup(c)))
	if err != nil {
		return nil, nil, resolved{}, scope, translate(err)
	}
	// As written: an ORDER BY on a computed property needs an index on its
	// path, as in Cosmos DB, not on the paths its expression reads.
	if err := plan.CheckOrderBy(written, c.Policy()); err != nil {
		return nil, nil, resolved{}, scope, status.BadRequest("%v", err)
	}
	return ast, prog, r, scope, nil
}

// blindProgram compiles ast without its WHERE clause, whose every
// conjunct the plan's lookups decide (plan.Physical.Blind), for the
// documents they find.
func (e *Engine) blindProgram(c *catalog.Container, ast *parse.Query, q Query) (*exec.Program, error) {
	raw, err := e.qcache.parse(q.Text)
	if err != nil {
		return nil, translate(err)
	}
	_, key, err := e.withComputed(c, raw, q.Text)
	if err != nil {
		return nil, err
	}
	prog, err := e.qcache.compile(key, ast, q.Params, nil, plan.Conjuncts(ast.Where), exec.WithUDFs(e.udfLookup(c)))
	if err != nil {
		return nil, translate(err)
	}
	return prog, nil
}

// planScope is what plan needs to know of scope alone: whether it is one
// logical partition, and its key.
func planScope(c *catalog.Container, scope Scope) plan.Scope {
	lp := scope.PK != nil && len(scope.PK) == len(c.PK.Paths)
	ps := plan.Scope{Logical: lp, KeyPaths: c.PK.Paths}
	if lp {
		ps.Key = scope.PK
	}
	return ps
}

// routeQuery resolves a query's scope: a filter that pins the partition
// key routes it to that logical partition, as the gateway does (protocol
// doc §6.2), and one that confines it to a key prefix or a list of keys
// leaves it cross-partition but narrows it to the physical partitions
// owning those keys.
func routeQuery(c *catalog.Container, ast *parse.Query, scope Scope, q Query) (resolved, Scope, error) {
	var keys []document.PartitionKey
	if scope.PK == nil && scope.RangeID == "" {
		var pinned document.PartitionKey
		if pinned, keys = plan.Routing(ast, c.PK.Paths, q.Params); pinned != nil {
			scope.PK = pinned
		}
	}
	r, err := resolveScope(c, scope)
	if err != nil {
		return resolved{}, scope, err
	}
	if keys != nil {
		if r, err = narrowScope(c, r, keys); err != nil {
			return resolved{}, scope, err
		}
	}
	return r, scope, nil
}

// runQuery is QueryItems once the query is compiled and its scope resolved.
// It returns the page and its charge, or the error and the charge of the
// work done before it.
func (e *Engine) runQuery(ctx context.Context, c *catalog.Container, ast *parse.Query, prog *exec.Program, r resolved, scope Scope, q Query, start, compiled time.Time) (Page, float64, error) {
	run, tok, err := e.prepareQuery(ctx, c, ast, prog, r, scope, q, start)
	if err != nil {
		return Page{}, 0, err
	}
	defer run.src.v.close()
	var rows atomic.Int64
	ctx = exec.WithRowCount(ctx, &rows)
	if e.queries != nil {
		ctx = exec.WithPause(ctx, e.queries.yield)
	}
	work := func(out int) throughput.QueryWork {
		return throughput.QueryWork{Entries: run.entries, Items: run.loaded, InBytes: run.loadedBytes, Rows: int(rows.Load()),
			OutBytes: out, Partitions: len(r.ranges)}
	}
	var p Page
	switch run.plan.Executor {
	case plan.Streamed:
		p, err = run.streamed(ctx, tok)
	case plan.Sorted:
		p, err = run.sortedPage(ctx, tok)
	default:
		p, err = run.whole(ctx, tok)
	}
	if err != nil {
		return Page{}, throughput.QueryWorkCost(work(0)), err
	}
	size := 0
	for _, it := range p.Items {
		size += len(it)
	}
	p.ContainerRID, p.Session, p.Loaded, p.Elapsed = c.RID, e.sessionFor(c, r.ranges), run.loaded, time.Since(start)
	p.Metrics = QueryMetrics{Entries: run.entries, LoadedBytes: run.loadedBytes, Compile: compiled.Sub(start), Load: run.loadTime, Plan: run.plan, Reused: run.memoHit}
	if l := run.plan.Lookup; l != nil {
		p.Metrics.IndexPath = indexPathSpec(l.Path)
	}
	p.RU = throughput.QueryWorkCost(work(size))
	return p, p.RU, nil
}

// prepareQuery refuses what the gateway refuses, decodes and binds the
// continuation, and chooses the physical plan (plan.Choose), measuring the
// scope first when the plan needs statistics (counted in run.entries). The
// caller must close run.src.v.
func (e *Engine) prepareQuery(ctx context.Context, c *catalog.Container, ast *parse.Query, prog *exec.Program, r resolved, scope Scope, q Query, start time.Time) (*queryRun, queryToken, error) {
	cross := r.cross && scope.RangeID == ""
	if cross && c.PK.SystemKey && len(r.ranges) == 1 {
		// A container created non-partitioned, in one physical partition:
		// clients that know it so (the SDKs of its API version) query it
		// without the cross-partition header, and Cosmos DB answers such
		// a collection's whole query itself, ORDER BY, DISTINCT and
		// aggregates included (a Python SDK hunt found them refused).
		cross = false
	}
	if cross && !q.EnableCrossPartition {
		return nil, queryToken{}, status.BadRequest("Cross partition query is required but disabled. Please set x-ms-documentdb-query-enablecrosspartition to true, specify x-ms-documentdb-partitionkey, or revise your query to avoid this exception.")
	}
	f := prog.Features()
	if cross && !e.cfg.GatewayQueryFull && !q.Whole && (f.OrderBy || f.Aggregate || f.GroupBy || f.Distinct || f.Top || f.OffsetLimit) {
		// The refusal carries the query plan, which the JS and Python SDKs
		// then run range by range (protocol doc §6.3).
		// Planned as written, not with c's computed properties in place
		// (compileQuery): the client sends the plan's rewritten queries
		// back, and they are rewritten then; rewritten twice, a property
		// defined over a stored one of its own name applied twice.
		raw, err := e.qcache.parse(q.Text)
		if err != nil {
			return nil, queryToken{}, translate(err)
		}
		p, err := queryPlan(c, raw, q.Params, q.SupportedFeatures)
		if err != nil {
			return nil, queryToken{}, err // a 400 naming what cannot be planned
		}
		info, err := marshalPlan(p)
		if err != nil {
			return nil, queryToken{}, err
		}
		refused := crossPartitionRefused(f)
		if missing := unsupportedFeatures(p.QueryInfo.Features(), q.SupportedFeatures); len(missing) > 0 {
			refused = featuresRefused(missing)
		}
		refused.Extra = string(info)
		return nil, queryToken{}, refused
	}
	tok, err := q.token(c.Internal, ast)
	if err != nil {
		return nil, queryToken{}, err
	}
	ps := planScope(c, scope)
	src := docSource{e: e, c: c, r: r, v: e.newView(ctx, c), hidden: e.goneFilter(c)}
	_, take := prog.Window()
	in := plan.Input{Query: ast, Params: q.Params, Policy: c.Policy(),
		Program: plan.Program{Streamable: prog.Streamable(), Sortable: prog.Sortable(), OrderFree: prog.OrderFree(),
			Parallel: prog.Parallel(), Grouped: f.GroupBy || f.Aggregate || f.Distinct, Take: take},
		// A fan-out over one physical partition is passed through to it, and
		// a partition does not look ahead on a full page: the Go SDK's
		// emulator test TestCrossPartitionQuery counts 5 pages for 20 results
		// in pages of 5 in a one-partition container. Over several partitions
		// the gateway merges the partitions' pages and ends the query with its
		// last result: the JavaScript SDK's async iterator must yield nothing
		// after it (its crossPartition.spec, validateAsyncIterator, 5
		// partitions).
		Scope: plan.Scope{Logical: ps.Logical, KeyPaths: ps.KeyPaths, Key: ps.Key, Ranges: len(r.ranges), Units: len(src.units(nil)), Cross: cross, IndexCurrent: c.IndexCurrent(),
			Hides: src.hidden != nil},
		Stats: tok.Stats, Wide: tok.Wide, PageSize: e.pageLimit(q.MaxItems)}
	if in.Program.Grouped {
		// A grouped page reads its whole scope whatever its size: a
		// lookup is weighed against a scan for all it finds (a count of
		// 2,000 documents in pages of 10 scanned all 20,000).
		in.PageSize = e.pageLimit(-1)
	} else if tok.Stats != nil && tok.Stats.Page > 0 {
		// Later pages plan with the first page's size: with their own, a
		// client asking for another x-ms-max-item-count could flip a
		// logical partition's range from its items by key to its index
		// entries, and its continuation was refused (a bug hunt: 400
		// "its position is in another order").
		in.PageSize = tok.Stats.Page
	}
	// Whether an ORDER BY's path covers the scope (plan.Physical.Cover) is
	// counted on the first page; the others know it from their position.
	// So is, for one logical partition, whether its entries are dense
	// enough in the path's index (plan.Physical.Probe).
	covered, uncovered := true, false
	switch {
	case tok.Ordered:
		in.Covered, in.Dense, in.Ordered = &covered, &covered, true
	case tok.Sort != nil, q.sorted:
		in.Covered, in.Dense, in.Sorted = &uncovered, &uncovered, true
	}
	pp := plan.Choose(in)
	run := &queryRun{e: e, q: q, prog: prog, start: start}
	if err := tok.bind(&src.r, pp.Executor == plan.Whole || pp.Executor == plan.Folded); err != nil {
		src.v.close()
		return nil, queryToken{}, err
	}
	// The plan may need measurements before it chooses (each asked for
	// once: the input then holds its answer): whether an ORDER BY's path
	// covers the scope, whether a logical partition's entries are dense
	// in an index, a lookup's terms and entries, a lookup's entries
	// against an ordered read's. Each answer may lead to another.
measure:
	for range 4 {
		var err error
		switch {
		case pp.Cover != nil:
			var ok bool
			ok, err = src.covered(ctx, pp.Cover, &run.entries)
			in.Covered = &ok
		case pp.Probe != nil:
			want := in.PageSize
			if take >= 0 {
				want = min(want, take)
			}
			var ok bool
			ok, err = src.dense(ctx, pp.Probe, pp.ProbeDesc, want, &run.entries)
			in.Dense = &ok
		case len(pp.Leads) > 0:
			// Ranges and prefixes on several paths: each one's entries,
			// counted (they serve Weigh too), to lead with the fewest.
			// A match is counted last, reading its path's every string:
			// no further than loading the fewest found so far costs
			// (reading 6,000 strings to lead c.n >= 5998 AND CONTAINS(...)
			// cost 17 RU, against 5 for the range's two documents).
			in.Leads = make([]plan.Stats, len(pp.Leads))
			fewest := math.MaxInt
		leads:
			for _, match := range []bool{false, true} {
				for i, l := range pp.Leads {
					if (l.Match != nil) != match {
						continue
					}
					most := 0
					if match && fewest < math.MaxInt {
						most = max(matchStep, plan.LoadCost*fewest)
					}
					if in.Leads[i], err = src.measure(ctx, l, in.PageSize, true, most, &run.entries); err != nil {
						break leads
					}
					if !match {
						fewest = min(fewest, in.Leads[i].Entries)
					}
				}
			}
		case pp.Weigh != nil && len(pp.Intersect) > 0:
			// What the intersection finds, not its first lookup.
			var st plan.Stats
			st, err = src.measureIntersect(ctx, pp.Weigh, pp.Intersect, in.PageSize, &run.entries)
			in.Stats = &st
		case pp.Weigh != nil:
			// Counted measurements serve NeedStats too.
			var st plan.Stats
			st, err = src.measure(ctx, pp.Weigh, in.PageSize, true, 0, &run.entries)
			st.Counted = true
			in.Stats = &st
		case pp.NeedStats:
			var st plan.Stats
			st, err = src.measure(ctx, pp.Lookup, in.PageSize, in.Scope.Logical, 0, &run.entries)
			in.Stats = &st
		default:
			break measure
		}
		if err != nil {
			src.v.close()
			return nil, queryToken{}, translate(err)
		}
		pp = plan.Choose(in)
	}
	if tok.refiltered && !tok.resumable(pp, len(ast.Joins) > 0) {
		src.v.close()
		return nil, queryToken{}, invalidContinuation("it belongs to the query with another filter, and resumes only a position in the ORDER BY order, not a row count")
	}
	tok.Stats = pp.Stats // every page of the query runs this plan
	if tok.Stats != nil && tok.Stats.Page == 0 {
		st := *tok.Stats // a copy: pp.Stats may be the input's
		st.Page = in.PageSize
		tok.Stats = &st
	}
	src.access, src.byID, src.desc = pp.Access, pp.Access == plan.KeyRange, pp.KeyOrder && pp.Desc
	if (tok.Key != nil || tok.Sort != nil) && tok.ByKey != src.byID {
		src.v.close()
		return nil, queryToken{}, invalidContinuation("its position is in another order than this query's: it was made for another partition key or partition key range, or the container's indexing policy changed since; restart the query")
	}
	if pp.Blind {
		// The lookups decide the filter: the query runs without it, on
		// an empty document for each one they find.
		blind, err := e.blindProgram(c, ast, q)
		if err != nil {
			src.v.close()
			return nil, queryToken{}, err
		}
		run.prog, src.blind, src.filter = blind, true, prog
	}
	switch pp.Access {
	case plan.IndexPoint, plan.IndexMerge, plan.IndexGather:
		src.scan = pp.Lookup
	case plan.IndexIntersect:
		src.scan, src.also, src.gathered, src.gather = pp.Lookup, pp.Intersect, pp.LeadGathered, pp.Gather
		// A later page opens the intersection's ranges at once: its
		// first page found enough documents to page.
		src.wide, src.eager = new(atomic.Bool), q.Continuation != ""
	case plan.IndexOrdered:
		run.ordered, run.desc = pp.Lookup, pp.Desc
	}
	run.src, run.plan, run.passThrough = src, pp, pp.PassThrough
	return run, tok, nil
}

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

// queryRun is one page of one query.
type queryRun struct {
	e    *Engine
	q    Query
	prog *exec.Program
	src  docSource
	// passThrough marks a fan-out over one physical partition, whose full
	// pages carry a continuation even when nothing follows.
	passThrough bool
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
	// plan is the physical plan the page runs.
	plan plan.Physical
	// memoHit: the page was cut from an evaluation kept (queryMemo).
	memoHit bool
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
// reads documents only until the page is full (one row more, to know
// whether a continuation is due, unless the query is a fan-out passed
// through to one partition: see runQuery), or until
// the page's time is up. A page holds at least one document's rows, so a
// query always progresses.
func (run *queryRun) streamed(ctx context.Context, tok queryToken) (Page, error) {
	if (tok.Key != nil && (tok.Ordered != (run.ordered != nil) || (run.ordered != nil && tok.Index != indexPrint(run.ordered)))) || tok.Sort != nil || tok.Skip != 0 {
		// The plan changed under the continuation (the indexing policy did).
		return Page{}, invalidContinuation("the container's indexing policy changed since the previous page; restart the query")
	}
	// A page stops at QueryPageTime between documents; within one, the
	// rows of its JOINs (a cross product of its arrays: four more for
	// each JOIN over four elements) are evaluated without a stop, so a
	// page that runs to QueryMaxTime is ended there.
	ctx, cancel := context.WithTimeout(ctx, run.e.cfg.QueryMaxTime)
	defer cancel()
	skip, take := run.prog.Window()
	limit := run.e.pageLimit(run.q.MaxItems)
	maxBytes := run.e.cfg.MaxPageBytes
	p := Page{Items: [][]byte{}}
	done, size := tok.Done, 0
	var next *queryToken // where the next page starts, if anywhere
	var lo, hi, key []byte
	// cur is the document being evaluated. A row that is cur itself (SELECT
	// *, SELECT VALUE c) joins the page without a copy when the source
	// hands over its documents (ownsDocs): a copy of every row was a third
	// of a single-partition query's allocations (issue #15).
	var cur []byte
	owned := run.src.ownsDocs()
	rowIdx, skipRows, docs := 0, 0, 0
	finished := take >= 0 && done >= skip+take
	// at is the position of the row being evaluated among its document's
	// rows, when the query has positions (exec.Program.Positions): a page
	// that stops inside a document resumes there rather than after a count
	// of rows, which it would evaluate again.
	var at exec.RowPos
	positions := run.prog.Positions() > 0
	// tokenAt is where a page may end: a document's position (lo, hi,
	// key), its order value (ordered reads), and a row's position in it.
	type tokenAt struct {
		lo, hi, key []byte
		val, valSum []byte // nil: no order value
		at          exec.RowPos
	}
	makeToken := func(p *tokenAt, rows int, after bool) *queryToken {
		t := &queryToken{Hash: tok.Hash, Order: tok.Order, ScopeLo: tok.ScopeLo, ScopeHi: tok.ScopeHi, Lo: bytes.Clone(p.lo), Hi: bytes.Clone(p.hi), Key: bytes.Clone(p.key), Rows: rows, Done: done,
			Ordered: run.ordered != nil, ByKey: run.src.byID, Stats: tok.Stats, Wide: tok.Wide || run.src.isWide()}
		if positions && (rows > 0 || after) {
			t.Rows, t.At, t.AtAfter = 0, slices.Clone(p.at), after
		}
		if run.ordered != nil {
			t.Index = indexPrint(run.ordered)
			if p.val != nil {
				t.Val, t.ValSum = bytes.Clone(p.val), bytes.Clone(p.valSum)
			}
		}
		return t
	}
	// fill sets p to the document being evaluated, and the row at.
	fill := func(p *tokenAt) {
		p.lo, p.hi, p.key = append(p.lo[:0], lo...), append(p.hi[:0], hi...), append(p.key[:0], key...)
		p.val, p.valSum = nil, nil
		if run.ordered != nil && runOf(run.ordered, key) != nil {
			v := run.src.orderValue(run.ordered, cur)
			p.val, p.valSum = append(p.val[:0], v[:min(len(v), maxTokenValue)]...), valueSum(v)
		}
		p.at = append(p.at[:0], at...)
	}
	var here0 tokenAt
	here := func(rows int, after bool) *queryToken {
		fill(&here0)
		return makeToken(&here0, rows, after)
	}
	// last is the position of the page's last row, and lastRows how many
	// rows of its document had been evaluated up to it: a page that ends
	// on a new document's first row resumes just after last, so that a
	// document written between pages between the two is read (it resumed
	// at the new document, and a row written there was never returned: a
	// bug hunt, ORDER BY and creation order over several physical
	// partitions).
	var last tokenAt
	lastRows := 0
	feed := func(yield func([]byte, exec.RowPos, bool) bool) error {
		return run.read(ctx, tok, func(l, h, k, doc []byte) bool {
			if docs > 0 && time.Since(run.start) > run.e.cfg.QueryPageTime {
				lo, hi, key, cur = l, h, k, doc
				next = here(0, false)
				return false
			}
			docs++
			lo, hi, key = l, h, k
			rowIdx, skipRows = 0, 0
			var start exec.RowPos
			var after bool
			if tok.Key != nil && bytes.Equal(k, tok.Key) {
				skipRows, start, after = tok.Rows, tok.At, tok.AtAfter
			}
			cur = doc
			return yield(doc, start, after)
		})
	}
	var err error
	if !finished {
		// With run.ordered or KeyOrder the documents come in the ORDER
		// BY's order: an index's, or one logical partition's keys for
		// ORDER BY c.id.
		ordered := run.ordered != nil || run.plan.KeyOrder
		err = run.prog.StreamAt(ctx, ordered, feed, func(row []byte, pos exec.RowPos) bool {
			at = pos
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
				if rowIdx == 1 && len(p.Items) > 0 {
					// The look-ahead row opens a document: resume after
					// the last row returned, in its document.
					next = makeToken(&last, lastRows, true)
				} else {
					next = here(rowIdx-1, false) // the look-ahead row, in the last row's document
				}
				return false
			}
			done++
			if owned && sameBytes(row, cur) {
				// Capacity cut to the length: the rows of a JOIN can share
				// one document, and an append to one must not write into it.
				p.Items = append(p.Items, row[:len(row):len(row)])
			} else {
				p.Items = append(p.Items, bytes.Clone(row))
			}
			size += len(row)
			fill(&last)
			lastRows = rowIdx
			if take >= 0 && done >= skip+take {
				finished = true
				return false
			}
			if run.passThrough && run.q.MaxItems > 0 && len(p.Items) >= limit {
				// A partition does not look ahead on a full page: the
				// next page may be empty (protocol doc §6.2).
				next = here(rowIdx, true)
				return false
			}
			return true
		})
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return Page{}, status.Newf(http.StatusRequestTimeout, "a page of the query ran for longer than %v: the rows of one item's JOINs (the product of its arrays' lengths) are more than a page can evaluate in that time; filter the arrays (JOIN x IN (SELECT VALUE y FROM y IN c.arr WHERE …)) or use fewer JOINs", run.e.cfg.QueryMaxTime)
	case err != nil:
		return Page{}, translate(err)
	}
	if next != nil {
		p.Continuation = next.encode()
	}
	return p, nil
}

// sameBytes reports whether a and b are the same non-empty slice of memory.
func sameBytes(a, b []byte) bool {
	return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
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
		return Page{}, invalidContinuation("the container's indexing policy changed since the previous page; restart the query")
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
	// One more than the page: are there more? Where the scope's state can
	// be named (queryMemo), rows are read ahead for the next pages, which
	// take them while that state lasts: the same rows a read would find.
	want, n := limit+1, limit+1
	mk, memo := run.memoKey()
	if memo {
		n = max(want, min(maxSortedPage, sortedReadAhead*limit))
		if take >= 0 {
			n = min(n, skip+take-done+1) // no row past the query's TOP or LIMIT
		}
	}
	var rows []exec.SortedRow
	all, hit := false, false
	if memo && run.q.Continuation != "" {
		ahead, rest, ok := run.e.memo.takeAhead(memoKey{prog: mk.prog, state: mk.state + "\x00" + run.q.Continuation})
		if ok && (rest || len(ahead) >= want) {
			rows, all, hit, run.memoHit = ahead, rest, true, true
		}
	}
	if !hit {
		var err error
		if rows, err = fetch(after, n); err != nil {
			return Page{}, err
		}
		all = len(rows) < n
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
	if !finished && (used < len(rows) || (run.passThrough && full && run.q.MaxItems > 0)) {
		p.Continuation = queryToken{Hash: tok.Hash, Order: tok.Order, ScopeLo: tok.ScopeLo, ScopeHi: tok.ScopeHi, Sort: after, Done: done, ByKey: run.src.byID, Stats: tok.Stats, Wide: tok.Wide || run.src.isWide()}.encode()
		if memo && used < len(rows) {
			run.e.memo.putAhead(memoKey{prog: mk.prog, state: mk.state + "\x00" + p.Continuation}, rows[used:], all)
		}
	}
	return p, nil
}

// sortedReadAhead is how many pages a sorted page reads ahead (at most
// maxSortedPage rows) when the next pages may take them (queryMemo).
const sortedReadAhead = 10

func (run *queryRun) timedOut() *status.Error {
	return status.Newf(http.StatusRequestTimeout, "the query ran for longer than %v; queries that sort, group, aggregate or de-duplicate read their whole scope for every page: narrow it with a partition key or an indexed filter", run.e.cfg.QueryMaxTime)
}

// whole evaluates the query over the whole scope and returns the page of
// results after tok.Skip rows.
func (run *queryRun) whole(ctx context.Context, tok queryToken) (Page, error) {
	if tok.Key != nil || tok.Sort != nil {
		return Page{}, invalidContinuation("it was made by another kind of query")
	}
	mk, memo := run.memoKey()
	if memo {
		if rows, keys, ok := run.e.memo.get(mk); ok {
			run.memoHit = true
			return run.e.page(rows, keys, run.prog.KeysOrderFree(), tok, run.q.MaxItems, run.passThrough), nil
		}
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
	var keys []exec.RowKey
	var err error
	if run.plan.Executor == plan.Folded {
		rows, keys, err = run.parallel(ctx, run.src.units(nil))
	} else {
		rows, keys, err = run.prog.RunKeyed(ctx, feed)
	}
	switch {
	case tooBig:
		return Page{}, status.BadRequest("the query must sort more than %d MiB of documents; add a TOP or LIMIT, or a filter on the indexed ORDER BY path", limit>>20)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return Page{}, run.timedOut()
	case err != nil:
		return Page{}, translate(err)
	}
	p := run.e.page(rows, keys, run.prog.KeysOrderFree(), tok, run.q.MaxItems, run.passThrough)
	if memo && p.Continuation != "" {
		run.e.memo.put(mk, rows, keys)
	}
	return p, nil
}

// parallel evaluates a grouped query (exec.Program.Parallel) over units,
// one keyspace each, reading and folding up to QueryWorkers of
// them at a time; the partial groups are merged into the result.
func (run *queryRun) parallel(ctx context.Context, units []unit) ([][]byte, []exec.RowKey, error) {
	type counts struct {
		loaded, entries, bytes int
		load                   time.Duration
	}
	cs := make([]counts, len(units))
	sources := make([]func(func([]byte) bool) error, len(units))
	for i, u := range units {
		sources[i] = func(yield func([]byte) bool) error {
			c := &cs[i]
			t0 := time.Now()
			var inFn time.Duration
			tn := turn{g: run.e.queries} // each worker takes its own turns
			defer tn.end()
			var waitErr error
			_, err := run.src.readUnit(ctx, u, 0, nil, &c.loaded, &c.entries, func(_, _, _, doc []byte) bool {
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
	rows, keys, err := run.prog.RunParallelKeyed(ctx, sources, run.e.cfg.QueryWorkers)
	for _, c := range cs {
		run.loaded += c.loaded
		run.entries += c.entries
		run.loadedBytes += c.bytes
		run.loadTime += c.load
	}
	return rows, keys, err
}

// page cuts the page after tok.Skip rows out of a query's results. A page
// gets a continuation when results remain, and a fan-out passed through to
// one physical partition (passThrough) also whenever a page is full, as
// Cosmos DB does (protocol doc §6.2; see runQuery).
//
// With keys (one per row, exec.Program.Keyed), a page starts after the row
// whose key the token names (tok.Last), wherever it now is: rows added or
// removed before it since the last page neither repeat nor hide rows after
// it. Only when that row is gone does it start after tok.Skip rows.
func (e *Engine) page(rows [][]byte, keys []exec.RowKey, orderFree bool, tok queryToken, maxItems int, passThrough bool) Page {
	limit := e.pageLimit(maxItems)
	keyed := len(keys) == len(rows) && len(keys) > 0
	span := func(start int) int {
		end, size := start, 0
		for end < len(rows) && end-start < limit && (end == start || size+len(rows[end]) <= e.cfg.MaxPageBytes) {
			size += len(rows[end])
			end++
		}
		return end
	}
	if keyed && orderFree && (tok.KeyOrder || (tok.Skip == 0 && tok.Last == nil && span(0) < len(rows))) {
		// Results on more than one page: in key order (see KeyOrder).
		tok.KeyOrder = true
		idx := make([]int, len(rows))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return bytes.Compare(keys[a][:], keys[b][:]) })
		r2, k2 := make([][]byte, len(rows)), make([]exec.RowKey, len(keys))
		for i, j := range idx {
			r2[i], k2[i] = rows[j], keys[j]
		}
		rows, keys = r2, k2
	}
	start := min(tok.Skip, len(rows))
	switch {
	case keyed && tok.KeyOrder && tok.Last != nil:
		start, _ = slices.BinarySearchFunc(keys, tok.Last, func(k exec.RowKey, last []byte) int {
			if c := bytes.Compare(k[:], last); c != 0 {
				return c
			}
			return -1 // equal keys sort before the position: start after them
		})
	case keyed && tok.Last != nil:
		if i := slices.Index(keys, exec.RowKey(tok.Last)); i >= 0 {
			start = i + 1
		} else if i := slices.Index(keys, exec.RowKey(tok.Next)); tok.Next != nil && i >= 0 {
			start = i
		} else {
			start = max(0, min(tok.Skip, len(rows))-1) // repeat a row rather than lose one
		}
	}
	end := span(start)
	p := Page{Items: rows[start:end]}
	full := end-start == limit
	if end < len(rows) || (passThrough && full && maxItems > 0) {
		tok.Skip = end
		tok.Last, tok.Next = nil, nil
		if keyed && end > 0 {
			tok.Last = keys[end-1][:]
		}
		if keyed && end < len(rows) {
			tok.Next = keys[end][:]
		}
		p.Continuation = tok.encode()
	}
	return p
}
