package advise

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/partitadb/partita/synthkey"
)

// ErrNoItems: the sample holds no items to analyse.
var ErrNoItems = errors.New("advise: no items in the sample")

// MaxBuckets is the most suffix buckets Analyze takes: what synthkey builds.
const MaxBuckets = synthkey.MaxBuckets

// ErrOptions is returned (wrapped) by Analyze for options out of range.
var ErrOptions = errors.New("advise: invalid options")

// Options configure Analyze. The zero value analyses without a workload or
// projection, with DefaultBuckets suffix buckets and Cosmos DB's 20 GB
// logical partition limit.
type Options struct {
	// Workload, if set, describes queries and writes (see Workload).
	Workload *Workload
	// TotalItems and TotalBytes size the whole data set, to project the
	// sample's shares onto it: a logical partition holding a share s of the
	// sample's bytes is projected to s × TotalBytes (or s × TotalItems ×
	// the mean item size). 0 means the sample's own size, or the whole
	// input's when ReadOptions.Sample cut it.
	TotalItems int64
	TotalBytes int64
	// Buckets is N of the suffix variants (1..N); 0 means DefaultBuckets.
	// Past synthkey.MaxBuckets Analyze refuses it: synthkey builds no such
	// key.
	Buckets int
	// TimePath and Window override the workload's Writes.TimePath and
	// Writes.Window.
	TimePath string
	Window   time.Duration
	// LogicalPartitionCap is the most bytes one logical partition may hold;
	// 0 means DefaultLogicalPartitionCap.
	LogicalPartitionCap int64
	// PairPaths is how many of the best single paths are concatenated in
	// pairs (besides the workload's filter paths); 0 means 6.
	PairPaths int
	// MeasuredRU is the container's request rate measured live (RU/s; 0:
	// unknown). Without a stated write rate (Workload.Writes.PerSecond) the
	// hottest key's share applies to it.
	MeasuredRU float64
	// Progress, if set, is called after each candidate is evaluated.
	Progress func(Progress)
}

// Defaults of Options.
const (
	DefaultBuckets             = 100
	DefaultLogicalPartitionCap = 20 << 30 // Cosmos DB: 20 GB
	// PartitionMaxRU is the most RU/s one physical partition (and so one
	// logical partition) serves in Cosmos DB.
	PartitionMaxRU = 10000
	// PhysicalPartitionBytes is the most one physical partition stores in
	// Cosmos DB (50 GB): a hierarchical key's prefix larger than this spans
	// several.
	PhysicalPartitionBytes = 50 << 30
)

// Scoring targets: a key reaching this many effective partitions gets the
// full spread score (see the package documentation).
const (
	storageTarget  = 1000
	writeTarget    = 100
	minWindowItems = 10
	missingKey     = math.MaxUint64
	// prefixFit is what a query naming only a prefix of a hierarchical key
	// counts for in the query fit: it is routed to that prefix's physical
	// partitions, one or a few, rather than to all.
	prefixFit = 0.9
)

// Strategy is how a candidate key is made from the item.
type Strategy string

// Strategies, simplest first.
const (
	Single       Strategy = "single"        // one property
	Concat       Strategy = "concat"        // two properties joined with "-"
	Hierarchical Strategy = "hierarchical"  // 2–3 properties as levels of a MultiHash key
	HashSuffix   Strategy = "hash-suffix"   // value + "." + (hash of another property mod N)+1
	RandomSuffix Strategy = "random-suffix" // value + "." + random 1..N
)

func (s Strategy) order() int {
	return map[Strategy]int{Single: 0, Concat: 1, Hierarchical: 2, HashSuffix: 3, RandomSuffix: 4}[s]
}

// Candidate is one candidate partition key and its measures on the sample.
type Candidate struct {
	Rank int `json:"rank"`
	// Key names the key: "/deviceId-/date", "/deviceId-day(/ts)" (a day
	// bucket of /ts), "/date.hash(/vin,100)", "[/tenantId, /userId]"
	// (hierarchical).
	Key       string   `json:"key"`
	Strategy  Strategy `json:"strategy"`
	Paths     []string `json:"paths"`               // base paths (or levels), in key order
	HashPaths []string `json:"hashPaths,omitempty"` // hash-suffix input
	Buckets   int      `json:"buckets,omitempty"`   // suffix N
	// TimeBucket is the unit ("hour", "day", "month") of a time bucket
	// among Paths, written "unit(/path)".
	TimeBucket string `json:"timeBucket,omitempty"`
	// Build is the synthkey call (target path target) or the container
	// definition making this key.
	Build   string `json:"build"`
	Current bool   `json:"current,omitempty"` // the container's key now
	// Distinct is the number of distinct key values in the sample.
	Distinct int `json:"distinct"`
	// Missing is the share of items without a key value: they would share
	// one logical partition (Cosmos DB's undefined one). An item is without
	// a value on a path that it lacks or that holds an array or an object;
	// for a synthetic key (concat, hash or random suffix) also on a path
	// holding null, which synthkey refuses. For a single or hierarchical
	// key null is a value (Cosmos DB keys the logical partition of null
	// apart from the undefined one), counted in Distinct and LargestShare,
	// not here; a hierarchical key is without a value only when it lacks
	// every level.
	Missing float64 `json:"missing"`
	// LargestShare is the largest logical partition's share of the sample's
	// items and LargestShareBytes of its bytes; LargestKey its key value.
	LargestShare      float64 `json:"largestShare"`
	LargestShareBytes float64 `json:"largestShareBytes"`
	LargestKey        string  `json:"largestKey"`
	// LargestBytes is the largest logical partition's projected size, and
	// CapShare that over the logical partition limit (>1: does not fit).
	// For a time bucket it is at least the hottest key's rate kept up for
	// the bucket's length.
	LargestBytes int64   `json:"largestBytes"`
	CapShare     float64 `json:"capShare"`
	// LargestPrefixBytes is, for a hierarchical key, the largest first
	// level's projected size (it may pass the limit: a prefix spans
	// physical partitions), and PrefixPartitions how many 50 GB physical
	// partitions it needs.
	LargestPrefixBytes int64  `json:"largestPrefixBytes,omitempty"`
	LargestPrefix      string `json:"largestPrefix,omitempty"`
	PrefixPartitions   int    `json:"prefixPartitions,omitempty"`
	// WriteSkew is, over the write windows, the mean share of a window's
	// writes that go to its hottest key at one moment (1: all to one key),
	// weighted by the windows' writes; WriteSkewMax the largest, in window
	// HotWindow. Nil without a time path.
	WriteSkew    *float64 `json:"writeSkew"`
	WriteSkewMax *float64 `json:"writeSkewMax"`
	HotWindow    string   `json:"hotWindow,omitempty"`
	// HotKeyRU is the hottest key's estimated RU/s at the workload's stated
	// write rate (or the measured request rate live; nil when neither is
	// known), with its 95% interval; HotKeyBasis says what it rests on.
	HotKeyRU     *float64 `json:"hotKeyRU"`
	HotKeyRULow  *float64 `json:"hotKeyRULow,omitempty"`
	HotKeyRUHigh *float64 `json:"hotKeyRUHigh,omitempty"`
	HotKeyBasis  string   `json:"hotKeyBasis,omitempty"`
	// SinglePartition is the share of the workload's query weight whose
	// filters name the whole key (nil without queries); Targeted the share
	// naming only a prefix of a hierarchical key (routed to that prefix's
	// partitions). FanOut names the queries that would fan out, heaviest
	// first.
	SinglePartition *float64 `json:"singlePartition"`
	Targeted        *float64 `json:"targeted,omitempty"`
	FanOut          []string `json:"fanOut,omitempty"`
	// Spread, WriteSpread and QueryFit are the score's parts, 0..1.
	Spread      float64  `json:"spread"`
	WriteSpread *float64 `json:"writeSpread"`
	QueryFit    *float64 `json:"queryFit"`
	Score       float64  `json:"score"` // 0..100
	// Why holds plain-words reasons: strengths for the winner, the main
	// weakness for the others.
	Why []string `json:"why,omitempty"`

	spec     spec
	skewUnit string // "day", "second": the period whose writes WriteSkew shares
}

// target is the property a synthetic key is written to in Candidate.Build.
const target = "/partitionKey"

// spec says how to compute a candidate's key from an item.
type spec struct {
	strategy Strategy
	parts    []int32 // nodes of the base paths or levels, in key order
	hash     int32   // hash-suffix node, -1 otherwise
	buckets  int
}

// analysis is the state of one Analyze run.
type analysis struct {
	a        *Analyzer
	opts     Options
	n        int
	meanSize float64
	totalB   int64 // projection basis in bytes (0: none)
	// nodes are a's nodes and, after them, derived time buckets.
	nodes     []*pathNode
	bucketIDs map[string]int32
	timePath  string
	timeID    int32 // node of timePath, -1 if none
	times     []int64
	timeValid []bool
	res       time.Duration // the time path's resolution
	slot      *pathNode     // the time path's value within one second
	window    time.Duration
	// order lists item indexes grouped by window (items without a time
	// omitted); bounds[k] is where window k starts in order.
	order    []int32
	bounds   []int
	winIDs   []int64
	allItems []int32            // 0..n-1, the one window without a time path
	buckets  map[int32][]uint32 // hash node → value id → bucket
	canon    map[int32][]uint32 // node → value id → first id of its canonical string
	counts   map[uint64]agg
	wcounts  map[uint64]int32
	ruWrite  float64
	filtered map[string]bool // paths some query filters on
	// timeLike holds, for paths other than the time path whose values are
	// dates or timestamps (a /date beside a /ts), their resolution: at one
	// moment all writes share their value too.
	timeLike map[int32]time.Duration
}

type agg struct {
	n int32
	b int64
}

// Analyze evaluates candidate keys over the sample and ranks them, best
// first. Errors: ErrNoItems, ctx's.
func (a *Analyzer) Analyze(ctx context.Context, opts Options) (*Report, error) {
	n := len(a.sizes)
	if n == 0 {
		return nil, ErrNoItems
	}
	if opts.Buckets <= 0 {
		opts.Buckets = DefaultBuckets
	}
	if opts.Buckets > MaxBuckets {
		return nil, fmt.Errorf("%w: %d suffix buckets, more than synthkey builds (%d)", ErrOptions, opts.Buckets, MaxBuckets)
	}
	if opts.LogicalPartitionCap <= 0 {
		opts.LogicalPartitionCap = DefaultLogicalPartitionCap
	}
	if opts.PairPaths <= 0 {
		opts.PairPaths = 6
	}
	an := &analysis{a: a, opts: opts, timeID: -1, n: n, meanSize: float64(a.bytes) / float64(n),
		nodes: slices.Clone(a.nodes), bucketIDs: map[string]int32{},
		buckets: map[int32][]uint32{}, canon: map[int32][]uint32{}, counts: make(map[uint64]agg, n),
		wcounts: map[uint64]int32{}, filtered: map[string]bool{}, timeLike: map[int32]time.Duration{}}
	an.allItems = make([]int32, n)
	for i := range an.allItems {
		an.allItems[i] = int32(i)
	}
	rep := &Report{Items: n, Bytes: a.bytes, InputItems: a.seen, Malformed: a.malformed,
		Paths: len(a.nodes) - 1, PathsIgnored: a.ignored, Buckets: opts.Buckets,
		LogicalPartitionCap: opts.LogicalPartitionCap, CurrentKey: a.current, MeasuredRU: opts.MeasuredRU}
	if len(a.current) > 1 {
		rep.CurrentKind = "MultiHash"
	} else if len(a.current) == 1 {
		rep.CurrentKind = "Hash"
	}
	switch {
	case opts.TotalBytes > 0:
		an.totalB = opts.TotalBytes
		rep.ProjectedBytes = opts.TotalBytes
	case opts.TotalItems > 0:
		an.totalB = int64(float64(opts.TotalItems) * an.meanSize)
		rep.ProjectedBytes = an.totalB
		if opts.TotalItems < a.seen {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("the total of %d items is fewer than the %d read: the projection is of %d items", opts.TotalItems, a.seen, opts.TotalItems))
		}
	case a.seen > int64(n):
		an.totalB = a.seenBytes
		rep.ProjectedBytes = an.totalB
	}
	w := opts.Workload
	an.ruWrite = 5.5 + max(0, an.meanSize/1024-1)
	if w != nil {
		rep.Queries = len(w.Queries)
		for _, q := range w.Queries {
			for _, f := range q.Filters {
				an.filtered[f] = true
				if base, _ := splitBucket(f); a.node(base) < 0 {
					rep.Warnings = append(rep.Warnings, fmt.Sprintf("query %q filters on %s, which no sampled item has", q.Name, f))
				}
			}
		}
		if w.Writes.RUPerWrite > 0 {
			an.ruWrite = w.Writes.RUPerWrite
		}
		rep.WritesPerSecond = w.Writes.PerSecond
	}
	an.setTime(rep)

	var cands []*Candidate
	seen := map[string]bool{}
	add := func(c *Candidate) {
		if seen[c.Key] {
			return
		}
		seen[c.Key] = true
		cands = append(cands, c)
		if opts.Progress != nil {
			opts.Progress(Progress{Phase: "analyze", Done: int64(len(cands)), Total: int64(len(cands)), Items: int64(n)})
		}
	}
	// A synthetic key (concatenated or hash-suffixed) of a path holding
	// numbers past ±(2^53−1) fails on those items (synthkey refuses them:
	// a bug hunt found one recommended, failing on every item), so none is
	// proposed; the path is named once.
	unsafeWarned := map[int32]bool{}
	synthesizable := func(s spec) bool {
		if s.strategy != Concat && s.strategy != HashSuffix && s.strategy != RandomSuffix {
			return true
		}
		ok := true
		for _, id := range append(slices.Clone(s.parts), s.hash) {
			if id < 0 || a.nodes[id].unsafe == 0 {
				continue
			}
			ok = false
			if !unsafeWarned[id] {
				unsafeWarned[id] = true
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s holds numbers past ±(2^53−1), which a synthetic key cannot take "+
					"(synthkey: number out of range) and Cosmos DB keys as the nearest double: no concatenated or hashed key of it is proposed; "+
					"store such ids as strings", a.nodes[id].path))
			}
		}
		return ok
	}
	eval := func(s spec) *Candidate {
		c := an.evaluate(s)
		add(c)
		return c
	}

	// Singles: every property path that can be a key. Measurements and
	// payload that no query filters on are not keys (see keyLike).
	var singles []*Candidate
	single := map[int32]*Candidate{}
	for id := int32(1); int(id) < len(a.nodes); id++ {
		nd := a.nodes[id]
		if nd.present == 0 || systemPath(nd.path) {
			continue
		}
		if why := an.notKey(id); why != "" {
			rep.NotKeys = append(rep.NotKeys, nd.path+" ("+why+")")
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c := eval(spec{strategy: Single, parts: []int32{id}, hash: -1})
		singles = append(singles, c)
		single[id] = c
	}
	if len(singles) == 0 {
		return nil, fmt.Errorf("%w: no item has a scalar property that can be a key", ErrNoItems)
	}
	byScore := slices.Clone(singles)
	slices.SortStableFunc(byScore, func(x, y *Candidate) int { return cmp.Compare(y.Score, x.Score) })

	// Pairs among the best single paths and the workload's filter paths,
	// leaving out near-unique paths (a concatenation cannot improve them)
	// and constants.
	var pairIDs []int32
	addPair := func(id int32) {
		if id < 0 || slices.Contains(pairIDs, id) {
			return
		}
		if s := single[id]; s != nil && s.Distinct >= 2 && float64(s.Distinct) < 0.9*float64(n) {
			pairIDs = append(pairIDs, id)
		}
	}
	for _, s := range byScore {
		if len(pairIDs) >= opts.PairPaths {
			break
		}
		addPair(s.spec.parts[0])
	}
	if w != nil {
		for _, q := range w.Queries {
			for _, f := range q.Filters {
				addPair(a.node(f))
			}
		}
	}
	slices.Sort(pairIDs) // document order of first appearance
	for i, x := range pairIDs {
		for _, y := range pairIDs[i+1:] {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if s := (spec{strategy: Concat, parts: []int32{x, y}, hash: -1}); synthesizable(s) {
				eval(s)
			}
		}
	}

	// Time buckets: an entity and the bucket of its write time, the
	// coarsest of month, day and hour whose largest logical partition
	// stays within half the limit (a bucket holds its key's writes for the
	// bucket's length, so a high rate asks for a finer one).
	var entities []int32 // pair paths that are not the time path itself
	for _, id := range pairIDs {
		if id != an.timeID && an.timeLike[id] == 0 {
			entities = append(entities, id)
		}
	}
	bucketOf := map[int32]int32{} // entity → its chosen bucket node
	// (Not of /_ts: the server sets it after the key is computed.)
	if an.timeID >= 0 && an.res < 24*time.Hour && !systemPath(an.timePath) {
		for _, e := range entities {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if !synthesizable(spec{strategy: Concat, parts: []int32{e}, hash: -1}) {
				continue
			}
			var chosen *Candidate
			for _, u := range bucketUnits {
				c := an.evaluate(spec{strategy: Concat, parts: []int32{e, an.bucketNode(u)}, hash: -1})
				chosen = c
				if c.CapShare <= 0.5 {
					break
				}
			}
			add(chosen)
			bucketOf[e] = chosen.spec.parts[1]
		}
	}

	// Hierarchical keys: a coarse first level (a tenant) that queries name
	// alone or that outgrows the limit, then a finer one (and a third if
	// the two-level leaf is still large). The leaf (the whole tuple) is the
	// logical partition; a query naming the first level is routed to its
	// partitions only.
	prefixUse := func(x int32, rest ...int32) bool {
		if w == nil || len(w.Queries) == 0 {
			// No queries to route: only a first level outgrowing the limit
			// (a whale) asks for a hierarchy, to keep its items together.
			s := single[x]
			return s != nil && s.CapShare > 0.5
		}
		px := an.nodes[x].path
		for _, q := range w.Queries {
			if !slices.Contains(q.Filters, px) {
				continue
			}
			for _, r := range rest {
				if !an.names(q.Filters, r) {
					return true
				}
			}
		}
		return false
	}
	finer := append(slices.Clone(pairIDs), slices.Collect(maps.Values(bucketOf))...)
	slices.Sort(finer)
	finer = slices.Compact(finer)
	distinct := func(id int32) int {
		if s := single[id]; s != nil {
			return s.Distinct
		}
		return an.nodes[id].scalars()
	}
	for _, x := range entities {
		for _, y := range finer {
			if y == x || distinct(y) <= distinct(x) || an.nodes[y].unit != "" && bucketOf[x] != y {
				continue
			}
			if !prefixUse(x, y) {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			c := eval(spec{strategy: Hierarchical, parts: []int32{x, y}, hash: -1})
			if c.CapShare <= 0.5 {
				continue
			}
			for _, z := range finer {
				if z == x || z == y || distinct(z) <= distinct(y) || an.nodes[z].unit != "" && bucketOf[x] != z {
					continue
				}
				eval(spec{strategy: Hierarchical, parts: []int32{x, y, z}, hash: -1})
			}
		}
	}
	// The container's current key, evaluated whatever the above chose.
	if cur := an.currentSpec(); cur != nil {
		eval(*cur)
	}

	// Suffix variants of hot paths: those putting a large share of the
	// items or of a window's writes on one value. lacks is the share of
	// items whose path id holds no value a synthetic key takes: a single
	// key's Missing, and its nulls.
	lacks := func(id int32) float64 { return 1 - float64(a.nodes[id].present)/float64(n) }
	var hashIDs []int32
	for _, s := range slices.SortedStableFunc(slices.Values(singles), func(x, y *Candidate) int { return cmp.Compare(y.Distinct, x.Distinct) }) {
		if len(hashIDs) < 2 && lacks(s.spec.parts[0]) < 0.05 && s.Distinct >= min(opts.Buckets, n/2) {
			hashIDs = append(hashIDs, s.spec.parts[0])
		}
	}
	bases := 0
	curID := int32(-1)
	if len(a.current) == 1 {
		curID = a.node(a.current[0])
	}
	// The current key first: a hot key found live is spread by its own
	// suffix variants.
	slices.SortStableFunc(byScore, func(x, y *Candidate) int {
		return cmp.Compare(boolInt(y.spec.parts[0] == curID), boolInt(x.spec.parts[0] == curID))
	})
	for _, s := range byScore {
		base := s.spec.parts[0]
		hot := s.LargestShare >= 0.05 || (s.WriteSkew != nil && *s.WriteSkew >= 0.2) || base == curID
		if !hot || s.Distinct < 2 || lacks(base) >= 0.5 || bases >= 4 {
			continue
		}
		bases++
		hs := slices.Clone(hashIDs)
		if w != nil {
			// Paths queried together with the base keep those queries
			// single-partition when hashed.
			for _, q := range w.Queries {
				if !slices.Contains(q.Filters, s.Paths[0]) {
					continue
				}
				for _, f := range q.Filters {
					if id := a.node(f); id >= 0 && !slices.Contains(hs, id) && single[id] != nil {
						hs = append(hs, id)
					}
				}
			}
		}
		for _, h := range hs {
			if h == base {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if s := (spec{strategy: HashSuffix, parts: []int32{base}, hash: h, buckets: opts.Buckets}); synthesizable(s) {
				eval(s)
			}
		}
		if s := (spec{strategy: RandomSuffix, parts: []int32{base}, hash: -1, buckets: opts.Buckets}); synthesizable(s) {
			eval(s)
		}
	}

	slices.SortStableFunc(cands, func(x, y *Candidate) int {
		return cmp.Or(cmp.Compare(y.Score, x.Score), cmp.Compare(x.Strategy.order(), y.Strategy.order()),
			cmp.Compare(x.Key, y.Key))
	})
	for i, c := range cands {
		c.Rank = i + 1
		c.Current = an.isCurrent(c)
	}
	rep.Candidates = cands
	explain(rep, w)
	return rep, nil
}

// currentSpec returns the spec of the container's current key: a single
// path, or the levels of a hierarchical (MultiHash) key; nil if unknown or
// not in the sample.
func (an *analysis) currentSpec() *spec {
	cur := an.a.current
	if len(cur) == 0 {
		return nil
	}
	var parts []int32
	for _, p := range cur {
		id := an.a.node(p)
		if id < 0 {
			return nil
		}
		parts = append(parts, id)
	}
	st := Single
	if len(parts) > 1 {
		st = Hierarchical // Cosmos DB: several paths are always MultiHash
	}
	return &spec{strategy: st, parts: parts, hash: -1}
}

// isCurrent reports whether c is the container's current key.
func (an *analysis) isCurrent(c *Candidate) bool {
	cur := an.a.current
	switch {
	case len(cur) == 0:
		return false
	case len(cur) == 1:
		return c.Strategy == Single && c.Paths[0] == cur[0]
	}
	return c.Strategy == Hierarchical && slices.Equal(c.Paths, cur)
}

// notKey says why property path id cannot be a good key ("" if it can): a
// measurement (fractional numbers with many values) or a payload (long
// strings), unless a query filters on it.
func (an *analysis) notKey(id int32) string {
	nd := an.a.nodes[id]
	if an.filtered[nd.path] || id == an.timeID {
		return ""
	}
	switch {
	case nd.numbers > 0 && nd.fractional*10 >= nd.numbers && nd.scalars() >= 20:
		return "a measurement: fractional numbers no query filters on"
	case nd.strings > 0 && nd.strBytes/int64(nd.strings) > 128:
		return "a payload: long strings no query filters on"
	}
	return ""
}

// splitBucket splits a filter "day(/ts)" into "/ts" and "day"; another
// path is returned as is with unit "".
func splitBucket(f string) (path, unit string) {
	for _, u := range bucketUnits {
		if strings.HasPrefix(f, u+"(") && strings.HasSuffix(f, ")") {
			return f[len(u)+1 : len(f)-1], u
		}
	}
	return f, ""
}

// names reports whether a query with filters names node id by equality: its
// path, or for a time bucket the bucket or the time path itself (a query
// over a time range within one bucket names the bucket).
func (an *analysis) names(filters []string, id int32) bool {
	nd := an.nodes[id]
	if nd.unit != "" {
		src := an.nodes[nd.src].path
		return slices.Contains(filters, nd.path) || slices.Contains(filters, src)
	}
	return slices.Contains(filters, nd.path)
}

// node returns the node index of path p ("/a/b", segments escaped as in
// JSON Pointer: "~1" for "/", "~0" for "~"), or -1.
func (a *Analyzer) node(p string) int32 {
	if !validPath(p) {
		return -1
	}
	id := int32(0)
	for seg := range strings.SplitSeq(p[1:], "/") {
		next, ok := a.nodes[id].children[unescapeSegment(seg)]
		if !ok {
			return -1
		}
		id = next
	}
	return id
}

// systemPath reports whether p is a Cosmos DB system property.
func systemPath(p string) bool {
	switch p {
	case "/_rid", "/_self", "/_etag", "/_attachments", "/_ts", "/_lsn":
		return true
	}
	return false
}

// canonIDs maps node id's value ids to the first value id with the same
// canonical string: a synthetic key is a string, so in it the number 17
// and the string "17" are one value. Null maps to 0 (missing): synthkey
// refuses it (ErrNull), so no synthetic key has it.
func (an *analysis) canonIDs(id int32) []uint32 {
	if c, ok := an.canon[id]; ok {
		return c
	}
	nd := an.nodes[id]
	c := make([]uint32, len(nd.strs)+1)
	first := map[string]uint32{}
	for v, s := range nd.strs {
		if nd.isNull(uint32(v + 1)) {
			continue
		}
		f, ok := first[s]
		if !ok {
			f = uint32(v + 1)
			first[s] = f
		}
		c[v+1] = f
	}
	an.canon[id] = c
	return c
}

// column returns the function giving item i's value id on node id (0:
// missing). canonical merges values of the same canonical string and makes
// null missing (for synthetic keys, see canonIDs); otherwise null is a
// value of its own. moment gives the value at one moment: the time path's
// value within its second (constant unless finer than a second) and a
// time bucket's constant, null staying apart (momentNull).
func (an *analysis) column(id int32, canonical, moment bool) func(i int) uint32 {
	nd := an.nodes[id]
	col := nd.value
	if canonical {
		c := an.canonIDs(id)
		col = func(i int) uint32 { return c[nd.value(i)] }
	}
	switch {
	case moment && id == an.timeID && an.slot != nil:
		// An item whose time is null (or no time) is in no write window,
		// so no moment key is asked of it.
		return an.slot.value
	case moment && (nd.unit != "" || id == an.timeID || an.timeLike[id] >= time.Second):
		return func(i int) uint32 {
			switch v := col(i); {
			case v == 0:
				return 0
			case nd.isNull(v):
				return momentNull
			}
			return momentValue
		}
	}
	return col
}

// The value ids of a column at one moment (column) of a path whose every
// value is the same then: that value, and null.
const (
	momentValue = 1
	momentNull  = 2
)

// keyFunc returns the function computing item i's key under s (at one
// moment if moment; see column), and one rendering a key as its value.
func (an *analysis) keyFunc(s spec, moment bool) (func(i int) uint64, func(uint64) string) {
	canonical := s.strategy != Single && s.strategy != Hierarchical
	cols := make([]func(int) uint32, len(s.parts))
	for k, id := range s.parts {
		cols[k] = an.column(id, canonical, moment)
	}
	x := cols[0]
	// The renderings are of keys not at a moment (moment keys are only
	// counted).
	str := func(k int, v uint32) string { return an.nodes[s.parts[k]].strs[v-1] }
	typed := func(k int, v uint32) string { // a JSON value, for hierarchical keys
		nd := an.nodes[s.parts[k]]
		if nd.kinds[v-1] == 's' {
			return strconv.Quote(nd.strs[v-1])
		}
		return nd.strs[v-1]
	}
	switch {
	case s.strategy == RandomSuffix:
		n := uint64(s.buckets)
		return func(i int) uint64 {
				v := x(i)
				if v == 0 {
					return missingKey
				}
				return uint64(v)<<32 | (splitmix64(uint64(i))%n + 1)
			}, func(k uint64) string {
				return str(0, uint32(k>>32)) + "." + strconv.FormatUint(uint64(uint32(k)), 10)
			}
	case s.strategy == HashSuffix:
		// The hashed path's canonical column: synthkey hashes no null.
		hc := an.column(s.hash, true, false)
		bk := an.hashBuckets(s.hash, s.buckets)
		return func(i int) uint64 {
				v, h := x(i), hc(i)
				if v == 0 || h == 0 {
					return missingKey
				}
				return uint64(v)<<32 | uint64(bk[h])
			}, func(k uint64) string {
				return str(0, uint32(k>>32)) + "." + strconv.FormatUint(uint64(uint32(k)), 10)
			}
	case len(cols) == 1:
		return func(i int) uint64 {
				if v := x(i); v != 0 {
					return uint64(v)
				}
				return missingKey
			}, func(k uint64) string {
				if s.strategy == Hierarchical {
					return "[" + typed(0, uint32(k)) + "]"
				}
				return str(0, uint32(k))
			}
	}
	y := cols[1]
	join := func(parts ...string) string {
		if s.strategy == Hierarchical {
			return "[" + strings.Join(parts, ", ") + "]"
		}
		return strings.Join(parts, "-")
	}
	// A hierarchical key's missing level is its Undefined component (id 0,
	// rendered {} as Cosmos DB shows it), so items without a lower level
	// share their upper levels' partition, not one of all such items; the
	// key is missing only when every level is. A null level is a value
	// (rendered null), apart from {}. A concatenation cannot be built
	// without all of its parts (synthkey refuses it; its columns are
	// canonical, null missing).
	hier := s.strategy == Hierarchical
	missing := func(vs ...uint32) bool {
		n := 0
		for _, v := range vs {
			if v == 0 {
				n++
			}
		}
		return n == len(vs) || (!hier && n > 0)
	}
	render := func(k int, v uint32) string {
		switch {
		case hier && v == 0:
			return "{}"
		case hier:
			return typed(k, v)
		}
		return str(k, v)
	}
	if len(cols) == 2 {
		return func(i int) uint64 {
				a, b := x(i), y(i)
				if missing(a, b) {
					return missingKey
				}
				return uint64(a)<<32 | uint64(b)
			}, func(k uint64) string {
				return join(render(0, uint32(k>>32)), render(1, uint32(k)))
			}
	}
	// Three levels: the first two interned as one pair id.
	z := cols[2]
	pairs := map[uint64]uint32{}
	var rev []uint64
	return func(i int) uint64 {
			a, b, c := x(i), y(i), z(i)
			if missing(a, b, c) {
				return missingKey
			}
			ab := uint64(a)<<32 | uint64(b)
			p, ok := pairs[ab]
			if !ok {
				rev = append(rev, ab)
				p = uint32(len(rev))
				pairs[ab] = p
			}
			return uint64(p)<<32 | uint64(c)
		}, func(k uint64) string {
			ab := rev[k>>32-1]
			return join(render(0, uint32(ab>>32)), render(1, uint32(ab)), render(2, uint32(k)))
		}
}

// hashBuckets returns, per value id of node id, its synthkey bucket 1..n.
func (an *analysis) hashBuckets(id int32, n int) []uint32 {
	if b, ok := an.buckets[id]; ok {
		return b
	}
	nd := an.nodes[id]
	b := make([]uint32, len(nd.strs)+1)
	for v, s := range nd.strs {
		b[v+1] = fnv1a32(s)%uint32(n) + 1
	}
	an.buckets[id] = b
	return b
}

// describeSpec sets c's Key, Paths, TimeBucket and Build from its spec.
func (an *analysis) describeSpec(c *Candidate) {
	s := c.spec
	for _, id := range s.parts {
		nd := an.nodes[id]
		c.Paths = append(c.Paths, nd.path)
		if nd.unit != "" {
			c.TimeBucket = nd.unit
		}
	}
	quoted := func(ps []string) string {
		var q []string
		for _, p := range ps {
			q = append(q, strconv.Quote(p))
		}
		return strings.Join(q, ", ")
	}
	// plain are the property paths, bucket the time bucket's source path.
	var plain []string
	bucket := ""
	for _, id := range s.parts {
		if nd := an.nodes[id]; nd.unit != "" {
			bucket = an.nodes[nd.src].path
		} else {
			plain = append(plain, nd.path)
		}
	}
	timeField := ""
	if bucket != "" {
		timeField = fmt.Sprintf(", Time: &synthkey.TimeBucket{Path: %q, Unit: synthkey.%s}", bucket, unitName(c.TimeBucket))
	}
	switch s.strategy {
	case Single:
		c.Key = c.Paths[0]
		c.Build = fmt.Sprintf("synthkey.Concat(%q, %q) or the path itself", target, c.Paths[0])
		switch nd := an.nodes[s.parts[0]]; {
		case nd.unsafe > 0:
			// synthkey refuses its numbers past 2^53−1 (a review: the
			// advice named a build that fails on every such item).
			c.Build = "the path itself (its numbers past 2^53−1 are no part of a synthetic key)"
		case nd.null != 0:
			// and null (ErrNull), which the path keys as a value.
			c.Build = "the path itself (its nulls are no part of a synthetic key)"
		}
	case Concat:
		c.Key = strings.Join(c.Paths, "-")
		if bucket != "" {
			c.Build = fmt.Sprintf("synthkey.New(synthkey.Config{Target: %q, Paths: []string{%s}%s})", target, quoted(plain), timeField)
		} else {
			c.Build = fmt.Sprintf("synthkey.Concat(%q, %s)", target, quoted(c.Paths))
		}
	case Hierarchical:
		c.Key = "[" + strings.Join(c.Paths, ", ") + "]"
		if bucket == "" {
			c.Build = fmt.Sprintf("azcosmos.PartitionKeyDefinition{Kind: azcosmos.PartitionKeyKindMultiHash, Version: 2, Paths: []string{%s}}", quoted(c.Paths))
		} else {
			var levels []string
			for _, p := range plain {
				levels = append(levels, fmt.Sprintf("synthkey.Level{Path: %q}", p))
			}
			levels = append(levels, fmt.Sprintf("synthkey.Level{Key: timeKey} /* timeKey: synthkey.New(synthkey.Config{Target: \"/%sBucket\"%s}) */", c.TimeBucket, timeField))
			c.Build = "synthkey.NewHierarchy(" + strings.Join(levels, ", ") + ")"
		}
	case HashSuffix:
		c.HashPaths = []string{an.nodes[s.hash].path}
		c.Buckets = s.buckets
		c.Key = fmt.Sprintf("%s.hash(%s,%d)", c.Paths[0], c.HashPaths[0], s.buckets)
		c.Build = fmt.Sprintf("synthkey.HashSuffix(%q, %d, []string{%q}, %q)", target, s.buckets, c.HashPaths[0], c.Paths[0])
	case RandomSuffix:
		c.Buckets = s.buckets
		c.Key = fmt.Sprintf("%s.random(%d)", c.Paths[0], s.buckets)
		c.Build = fmt.Sprintf("synthkey.RandomSuffix(%q, %d, %q)", target, s.buckets, c.Paths[0])
	}
}

// unitName is synthkey's constant for a time bucket unit.
func unitName(u string) string {
	switch u {
	case "month":
		return "Month"
	case "day":
		return "Day"
	}
	return "Hour"
}

// largest returns the largest of counts' keys by items and by bytes, and
// the latter's projected size.
func (an *analysis) largest(counts map[uint64]agg) (maxN, maxB agg, maxNKey, maxBKey uint64, projected int64) {
	for k, e := range counts {
		if e.n > maxN.n || (e.n == maxN.n && k < maxNKey) {
			maxN, maxNKey = e, k
		}
		if e.b > maxB.b || (e.b == maxB.b && k < maxBKey) {
			maxB, maxBKey = e, k
		}
	}
	shareBytes := float64(maxB.b) / float64(an.a.bytes)
	switch {
	case maxN.n <= 1:
		projected = maxB.b // one item per key: the data's size does not matter
	case an.totalB > 0:
		// A key seen k times in the sample is taken as k - 2√k, no less than
		// the mean: sampling noise alone makes some key of a uniform
		// distribution look several times its true size when k is small.
		k := float64(maxB.n)
		est := max(k-2*math.Sqrt(k), float64(an.n)/float64(len(counts)), 1)
		projected = int64(shareBytes * min(1, est/k) * float64(an.totalB))
	default:
		projected = maxB.b
	}
	return
}

// evaluate measures and scores one candidate.
func (an *analysis) evaluate(s spec) *Candidate {
	a := an.a
	c := &Candidate{Strategy: s.strategy, spec: s}
	an.describeSpec(c)
	key, render := an.keyFunc(s, false)

	// Storage: items and bytes per logical partition.
	counts := an.counts
	clear(counts)
	for i := range an.n {
		k := key(i)
		e := counts[k]
		e.n++
		e.b += int64(a.sizes[i])
		counts[k] = e
	}
	maxN, maxB, _, maxBKey, projected := an.largest(counts)
	c.Distinct = len(counts)
	if m, ok := counts[missingKey]; ok {
		c.Distinct--
		c.Missing = float64(m.n) / float64(an.n)
	}
	c.LargestShare = float64(maxN.n) / float64(an.n)
	c.LargestShareBytes = float64(maxB.b) / float64(a.bytes)
	if maxBKey == missingKey {
		c.LargestKey = "(missing)"
	} else {
		c.LargestKey = render(maxBKey)
	}
	c.LargestBytes = projected
	c.Spread = spreadScore(c.LargestShare, an.n, storageTarget)

	// The prefix of a hierarchical key: its first level.
	if s.strategy == Hierarchical && len(s.parts) > 1 {
		pk, prender := an.keyFunc(spec{strategy: Hierarchical, parts: s.parts[:1], hash: -1}, false)
		clear(counts)
		for i := range an.n {
			k := pk(i)
			e := counts[k]
			e.n++
			e.b += int64(a.sizes[i])
			counts[k] = e
		}
		_, _, _, pKey, pBytes := an.largest(counts)
		c.LargestPrefixBytes = pBytes
		if pKey != missingKey {
			c.LargestPrefix = prender(pKey)
		}
		c.PrefixPartitions = int(max(1, (pBytes+PhysicalPartitionBytes-1)/PhysicalPartitionBytes))
	}

	// Writes at one moment: per write window, the share of its writes the
	// hottest key takes.
	mkey, _ := an.keyFunc(s, true)
	c.skewUnit = an.skewUnit(s)
	if len(an.winIDs) > 0 {
		wc := an.wcounts
		var sum, weighted, spread, maxShare float64
		hot := -1
		for k := range an.winIDs {
			items := an.order[an.bounds[k]:an.bounds[k+1]]
			if len(items) < minWindowItems {
				continue
			}
			clear(wc)
			var top int32
			for _, i := range items {
				k := mkey(int(i))
				x := wc[k] + 1
				wc[k] = x
				top = max(top, x)
			}
			share := float64(top) / float64(len(items))
			sum += float64(len(items))
			weighted += share * float64(len(items))
			spread += spreadScore(share, len(items), writeTarget) * float64(len(items))
			if share > maxShare {
				maxShare, hot = share, k
			}
		}
		if sum > 0 {
			skew, ws := weighted/sum, spread/sum
			c.WriteSkew, c.WriteSkewMax, c.WriteSpread = &skew, &maxShare, &ws
			c.HotWindow = an.windowLabel(an.winIDs[hot])
		}
	}
	if rate, perWrite, source := an.writeRate(); rate > 0 {
		est := an.estimateHot(mkey)
		ru, lo, hi := rate*est.share*perWrite, rate*est.low*perWrite, rate*est.high*perWrite
		c.HotKeyRU, c.HotKeyRULow, c.HotKeyRUHigh = &ru, &lo, &hi
		c.HotKeyBasis = est.basis(source)
		// A time bucket (or a time path of an hour or coarser) holds its
		// key's writes for the bucket's length.
		if sec := an.bucketLength(s); sec > 0 && an.rateIsWrites() {
			c.LargestBytes = max(c.LargestBytes, int64(rate*est.share*sec*an.meanSize))
		}
	}
	c.CapShare = float64(c.LargestBytes) / float64(an.opts.LogicalPartitionCap)

	// Queries.
	if w := an.opts.Workload; w != nil && len(w.Queries) > 0 {
		var total, single, prefix float64
		type fan struct {
			name string
			w    float64
		}
		var fans []fan
		for _, q := range w.Queries {
			total += q.Weight
			named := 0 // leading parts named
			for _, id := range s.parts {
				if !an.names(q.Filters, id) {
					break
				}
				named++
			}
			full := s.strategy != RandomSuffix && named == len(s.parts) &&
				(s.hash < 0 || an.names(q.Filters, s.hash))
			switch {
			case full:
				single += q.Weight
			case s.strategy == Hierarchical && named > 0:
				prefix += q.Weight
			default:
				fans = append(fans, fan{q.Name, q.Weight})
			}
		}
		slices.SortStableFunc(fans, func(x, y fan) int { return cmp.Compare(y.w, x.w) })
		for _, f := range fans {
			c.FanOut = append(c.FanOut, f.name)
		}
		share, pshare := 0.0, 0.0
		if total > 0 {
			share, pshare = single/total, prefix/total
		}
		fit := share + prefixFit*pshare
		c.SinglePartition, c.QueryFit = &share, &fit
		if s.strategy == Hierarchical {
			c.Targeted = &pshare
		}
	}
	c.Score = score(c)
	return c
}

// bucketLength is, for a key holding a time bucket or a time path of an
// hour's resolution or coarser, that length in seconds (the longest if
// several); 0 otherwise.
func (an *analysis) bucketLength(s spec) float64 {
	sec := 0.0
	for _, id := range s.parts {
		switch nd := an.nodes[id]; {
		case nd.unit != "":
			sec = max(sec, bucketSeconds(nd.unit))
		case id == an.timeID && an.res >= time.Hour:
			sec = max(sec, an.res.Seconds())
		case an.timeLike[id] >= time.Hour:
			sec = max(sec, an.timeLike[id].Seconds())
		}
	}
	return sec
}

// skewUnit names the period whose writes a key's write skew shares: the
// write window's, or the time path's resolution when the key holds the
// time path at a finer one ("second": all writes of a second on one key).
func (an *analysis) skewUnit(s spec) string {
	w := windowWord(formatDuration(an.window))
	for _, id := range s.parts {
		if id == an.timeID && an.res < an.window && an.res >= time.Second {
			return windowWord(formatDuration(an.res))
		}
	}
	return w
}

// fnv1a32 is synthkey's hash-suffix hash (FNV-1a, 32 bits).
func fnv1a32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// splitmix64 scrambles x; it draws the random suffixes, reproducibly.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// spreadScore rates how evenly load spreads when the busiest key takes
// share of n items: log(1/share) / log(min(target, n)), clamped to 0..1.
// A key spreading over target or more keys (or as evenly as n items allow)
// scores 1; one key takes everything scores 0.
func spreadScore(share float64, n, target int) float64 {
	ideal := math.Log(float64(min(target, n)))
	if share <= 0 || ideal <= 0 {
		return 0
	}
	return max(0, min(1, math.Log(1/share)/ideal))
}

// Score weights (see the package documentation).
const (
	weightSpread  = 0.30
	weightWrites  = 0.35
	weightQueries = 0.35
)

// score combines a candidate's measures into 0..100.
func score(c *Candidate) float64 {
	if c.Distinct <= 1 {
		return 0
	}
	sum, wsum := weightSpread*c.Spread, weightSpread
	if c.WriteSpread != nil {
		sum += weightWrites * *c.WriteSpread
		wsum += weightWrites
	}
	if c.QueryFit != nil {
		sum += weightQueries * *c.QueryFit
		wsum += weightQueries
	}
	s := 100 * sum / wsum * (1 - c.Missing)
	switch {
	case c.CapShare > 1:
		s *= 0.1
	case c.CapShare > 0.5:
		s *= 0.8
	}
	if c.HotKeyRU != nil && *c.HotKeyRU > PartitionMaxRU {
		s *= 0.1
	}
	return math.Round(s*10) / 10
}

// windowLabel names write window w.
func (an *analysis) windowLabel(w int64) string {
	sec := int64(an.window / time.Second)
	t := time.Unix(w*max(sec, 1), 0).UTC()
	if an.window%(24*time.Hour) == 0 {
		return t.Format(time.DateOnly)
	}
	return t.Format("2006-01-02T15:04Z")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// formatDuration formats d without zero minutes and seconds ("24h", "1h30m").
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
