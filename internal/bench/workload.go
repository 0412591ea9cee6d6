package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/synthkey"
)

// op is one operation to run, drawn by worker.next without I/O, so a seed
// fixes the sequence of kinds and keys.
type op struct {
	kind Kind
	rec  int    // ycsb: record index; vehicles: VIN index (writes, queries before any write)
	pick uint32 // vehicles reads and queries: which recent reading, modulo the ring's length
}

// outcome is what running an op did.
type outcome struct {
	ru         float64
	requests   int // service requests (pages, fan-out legs)
	partitions int // physical partitions addressed
	rows       int // items a query returned
}

// recentSize is how many written readings a worker remembers for reads.
const recentSize = 1024

// reading identifies a written vehicle reading.
type reading struct{ id, vin string }

// worker runs operations one at a time; each has its own random source,
// ring of recent readings and counters, so workers share nothing but the
// container client.
type worker struct {
	id     int
	r      *runner
	rng    *rand.Rand
	zipf   *rand.Zipf // ycsb record choice
	seq    int64      // readings written, for unique ids
	recent []reading  // ring of the last recentSize readings written
	start  time.Time  // operations begun earlier are warmup, not counted
	stats  [numKinds]counters
}

func newWorker(r *runner, id int, start time.Time) *worker {
	rng := rand.New(rand.NewPCG(uint64(r.cfg.Seed), uint64(id)))
	w := &worker{id: id, r: r, rng: rng, start: start}
	if n := r.choices(); n > 1 && r.cfg.Keys != KeysUniform {
		// Zipf with s slightly above 1 approximates YCSB's zipfian request
		// distribution (constant 0.99); math/rand needs s > 1.
		w.zipf = rand.NewZipf(rng, 1.01, 1, uint64(n-1))
	}
	return w
}

// choices is how many records (ycsb-*, query) or keys (query-pk) an
// operation picks from; 0 for the workloads that pick otherwise.
func (r *runner) choices() int {
	switch {
	case isVehicles(r.cfg.Workload) || r.cfg.Workload == QueryFilter:
		return 0
	case r.cfg.Workload == QueryPK:
		return max(1, r.cfg.Records/RowsPerKey)
	}
	return r.cfg.Records
}

// next draws the next operation.
func (w *worker) next() op {
	m := w.r.cfg.Mix
	n := w.rng.IntN(100)
	o := op{kind: KindQuery}
	switch {
	case n < m.Write:
		o.kind = KindWrite
	case n < m.Write+m.Read:
		o.kind = KindRead
	}
	if isVehicles(w.r.cfg.Workload) {
		o.rec = w.rng.IntN(w.r.cfg.Vehicles)
		o.pick = w.rng.Uint32()
		return o
	}
	switch w.r.cfg.Workload {
	case QueryFilter:
		o.kind, o.rec = KindQueryCross, w.rng.IntN(2)
		return o
	case Query:
		if o.kind == KindQuery && w.rng.IntN(2) == 1 {
			o.kind = KindQueryCross
		}
	}
	switch {
	case w.zipf != nil:
		o.rec = int(w.zipf.Uint64())
	case w.r.choices() > 0:
		o.rec = w.rng.IntN(w.r.choices())
	}
	return o
}

// exec runs o. A vehicles read or query before the worker wrote anything
// becomes a write (reported as one).
func (w *worker) exec(ctx context.Context, o op) (Kind, outcome, error) {
	if isVehicles(w.r.cfg.Workload) {
		if o.kind != KindWrite && len(w.recent) == 0 {
			o.kind = KindWrite
		}
		switch o.kind {
		case KindWrite:
			res, err := w.writeReading(ctx, o)
			return o.kind, res, err
		case KindRead:
			res, err := w.readReading(ctx, w.recent[int(o.pick%uint32(len(w.recent)))])
			return o.kind, res, err
		default:
			res, err := w.queryVIN(ctx, w.recent[int(o.pick%uint32(len(w.recent)))].vin)
			return o.kind, res, err
		}
	}
	c := w.r.container
	switch w.r.cfg.Workload {
	case QueryPK: // o.rec is a key
		k := rowKey(o.rec)
		res, err := query(ctx, c, "SELECT * FROM c WHERE c.pk = @pk", azcosmos.NewPartitionKeyString(k),
			[]azcosmos.QueryParameter{{Name: "@pk", Value: k}}, w.r.cfg.PageSize)
		res.partitions = 1
		return KindQuery, res, err
	case QueryFilter: // o.rec is the half
		res, err := query(ctx, c, "SELECT * FROM c WHERE c.half = @h", azcosmos.NewPartitionKey(),
			[]azcosmos.QueryParameter{{Name: "@h", Value: o.rec}}, w.r.cfg.PageSize)
		res.partitions = w.r.partitions
		return KindQueryCross, res, err
	}
	id := recordID(o.rec)
	pk := azcosmos.NewPartitionKeyString(id)
	switch o.kind {
	case KindWrite:
		body, err := w.r.record(o.rec, w.rng.Int64())
		if err != nil {
			return o.kind, outcome{}, err
		}
		resp, err := c.UpsertItem(ctx, pk, body, nil)
		return o.kind, outcome{ru: float64(resp.RequestCharge), requests: 1, partitions: 1}, err
	case KindRead:
		resp, err := c.ReadItem(ctx, pk, id, nil)
		return o.kind, outcome{ru: float64(resp.RequestCharge), requests: 1, partitions: 1}, err
	case KindQuery:
		res, err := query(ctx, c, "SELECT * FROM c WHERE c.pk = @pk", pk,
			[]azcosmos.QueryParameter{{Name: "@pk", Value: id}}, w.r.cfg.PageSize)
		res.partitions = 1
		return o.kind, res, err
	default:
		res, err := query(ctx, c, "SELECT c.id, c.n FROM c WHERE c.grp = @grp", azcosmos.NewPartitionKey(),
			[]azcosmos.QueryParameter{{Name: "@grp", Value: o.rec % ycsbGroups}}, w.r.cfg.PageSize)
		res.partitions = w.r.partitions
		return o.kind, res, err
	}
}

// ycsbGroups is the number of distinct values of a record's "grp"
// property, which the query workload's cross-partition query selects on.
const ycsbGroups = 100

func recordID(i int) string { return fmt.Sprintf("user%010d", i) }

// rowKey is the partition key of the k'th group of RowsPerKey records in
// the query-pk and query-filter workloads.
func rowKey(k int) string { return fmt.Sprintf("key%07d", k) }

// recordPK returns record i's partition key: its id, or on the rows layout
// its group's key.
func (r *runner) recordPK(i int) string {
	if isRows(r.cfg.Workload) {
		return rowKey(i / RowsPerKey)
	}
	return recordID(i)
}

// record returns record i's JSON body, padded to about ItemBytes with
// filler drawn from i and version: incompressible, as real data is, so
// that a preloaded container takes its real size on disk.
func (r *runner) record(i int, version int64) ([]byte, error) {
	id := recordID(i)
	data := filler(len(r.pad), uint64(i), uint64(version))
	if isRows(r.cfg.Workload) {
		return json.Marshal(map[string]any{"id": id, "pk": r.recordPK(i), "half": i % 2, "n": i, "v": version, "data": data})
	}
	return json.Marshal(map[string]any{"id": id, "pk": id, "grp": i % ycsbGroups, "n": i, "v": version, "data": data})
}

// filler returns n pseudo-random letters and digits seeded by (a, b).
func filler(n int, a, b uint64) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	rng := rand.New(rand.NewPCG(a, b))
	buf := make([]byte, n)
	for j := range buf {
		buf[j] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(buf)
}

// vin returns the i'th vehicle identification number (17 characters).
func vin(i int) string { return fmt.Sprintf("PART%013d", i) }

func (w *worker) writeReading(ctx context.Context, o op) (outcome, error) {
	v := vin(o.rec)
	w.seq++
	id := fmt.Sprintf("%s-%s-%d-%d", v, w.r.run, w.id, w.seq)
	item := map[string]any{
		"id": id, "vin": v, "date": w.r.date, "ts": time.Now().UnixMilli(),
		"speed": w.rng.IntN(130), "fuel": w.rng.IntN(100), "temp": w.rng.IntN(120) - 20, "data": w.r.pad,
	}
	pk, body, err := w.r.key.Prepare(item)
	if err != nil {
		return outcome{}, err
	}
	resp, err := w.r.container.CreateItem(ctx, pk, body, nil)
	if err != nil {
		return outcome{}, err
	}
	rd := reading{id: id, vin: v}
	if len(w.recent) < recentSize {
		w.recent = append(w.recent, rd)
	} else {
		w.recent[w.seq%recentSize] = rd
	}
	return outcome{ru: float64(resp.RequestCharge), requests: 1, partitions: 1}, nil
}

// readReading point-reads a reading knowing its id, VIN and date, as the
// application would: under the one key date or date+hash(VIN) give, and
// for a random suffix by fanning out (the bucket it was written under is
// not stored anywhere the reader can see).
func (w *worker) readReading(ctx context.Context, rd reading) (outcome, error) {
	r := w.r
	props := map[string]any{"vin": rd.vin, "date": r.date}
	if r.key.Suffix() != synthkey.SuffixRandom {
		k, err := r.key.PointKey(props)
		if err != nil {
			return outcome{}, err
		}
		resp, err := r.container.ReadItem(ctx, azcosmos.NewPartitionKeyString(k), rd.id, nil)
		return outcome{ru: float64(resp.RequestCharge), requests: 1, partitions: 1}, err
	}
	if r.cfg.FanOut == FanOutCross {
		res, err := query(ctx, r.container, "SELECT * FROM c WHERE c.id = @id AND c.vin = @vin AND c.date = @date",
			azcosmos.NewPartitionKey(), []azcosmos.QueryParameter{{Name: "@id", Value: rd.id}, {Name: "@vin", Value: rd.vin}, {Name: "@date", Value: r.date}}, r.cfg.PageSize)
		res.partitions = r.partitions
		if err == nil && res.rows == 0 {
			err = fmt.Errorf("reading %q: %w", rd.id, synthkey.ErrNotFound)
		}
		return res, err
	}
	keys, err := r.key.FanOutKeys(props)
	if err != nil {
		return outcome{}, err
	}
	res, err := synthkey.ReadItem(ctx, r.container, keys, rd.id, nil)
	return outcome{ru: res.RequestCharge, requests: len(keys), partitions: min(len(keys), r.partitions), rows: len(res.Items)}, err
}

// queryVIN fetches all of today's readings of one vehicle: one
// single-partition query when the key can be computed from VIN and date,
// else a fan-out.
func (w *worker) queryVIN(ctx context.Context, v string) (outcome, error) {
	r := w.r
	const text = "SELECT * FROM c WHERE c.vin = @vin AND c.date = @date"
	params := []azcosmos.QueryParameter{{Name: "@vin", Value: v}, {Name: "@date", Value: r.date}}
	props := map[string]any{"vin": v, "date": r.date}
	if r.key.Suffix() != synthkey.SuffixRandom {
		k, err := r.key.PointKey(props)
		if err != nil {
			return outcome{}, err
		}
		res, err := query(ctx, r.container, text, azcosmos.NewPartitionKeyString(k), params, r.cfg.PageSize)
		res.partitions = 1
		return res, err
	}
	if r.cfg.FanOut == FanOutCross {
		res, err := query(ctx, r.container, text, azcosmos.NewPartitionKey(), params, r.cfg.PageSize)
		res.partitions = r.partitions
		return res, err
	}
	keys, err := r.key.FanOutKeys(props)
	if err != nil {
		return outcome{}, err
	}
	res, err := synthkey.Query(ctx, r.container, keys, text, &synthkey.FanOutOptions{Query: &azcosmos.QueryOptions{QueryParameters: params}})
	return outcome{ru: res.RequestCharge, requests: len(keys), partitions: min(len(keys), r.partitions), rows: len(res.Items)}, err
}

// query runs a query to its last page; pk may be NewPartitionKey() for a
// cross-partition query.
func query(ctx context.Context, c *azcosmos.ContainerClient, text string, pk azcosmos.PartitionKey, params []azcosmos.QueryParameter, pageSize int) (outcome, error) {
	var res outcome
	pager := c.NewQueryItemsPager(text, pk, &azcosmos.QueryOptions{QueryParameters: params, PageSizeHint: int32(pageSize)})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return res, err
		}
		res.requests++
		res.ru += float64(page.RequestCharge)
		res.rows += len(page.Items)
	}
	return res, nil
}

// newKey returns the synthetic key of a vehicles workload, written to /pk.
func newKey(workload string, buckets int) (*synthkey.Key, error) {
	switch workload {
	case VehiclesDate:
		return synthkey.Concat("/pk", "/date")
	case VehiclesRandom:
		return synthkey.RandomSuffix("/pk", buckets, "/date")
	default:
		return synthkey.HashSuffix("/pk", buckets, []string{"/vin"}, "/date")
	}
}

// padding returns filler that brings an item of about base bytes to size.
func padding(size, base int) string { return strings.Repeat("x", max(0, size-base)) }

// Records are the records a workload's preload writes (ycsb-*, query,
// query-pk, query-filter), for a loader that writes them by another way
// than the SDK: partita load, straight into a stopped server's data
// directory, where the SDK would take hours for millions.
type Records struct{ r *runner }

// NewRecords returns cfg's records; cfg takes the defaults bench gives it
// (database, container, item size, records).
func NewRecords(cfg Config) (*Records, error) {
	// No endpoint is read: what the configuration requires of one is met.
	cfg.Endpoint, cfg.Key = "https://127.0.0.1:1/", "unused"
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if isVehicles(cfg.Workload) {
		return nil, fmt.Errorf("workload %s has no preloaded records", cfg.Workload)
	}
	return &Records{r: &runner{cfg: cfg, pad: padding(cfg.ItemBytes, 200)}}, nil
}

// Config is the configuration with its defaults.
func (rs *Records) Config() Config { return rs.r.cfg }

// Record returns record i's partition key and JSON body, as the preload
// writes it.
func (rs *Records) Record(i int) (pk string, body []byte, err error) {
	body, err = rs.r.record(i, 0)
	return rs.r.recordPK(i), body, err
}
