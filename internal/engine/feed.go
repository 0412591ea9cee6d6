package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"slices"
	"strings"
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

// Scope says which part of a container a feed or query reads: one logical
// partition (PK, a full key or a hierarchical prefix), one physical
// partition (RangeID), or, when both are empty, the whole container. An EPK
// sub-range (MinEPK, MaxEPK: hex, as in x-ms-start-epk / x-ms-end-epk)
// narrows whichever of these applies; it needs RangeID and must lie within
// that range.
type Scope struct {
	PK      document.PartitionKey // nil: not scoped by partition key
	RangeID string                // "": not scoped by range
	// MinEPK and MaxEPK bound an EPK sub-range [MinEPK, MaxEPK) of RangeID;
	// both "" when there is none.
	MinEPK, MaxEPK string
}

// Page is one page of a feed or query.
type Page struct {
	Items        [][]byte
	Continuation string // "" on the last page
	RU           float64
	Session      string
	ContainerRID string
	// Loaded is how many items were read from storage to make the page.
	Loaded int
	// Elapsed is the time the engine spent producing the page.
	Elapsed time.Duration
	// Metrics describe a query page's work.
	Metrics QueryMetrics
}

// QueryMetrics describe the work of one page of a query.
type QueryMetrics struct {
	// Entries is how many index and order entries were read.
	Entries int
	// LoadedBytes is the size of the documents loaded.
	LoadedBytes int
	// IndexPath is the index path a lookup used ("/n/?"), or "" for a scan.
	IndexPath string
	// Compile and Load are the time spent parsing and planning, and reading
	// documents and index entries from storage.
	Compile, Load time.Duration
	// Plan is the physical plan the page ran (EXPLAIN: its String, or
	// its JSON).
	Plan plan.Physical
	// Reused: the page was cut from the rows evaluated for an earlier
	// page of the query, its scope unchanged since (queryMemo).
	Reused bool
}

// resolved is a Scope turned into a key span and the ranges it touches.
type resolved struct {
	span   replica.Span // item keys
	ranges []partition.Range
	cross  bool // the request spans logical partitions (no pk scope)
}

func resolveScope(c *catalog.Container, s Scope) (resolved, error) {
	m := c.Map()
	var r resolved
	switch {
	case s.PK != nil && len(s.PK) == len(c.PK.Paths):
		loc, err := locate(c, s.PK, "")
		if err != nil {
			return resolved{}, err
		}
		r = resolved{span: logicalSpan(loc.epk, loc.pkEnc), ranges: []partition.Range{loc.rng}}
	case s.PK != nil:
		lo, hi, err := c.PK.Span(s.PK)
		if err != nil {
			return resolved{}, translate(err)
		}
		r = resolved{span: epkSpan(lo, hi), ranges: m.Overlapping(lo, hi), cross: len(s.PK) == 0}
	default:
		r = resolved{span: itemsSpan(), ranges: m.Ranges(), cross: true}
	}
	if s.RangeID == "" {
		if s.MinEPK != "" || s.MaxEPK != "" {
			return resolved{}, status.BadRequest("an EPK sub-range (x-ms-start-epk / x-ms-end-epk) needs a partition key range id")
		}
		return r, nil
	}
	rng, ok := m.ByID(s.RangeID)
	if !ok {
		return resolved{}, rangeGone(s.RangeID)
	}
	// A range scope narrows whatever the pk scope allowed, and a sub-range
	// narrows the range.
	lo, hi := rng.Min, rng.Max
	if s.MinEPK != "" || s.MaxEPK != "" {
		min, err1 := partition.ParseEPK(s.MinEPK)
		max, err2 := partition.ParseEPK(s.MaxEPK)
		if err1 != nil || err2 != nil || bytes.Compare(min, max) >= 0 || bytes.Compare(min, rng.Min) < 0 || (rng.Max != nil && bytes.Compare(max, rng.Max) > 0) {
			return resolved{}, status.BadRequest("invalid EPK sub-range [%q, %q) of partition key range %s [%q, %q)", s.MinEPK, s.MaxEPK, rng.ID, rng.Min.String(), rng.Max.String())
		}
		lo, hi = min, max
	}
	r.span = intersect(r.span, epkSpan(lo, hi))
	r.ranges = []partition.Range{rng}
	return r, nil
}

// pageLimit turns x-ms-max-item-count into a page size: -1 (or 0) means as
// many as fit in MaxPageBytes.
func (e *Engine) pageLimit(maxItems int) int {
	switch {
	case maxItems < 0:
		return int(^uint(0) >> 1)
	case maxItems == 0:
		return e.cfg.DefaultPageSize
	}
	return maxItems
}

// ReadFeed returns one page of a container's items in key order (by EPK),
// restricted to scope, resuming after continuation. Errors: 404, 410/1002
// for a range id that no longer exists, 400 for a bad continuation.
func (e *Engine) ReadFeed(ctx context.Context, db, coll string, scope Scope, maxItems int, continuation string) (Page, error) {
	c, release, err := e.readContainer(ctx, db, coll, scope.RangeID)
	if err != nil {
		return Page{}, err
	}
	defer release()
	scope.PK = scopeKey(c, scope.PK)
	r, err := resolveScope(c, scope)
	if err != nil {
		return Page{}, err
	}
	tok := feedToken{}
	if continuation != "" {
		raw, err := base64.RawURLEncoding.DecodeString(continuation)
		if err != nil || json.Unmarshal(raw, &tok) != nil || tok.ScopeHi == nil {
			return Page{}, invalidContinuation("it is not a continuation of a read feed")
		}
		if tok.Container != c.Internal {
			return Page{}, invalidContinuation("it belongs to another container")
		}
		sc, err := resumeScope(replica.Span{Lower: tok.ScopeLo, Upper: tok.ScopeHi}, r.span)
		if err != nil {
			return Page{}, err
		}
		r.span = sc
	}
	if err := e.admit(ctx, c, r.ranges...); err != nil {
		return Page{}, err
	}
	limit := e.pageLimit(maxItems)
	p := Page{ContainerRID: c.RID, Session: e.sessionFor(c, r.ranges)}
	v := e.newView(ctx, c)
	defer v.close()
	src := docSource{e: e, c: c, r: r, v: v, byID: true, hidden: e.goneFilter(c)}
	var last []byte
	size, loaded, entries := 0, 0, 0
	more := false
	var from []byte
	if tok.Key != nil {
		from = append(tok.Key, 0) // the first key after the last one read
	}
	err = src.read(ctx, queryToken{Key: from}, &loaded, &entries, func(_, _, k, doc []byte) bool {
		if len(p.Items) >= limit || (len(p.Items) > 0 && size+len(doc) > e.cfg.MaxPageBytes) {
			more = true
			return false
		}
		p.Items = append(p.Items, bytes.Clone(doc))
		size += len(doc)
		last = bytes.Clone(k)
		return true
	})
	if err != nil {
		e.chargeFailed(c, 0, r.ranges...)
		return Page{}, translate(err)
	}
	if more {
		raw, _ := json.Marshal(feedToken{Container: c.Internal, ScopeLo: r.span.Lower, ScopeHi: r.span.Upper, Key: last})
		p.Continuation = base64.RawURLEncoding.EncodeToString(raw)
	}
	p.Loaded = len(p.Items)
	p.RU = throughput.QueryCost(p.Loaded, size, len(r.ranges))
	e.chargeScope(c, p.RU, scope, r.ranges...)
	return p, nil
}

// feedToken is a read feed's continuation: its container, the last item
// key read, and the span of item keys the feed reads (a child range
// continuing its parent's token reads its own part of it; see queryToken).
// The container is its internal id, new for a container recreated with
// the same name: item keys mean nothing in another (a token sent to
// another container skipped its first items).
type feedToken struct {
	Container uint64 `json:"c"`
	ScopeLo   []byte `json:"a"`
	ScopeHi   []byte `json:"b"`
	Key       []byte `json:"k"`
}

// Query is a SQL query request.
type Query struct {
	Text   string
	Params exec.Params
	// EnableCrossPartition allows a query not scoped to one logical
	// partition (x-ms-documentdb-query-enablecrosspartition).
	EnableCrossPartition bool
	MaxItems             int
	Continuation         string
	// SupportedFeatures are the query features the client merges itself
	// across partitions (x-ms-cosmos-supported-query-features, e.g.
	// "OrderBy", "Distinct"); nil when it declared none, which stands for
	// plan.LegacyFeatures. A cross-partition query needing more is refused
	// without the substatus that makes a client run the plan.
	SupportedFeatures []string
	// Whole runs a cross-partition query that needs merging on the server,
	// as GatewayQueryFull does for every query (x-partita-gateway-query:
	// full, an extension: the Data Explorer, which merges nothing itself,
	// sends it).
	Whole bool
	// sorted, for tests: an ORDER BY is sorted, never read in index order
	// (the reference an index-ordered read is compared with).
	sorted bool
}

func compile(q Query, opts ...exec.Option) (*parse.Query, *exec.Program, error) {
	ast, err := parse.Parse(q.Text)
	if err != nil {
		return nil, nil, translate(err)
	}
	prog, err := exec.Compile(ast, q.Params, opts...)
	if err != nil {
		return nil, nil, translate(err)
	}
	return ast, prog, nil
}

// crossPartitionRefused is the gateway's answer to a cross-partition query
// that needs merging across partitions (protocol doc §6.2), f naming what.
// SDKs recognise it by status, substatus 1004 and the plan in
// additionalErrorInfo (the JS SDK by additionalErrorInfo, the Python SDK by
// the substatus); the Go SDK, which cannot follow a plan, shows the message,
// whose first sentence is the service's (its tests look for "cross
// partition query can not be directly served by the gateway"). The rest
// tells a Go SDK user how to run the query after all.
func crossPartitionRefused(f exec.Features) *status.Error {
	var needs []string
	for _, n := range []struct {
		on   bool
		name string
	}{{f.OrderBy, "ORDER BY"}, {f.Aggregate, "aggregates"}, {f.GroupBy, "GROUP BY"}, {f.Distinct, "DISTINCT"}, {f.Top, "TOP"}, {f.OffsetLimit, "OFFSET/LIMIT"}} {
		if n.on {
			needs = append(needs, n.name)
		}
	}
	return status.New(http.StatusBadRequest, "The provided cross partition query can not be directly served by the gateway: "+
		"its "+strings.Join(needs, ", ")+" must be merged across partitions. "+
		"SDKs that run cross-partition queries from the query plan in additionalErrorInfo (JavaScript, Python, .NET, Java) handle this themselves. "+
		"The Go SDK cannot: run the query with a partition key, or start the server with --gateway-query=full to have it run such queries whole.").
		WithSub(status.SubBadRequestCrossPartitionGateway)
}

// unsupportedFeatures returns those of needed that supported (nil:
// plan.LegacyFeatures) lacks.
func unsupportedFeatures(needed, supported []string) []string {
	if supported == nil {
		supported = plan.LegacyFeatures()
	}
	var missing []string
	for _, f := range needed {
		if !slices.ContainsFunc(supported, func(s string) bool { return strings.EqualFold(s, f) }) {
			missing = append(missing, f)
		}
	}
	return missing
}

// featuresRefused refuses a cross-partition query whose merging needs the
// features missing, which the client did not declare it supports: the
// plan in additionalErrorInfo stays (the JS SDK, which runs a plan it
// fetched itself, only looks for it), but without substatus 1004 a client
// that would run this plan (the Python SDK v3 ignores DISTINCT, GROUP BY
// and OFFSET/LIMIT in it, and would return wrong results) reports the
// error instead. The first sentences are the service's.
func featuresRefused(missing []string) *status.Error {
	var b strings.Builder
	b.WriteString("Query contains 1 or more unsupported features. Upgrade your SDK to a version that does support the requested features:")
	for _, f := range missing {
		b.WriteString(" Query contained " + f + ", which the calling client does not support.")
	}
	b.WriteString(" The provided cross partition query can not be directly served by the gateway, and this client has not declared " +
		"(in x-ms-cosmos-supported-query-features) that it can merge these across partitions; clients that declare nothing are " +
		"assumed to merge ORDER BY, TOP and SELECT VALUE aggregates only. Run the query with a partition key, through an SDK that " +
		"supports these features, or start the server with --gateway-query=full to have it run such queries whole.")
	return status.New(http.StatusBadRequest, b.String())
}

// QueryResources runs a query over metadata resources (databases,
// containers, offers), all in memory: feed's (its resource type and
// parent, such as "colls" and the database's _rid), whose continuations
// resume no other feed's query.
func (e *Engine) QueryResources(ctx context.Context, feed string, resources [][]byte, q Query) (Page, error) {
	_, prog, err := compile(q)
	if err != nil {
		return Page{}, err
	}
	resources, _ = feedOrder(resources) // as ListResources lists them
	docs := func(yield func([]byte) bool) error {
		for _, r := range resources {
			if !yield(r) {
				return nil
			}
		}
		return nil
	}
	rows, keys, err := prog.RunKeyed(ctx, docs)
	if err != nil {
		return Page{}, translate(err)
	}
	tok, err := q.token(feedID(feed), nil) // evaluated whole: only its own text, in its own feed, resumes it
	if err != nil || tok.Key != nil {
		return Page{}, invalidContinuation("it does not belong to this query")
	}
	p := e.page(rows, keys, prog.KeysOrderFree(), tok, q.MaxItems, false)
	p.Loaded = len(resources)
	p.RU = throughput.QueryCost(len(resources), 0, 1)
	return p, nil
}

// ListResources pages a list of metadata resources (GET /dbs and the like)
// in creation order (feedOrder): feed's, as for QueryResources. The
// continuation is the feed's id and the order key of the last resource
// returned, and the next page starts at the first resource after it,
// whatever was created or deleted in between: a resource deleted from a
// page already read — the last returned included — skips nothing, and none
// is returned twice (a review: a database deleted after the first page
// made the next one skip a database). Another feed's continuation is
// refused: a /dbs token on a database's containers listed none of them,
// with no continuation (a protocol hunt).
func (e *Engine) ListResources(feed string, resources [][]byte, maxItems int, continuation string) (Page, error) {
	resources, keys := feedOrder(resources)
	id := binary.BigEndian.AppendUint64([]byte{feedTokenTag}, feedID(feed))
	start := 0
	if continuation != "" {
		raw, err := base64.RawURLEncoding.DecodeString(continuation)
		if err != nil || len(raw) <= len(id) || raw[0] != feedTokenTag {
			return Page{}, invalidContinuation("it is not a continuation of a resource feed")
		}
		if !bytes.Equal(raw[:len(id)], id) {
			return Page{}, invalidContinuation("it belongs to another feed")
		}
		after := raw[len(id):]
		start, _ = slices.BinarySearchFunc(keys, after, func(k, after []byte) int {
			return cmp.Or(bytes.Compare(k, after), -1) // the first key past after
		})
	}
	end := min(len(resources), start+e.pageLimit(maxItems))
	p := Page{Items: resources[start:end], Loaded: end - start, RU: throughput.QueryCost(end-start, 0, 1)}
	if end < len(resources) && end > start {
		p.Continuation = base64.RawURLEncoding.EncodeToString(append(id, keys[end-1]...))
	}
	return p, nil
}

// feedID identifies a metadata feed in its continuations.
func feedID(feed string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(feed))
	return h.Sum64() | 1 // never 0, the container-less query's
}

// feedTokenTag opens a metadata feed's continuation (ListResources).
const feedTokenTag = 'k'

// feedOrder returns resources in creation order, with their order keys
// (ascending): a resource's _rid decoded, which ends with the catalog's
// sequence number at its creation (a database's, a container's under its
// database's, a script's, user's or permission's under its parent's). An
// offer's _rid is "o" and that number in hexadecimal, which orders by
// length, then text. Every list a feed serves comes from one parent, so
// its keys are unique; a resource whose _rid is none of these (none is)
// comes after them.
func feedOrder(resources [][]byte) ([][]byte, [][]byte) {
	keys := make([][]byte, len(resources))
	for i, r := range resources {
		keys[i] = feedKey(r)
	}
	if slices.IsSortedFunc(keys, bytes.Compare) {
		return resources, keys
	}
	idx := make([]int, len(resources))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	rs, ks := make([][]byte, len(idx)), make([][]byte, len(idx))
	for i, j := range idx {
		rs[i], ks[i] = resources[j], keys[j]
	}
	return rs, ks
}

// feedKey is a resource's order key in its feed (feedOrder).
func feedKey(r []byte) []byte {
	sp, err := document.Props(r)
	if err != nil || sp.RID == "" {
		return []byte{0xff}
	}
	if strings.HasPrefix(sp.Self, "offers/") {
		return append(binary.BigEndian.AppendUint32([]byte{1}, uint32(len(sp.RID))), sp.RID...)
	}
	b, err := document.DecodeRID(sp.RID)
	if err != nil {
		return append([]byte{2}, sp.RID...)
	}
	return append([]byte{1}, b...)
}
