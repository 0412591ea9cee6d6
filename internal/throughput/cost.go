package throughput

import "math"

// Cost model, following Cosmos DB's published figures: a point read of a 1 KB
// item costs 1 RU and of a 100 KB item 10 RU; a write of a 1 KB item about
// 5 RU. Charges grow linearly with size between those anchors and are
// rounded to two decimals, as the service reports them.
const (
	readBase      = 1.0           // RU for a read of up to 1 KB
	readPerKB     = 9.0 / 99.0    // so 100 KB reads cost 10 RU
	writeBase     = 5.0           // RU for a write of up to 1 KB
	writePerKB    = 5 * readPerKB // writes scale like reads, five times over
	writePerTerm  = 0.05          // per index entry written or removed
	queryBase     = 2.0           // fixed cost of compiling and starting a query
	queryPerItem  = 0.05          // per item loaded and evaluated
	queryPerKBIn  = 0.05          // per KB of items loaded
	queryPerEntry = 0.002         // per index or order entry read
	queryPerRow   = 0.001         // per row bound beyond one per item loaded (a JOIN's cross product)
	queryPerKBOut = 0.1           // per KB of results
	perPartition  = 1.0           // per physical partition a request visits beyond the first
	minimumCharge = 1.0           // failed and trivial requests still cost this
)

func kb(bytes int) float64 { return float64(bytes) / 1024 }

func round2(ru float64) float64 { return math.Round(ru*100) / 100 }

// ReadCost is the charge for reading one item of n bytes.
func ReadCost(n int) float64 {
	return round2(readBase + max(0, kb(n)-1)*readPerKB)
}

// WriteCost is the charge for writing (creating, replacing or deleting) one
// item of n bytes that wrote or removed terms index entries.
func WriteCost(n, terms int) float64 {
	return round2(writeBase + max(0, kb(n)-1)*writePerKB + float64(terms)*writePerTerm)
}

// QueryCost is the charge for a query (or feed page) that loaded items items,
// returned out bytes and visited partitions physical partitions.
func QueryCost(items, out, partitions int) float64 {
	ru := queryBase + float64(items)*queryPerItem + kb(out)*queryPerKBOut + float64(max(0, partitions-1))*perPartition
	return round2(ru)
}

// QueryWork is what a query page did.
type QueryWork struct {
	Entries int // index and order entries read
	Items   int // items loaded and evaluated
	// Rows is how many rows the query bound from its FROM and JOIN sources
	// (exec.WithRowCount): one per item without JOINs; those beyond one per
	// item are charged, about as much CPU apiece as a thousandth of a
	// point read.
	Rows       int
	InBytes    int // their size
	OutBytes   int // the size of the results
	Partitions int // physical partitions visited
}

// QueryWorkCost is the charge for a query page that did w: it grows with
// every entry read, item loaded, JOIN row bound and byte returned, and with
// each partition beyond the first, so a query routed to one partition costs
// less than the same query fanned out, and an index lookup less than a
// scan.
func QueryWorkCost(w QueryWork) float64 {
	ru := queryBase + float64(w.Entries)*queryPerEntry + float64(w.Items)*queryPerItem + kb(w.InBytes)*queryPerKBIn +
		float64(max(0, w.Rows-w.Items))*queryPerRow + kb(w.OutBytes)*queryPerKBOut + float64(max(0, w.Partitions-1))*perPartition
	return round2(ru)
}

// RowsCost is the charge for n rows bound beyond the items' own (a
// filter's subqueries and their JOINs, evaluated on items already loaded),
// as QueryWorkCost charges them.
func RowsCost(n int) float64 { return round2(float64(max(0, n)) * queryPerRow) }

// MinimumCost is the charge for a request that did no data work (a metadata
// read, or a request refused early).
func MinimumCost() float64 { return minimumCharge }
