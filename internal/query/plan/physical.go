package plan

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/index"
	"github.com/partitadb/partita/internal/query/parse"
)

// Access is how a physical plan reads the documents of its scope
// (docs/query-plan.md).
type Access int

const (
	// KeyRange reads the scope's items in key order: one logical
	// partition in id order, or an order-free aggregate sequentially.
	KeyRange Access = iota
	// OrderScan reads every document of the scope in creation order
	// through the order entries; the filter is evaluated on each.
	OrderScan
	// IndexPoint streams one term's index entries, already in creation
	// order.
	IndexPoint
	// IndexMerge streams the entries of a lookup's terms merged by
	// sequence number (a k-way merge), each term's entries being in
	// creation order already.
	IndexMerge
	// IndexGather collects a lookup's entries after the position and
	// sorts them by sequence number; for lookups with many terms and few
	// entries.
	IndexGather
	// IndexOrdered reads a path's index entries in term order, serving a
	// single-key ORDER BY (backwards for DESC).
	IndexOrdered
	// IndexIntersect streams the entries of several lookups on different
	// paths (Lookup, an equality or IN, or the range or prefix of fewest
	// entries, and Intersect), each in creation
	// order, and keeps the sequence numbers all of them hold: each stream
	// skips ahead to the others' (a zig-zag join), so the cost follows
	// the smallest lookup, not the first written.
	IndexIntersect
)

var accessNames = [...]string{"key-range", "order-scan", "index-point", "index-merge", "index-gather", "index-ordered", "index-intersect"}

func (a Access) String() string { return accessNames[a] }

// Executor is how a physical plan turns documents into pages.
type Executor int

const (
	// Streamed evaluates documents as they are read and stops when the
	// page is full (exec.Program.Stream, StreamOrdered).
	Streamed Executor = iota
	// Sorted reads the whole scope and keeps the page's rows after the
	// previous page's sort position (exec.Program.RunSortedPage).
	Sorted
	// Whole evaluates the query over the whole scope for every page and
	// pages by row offset (exec.Program.Run).
	Whole
	// Folded is Whole with the scope's keyspaces read and folded in
	// parallel and their groups merged (exec.Program.RunParallel).
	Folded
)

var executorNames = [...]string{"streamed", "sorted", "whole", "folded"}

func (x Executor) String() string { return executorNames[x] }

// Token is the kind of continuation a plan's pages carry.
type Token int

const (
	// TokenItemKey resumes after an item key (key-range access).
	TokenItemKey Token = iota
	// TokenSeq resumes at a _rid sequence number (creation order: order
	// scans and index lookups alike, so either resumes the other).
	TokenSeq
	// TokenIndexKey resumes at an index entry's key (index-ordered).
	TokenIndexKey
	// TokenSort resumes after the sort keys of the previous page's last
	// row (sorted).
	TokenSort
	// TokenOffset resumes after a number of result rows (whole, folded).
	TokenOffset
)

var tokenNames = [...]string{"item-key", "seq", "index-key", "sort-position", "row-offset"}

func (t Token) String() string { return tokenNames[t] }

// Program is what planning needs of the compiled query (exec.Program's
// reports), passed in as a value so that plan does not depend on exec.
type Program struct {
	// Streamable, Sortable, OrderFree and Parallel are exec.Program's.
	Streamable, Sortable, OrderFree, Parallel bool
	// Grouped: the outermost query has GROUP BY, aggregates or DISTINCT.
	Grouped bool
	// Take is the TOP or LIMIT of the outermost query; negative: none.
	Take int
}

// Scope is what planning needs of the part of the container a query
// reads, resolved by the engine.
type Scope struct {
	// Logical: the scope is one logical partition (a full partition key).
	Logical bool
	// KeyPaths are the container's partition key paths ("/pk"). In one
	// logical partition a conjunct on one of them does not narrow the
	// scope (every document there has the scope's key, or none matches):
	// it is no lookup, and the partition is read by key.
	KeyPaths []string
	// Key is the logical partition's key when Logical (one component per
	// KeyPaths entry); conjuncts it makes true are not evaluated (Implied).
	Key document.PartitionKey
	// Ranges is the number of physical partitions the scope touches, and
	// Units the number of keyspaces they are read from as one.
	Ranges, Units int
	// Cross: the query spans logical partitions.
	Cross bool
	// IndexCurrent: the container's index entries reflect its policy; a
	// stale index is never used.
	IndexCurrent bool
	// Hides: some documents of the scope may be hidden from queries (past
	// their time to live, or under a partition key delete), which only a
	// loaded document tells.
	Hides bool
}

// Stats are the measurements a multi-term lookup's choice needs, taken by
// the engine over the scope (Plan.NeedStats) and carried by continuations,
// so that every page of a query runs the same plan without measuring again.
type Stats struct {
	// Terms is the most distinct terms the lookup's spans hold in one
	// keyspace of the scope, counted up to MaxMergeTerms+1.
	Terms int `json:"t"`
	// Entries and Items are the lookup's index entries and the documents
	// of one keyspace of the scope: the first whose entries exceed
	// GatherLimit of its items, else the one with the most entries.
	// Entries are counted up to GatherLimit+1.
	Entries int   `json:"e"`
	Items   int64 `json:"n"`
	// Counted: Entries and Items were counted whatever the terms, as
	// weighing a lookup against an ordered read needs (Physical.Weigh).
	Counted bool `json:"c,omitempty"`
	// Lead is which of the query's ranges and prefixes on several paths
	// (Physical.Leads, in their order) the plan leads with: the one of
	// fewest entries, chosen from Input.Leads. These are its measurements.
	Lead int `json:"l,omitempty"`
	// Page is the page size the first page planned with (Input.PageSize):
	// later pages plan with it, whatever x-ms-max-item-count they ask,
	// so that they choose as the first did (0: a continuation of an
	// earlier release, planned with each page's own).
	Page int `json:"pg,omitempty"`
}

// orderedCheaper reports whether reading the scope in the ORDER BY's order,
// the filter evaluated on each document, costs a page less than the
// lookup st measured followed by a sort: a sorted page loads every
// document the lookup finds (k, its entries in a keyspace of n items), an
// ordered one about page·n/k of them, so the order wins when k² > page·n,
// and always when the lookup's entries are past what a keyspace gathers
// (EntryLimit: the lookup would scan the scope).
func orderedCheaper(scan *IndexScan, st *Stats, page int) bool {
	// A page holds at most the lookup's documents: an unbounded page reads
	// them all either way, and the order reads every other document too.
	page = min(page, max(st.Entries, 1))
	k := float64(st.Entries)
	return st.Entries > EntryLimit(scan, st.Items, page) || k*k > float64(page)*float64(st.Items)
}

// MaxMergeTerms is the most terms per keyspace a lookup merges: each is an
// open iterator for the page, and a page costs that many seeks besides its
// rows.
const MaxMergeTerms = 64

// loadCost is what loading and filtering a document costs, in index
// entries read and sorted by a gather (measured: about 6 µs against 0.4 µs,
// docs/query-plan.md).
const loadCost = 16

// LoadCost is loadCost, for the engine's own choices as it reads (a match
// lookup's gather paid for by the documents an intersection finds).
const LoadCost = loadCost

// maxGather is the most entries a keyspace gathers for a page (the
// engine's bound too).
const maxGather = 1 << 16

// GatherLimit is the most index entries of a keyspace of items documents
// that a lookup gathers and sorts for every page of page rows rather than
// scanning the keyspace with the filter. A gather reads its E entries and
// loads page documents; a scan loads page·items/E documents (it loads
// items/E per match). With a load costing loadCost entries, gathering is
// cheaper while E² + loadCost·page·E ≤ loadCost·page·items. At most
// 65,536.
func GatherLimit(items int64, page int) int {
	if items <= 0 || page <= 0 {
		return 0
	}
	rp := float64(loadCost) * float64(page)
	// The root of E² + rp·E − rp·items, written without the difference
	// of two near numbers that (√(rp²+4·rp·items) − rp)/2 takes: for an
	// unbounded page (rp near 10²⁰) that was 0.
	e := 2 * rp * float64(items) / (math.Sqrt(rp*rp+4*rp*float64(items)) + rp)
	return int(min(e, maxGather))
}

// MatchLimit is the most entries of a keyspace of items documents that a
// "match" lookup (IndexScan.Match) may find for it to be gathered for
// every page of page rows rather than the keyspace scanned with the
// filter. A gather reads the path's every string entry (at most items)
// and loads page documents; a scan loads page·items/E documents. With a
// load costing loadCost entries, gathering is cheaper while E·(items +
// loadCost·page) ≤ loadCost·page·items. At most 65,536.
func MatchLimit(items int64, page int) int {
	if items <= 0 || page <= 0 {
		return 0
	}
	rp := float64(loadCost) * float64(page)
	return int(min(rp*float64(items)/(float64(items)+rp), maxGather))
}

// EntryLimit is the most entries of a keyspace of items documents that
// scan may find for it to be gathered for every page of page rows
// (GatherLimit, or MatchLimit for a "match" lookup): how far the engine
// counts them (Stats.Entries).
func EntryLimit(scan *IndexScan, items int64, page int) int {
	if scan.Kind == "match" {
		return MatchLimit(items, page)
	}
	return GatherLimit(items, page)
}

// Input is everything Choose decides from.
type Input struct {
	Query   *parse.Query
	Params  map[string][]byte
	Policy  *index.Policy
	Program Program
	Scope   Scope
	// Stats, when not nil, are the scope's measurements for the lookup
	// that a plan made without them needed (NeedStats).
	Stats *Stats
	// Leads, when not nil, are the measurements (counted) of each of the
	// ranges and prefixes a plan made without them asked for (Physical.
	// Leads), in its order.
	Leads []Stats
	// Covered, when not nil, says whether every document of the scope has
	// a term in the spans of the ORDER BY's path, as a plan made without
	// it needed (Cover): counted by the engine on a query's first page,
	// known from the position on the others.
	Covered *bool
	// Dense, when not nil, says whether one logical partition's entries of
	// the ORDER BY's path are dense enough in its keyspace's index to read
	// it in that order, as a plan made without it needed (Probe): probed by
	// the engine on a query's first page, known from the position on the
	// others.
	Dense *bool
	// Sorted: the continuation is a sort position (TokenSort), so the
	// ORDER BY is sorted, not read in index order, whatever the filter. A
	// query's own pages choose so through Covered and Dense; a query
	// resumed with another filter (the SDKs' resume of a cross-partition
	// ORDER BY adds one on the ORDER BY's path) may otherwise find a
	// lookup on that path and the index order.
	Sorted bool
	// Ordered: the continuation is a position in an index order (an
	// index-ordered read's entry key), which the query's first page
	// chose: its later pages read so too, without weighing it again
	// against a lookup (Physical.Weigh).
	Ordered bool
	// Wide: an earlier page found a keyspace holding more terms of an
	// intersected range or prefix than a merge takes (the engine left it
	// out there), so ranges and prefixes are not intersected.
	Wide bool
	// PageSize is the most rows a page holds (x-ms-max-item-count, or
	// the default; a large number when unbounded).
	PageSize int
}

// Physical is a query's physical plan: how the engine reads the scope,
// evaluates it and resumes. It is a value: the engine executes it as it
// is, and String prints it (EXPLAIN).
type Physical struct {
	Access   Access
	Executor Executor
	Token    Token
	// Lookup is the index lookup of an index-* access: the path, the term
	// spans (sorted, not overlapping) and the predicate. The filter is
	// still evaluated on every document it finds.
	Lookup *IndexScan
	// Desc: an index-ordered access reads its spans backwards, a
	// key-order one (KeyOrder) its keys.
	Desc bool
	// KeyOrder: the ORDER BY is the order the key-range access reads in
	// (id, in one logical partition; backwards when Desc): streamed as
	// read, with no sort.
	KeyOrder bool
	// Cross, Ranges: the scope spans logical partitions, over that many
	// physical partitions. PassThrough: a fan-out over one physical
	// partition, whose full pages carry a continuation.
	Cross       bool
	Ranges      int
	PassThrough bool
	// Logical: the scope is one logical partition; neither it nor Cross:
	// one partition key range (an SDK's query of one range).
	Logical bool
	// NeedStats: the choice between merge, gather and scan for Lookup
	// needs Stats; the engine measures them and chooses again.
	NeedStats bool
	// Stats are the measurements the choice was made from, if any.
	Stats *Stats
	// Cover, when not nil, is the index scan of an ORDER BY path that no
	// conjunct filters: the query can be read in index order along it if
	// every document of the scope has a scalar there (a term in its
	// spans); the engine counts them and chooses again with
	// Input.Covered.
	Cover *IndexScan
	// Intersect are the lookups an index-intersect access intersects
	// with Lookup: equalities, INs, ranges and prefixes on other paths.
	Intersect []*IndexScan
	// LeadGathered: Lookup, a range or prefix leading an index-intersect
	// access, has its entries gathered and sorted (as IndexGather's) rather
	// than its terms merged.
	LeadGathered bool
	// Gather is the most index entries of a keyspace that an
	// index-intersect access gathers of a range or prefix of Intersect
	// before it merges its terms instead, or leaves it out
	// (IntersectGather, or more when a measured range leads: intersectGather).
	Gather int
	// Leads, when not nil, are the ranges and prefixes on several paths
	// that a query with no equality or IN could lead with: the engine
	// counts each one's entries (Input.Leads) and Choose leads with the
	// fewest, intersected with the others.
	Leads []*IndexScan
	// Weigh, when not nil, is a lookup on another path than the ORDER BY's
	// that the query could read instead of the ORDER BY's index order
	// (then sorting what it finds): the engine counts its entries (with
	// Intersect, the documents the intersection finds) and the scope's
	// items (Stats, Counted) and chooses again (orderedCheaper).
	Weigh *IndexScan
	// Probe, when not nil, is the index scan of a single-path ORDER BY in
	// one logical partition: the path's entries hold the whole keyspace's
	// documents, so the partition is read in that order only if its
	// entries are dense enough there (ProbeBudget); the engine probes,
	// then chooses again with Input.Dense.
	Probe *IndexScan
	// ProbeDesc: the probe reads Probe's spans backwards, as the ordered
	// read it decides on would.
	ProbeDesc bool
	// Implied are the WHERE clause's conjuncts that the scope makes true
	// on every document (Implied), as the query wrote them: the engine
	// evaluates the filter without them.
	Implied []string
	// Blind: the lookups decide the whole filter and nothing else of the
	// query reads a document (blind), so the engine runs the query
	// without its WHERE clause on an empty document for each one the
	// lookups find, loading none: COUNT(1) … WHERE c.cat = 'a' counts
	// index entries.
	Blind bool
	// Why says why Access was chosen.
	Why string
}

// Choose returns the physical plan of a parsed and compiled query. It is a
// pure function of its input: the same query, parameters, policy, scope and
// statistics give the same plan. It walks the WHERE clause's top-level
// conjuncts once for both the lookup and the ordered scan.
//
// The rules (docs/query-plan.md):
//   - with a current index, the best top-level conjunct on an indexed path
//     (= > IN > STARTSWITH > range) is the lookup; one logical partition
//     uses = and IN lookups on paths other than the partition key's (the
//     scope pins those), a range or prefix when the query has no ORDER BY
//     and its entries in the keyspace are at most GatherLimit of the
//     partition's items (Stats, counted), and is otherwise read by key;
//   - an ORDER BY on one indexed path that a conjunct filters (or id, _ts,
//     or a path every document has a scalar on, counted), or on the paths
//     of a composite index (led, perhaps, by paths the query pins), is
//     read in that index's order when the query is not grouped and has no
//     other lookup, or a lookup on that path (narrowing the composite), or
//     a lookup on another path that finds many documents beside a page
//     (counted: Weigh, orderedCheaper);
//   - equalities and INs on several paths are intersected (index-intersect);
//   - one term is streamed; several are merged when a keyspace holds at
//     most MaxMergeTerms of them; else gathered when their entries are at
//     most GatherLimit of the scope's items; else the scope is scanned in
//     creation order with the filter;
//   - without a lookup, an order-free aggregate reads the scope by key,
//     anything else in creation order.
func Choose(in Input) Physical {
	p := Physical{Cross: in.Scope.Cross, Ranges: in.Scope.Ranges, PassThrough: in.Scope.Cross && in.Scope.Ranges == 1, Logical: in.Scope.Logical}
	_, implied := Implied(in.Query, in.Params, in.Scope)
	for _, c := range implied {
		p.Implied = append(p.Implied, parse.ExprString(c))
	}
	prog := in.Program
	var hits []*IndexScan // the lookup of each top-level conjunct, nil where none
	usable := in.Scope.IndexCurrent && in.Policy != nil && !in.Policy.None() && plainFrom(in.Query)
	if usable && in.Query.Where != nil {
		r := rootsOf(in.Query)
		for _, c := range conjuncts(in.Query.Where, nil) {
			hits = append(hits, lookup(c, r, in.Params))
		}
		mergeRanges(hits)
	}
	var scan *IndexScan
	var pending *IndexScan // a range over one logical partition, awaiting Stats
	if usable {
		scan = bestLookup(narrowing(hits, in.Scope), in.Policy)
		if scan != nil && scan.Kind == "match" && in.Scope.Logical {
			// A match reads the path's strings of the whole keyspace,
			// every logical partition's: more than the partition's items
			// read by key.
			scan = nil
		}
		if leads := rangeLeads(scan, narrowing(hits, in.Scope), in.Policy); len(leads) > 1 {
			// Ranges and prefixes on several paths, and no equality or IN:
			// lead with the one whose entries are fewest, counted first.
			switch {
			case in.Stats != nil:
				if i := in.Stats.Lead; i > 0 && i < len(leads) {
					scan = leads[i]
				}
			case len(in.Leads) == len(leads):
				i := fewest(in.Leads)
				st := in.Leads[i]
				st.Lead, st.Counted = i, true
				in.Stats, scan = &st, leads[i]
			default:
				p.Leads = leads
			}
		}
		if scan != nil && in.Scope.Logical && !scan.Point() && scan.Kind != "in" {
			// A range or prefix over one logical partition reads the
			// keyspace's entries of its terms, every logical partition's:
			// cheaper than the partition's items read by key when they are
			// few beside them (the partition's items counted in Stats.Items).
			// It was always read by key: 219 RU a page for c.n > 2990 in a
			// partition of 3,000 items, 11 RU across partitions (a
			// throughput hunt).
			// An ORDER BY is read as the probes below choose.
			switch {
			case len(in.Query.OrderBy) > 0:
				scan = nil
			case in.Stats == nil:
				pending, scan = scan, nil
			case in.Stats.Entries > GatherLimit(in.Stats.Items, in.PageSize):
				p.Stats = in.Stats // every page reads by key, without counting again
				scan = nil
			}
		}
	}
	byKey := in.Scope.Logical && scan == nil
	switch {
	case byKey:
		p.Access, p.Why = KeyRange, "one logical partition: its items in id order"
	case scan == nil && prog.OrderFree:
		p.Access, p.Why, byKey = KeyRange, "an aggregate over the whole scope: items read sequentially in key order", true
	case scan == nil:
		p.Access, p.Why = OrderScan, noLookupWhy(in, usable)
	default:
		p.Lookup = scan
		p.Access, p.Why = lookupAccess(scan, in.Stats, in.PageSize, &p.NeedStats)
		if in.Stats != nil && needsStats(scan) {
			p.Stats = in.Stats
		}
		if p.Access == OrderScan {
			p.Lookup = nil // rejected: Why names it
		}
		// An equality or IN leads an intersection when merged; a range or
		// prefix when measured and merged or gathered (the others are
		// ranges and prefixes then: bestLookup prefers the rest).
		ranged := (scan.Kind == "range" || scan.Kind == "prefix") && in.Stats != nil && !p.NeedStats
		led := (p.Access == IndexPoint || p.Access == IndexMerge) && !needsStats(scan) || ranged && (p.Access == IndexMerge || p.Access == IndexGather)
		if others := intersecting(scan, narrowing(hits, in.Scope), in.Policy, in.Wide); len(others) > 0 && led {
			preds := make([]string, len(others))
			for i, o := range others {
				preds[i] = o.Pred
			}
			why := p.Why
			p.LeadGathered, p.Gather = p.Access == IndexGather, IntersectGather
			p.Access, p.Intersect = IndexIntersect, others
			p.Why = "lookups on " + strconv.Itoa(1+len(others)) + " paths, intersected by sequence number: " + scan.Pred + " AND " + strings.Join(preds, " AND ")
			if ranged {
				p.Gather = intersectGather(in.Stats, in.PageSize)
				p.Why += "; led by " + scan.Pred + ", the fewest entries (" + why + ")"
			}
		}
	}
	if desc, ok := idOrder(in.Query); ok && byKey && in.Scope.Logical && !prog.Grouped && !in.Sorted {
		p.KeyOrder, p.Desc, p.Why = true, desc, "one logical partition: its items in id order, the ORDER BY's"
		if desc {
			p.Why = "one logical partition: its items in id order backwards, the ORDER BY's"
		}
	}
	if usable && byKey && in.Scope.Logical && !p.KeyOrder && !prog.Grouped && !in.Sorted {
		// A composite led by paths the query pins reads fewer entries than
		// the ORDER BY path's own index: first.
		o, desc, _, ok := compositeScan(in.Query, in.Policy, hits, in.Scope)
		if !ok {
			o, desc, ok = orderedScan(in.Query, hits, in.Policy, true)
		}
		if ok {
			order, read, where := "ORDER BY "+strings.Join(o.Path, "."), " read in index order", "index"
			if o.Composite != nil {
				order, read, where = "ORDER BY "+orderText(in.Query), " read in the order of "+o.Target(), o.Target()
			}
			switch {
			case in.Dense == nil:
				p.Probe, p.ProbeDesc = o, desc
			case *in.Dense:
				p.Access, p.Lookup, p.Desc, byKey = IndexOrdered, o, desc, false
				p.Why = "one logical partition: " + order + read + ": its entries are dense enough in the keyspace's (probed)"
			default:
				p.Why += "; " + order + " sorted: the partition's entries are sparse in the keyspace's " + where + " (probed)"
			}
		}
	}
	// weighed reports whether an ordered read that is not narrowed by the
	// lookup scan (a lookup on another path) is chosen over it: when the
	// lookup finds many documents beside the page (counted first: Weigh).
	page := in.PageSize
	if prog.Take >= 0 {
		page = min(page, max(prog.Take, 1))
	}
	weighed := func(order string) (ok bool, why string) {
		st := in.Stats
		switch {
		case in.Ordered:
			return true, ""
		case st == nil || !st.Counted:
			p.Weigh = scan
			return false, ""
		case orderedCheaper(scan, st, page):
			return true, fmt.Sprintf(": the lookup %s finds %d documents of %d in a keyspace, many beside a page of %d (counted)", scan.Pred, st.Entries, st.Items, page)
		}
		p.Why += fmt.Sprintf("; %s sorted: the lookup finds %d documents of %d in a keyspace, few beside a page of %d (counted)", order, st.Entries, st.Items, page)
		return false, ""
	}
	if usable && !byKey && p.Access != IndexOrdered && !prog.Grouped && !in.Sorted {
		o, desc, narrowed, ok := compositeScan(in.Query, in.Policy, hits, in.Scope)
		why := ""
		if ok && scan != nil && !slices.ContainsFunc(narrowed, func(p []string) bool { return slices.Equal(p, scan.Path) }) {
			ok, why = weighed("ORDER BY " + orderText(in.Query))
		}
		if ok {
			// Every document of the scope has an entry in a composite
			// index, whatever its values: no count is needed.
			p.Access, p.Lookup, p.Desc, p.NeedStats, p.Stats, p.Weigh, p.Intersect = IndexOrdered, o, desc, false, in.Stats, nil, nil
			p.LeadGathered, p.Gather = false, 0
			p.Why = "ORDER BY " + orderText(in.Query) + " read in the order of " + o.Target() + why
		}
	}
	if usable && !byKey && p.Access != IndexOrdered && !prog.Grouped && !in.Sorted && p.Weigh == nil {
		o, desc, ok := orderedScan(in.Query, hits, in.Policy, in.Scope.Logical)
		weigh := ""
		if ok && scan != nil && !slices.Equal(scan.Path, o.Path) {
			ok, weigh = weighed("ORDER BY " + strings.Join(o.Path, "."))
		}
		if ok {
			why := "ORDER BY " + strings.Join(o.Path, ".") + " read in index order" + weigh
			switch {
			case !o.Counted:
			case in.Covered == nil:
				p.Cover, ok = o, false
			case *in.Covered:
				why += ": every document of the scope has a scalar there (counted)"
			default:
				ok = false
				p.Why += "; ORDER BY " + strings.Join(o.Path, ".") + " not in index order: a document of the scope has no scalar there (counted)"
			}
			if ok {
				p.Access, p.Lookup, p.Desc, p.NeedStats, p.Stats, p.Why, p.Intersect = IndexOrdered, o, desc, false, in.Stats, why, nil
				p.LeadGathered, p.Gather = false, 0
			}
		}
	}
	if pending != nil && p.Access == KeyRange {
		p.NeedStats, p.Lookup = true, pending // read by key unless the counts say otherwise
	}
	p.Blind = blind(in, p, hits, implied)
	switch {
	case prog.Streamable || p.Access == IndexOrdered || p.KeyOrder:
		p.Executor = Streamed
		switch {
		case p.Access == IndexOrdered:
			p.Token = TokenIndexKey
		case byKey:
			p.Token = TokenItemKey
		default:
			p.Token = TokenSeq
		}
	case prog.Sortable:
		p.Executor, p.Token = Sorted, TokenSort
	case prog.Parallel && in.Scope.Units > 1:
		p.Executor, p.Token = Folded, TokenOffset
	default:
		p.Executor, p.Token = Whole, TokenOffset
	}
	return p
}

// ProbeBudget is the most index entries a probe of the ORDER BY's path
// reads to find a page of one logical partition's items (Physical.Probe):
// sorting costs a load of each of the partition's items per page, a
// load costing loadCost entries, so the index order is chosen when a
// page's rows are found within that many entries. At least 256, so that
// a small partition is not sorted only because a few other documents sort
// before its first.
func ProbeBudget(items int64) int {
	return int(min(max(loadCost*items, 256), 1<<20))
}

// idOrder reports whether q reads documents directly and is ordered by
// their id alone (one logical partition's key order), and whether
// descending.
func idOrder(q *parse.Query) (desc, ok bool) {
	if !plainFrom(q) || len(q.OrderBy) != 1 {
		return false, false
	}
	path, ok := indexPath(q.OrderBy[0].Expr, q.From.Alias)
	return q.OrderBy[0].Desc, ok && slices.Equal(path, []string{"id"})
}

// narrowing returns the lookups of hits that can narrow the scope: in one
// logical partition, not those on a partition key path (the scope already
// pins it). It does not change hits.
func narrowing(hits []*IndexScan, sc Scope) []*IndexScan {
	if !sc.Logical || len(sc.KeyPaths) == 0 {
		return hits
	}
	out := make([]*IndexScan, 0, len(hits))
	for _, h := range hits {
		if h != nil && slices.ContainsFunc(sc.KeyPaths, func(p string) bool { return slices.Equal(splitPath(p), h.Path) }) {
			continue
		}
		out = append(out, h)
	}
	return out
}

// plainFrom reports whether q reads documents directly (FROM c, not FROM
// x IN c.list nor a subquery): only then can the index find them.
func plainFrom(q *parse.Query) bool {
	if q == nil || q.From == nil || q.From.In || q.From.Subquery != nil {
		return false
	}
	_, ok := q.From.Expr.(*parse.Ident)
	return ok
}

func noLookupWhy(in Input, usable bool) string {
	switch {
	case !in.Scope.IndexCurrent:
		return "the index is being rebuilt: creation order, filter on every document"
	case in.Policy == nil || in.Policy.None():
		return "the container indexes nothing: creation order, filter on every document"
	case !usable:
		return "FROM is not a plain alias: creation order"
	case in.Query.Where == nil:
		return "no filter: creation order"
	}
	return "no conjunct on an indexed path: creation order, filter on every document"
}

// lookupAccess chooses how to read a lookup's entries (docs/query-plan.md,
// "Choosing between merge, gather and scan").
func lookupAccess(scan *IndexScan, st *Stats, page int, needStats *bool) (Access, string) {
	switch {
	case scan.Kind == "match" && st != nil:
		if limit := MatchLimit(st.Items, page); st.Entries > limit {
			return OrderScan, fmt.Sprintf("%s: over %d of %d items' strings in a keyspace match, for pages of %d: creation order, filter on every document", scan.Pred, limit, st.Items, page)
		}
		return IndexGather, fmt.Sprintf("%d of %d items' strings in a keyspace match (at most %d for pages of %d): the path's strings read, the matching ones' entries gathered and sorted", st.Entries, st.Items, MatchLimit(st.Items, page), page)
	case scan.Point():
		return IndexPoint, "one term: its entries are in creation order"
	case !needsStats(scan):
		return IndexMerge, fmt.Sprintf("%d terms: merged by sequence number", len(scan.Spans))
	case st == nil:
		*needStats = true
		return IndexMerge, "terms not yet counted"
	case st.Terms <= MaxMergeTerms:
		return IndexMerge, fmt.Sprintf("%d terms at most per keyspace: merged by sequence number", st.Terms)
	}
	limit := GatherLimit(st.Items, page)
	if st.Entries <= limit {
		return IndexGather, fmt.Sprintf("over %d terms, %d entries of %d items in a keyspace (at most %d for pages of %d): gathered and sorted", MaxMergeTerms, st.Entries, st.Items, limit, page)
	}
	return OrderScan, fmt.Sprintf("%s: over %d terms, over %d entries of %d items in a keyspace for pages of %d: creation order, filter on every document", scan.Pred, MaxMergeTerms, limit, st.Items, page)
}

// maxIntersect is the most lookups an index-intersect access intersects
// besides its first.
const maxIntersect = 3

// intersecting returns the lookups of hits that an index-intersect access
// can intersect with scan (an equality or IN read by merging its terms,
// or a measured range or prefix merged or gathered): equalities and INs of at most MaxMergeTerms values, then ranges and
// prefixes, then matches, on other indexed paths, one per path, at most
// maxIntersect. Any document the filter matches has an entry in each. A
// range's or a prefix's terms are unknown here: the engine merges them
// where a keyspace holds at most MaxMergeTerms, and leaves the lookup out
// of the intersection where it holds more (engine.intersectStream); wide
// (Input.Wide) leaves them all out. A match's entries are gathered as the
// lead's documents pay for it (engine.intersectStream), never merged.
func intersecting(scan *IndexScan, hits []*IndexScan, pol *index.Policy, wide bool) []*IndexScan {
	kinds := []string{"equality", "contains", "in", "range", "prefix", "match"}
	if wide {
		kinds = slices.DeleteFunc(kinds, func(k string) bool { return k == "range" || k == "prefix" })
	}
	var out []*IndexScan
	for _, kind := range kinds {
		for _, h := range hits {
			if h == nil || h == scan || h.Kind != kind || len(h.Spans) > MaxMergeTerms || !pol.Indexed(h.Path) ||
				slices.Equal(h.Path, scan.Path) || slices.ContainsFunc(out, func(o *IndexScan) bool { return slices.Equal(o.Path, h.Path) }) {
				continue
			}
			if len(out) < maxIntersect {
				out = append(out, h)
			}
		}
	}
	return out
}

// rangeLeads returns, when scan (the best lookup) is a range or a prefix,
// it and the ranges, prefixes and matches of hits on other indexed paths,
// one per path, at most 1+maxIntersect: the lookups a query with no
// equality or IN could lead an intersection with (Physical.Leads). A match
// that leads is gathered, not intersected (its strings are read whole
// when it is counted; the filter tests the rest).
func rangeLeads(scan *IndexScan, hits []*IndexScan, pol *index.Policy) []*IndexScan {
	if scan == nil || scan.Kind != "range" && scan.Kind != "prefix" {
		return nil
	}
	return append([]*IndexScan{scan}, intersecting(scan, hits, pol, false)...)
}

// fewest returns the index of the measurements with the fewest entries
// (the first of equals): the range or prefix whose documents are fewest
// leads, so the intersection's work follows the smallest.
func fewest(leads []Stats) int {
	best := 0
	for i, st := range leads {
		if st.Entries < leads[best].Entries {
			best = i
		}
	}
	return best
}

// IntersectGather is the most index entries of a keyspace that an
// intersection led by an equality or IN gathers of a range or prefix
// (Physical.Gather): without measurements, a bound small beside the
// documents it may save loading.
const IntersectGather = 256

// intersectGather is Physical.Gather for an intersection led by a range
// or prefix measured as st: gathering another range's E entries costs E
// and saves loading the documents the lead finds that it does not hold.
// If the two are independent, in a keyspace of n items, a page of p rows
// loads p·n/E documents without it, p with it: worth gathering while E² +
// loadCost·p·E ≤ loadCost·p·n (GatherLimit), and never more than the
// lead's own loads could save (loadCost per entry of the lead's).
func intersectGather(st *Stats, page int) int {
	page = min(page, max(st.Entries, 1))
	return max(IntersectGather, min(GatherLimit(st.Items, page), loadCost*st.Entries))
}

// needsStats reports whether choosing how to read scan's entries needs
// Stats: a range or a prefix (its terms are unknown), or more terms than
// MaxMergeTerms.
func needsStats(scan *IndexScan) bool {
	return !scan.Point() && (scan.Kind == "range" || scan.Kind == "prefix" || scan.Kind == "match" || len(scan.Spans) > MaxMergeTerms)
}

// bestLookup returns the best lookup among the conjuncts' on an indexed
// path: equality, then IN, then a prefix, then a range; the first of
// equals.
func bestLookup(hits []*IndexScan, pol *index.Policy) *IndexScan {
	var best *IndexScan
	for _, s := range hits {
		if s == nil || !pol.Indexed(s.Path) {
			continue
		}
		if best == nil || lookupRank(s.Kind) > lookupRank(best.Kind) {
			best = s
		}
	}
	return best
}

func lookupRank(kind string) int {
	switch kind {
	case "equality", "contains":
		return 4
	case "in":
		return 3
	case "prefix":
		return 2
	case "range":
		return 1
	}
	return 0
}

// orderedScan returns an index scan that reads documents in the order of
// the query's ORDER BY, so that it need not sort and can stop at its TOP or
// LIMIT. It needs a single ORDER BY key that is a property path of the FROM
// alias indexed by pol, and a top-level conjunct with a lookup on that same
// path: every document the filter matches then has a scalar there, hence
// an index entry (the index has none for undefined, arrays or objects,
// which ORDER BY would otherwise return too). Without such a filter, it
// scans the whole path when every document has a scalar there: the system
// properties id (a string) and _ts (a number), and, over a scope that is
// not one logical partition, any other path if counting shows it (the
// scan is Counted: Physical.Cover). The scan's spans are ascending; desc
// says to read them backwards.
func orderedScan(q *parse.Query, hits []*IndexScan, pol *index.Policy, logical bool) (scan *IndexScan, desc, ok bool) {
	if len(q.OrderBy) != 1 {
		return nil, false, false
	}
	path, ok := indexPath(q.OrderBy[0].Expr, q.From.Alias)
	if !ok || !pol.Indexed(path) || positional(path) {
		return nil, false, false
	}
	for _, s := range hits {
		if s == nil || !slices.Equal(s.Path, path) {
			continue
		}
		if scan == nil || lookupRank(s.Kind) > lookupRank(scan.Kind) {
			scan = s
		}
	}
	switch {
	case scan != nil:
	case len(path) == 1 && (path[0] == "id" || path[0] == "_ts"):
		scan = &IndexScan{Path: path, Spans: []index.Span{index.PathSpan(path)}, Kind: "path", Pred: "every " + path[0]}
	case !logical:
		// Counting reads the keyspace's entries of the path, which for
		// one logical partition would cost more than sorting its items.
		scan = &IndexScan{Path: path, Spans: []index.Span{index.PathSpan(path)}, Kind: "path", Pred: "every " + strings.Join(path, "."), Counted: true}
	}
	return scan, q.OrderBy[0].Desc, scan != nil
}

// compositeScan returns the scan of the composite index that serves the
// query's ORDER BY on paths of the FROM alias, and desc, to read it
// backwards, when the index serves it inverted: the composite of exactly
// those paths (index.Policy.CompositeIndex, Cosmos DB's rule for several
// paths), or one whose leading paths the query pins to one value each
// (below) followed by exactly those paths (index.Policy.CompositeLedBy:
// WHERE c.a = @x ORDER BY c.b under (a, b); in one logical partition,
// ORDER BY c.ts under (pk, ts)). Every document has an entry in each
// composite index, whatever its values (undefined, arrays and objects
// included), so the scan needs no filter on the paths and no count. A path
// with an array position is not read in index order (positional).
//
// The scan is narrowed (docs/composite-indexes.md, stage 4) by the
// top-level conjuncts' lookups (hits) on its leading paths: each path
// pinned by an equality (or, in one logical partition, a partition key
// path, pinned by the scope's key) extends the entries' common prefix,
// and the first path not pinned may be narrowed by an IN, a prefix or a
// range. narrowed lists the paths of the conjuncts that narrowed it: a
// lookup on one of them finds no fewer documents than the scan.
func compositeScan(q *parse.Query, pol *index.Policy, hits []*IndexScan, sc Scope) (scan *IndexScan, desc bool, narrowed [][]string, ok bool) {
	if len(q.OrderBy) == 0 {
		return nil, false, nil, false
	}
	paths := make([][]string, len(q.OrderBy))
	dirs := make([]bool, len(q.OrderBy))
	for i, o := range q.OrderBy {
		path, ok := indexPath(o.Expr, q.From.Alias)
		if !ok || positional(path) {
			return nil, false, nil, false
		}
		paths[i], dirs[i] = path, o.Desc
	}
	m, ok := pol.CompositeLedBy(paths, dirs, func(path []string) bool {
		_, _, ok := pinned(path, hits, sc)
		return ok && !positional(path)
	})
	if !ok {
		return nil, false, nil, false
	}
	for _, p := range m.Paths {
		if slices.Contains(p, index.AnyElement) {
			return nil, false, nil, false // a lookup's wildcard path is no composite's property
		}
	}
	n, inverted, declared := m.Number, m.Inverted, m.Desc
	paths = m.Paths
	scan = &IndexScan{Kind: "composite", Composite: &CompositeScan{Number: n, Paths: paths, Desc: declared}}
	span := index.CompositeSpan(n)
	prefix := span.Lower
	var preds []string
	for i, path := range paths {
		if v, pred, ok := pinned(path, hits, sc); ok {
			preds, narrowed = append(preds, pred), append(narrowed, path)
			if v.Kind == index.Undefined {
				scan.Spans = []index.Span{index.CompositeEq(prefix, v, declared[i])} // empty
				break
			}
			prefix = index.CompositeComponent(prefix, v, declared[i])
			continue
		}
		var h *IndexScan
		for _, c := range hits {
			if c != nil && slices.Equal(c.Path, path) && (c.Kind == "in" || c.Kind == "prefix" || c.Kind == "range" && (c.Lo != nil || c.Hi != nil)) && (h == nil || lookupRank(c.Kind) > lookupRank(h.Kind)) {
				h = c
			}
		}
		if h == nil {
			break
		}
		preds, narrowed = append(preds, h.Pred), append(narrowed, path)
		switch h.Kind {
		case "in":
			for _, v := range h.Values {
				scan.Spans = append(scan.Spans, index.CompositeEq(prefix, v, declared[i]))
			}
			scan.Spans = slices.DeleteFunc(scan.Spans, index.Span.Empty)
			slices.SortFunc(scan.Spans, func(a, b index.Span) int { return bytes.Compare(a.Lower, b.Lower) })
			scan.Spans = slices.CompactFunc(scan.Spans, func(a, b index.Span) bool { return bytes.Equal(a.Lower, b.Lower) })
			if len(scan.Spans) == 0 {
				scan.Spans = []index.Span{index.CompositeEq(prefix, index.Value{}, false)} // empty
			}
		case "prefix":
			scan.Spans = []index.Span{index.CompositePrefix(prefix, h.Values[0].Str, declared[i])}
		case "range":
			lo, hi, pred := mergedRange(hits, path)
			preds[len(preds)-1] = pred
			scan.Spans = []index.Span{index.CompositeRange(prefix, lo, hi, declared[i])}
		}
		break
	}
	if scan.Spans == nil {
		scan.Spans = []index.Span{index.CompositeUnder(prefix)}
	}
	scan.Pred = "every document"
	if len(preds) > 0 {
		scan.Kind, scan.Pred = "composite prefix", strings.Join(preds, " AND ")
	}
	return scan, inverted, narrowed, true
}

// mergedRange returns the bounds of the range lookups of hits on path
// taken together (c.s >= "a" AND c.s < "b"), the tightest of each end of
// the first one's kind, and their predicates printed.
func mergedRange(hits []*IndexScan, path []string) (lo, hi *index.Bound, pred string) {
	var preds []string
	var kind index.Kind
	for _, h := range hits {
		if h == nil || h.Kind != "range" || !slices.Equal(h.Path, path) || h.Lo == nil && h.Hi == nil {
			continue // not a range, or a union of ranges (spanUnion)
		}
		b := h.Lo
		if b == nil {
			b = h.Hi
		}
		if len(preds) == 0 {
			kind = b.V.Kind
		} else if b.V.Kind != kind {
			continue // matches nothing with the others: the filter says so
		}
		preds = append(preds, h.Pred)
		if h.Lo != nil && (lo == nil || tighter(h.Lo, lo, 1)) {
			lo = h.Lo
		}
		if h.Hi != nil && (hi == nil || tighter(h.Hi, hi, -1)) {
			hi = h.Hi
		}
	}
	return lo, hi, strings.Join(preds, " AND ")
}

// tighter reports whether bound a keeps fewer values than b of the same
// kind, at the lower end (sign 1) or the upper (-1).
func tighter(a, b *index.Bound, sign int) bool {
	c := index.Compare(a.V, b.V) * sign
	return c > 0 || c == 0 && !a.Inclusive && b.Inclusive
}

// pinned returns the value a top-level equality pins path to, or, over one
// logical partition, the scope's key component for a partition key path
// (a defined scalar: every document there has it), with the predicate
// printed.
func pinned(path []string, hits []*IndexScan, sc Scope) (index.Value, string, bool) {
	for _, h := range hits {
		if h != nil && h.Kind == "equality" && slices.Equal(h.Path, path) {
			return h.Values[0], h.Pred, true
		}
	}
	if !sc.Logical || len(sc.Key) != len(sc.KeyPaths) {
		return index.Value{}, "", false
	}
	for i, kp := range sc.KeyPaths {
		if !slices.Equal(splitPath(kp), path) {
			continue
		}
		var v index.Value
		switch k := sc.Key[i]; k.Kind {
		case document.Null:
			v = index.NullValue()
		case document.Bool:
			v = index.BoolValue(k.Bool)
		case document.Number:
			v = index.NumberValue(k.Number)
		case document.String:
			v = index.StringValue(k.String)
		default:
			return index.Value{}, "", false
		}
		return v, predPath(path) + " = " + valueText(v) + " (the partition's key)", true
	}
	return index.Value{}, "", false
}

// orderText prints the query's ORDER BY items, as written.
func orderText(q *parse.Query) string {
	items := make([]string, len(q.OrderBy))
	for i, o := range q.OrderBy {
		items[i] = parse.ExprString(o.Expr)
		if o.Desc {
			items[i] += " DESC"
		}
	}
	return strings.Join(items, ", ")
}

// positional reports whether a segment of path below the root is a decimal
// number: an array position and a property of that name share their terms
// (index/doc.go), so the path's entries in index order would place a
// document whose value there is an object's member ({"t":{"0":"x"}} for
// c.t[0], where ORDER BY sees undefined) among the values. A lookup is
// still used (its filter is evaluated on what it finds); the order is not.
func positional(path []string) bool {
	for _, s := range path[1:] {
		if s != "" && strings.Trim(s, "0123456789") == "" {
			return true
		}
	}
	return false
}

// String prints the plan, one property per line, as EXPLAIN does.
func (p Physical) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "access: %s", p.Access)
	if p.Lookup != nil {
		fmt.Fprintf(&b, " on %s", p.Lookup.Target())
		if p.Desc {
			b.WriteString(" backwards")
		}
	}
	fmt.Fprintf(&b, "\nwhy: %s", p.Why)
	if p.Lookup != nil {
		fmt.Fprintf(&b, "\nlookup: %s %s (%d span", p.Lookup.Kind, p.Lookup.Pred, len(p.Lookup.Spans))
		if len(p.Lookup.Spans) != 1 {
			b.WriteString("s")
		}
		b.WriteString(")")
	}
	if p.LeadGathered {
		b.WriteString("\nlead: gathered and sorted")
	}
	for _, o := range p.Intersect {
		fmt.Fprintf(&b, "\nintersected with: %s %s on %s", o.Kind, o.Pred, o.Target())
	}
	if p.Gather != IntersectGather && slices.ContainsFunc(p.Intersect, func(o *IndexScan) bool { return o.Kind == "range" || o.Kind == "prefix" }) {
		fmt.Fprintf(&b, "\nintersected ranges and prefixes gathered up to %d entries per keyspace", p.Gather)
	}
	if p.Stats != nil {
		fmt.Fprintf(&b, "\nstats: terms=%d entries=%d items=%d", p.Stats.Terms, p.Stats.Entries, p.Stats.Items)
		if p.Stats.Counted {
			b.WriteString(" (counted)")
		}
	}
	if p.NeedStats {
		b.WriteString("\nneeds stats")
	}
	if p.Cover != nil {
		fmt.Fprintf(&b, "\nneeds a count of /%s", strings.Join(p.Cover.Path, "/"))
	}
	if len(p.Leads) > 0 {
		preds := make([]string, len(p.Leads))
		for i, l := range p.Leads {
			preds[i] = l.Pred
		}
		fmt.Fprintf(&b, "\nneeds counts of the lookups %s, to lead with the fewest", strings.Join(preds, ", "))
	}
	if p.Weigh != nil {
		fmt.Fprintf(&b, "\nneeds counts of the lookup %s, to weigh it against the ORDER BY's order", p.Weigh.Pred)
	}
	if p.Probe != nil {
		fmt.Fprintf(&b, "\nneeds a probe of %s", p.Probe.Target())
		if p.ProbeDesc {
			b.WriteString(" backwards")
		}
	}
	for _, c := range p.Implied {
		fmt.Fprintf(&b, "\nimplied by the scope, not evaluated: %s", c)
	}
	if p.Blind {
		b.WriteString("\ndocuments: not loaded (the lookups decide the filter, and the projection reads none)")
	}
	fmt.Fprintf(&b, "\nexecutor: %s\ntoken: %s", p.Executor, p.Token)
	switch {
	case p.PassThrough:
		b.WriteString("\nscope: cross-partition, passed through to 1 physical partition")
	case p.Cross:
		fmt.Fprintf(&b, "\nscope: cross-partition over %d physical partitions", p.Ranges)
	case p.Logical:
		b.WriteString("\nscope: one logical partition")
	default:
		b.WriteString("\nscope: one partition key range")
	}
	return b.String()
}

// MarshalJSON encodes the plan for query metrics and the explain endpoint:
// {"access":"index-merge","path":"/n","why":…,"executor":…,"token":…}. It
// writes what encoding/json would write for the equivalent struct (fields
// in this order, empty ones omitted, strings escaped as encoding/json
// escapes them), without reflection: every query page asking for query
// metrics, as the Go SDK's always do, sends its plan (issue #15).
func (p Physical) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, `{"access":`...)
	b = appendJSONString(b, p.Access.String())
	if p.Lookup != nil {
		b = append(b, `,"path":`...)
		b = appendJSONString(b, p.Lookup.Target())
	}
	if p.Desc {
		b = append(b, `,"descending":true`...)
	}
	if p.Lookup != nil {
		b = append(b, `,"lookup":{"kind":`...)
		b = appendJSONString(b, p.Lookup.Kind)
		b = append(b, `,"predicate":`...)
		b = appendJSONString(b, p.Lookup.Pred)
		b = append(b, `,"spans":`...)
		b = strconv.AppendInt(b, int64(len(p.Lookup.Spans)), 10)
		b = append(b, '}')
	}
	if len(p.Intersect) > 0 {
		b = append(b, `,"intersect":[`...)
		for i, o := range p.Intersect {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"path":`...)
			b = appendJSONString(b, o.Target())
			b = append(b, `,"kind":`...)
			b = appendJSONString(b, o.Kind)
			b = append(b, `,"predicate":`...)
			b = appendJSONString(b, o.Pred)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if p.LeadGathered {
		b = append(b, `,"leadGathered":true`...)
	}
	b = append(b, `,"why":`...)
	b = appendJSONString(b, p.Why)
	if p.Stats != nil {
		b = append(b, `,"stats":{"t":`...)
		b = strconv.AppendInt(b, int64(p.Stats.Terms), 10)
		b = append(b, `,"e":`...)
		b = strconv.AppendInt(b, int64(p.Stats.Entries), 10)
		b = append(b, `,"n":`...)
		b = strconv.AppendInt(b, p.Stats.Items, 10)
		if p.Stats.Counted {
			b = append(b, `,"c":true`...)
		}
		if p.Stats.Lead != 0 {
			b = append(b, `,"l":`...)
			b = strconv.AppendInt(b, int64(p.Stats.Lead), 10)
		}
		b = append(b, '}')
	}
	if p.Blind {
		b = append(b, `,"blind":true`...)
	}
	if len(p.Implied) > 0 {
		b = append(b, `,"implied":[`...)
		for i, c := range p.Implied {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, c)
		}
		b = append(b, ']')
	}
	b = append(b, `,"executor":`...)
	b = appendJSONString(b, p.Executor.String())
	b = append(b, `,"token":`...)
	b = appendJSONString(b, p.Token.String())
	b = append(b, `,"crossPartition":`...)
	b = strconv.AppendBool(b, p.Cross)
	b = append(b, `,"physicalPartitions":`...)
	b = strconv.AppendInt(b, int64(p.Ranges), 10)
	return append(b, '}'), nil
}

// appendJSONString appends s as encoding/json writes a string (with its
// default HTML escaping): '"', '\\', \b \f \n \r \t escaped by name, other
// control characters and '<', '>', '&' as \u00xx, U+2028 and U+2029 as
// \u2028 and \u2029, and each byte of invalid UTF-8 as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
