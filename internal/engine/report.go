package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/throughput"
)

// PartitionReport describes one physical partition: its place in the EPK
// space, its budget and use, what it stores, and its heaviest logical
// partitions.
type PartitionReport struct {
	ID           string   `json:"id"`
	MinInclusive string   `json:"minInclusive"`
	MaxExclusive string   `json:"maxExclusive"`
	Parents      []string `json:"parents"`
	// RUPerSecond is the rate of the budget the partition draws on (0:
	// unlimited or not enforced): its share of its container's throughput,
	// or, with SharedBudget, of its database's.
	RUPerSecond float64 `json:"ruPerSecond"`
	// SharedBudget names the budget of its database's shared throughput
	// that the partition draws on with the other sharing containers'
	// partitions of its slice, as "1 of 3" (empty: a budget of its own).
	SharedBudget string `json:"sharedBudget,omitempty"`
	// ChargedRU and Throttled count since the server started: every
	// request's charge (queries and feeds too) and 429.
	ChargedRU         float64 `json:"chargedRU"`
	Throttled         int64   `json:"throttled"`
	StorageBytes      int64   `json:"storageBytes"`
	Items             int64   `json:"items"`
	LogicalPartitions int     `json:"logicalPartitions"`
	// TopKeysByRU are the logical partitions using the most request units
	// since the partition was made (estimates from a bounded sketch; see
	// throughput.Sketch).
	TopKeysByRU []throughput.Heavy `json:"topKeysByRU"`
	// TopKeysByRUNow are the logical partitions using the most request
	// units lately, each weighed by its share (0 to 1) of what the
	// partition was charged lately: a decaying sketch's (half-life 5 s),
	// so a key that turns hot after others were busy long ago is named
	// within seconds, where TopKeysByRU lists it only once its total
	// passes theirs. A share times the partition's rate (the change of
	// ChargedRU between two reports) is the key's rate.
	TopKeysByRUNow []throughput.Heavy `json:"topKeysByRUNow"`
	// RecentRU is what the shares of TopKeysByRUNow are of: the request
	// units charged lately, a decaying sum (a steady rate r sums to about
	// r × 7.2 s). A cluster-wide report weighs each node's shares by it.
	RecentRU float64 `json:"recentRU"`
	// TopKeysByThrottles are the logical partitions whose requests were
	// refused with 429 most often (estimates from a bounded sketch; a
	// request's weight is 1). Requests refused before their logical
	// partition is known (queries, feeds) count in Throttled only.
	TopKeysByThrottles []throughput.Heavy `json:"topKeysByThrottles"`
	// TopKeysByStorage are the largest logical partitions, exactly.
	TopKeysByStorage []LogicalPartitionUsage `json:"topKeysByStorage"`
}

// LogicalPartitionUsage is one logical partition's storage.
type LogicalPartitionUsage struct {
	Key   string `json:"key"` // the partition key as JSON
	Bytes int64  `json:"bytes"`
	Items int64  `json:"items"`
}

// reportTop is how many keys a report lists per partition.
const reportTop = 5

// Partitions reports on every physical partition of db/coll. Errors: 404.
func (e *Engine) Partitions(ctx context.Context, db, coll string) ([]PartitionReport, error) {
	c, err := e.container(db, coll)
	if err != nil {
		return nil, err
	}
	var out []PartitionReport
	for _, r := range c.Map().Ranges() {
		rs, err := e.rangeTop(ctx, c, r, reportTop)
		if err != nil {
			return nil, translate(err)
		}
		rep := PartitionReport{ID: r.ID, MinInclusive: r.Min.String(), MaxExclusive: r.Max.String(),
			Parents: append([]string{}, r.Parents...), StorageBytes: rs.total, Items: rs.items,
			LogicalPartitions: rs.n, TopKeysByStorage: []LogicalPartitionUsage{}}
		key := rangeKey(c, r)
		if e.limit != nil {
			b := e.budgetOf(c, r)
			rep.RUPerSecond = b.rate
			if b.n > 0 {
				rep.SharedBudget = fmt.Sprintf("%d of %d", b.slice+1, b.n)
			}
			rep.Throttled = e.hot.refusals(key)
		}
		rep.TopKeysByRU, _ = e.hot.sketch(key).Top(reportTop)
		var lately float64
		rep.TopKeysByRUNow, lately = e.hot.recentSketch(key).Top(reportTop)
		rep.RecentRU = lately
		if !(lately > 0) {
			rep.RecentRU = 0
			// Nothing charged lately (or so long ago that it weighs 0):
			// no share of nothing.
			rep.TopKeysByRUNow = rep.TopKeysByRUNow[:0]
		}
		for i := range rep.TopKeysByRUNow {
			k := &rep.TopKeysByRUNow[i]
			k.Weight, k.Err = min(1, k.Weight/lately), min(1, k.Err/lately)
		}
		rep.TopKeysByThrottles, _ = e.hot.refusedSketch(key).Top(reportTop)
		rep.ChargedRU = e.hot.chargedTo(key)
		for _, lp := range rs.top {
			rep.TopKeysByStorage = append(rep.TopKeysByStorage, LogicalPartitionUsage{Key: lp.key, Bytes: lp.bytes, Items: lp.items})
		}
		out = append(out, rep)
	}
	return out, nil
}

// rangeSummary is what a partition report reads of a range's logical
// partitions' statistics: their totals and count, and the k largest by
// bytes (ties by key), largest first.
type rangeSummary struct {
	total, items int64
	n            int
	top          []lpStats
}

// rangeTop reads range r's statistics for a report, keeping only the k
// largest logical partitions (none for k 0: rangeTotals): /metrics reports every range at every
// scrape, and keeping them all (rangeStorage) took 10 s of CPU and 900 MB
// at 10^7 logical partitions.
func (e *Engine) rangeTop(ctx context.Context, c *catalog.Container, r partition.Range, k int) (rangeSummary, error) {
	var rs rangeSummary
	rep, err := e.replicaOf(c, r)
	if err != nil {
		return rs, err
	}
	before := func(b int64, key []byte, x lpStats) bool { // b, key sort before x
		return b > x.bytes || b == x.bytes && string(key) < x.key
	}
	var failed error
	err = replica.Scan(ctx, rep, statsEPKSpan(r.Min, r.Max), func(_, v []byte) bool {
		b, n, err := statsCounts(v)
		if err != nil {
			failed = err
			return false
		}
		rs.total, rs.items, rs.n = rs.total+b, rs.items+n, rs.n+1
		if k == 0 || len(rs.top) == k && !before(b, v[16:], rs.top[k-1]) {
			return true
		}
		i, _ := slices.BinarySearchFunc(rs.top, lpStats{}, func(x, _ lpStats) int {
			if before(b, v[16:], x) {
				return 1
			}
			return -1
		})
		if len(rs.top) == k {
			rs.top = rs.top[:k-1]
		}
		rs.top = slices.Insert(rs.top, i, lpStats{bytes: b, items: n, key: string(v[16:])})
		return true
	})
	if err == nil {
		err = failed
	}
	return rs, err
}

// ContainerPartitions are one container's partition reports.
type ContainerPartitions struct {
	DB, Container string
	Partitions    []PartitionReport
}

// AllPartitions reports on every container's physical partitions.
func (e *Engine) AllPartitions(ctx context.Context) ([]ContainerPartitions, error) {
	var out []ContainerPartitions
	for _, d := range e.cat.Databases() {
		colls, err := e.cat.Containers(d.ID)
		if err != nil {
			continue // deleted meanwhile
		}
		for _, c := range colls {
			reps, err := e.Partitions(ctx, c.DB, c.ID)
			if err != nil {
				continue
			}
			out = append(out, ContainerPartitions{DB: c.DB, Container: c.ID, Partitions: reps})
		}
	}
	return out, nil
}

// ContainerUsage is what a container holds, for the quota headers of a
// container read (x-ms-documentdb-populatequotainfo).
type ContainerUsage struct {
	// Items and ItemBytes total the container's logical partition
	// statistics: its live items and their stored bytes.
	Items, ItemBytes int64
	// StoredProcedures, Triggers and UDFs count its scripts.
	StoredProcedures, Triggers, UDFs int
	// IndexProgress is the percentage of the index built for the current
	// indexing policy: 100 unless a rebuild after a policy change is
	// running (see rebuildTerms).
	IndexProgress int
}

// ContainerUsage reports db/coll's usage from the statistics of its
// physical partitions (the entries Partitions reports from) and its
// scripts. It reads one statistics entry per logical partition. Errors:
// 404.
func (e *Engine) ContainerUsage(ctx context.Context, db, coll string) (ContainerUsage, error) {
	c, err := e.container(db, coll)
	if err != nil {
		return ContainerUsage{}, err
	}
	u := ContainerUsage{IndexProgress: e.indexProgress(c)}
	for _, r := range c.Map().Ranges() {
		bytes, items, err := e.rangeTotals(ctx, c, r)
		if err != nil {
			return ContainerUsage{}, translate(err)
		}
		u.Items += items
		u.ItemBytes += bytes
	}
	for kind, n := range map[ScriptKind]*int{StoredProcedures: &u.StoredProcedures, Triggers: &u.Triggers, UDFs: &u.UDFs} {
		scs, err := e.cat.Scripts(ctx, db, coll, kind)
		if err != nil {
			return ContainerUsage{}, translate(err)
		}
		*n = len(scs)
	}
	return u, nil
}
