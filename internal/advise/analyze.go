package advise

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrNoItems: the sample holds no items to analyse.
var ErrNoItems = errors.New("advise: no items in the sample")

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
)

// Scoring targets: a key reaching this many effective partitions gets the
// full spread score (see the package documentation).
const (
	storageTarget  = 1000
	writeTarget    = 100
	minWindowItems = 10
	missingKey     = math.MaxUint64
)

// Strategy is how a candidate key is made from the item.
type Strategy string

// Strategies, simplest first.
const (
	Single       Strategy = "single"        // one property
	Concat       Strategy = "concat"        // two properties joined with "-"
	HashSuffix   Strategy = "hash-suffix"   // value + "." + (hash of another property mod N)+1
	RandomSuffix Strategy = "random-suffix" // value + "." + random 1..N
)

func (s Strategy) order() int {
	return map[Strategy]int{Single: 0, Concat: 1, HashSuffix: 2, RandomSuffix: 3}[s]
}

// Candidate is one candidate partition key and its measures on the sample.
type Candidate struct {
	Rank      int      `json:"rank"`
	Key       string   `json:"key"` // e.g. "/deviceId-/date", "/date.hash(/vin,100)"
	Strategy  Strategy `json:"strategy"`
	Paths     []string `json:"paths"`               // base paths, in key order
	HashPaths []string `json:"hashPaths,omitempty"` // hash-suffix input
	Buckets   int      `json:"buckets,omitempty"`   // suffix N
	// Build is the synthkey call making this key (target path target).
	Build   string `json:"build"`
	Current bool   `json:"current,omitempty"` // the container's key now
	// Distinct is the number of distinct key values in the sample.
	Distinct int `json:"distinct"`
	// Missing is the share of items without a value (missing, null, an
	// array or an object on a path): they would share one logical partition.
	Missing float64 `json:"missing"`
	// LargestShare is the largest logical partition's share of the sample's
	// items and LargestShareBytes of its bytes; LargestKey its key value.
	LargestShare      float64 `json:"largestShare"`
	LargestShareBytes float64 `json:"largestShareBytes"`
	LargestKey        string  `json:"largestKey"`
	// LargestBytes is the largest logical partition's projected size, and
	// CapShare that over the logical partition limit (>1: does not fit).
	LargestBytes int64   `json:"largestBytes"`
	CapShare     float64 `json:"capShare"`
	// WriteSkew is, over the write windows, the mean share of a window's
	// writes that go to its hottest key (1: all to one key), weighted by
	// the windows' writes; WriteSkewMax the largest, in window HotWindow.
	// Nil without a time path.
	WriteSkew    *float64 `json:"writeSkew"`
	WriteSkewMax *float64 `json:"writeSkewMax"`
	HotWindow    string   `json:"hotWindow,omitempty"`
	// HotKeyRU is the hottest key's projected RU/s at the workload's peak
	// write rate (nil when the rate is unknown).
	HotKeyRU *float64 `json:"hotKeyRU"`
	// SinglePartition is the share of the workload's query weight whose
	// filters name the whole key (nil without queries); FanOut names the
	// queries that would fan out, heaviest first.
	SinglePartition *float64 `json:"singlePartition"`
	FanOut          []string `json:"fanOut,omitempty"`
	// Spread, WriteSpread and QueryFit are the score's parts, 0..1.
	Spread      float64  `json:"spread"`
	WriteSpread *float64 `json:"writeSpread"`
	QueryFit    *float64 `json:"queryFit"`
	Score       float64  `json:"score"` // 0..100
	// Why holds plain-words reasons: strengths for the winner, the main
	// weakness for the others.
	Why []string `json:"why,omitempty"`

	spec spec
}

// target is the property a synthetic key is written to in Candidate.Build.
const target = "/partitionKey"

// spec says how to compute a candidate's key from an item.
type spec struct {
	strategy Strategy
	a, b     int32 // node indexes: base paths (b: concat's second, -1 otherwise)
	hash     int32 // hash-suffix node, -1 otherwise
	buckets  int
}

// analysis is the state of one Analyze run.
type analysis struct {
	a        *Analyzer
	opts     Options
	n        int
	meanSize float64
	totalB   int64 // projection basis in bytes (0: none)
	timePath string
	timeID   int32 // node of timePath, -1 if none
	window   time.Duration
	// order lists item indexes grouped by window (items without a time
	// omitted); bounds[k] is where window k starts in order.
	order   []int32
	bounds  []int
	winIDs  []int64
	buckets map[int32][]uint32 // hash node → value id → bucket
	counts  map[uint64]agg
	wcounts map[uint64]int32
	ruWrite float64
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
	if opts.LogicalPartitionCap <= 0 {
		opts.LogicalPartitionCap = DefaultLogicalPartitionCap
	}
	if opts.PairPaths <= 0 {
		opts.PairPaths = 6
	}
	an := &analysis{a: a, opts: opts, timeID: -1, n: n, meanSize: float64(a.bytes) / float64(n),
		buckets: map[int32][]uint32{}, counts: make(map[uint64]agg, n), wcounts: map[uint64]int32{}}
	rep := &Report{Items: n, Bytes: a.bytes, InputItems: a.seen, Malformed: a.malformed,
		Paths: len(a.nodes) - 1, PathsIgnored: a.ignored, Buckets: opts.Buckets,
		LogicalPartitionCap: opts.LogicalPartitionCap, CurrentKey: a.current}
	switch {
	case opts.TotalBytes > 0:
		an.totalB = opts.TotalBytes
		rep.ProjectedBytes = opts.TotalBytes
	case opts.TotalItems > 0:
		an.totalB = int64(float64(opts.TotalItems) * an.meanSize)
		rep.ProjectedBytes = an.totalB
	case a.seen > int64(n):
		an.totalB = a.seenBytes
		rep.ProjectedBytes = an.totalB
	}
	w := opts.Workload
	if w != nil {
		rep.Queries = len(w.Queries)
		for _, q := range w.Queries {
			for _, f := range q.Filters {
				if a.node(f) < 0 {
					rep.Warnings = append(rep.Warnings, fmt.Sprintf("query %q filters on %s, which no sampled item has", q.Name, f))
				}
			}
		}
		if w.Writes.PerSecond > 0 {
			an.ruWrite = w.Writes.RUPerWrite
			if an.ruWrite == 0 {
				an.ruWrite = 5.5 + max(0, an.meanSize/1024-1)
			}
		}
	}
	an.setTime(rep)

	// Singles.
	var cands []*Candidate
	eval := func(s spec) *Candidate {
		c := an.evaluate(s)
		cands = append(cands, c)
		if opts.Progress != nil {
			opts.Progress(Progress{Phase: "analyze", Done: int64(len(cands)), Total: int64(len(cands)), Items: int64(n)})
		}
		return c
	}
	var singles []*Candidate
	for id := int32(1); int(id) < len(a.nodes); id++ {
		nd := a.nodes[id]
		if nd.present == 0 || systemPath(nd.path) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		singles = append(singles, eval(spec{strategy: Single, a: id, b: -1, hash: -1}))
	}
	if len(singles) == 0 {
		return nil, fmt.Errorf("%w: no item has a scalar property", ErrNoItems)
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
		for _, s := range singles {
			if s.spec.a == id && s.Distinct >= 2 && float64(s.Distinct) < 0.9*float64(n) {
				pairIDs = append(pairIDs, id)
			}
		}
	}
	for _, s := range byScore {
		if len(pairIDs) >= opts.PairPaths {
			break
		}
		addPair(s.spec.a)
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
			eval(spec{strategy: Concat, a: x, b: y, hash: -1})
		}
	}

	// Suffix variants of hot paths: those putting a large share of the
	// items or of a window's writes on one value.
	var hashIDs []int32
	for _, s := range slices.SortedStableFunc(slices.Values(singles), func(x, y *Candidate) int { return cmp.Compare(y.Distinct, x.Distinct) }) {
		if len(hashIDs) < 2 && s.Missing < 0.05 && s.Distinct >= min(opts.Buckets, n/2) {
			hashIDs = append(hashIDs, s.spec.a)
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
		return cmp.Compare(boolInt(y.spec.a == curID), boolInt(x.spec.a == curID))
	})
	for _, s := range byScore {
		hot := s.LargestShare >= 0.05 || (s.WriteSkew != nil && *s.WriteSkew >= 0.2) || s.spec.a == curID
		if !hot || s.Distinct < 2 || s.Missing >= 0.5 || bases >= 4 {
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
					if id := a.node(f); id >= 0 && !slices.Contains(hs, id) {
						hs = append(hs, id)
					}
				}
			}
		}
		for _, h := range hs {
			if h == s.spec.a {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			eval(spec{strategy: HashSuffix, a: s.spec.a, b: -1, hash: h, buckets: opts.Buckets})
		}
		eval(spec{strategy: RandomSuffix, a: s.spec.a, b: -1, hash: -1, buckets: opts.Buckets})
	}

	slices.SortStableFunc(cands, func(x, y *Candidate) int {
		return cmp.Or(cmp.Compare(y.Score, x.Score), cmp.Compare(x.Strategy.order(), y.Strategy.order()),
			cmp.Compare(x.Key, y.Key))
	})
	for i, c := range cands {
		c.Rank = i + 1
		c.Current = len(a.current) > 0 && (c.Strategy == Single || c.Strategy == Concat) && slices.Equal(c.Paths, a.current)
	}
	rep.Candidates = cands
	explain(rep, w)
	return rep, nil
}

// node returns the node index of path p, or -1.
func (a *Analyzer) node(p string) int32 {
	if !validPath(p) {
		return -1
	}
	id := int32(0)
	for seg := range strings.SplitSeq(p[1:], "/") {
		next, ok := a.nodes[id].children[seg]
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

// setTime picks the time path and groups the items by write window.
func (an *analysis) setTime(rep *Report) {
	a := an.a
	an.window = an.opts.Window
	if an.window <= 0 {
		an.window = an.opts.Workload.window()
	}
	p := an.opts.TimePath
	if p == "" && an.opts.Workload != nil {
		p = an.opts.Workload.Writes.TimePath
	}
	var id int32 = -1
	if p != "" {
		if id = a.node(p); id < 0 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("time path %s: no sampled item has it; write skew not measured", p))
		}
	} else {
		id = an.detectTime()
	}
	if id < 0 {
		return
	}
	nd := a.nodes[id]
	numeric := p != "" || nd.path == "/_ts"
	times := make([]int64, len(nd.strs)+1)
	valid := make([]bool, len(nd.strs)+1)
	for v, s := range nd.strs {
		times[v+1], valid[v+1] = parseTime(s, numeric)
	}
	sec := int64(an.window / time.Second)
	if sec <= 0 {
		sec = 1
	}
	type iw struct {
		w int64
		i int32
	}
	var ws []iw
	for i := range an.n {
		if v := nd.value(i); valid[v] {
			ws = append(ws, iw{floorDiv(times[v], sec), int32(i)})
		}
	}
	if len(ws) == 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("time path %s: no value is a time; write skew not measured", nd.path))
		return
	}
	slices.SortStableFunc(ws, func(x, y iw) int { return cmp.Compare(x.w, y.w) })
	for k, e := range ws {
		if k == 0 || e.w != ws[k-1].w {
			an.bounds = append(an.bounds, k)
			an.winIDs = append(an.winIDs, e.w)
		}
		an.order = append(an.order, e.i)
	}
	an.bounds = append(an.bounds, len(ws))
	an.timePath = nd.path
	an.timeID = id
	rep.TimePath = nd.path
	rep.Window = formatDuration(an.window)
	rep.Windows = len(an.winIDs)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// detectTime returns the path most likely to hold write times: string
// timestamps or dates in 90% of the items that have it (and in half of all
// items), the finest-grained first; else /_ts; else -1.
func (an *analysis) detectTime() int32 {
	a := an.a
	best, bestDistinct := int32(-1), 0
	for id := int32(1); int(id) < len(a.nodes); id++ {
		nd := a.nodes[id]
		if nd.present*2 < an.n || nd.strings*10 < nd.present*9 || len(nd.strs) < 2 {
			continue
		}
		ok := 0
		for _, s := range nd.strs {
			if _, t := parseTime(s, false); t {
				ok++
			}
		}
		if ok*10 >= len(nd.strs)*9 && len(nd.strs) > bestDistinct {
			best, bestDistinct = id, len(nd.strs)
		}
	}
	if best < 0 {
		best = a.node("/_ts")
	}
	return best
}

// parseTime parses s as a time in Unix seconds: RFC 3339, a date, or (when
// numeric) epoch seconds or milliseconds.
func parseTime(s string, numeric bool) (int64, bool) {
	if len(s) >= 10 && s[4] == '-' && s[7] == '-' {
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", time.DateOnly} {
			if t, err := time.Parse(layout, s); err == nil {
				return t.Unix(), true
			}
		}
		return 0, false
	}
	if !numeric {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		return 0, false
	case f >= 1e8 && f < 1e11:
		return int64(f), true
	case f >= 1e11 && f < 1e14:
		return int64(f / 1000), true
	}
	return 0, false
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

// keyFunc returns the function computing item i's key under s.
func (an *analysis) keyFunc(s spec, constant int32) func(i int) uint64 {
	na := an.a.nodes[s.a]
	if s.a == constant {
		na = constNode(na)
	}
	switch s.strategy {
	case Concat:
		nb := an.a.nodes[s.b]
		if s.b == constant {
			nb = constNode(nb)
		}
		return func(i int) uint64 {
			x, y := na.value(i), nb.value(i)
			if x == 0 || y == 0 {
				return missingKey
			}
			return uint64(x)<<32 | uint64(y)
		}
	case RandomSuffix:
		n := uint64(s.buckets)
		return func(i int) uint64 {
			x := na.value(i)
			if x == 0 {
				return missingKey
			}
			return uint64(x)<<32 | (splitmix64(uint64(i))%n + 1)
		}
	case HashSuffix:
		nh := an.a.nodes[s.hash]
		bk := an.hashBuckets(s.hash, s.buckets)
		if s.hash == constant {
			nh = constNode(nh)
			bk = []uint32{0, 1}
		}
		return func(i int) uint64 {
			x, h := na.value(i), nh.value(i)
			if x == 0 || h == 0 {
				return missingKey
			}
			return uint64(x)<<32 | uint64(bk[h])
		}
	default:
		return func(i int) uint64 {
			if x := na.value(i); x != 0 {
				return uint64(x)
			}
			return missingKey
		}
	}
}

// constNode returns a node whose items have value 1 where n's have a value:
// the time path at one instant, when all current writes share its value.
func constNode(n *pathNode) *pathNode {
	c := &pathNode{path: n.path, strs: n.strs[:min(1, len(n.strs))], col: make([]uint32, len(n.col))}
	for i, v := range n.col {
		c.col[i] = min(v, 1)
	}
	return c
}

// hashBuckets returns, per value id of node id, its synthkey bucket 1..n.
func (an *analysis) hashBuckets(id int32, n int) []uint32 {
	if b, ok := an.buckets[id]; ok {
		return b
	}
	nd := an.a.nodes[id]
	b := make([]uint32, len(nd.strs)+1)
	for v, s := range nd.strs {
		b[v+1] = fnv1a32(s)%uint32(n) + 1
	}
	an.buckets[id] = b
	return b
}

// keyString renders key k of spec s as the key value an item would get.
func (an *analysis) keyString(s spec, k uint64) string {
	if k == missingKey {
		return "(missing)"
	}
	na := an.a.nodes[s.a]
	switch s.strategy {
	case Concat:
		return na.strs[k>>32-1] + "-" + an.a.nodes[s.b].strs[uint32(k)-1]
	case RandomSuffix, HashSuffix:
		return na.strs[k>>32-1] + "." + strconv.FormatUint(uint64(uint32(k)), 10)
	default:
		return na.strs[k-1]
	}
}

// evaluate measures and scores one candidate.
func (an *analysis) evaluate(s spec) *Candidate {
	a := an.a
	c := &Candidate{Strategy: s.strategy, spec: s, Paths: []string{a.nodes[s.a].path}}
	switch s.strategy {
	case Single:
		c.Key = c.Paths[0]
		c.Build = fmt.Sprintf("synthkey.Concat(%q, %q) or the path itself", target, c.Paths[0])
	case Concat:
		c.Paths = append(c.Paths, a.nodes[s.b].path)
		c.Key = c.Paths[0] + "-" + c.Paths[1]
		c.Build = fmt.Sprintf("synthkey.Concat(%q, %q, %q)", target, c.Paths[0], c.Paths[1])
	case HashSuffix:
		c.HashPaths = []string{a.nodes[s.hash].path}
		c.Buckets = s.buckets
		c.Key = fmt.Sprintf("%s.hash(%s,%d)", c.Paths[0], c.HashPaths[0], s.buckets)
		c.Build = fmt.Sprintf("synthkey.HashSuffix(%q, %d, []string{%q}, %q)", target, s.buckets, c.HashPaths[0], c.Paths[0])
	case RandomSuffix:
		c.Buckets = s.buckets
		c.Key = fmt.Sprintf("%s.random(%d)", c.Paths[0], s.buckets)
		c.Build = fmt.Sprintf("synthkey.RandomSuffix(%q, %d, %q)", target, s.buckets, c.Paths[0])
	}
	key := an.keyFunc(s, -1)

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
	var maxN, maxB agg
	var maxNKey, maxBKey uint64
	for k, e := range counts {
		if e.n > maxN.n || (e.n == maxN.n && k < maxNKey) {
			maxN, maxNKey = e, k
		}
		if e.b > maxB.b || (e.b == maxB.b && k < maxBKey) {
			maxB, maxBKey = e, k
		}
	}
	c.Distinct = len(counts)
	if m, ok := counts[missingKey]; ok {
		c.Distinct--
		c.Missing = float64(m.n) / float64(an.n)
	}
	c.LargestShare = float64(maxN.n) / float64(an.n)
	c.LargestShareBytes = float64(maxB.b) / float64(a.bytes)
	c.LargestKey = an.keyString(s, maxBKey)
	switch {
	case maxN.n <= 1:
		c.LargestBytes = maxB.b // one item per key: the data's size does not matter
	case an.totalB > 0:
		// A key seen k times in the sample is taken as k - 2√k, no less than
		// the mean: sampling noise alone makes some key of a uniform
		// distribution look several times its true size when k is small.
		k := float64(maxB.n)
		est := max(k-2*math.Sqrt(k), float64(an.n)/float64(len(counts)), 1)
		c.LargestBytes = int64(c.LargestShareBytes * min(1, est/k) * float64(an.totalB))
	default:
		c.LargestBytes = maxB.b
	}
	c.CapShare = float64(c.LargestBytes) / float64(an.opts.LogicalPartitionCap)
	c.Spread = spreadScore(c.LargestShare, an.n, storageTarget)

	// Writes over time.
	hottest := c.LargestShare
	if len(an.winIDs) > 0 {
		// Writes made at one moment share the time path's value: within a
		// window the time path counts as one value (a /ts key takes every
		// write of its second).
		key := an.keyFunc(s, an.timeID)
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
				k := key(int(i))
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
			hottest = maxShare
		}
	}
	if w := an.opts.Workload; w != nil && w.Writes.PerSecond > 0 {
		ru := w.Writes.PerSecond * hottest * an.ruWrite
		c.HotKeyRU = &ru
	}

	// Queries.
	if w := an.opts.Workload; w != nil && len(w.Queries) > 0 {
		var total, single float64
		need := append(slices.Clone(c.Paths), c.HashPaths...)
		type fan struct {
			name string
			w    float64
		}
		var fans []fan
		for _, q := range w.Queries {
			total += q.Weight
			ok := s.strategy != RandomSuffix
			for _, p := range need {
				ok = ok && slices.Contains(q.Filters, p)
			}
			if ok {
				single += q.Weight
			} else {
				fans = append(fans, fan{q.Name, q.Weight})
			}
		}
		slices.SortStableFunc(fans, func(x, y fan) int { return cmp.Compare(y.w, x.w) })
		for _, f := range fans {
			c.FanOut = append(c.FanOut, f.name)
		}
		share := 0.0
		if total > 0 {
			share = single / total
		}
		c.SinglePartition, c.QueryFit = &share, &share
	}
	c.Score = score(c)
	return c
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
