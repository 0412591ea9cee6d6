package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// Workload names, as --workload takes them.
const (
	YCSBA          = "ycsb-a"          // 50% reads, 50% updates of preloaded records
	YCSBB          = "ycsb-b"          // 95% reads, 5% updates
	YCSBC          = "ycsb-c"          // reads only
	Query          = "query"           // single-partition and cross-partition queries over preloaded records
	VehiclesDate   = "vehicles-date"   // readings keyed by date: one hot key
	VehiclesRandom = "vehicles-random" // date + random suffix 1..Buckets
	VehiclesHash   = "vehicles-hash"   // date + hash(VIN) suffix 1..Buckets
	// QueryPK queries one logical partition of RowsPerKey preloaded
	// records by its key: SELECT * FROM c WHERE c.pk = @pk.
	QueryPK = "query-pk"
	// QueryFilter drains a cross-partition filter that matches half of the
	// preloaded records (SELECT * FROM c WHERE c.half = @h) in pages of
	// PageSize.
	QueryFilter = "query-filter"
)

// RowsPerKey is how many preloaded records share a partition key in the
// query-pk and query-filter workloads.
const RowsPerKey = 20

// Workloads returns the workload names in the order the help text gives
// them. The caller owns the slice.
func Workloads() []string {
	return []string{YCSBA, YCSBB, YCSBC, Query, QueryPK, QueryFilter, VehiclesDate, VehiclesRandom, VehiclesHash}
}

// PreloadedWorkloads returns the workloads that preload records (what
// NewRecords writes), in the order of Workloads. The caller owns the slice.
func PreloadedWorkloads() []string {
	var out []string
	for _, w := range Workloads() {
		if !isVehicles(w) {
			out = append(out, w)
		}
	}
	return out
}

// Fan-out modes for reads that cannot name one partition key (the
// vehicles-random workload's point reads and VIN queries).
const (
	// FanOutCross sends one cross-partition query without a partition
	// key; the service visits every physical partition.
	FanOutCross = "cross"
	// FanOutKeys runs one single-partition request per candidate key
	// (synthkey.ReadItem and synthkey.Query over all Buckets keys).
	FanOutKeys = "keys"
)

// Key choice of the ycsb-* and query-pk workloads.
const (
	KeysZipfian = "zipfian" // YCSB's skew: a few records take most operations
	KeysUniform = "uniform" // every record (key) equally likely
)

// ErrInvalidConfig is wrapped by every error Validate returns.
var ErrInvalidConfig = errors.New("bench: invalid configuration")

// Config configures Run. Zero numeric fields take the defaults Validate
// fills in; Endpoint, Key and Workload are required.
type Config struct {
	Endpoint string // account endpoint, e.g. https://127.0.0.1:8081/
	Key      string // master key, base64
	// CACert is a PEM file of certificates to trust besides the system's;
	// Insecure skips TLS verification altogether (as for the emulator).
	CACert   string
	Insecure bool

	Database  string // default "bench"
	Container string // default: "ycsb" for ycsb-* and query, else the workload name
	// Create creates the database and container when missing, the
	// container with partition key path /pk and Throughput manual RU/s.
	// Reset deletes the container first (and implies Create).
	Create, Reset bool
	Throughput    int // RU/s for a created container; default 24,000
	// IndexingPolicy, when not empty, is the indexing policy (JSON, as in
	// a container's definition) of a created container; empty: the
	// service's default (every path indexed).
	IndexingPolicy string
	// Partitions, when positive, makes a created container start with at
	// least this many physical partitions: it is created with
	// Partitions × 6,000 RU/s (Cosmos DB and Partita give a new manual
	// container ceil(RU/6,000) partitions) and then set to Throughput, as
	// partitions never merge. 0 leaves the count to Throughput.
	Partitions int

	Workload string
	// Mix overrides the workload's share of writes, point reads and
	// queries, in percent (summing to 100); nil keeps its default.
	Mix *Mix
	// FanOut is FanOutCross (default) or FanOutKeys.
	FanOut string

	Duration time.Duration // measure for this long, then stop; default 30 s
	// Warmup runs the load this long before measuring starts (operations
	// begun during it are not counted), e.g. to drain the one second of
	// throughput a partition starts with. Default 0.
	Warmup      time.Duration
	Ops         int64   // stop after this many operations (warmup included); 0 = no limit
	Concurrency int     // workers; default 16
	Rate        float64 // target operations per second over all workers; 0 = unpaced
	Retries     int     // SDK retries of throttled requests; 0 counts every 429

	Records int // preloaded records for ycsb-* and query (default 1,000), query-pk and query-filter (default 20,000)
	// NoPreload skips the preload of ycsb-*, query, query-pk and
	// query-filter, for a container an earlier run (or another tool)
	// filled with the same Records.
	NoPreload bool
	// Keys is how ycsb-* and query-pk pick a record or key: KeysZipfian
	// (default) or KeysUniform.
	Keys string
	// PageSize is the x-ms-max-item-count of queries; 0 leaves it to the
	// service (100 on Cosmos DB and Partita).
	PageSize  int
	ItemBytes int   // approximate item size in bytes; default 1,000 (ycsb) or 300 (vehicles)
	Buckets   int   // suffix buckets for vehicles-random/-hash; default 400
	Vehicles  int   // distinct VINs; default 10,000
	Seed      int64 // seeds the operation mix and key choice; 0 = 1
}

// Mix is the share of each operation kind in percent.
type Mix struct{ Write, Read, Query int }

// ParseMix parses "W,R,Q", e.g. "80,10,10", percentages summing to 100.
func ParseMix(s string) (Mix, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return Mix{}, fmt.Errorf("%w: mix %q: want write,read,query percentages", ErrInvalidConfig, s)
	}
	var v [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 || n > 100 {
			return Mix{}, fmt.Errorf("%w: mix %q: %q is not a percentage", ErrInvalidConfig, s, p)
		}
		v[i] = n
	}
	m := Mix{v[0], v[1], v[2]}
	if m.Write+m.Read+m.Query != 100 {
		return Mix{}, fmt.Errorf("%w: mix %q: percentages sum to %d, want 100", ErrInvalidConfig, s, m.Write+m.Read+m.Query)
	}
	return m, nil
}

// String formats m as ParseMix reads it.
func (m Mix) String() string { return fmt.Sprintf("%d,%d,%d", m.Write, m.Read, m.Query) }

// DefaultMix returns workload's default mix (ok false for an unknown name).
func DefaultMix(workload string) (Mix, bool) {
	switch workload {
	case YCSBA:
		return Mix{Write: 50, Read: 50}, true
	case YCSBB:
		return Mix{Write: 5, Read: 95}, true
	case YCSBC:
		return Mix{Read: 100}, true
	case Query, QueryPK, QueryFilter:
		return Mix{Query: 100}, true
	case VehiclesDate, VehiclesRandom, VehiclesHash:
		return Mix{Write: 80, Read: 10, Query: 10}, true
	}
	return Mix{}, false
}

func isVehicles(w string) bool { return strings.HasPrefix(w, "vehicles-") }

// isRows reports whether workload w runs on the "rows" layout: RowsPerKey
// records per partition key, half of them with half = 1.
func isRows(w string) bool { return w == QueryPK || w == QueryFilter }

// DefaultContainer is the container workload w runs in when Config names
// none: "ycsb" for ycsb-* and query, "rows" for query-pk and query-filter,
// else the workload's name.
func DefaultContainer(w string) string {
	switch {
	case isVehicles(w):
		return w
	case isRows(w):
		return "rows"
	default:
		return "ycsb"
	}
}

// withDefaults returns c with defaults filled in, or an error wrapping
// ErrInvalidConfig that lists every problem.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if c.Endpoint == "" {
		bad("endpoint is required")
	}
	if c.Key == "" {
		bad("key is required")
	}
	mix, ok := DefaultMix(c.Workload)
	if !ok {
		bad("workload %q: want one of %s", c.Workload, strings.Join(Workloads(), ", "))
	}
	if c.Mix != nil {
		m := *c.Mix
		if m.Write < 0 || m.Read < 0 || m.Query < 0 || m.Write+m.Read+m.Query != 100 {
			bad("mix %s: want non-negative percentages summing to 100", m)
		}
		mix = m
	}
	c.Mix = &mix
	if c.IndexingPolicy != "" {
		if _, err := c.indexingPolicy(); err != nil {
			bad("indexing policy: %v", err)
		}
	}
	if c.Database == "" {
		c.Database = "bench"
	}
	if c.Container == "" {
		c.Container = DefaultContainer(c.Workload)
	}
	if c.Reset {
		c.Create = true
	}
	def := func(v *int, d int, name string) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			bad("%s %d: want a positive number", name, *v)
		}
	}
	def(&c.Throughput, 24000, "throughput")
	if c.Throughput < 400 {
		bad("throughput %d: want at least 400 RU/s", c.Throughput)
	}
	if c.Partitions < 0 {
		bad("partitions %d: want 0 or more", c.Partitions)
	}
	def(&c.Concurrency, 16, "concurrency")
	records := 1000
	if isRows(c.Workload) {
		records = 20000
	}
	def(&c.Records, records, "records")
	switch c.Keys {
	case "":
		c.Keys = KeysZipfian
	case KeysZipfian, KeysUniform:
	default:
		bad("keys %q: want %s or %s", c.Keys, KeysZipfian, KeysUniform)
	}
	if c.PageSize < -1 {
		bad("page-size %d: want -1 (unbounded), 0 (the service's default) or more", c.PageSize)
	}
	itemBytes := 1000
	if isVehicles(c.Workload) {
		itemBytes = 300
	}
	def(&c.ItemBytes, itemBytes, "item-bytes")
	def(&c.Buckets, 400, "buckets")
	def(&c.Vehicles, 10000, "vehicles")
	if c.Retries < 0 {
		bad("retries %d: want 0 or more", c.Retries)
	}
	switch {
	case c.Duration == 0:
		c.Duration = 30 * time.Second
	case c.Duration < 0:
		bad("duration %s: want a positive duration", c.Duration)
	}
	if c.Warmup < 0 {
		bad("warmup %s: want 0 or more", c.Warmup)
	}
	if c.Ops < 0 {
		bad("ops %d: want 0 (no limit) or more", c.Ops)
	}
	if c.Rate < 0 {
		bad("rate %g: want 0 (unpaced) or more", c.Rate)
	}
	switch c.FanOut {
	case "":
		c.FanOut = FanOutCross
	case FanOutCross, FanOutKeys:
	default:
		bad("fan-out %q: want %s or %s", c.FanOut, FanOutCross, FanOutKeys)
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	return c, errors.Join(errs...)
}

// indexingPolicy decodes IndexingPolicy, refusing members the SDK's
// policy does not have (a misspelt "excludedPaths" would silently index
// everything).
func (c Config) indexingPolicy() (*azcosmos.IndexingPolicy, error) {
	var p azcosmos.IndexingPolicy
	dec := json.NewDecoder(bytes.NewReader([]byte(c.IndexingPolicy)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, err
	}
	return &p, nil
}
