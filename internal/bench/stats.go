package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"
)

// Kind is an operation kind; stats are kept per kind.
type Kind int

// The operation kinds. For the vehicles workloads Write stores one reading,
// Read point-reads a recently written one, and Query fetches all readings
// of one VIN today.
const (
	KindWrite      Kind = iota // create (vehicles) or upsert (ycsb) of one item
	KindRead                   // point read of one item
	KindQuery                  // query naming its partition key (vehicles: "all readings of one VIN today")
	KindQueryCross             // cross-partition query (query workload)
	numKinds
)

// String returns the kind's name as the summary shows it.
func (k Kind) String() string {
	switch k {
	case KindWrite:
		return "write"
	case KindRead:
		return "read"
	case KindQuery:
		return "query"
	case KindQueryCross:
		return "query-cross"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// counters accumulate one kind's outcomes in one worker.
type counters struct {
	count, ok, throttled, errors int64
	ru                           float64 // charge of successful operations
	requests, partitions, rows   int64   // summed over successful operations
	latency                      Histogram
	firstErr                     string
}

func (c *counters) merge(o *counters) {
	c.count += o.count
	c.ok += o.ok
	c.throttled += o.throttled
	c.errors += o.errors
	c.ru += o.ru
	c.requests += o.requests
	c.partitions += o.partitions
	c.rows += o.rows
	c.latency.Merge(&o.latency)
	if c.firstErr == "" {
		c.firstErr = o.firstErr
	}
}

// OpStats summarizes one operation kind (or all of them, as Result.Total).
// Rates are per second of Result.Elapsed; latencies are of successful
// operations, in milliseconds, within 1.6%.
type OpStats struct {
	Op            string  `json:"op"`
	Count         int64   `json:"count"`          // operations completed (successful or not)
	OK            int64   `json:"ok"`             // successful
	Throttled     int64   `json:"throttled"`      // answered 429 (after Config.Retries retries)
	ThrottledRate float64 `json:"throttled_rate"` // Throttled / Count
	Errors        int64   `json:"errors"`         // failed otherwise
	OpsPerSec     float64 `json:"ops_per_s"`      // OK per second
	RU            float64 `json:"ru"`             // request charge of the successful operations
	RUPerSec      float64 `json:"ru_per_s"`
	RUPerOp       float64 `json:"ru_per_op"`
	P50           float64 `json:"p50_ms"`
	P99           float64 `json:"p99_ms"`
	P999          float64 `json:"p999_ms"`
	Max           float64 `json:"max_ms"`
	// RequestsPerOp is the mean number of service requests a successful
	// operation took (query pages, fan-out legs); PartitionsPerOp the mean
	// number of physical partitions it addressed (1 when scoped to one
	// partition key, all when cross-partition, at most min(keys,
	// partitions) for a per-key fan-out); RowsPerOp the mean items
	// returned by a query.
	RequestsPerOp   float64 `json:"requests_per_op"`
	PartitionsPerOp float64 `json:"partitions_per_op"`
	RowsPerOp       float64 `json:"rows_per_op"`
	// ErrorSample is the text of one non-429 failure, if any.
	ErrorSample string `json:"error_sample,omitempty"`
}

func (c *counters) stats(op string, elapsed time.Duration) OpStats {
	s := OpStats{Op: op, Count: c.count, OK: c.ok, Throttled: c.throttled, Errors: c.errors, RU: round(c.ru, 2), ErrorSample: c.firstErr}
	secs := elapsed.Seconds()
	if c.count > 0 {
		s.ThrottledRate = round(float64(c.throttled)/float64(c.count), 4)
	}
	if secs > 0 {
		s.OpsPerSec = round(float64(c.ok)/secs, 1)
		s.RUPerSec = round(c.ru/secs, 1)
	}
	if c.ok > 0 {
		n := float64(c.ok)
		s.RUPerOp = round(c.ru/n, 2)
		s.RequestsPerOp = round(float64(c.requests)/n, 2)
		s.PartitionsPerOp = round(float64(c.partitions)/n, 2)
		s.RowsPerOp = round(float64(c.rows)/n, 2)
	}
	ms := func(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 2) }
	s.P50 = ms(c.latency.Quantile(0.50))
	s.P99 = ms(c.latency.Quantile(0.99))
	s.P999 = ms(c.latency.Quantile(0.999))
	s.Max = ms(c.latency.Max())
	return s
}

// round rounds v to digits decimals, for readable JSON.
func round(v float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(v*p) / p
}

// RunInfo describes a run, without secrets.
type RunInfo struct {
	Endpoint    string  `json:"endpoint"`
	Database    string  `json:"database"`
	Container   string  `json:"container"`
	Workload    string  `json:"workload"`
	Mix         string  `json:"mix"` // write,read,query percent
	FanOut      string  `json:"fan_out"`
	Partitions  int     `json:"partitions"`  // physical partitions (feed ranges) at the start
	Throughput  int     `json:"throughput"`  // the container's provisioned RU/s, 0 if unknown or shared
	Concurrency int     `json:"concurrency"` // workers
	Rate        float64 `json:"rate"`        // target ops/s, 0 = unpaced
	Retries     int     `json:"retries"`
	Duration    string  `json:"duration"` // as configured
	Warmup      string  `json:"warmup"`
	Ops         int64   `json:"ops"` // as configured, 0 = no limit
	Records     int     `json:"records,omitempty"`
	Keys        string  `json:"keys,omitempty"`      // how records or keys are picked: zipfian or uniform
	PageSize    int     `json:"page_size,omitempty"` // x-ms-max-item-count of queries, 0 = the service's
	ItemBytes   int     `json:"item_bytes"`
	Buckets     int     `json:"buckets,omitempty"`
	Vehicles    int     `json:"vehicles,omitempty"`
	Seed        int64   `json:"seed"`
}

// Result is the outcome of a run.
type Result struct {
	Config      RunInfo   `json:"config"`
	Elapsed     float64   `json:"elapsed_s"`   // seconds of load, after setup
	Interrupted bool      `json:"interrupted"` // stopped by the caller's context before its limits
	Ops         []OpStats `json:"ops"`         // one per kind that ran, in Kind order
	Total       OpStats   `json:"total"`
}

// Op returns the stats of kind k's operations (zero if none ran).
func (r *Result) Op(k Kind) OpStats {
	for _, s := range r.Ops {
		if s.Op == k.String() {
			return s
		}
	}
	return OpStats{Op: k.String()}
}

func newResult(info RunInfo, per *[numKinds]counters, elapsed time.Duration, interrupted bool) *Result {
	r := &Result{Config: info, Elapsed: round(elapsed.Seconds(), 3), Interrupted: interrupted}
	var all counters
	for k := range numKinds {
		c := &per[k]
		if c.count == 0 {
			continue
		}
		r.Ops = append(r.Ops, c.stats(k.String(), elapsed))
		all.merge(c)
	}
	r.Total = all.stats("total", elapsed)
	return r
}

// WriteJSON writes r as one indented JSON document.
func (r *Result) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteJSON writes c as one indented JSON document.
func (c *Comparison) WriteJSON(w io.Writer) error { return writeJSON(w, c) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteText writes r as a header line and a table, one row per kind and a
// total.
func (r *Result) WriteText(w io.Writer) error {
	c := r.Config
	mode := ""
	if c.Workload == VehiclesRandom {
		mode = ", fan-out " + c.FanOut
	}
	tp := "throughput unknown"
	if c.Throughput > 0 {
		tp = fmt.Sprintf("%d RU/s", c.Throughput)
	}
	stop := ""
	if r.Interrupted {
		stop = " (interrupted)"
	}
	if _, err := fmt.Fprintf(w, "%s on %s%s/%s: %d partitions, %s; mix %s%s; %d workers, %.1fs%s\n",
		c.Workload, c.Endpoint, c.Database, c.Container, c.Partitions, tp, c.Mix, mode, c.Concurrency, r.Elapsed, stop); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tops\tok/s\t429s\t429%\terrors\tRU/s\tRU/op\tp50 ms\tp99 ms\tp999 ms\treqs/op\tparts/op\t")
	row := func(s OpStats) {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%d\t%.1f\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t\n",
			s.Op, s.Count, s.OpsPerSec, s.Throttled, 100*s.ThrottledRate, s.Errors, s.RUPerSec, s.RUPerOp,
			s.P50, s.P99, s.P999, s.RequestsPerOp, s.PartitionsPerOp)
	}
	for _, s := range r.Ops {
		row(s)
	}
	row(r.Total)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range r.Ops {
		if s.ErrorSample != "" {
			if _, err := fmt.Fprintf(w, "%s error (1 of %d): %s\n", s.Op, s.Errors, s.ErrorSample); err != nil {
				return err
			}
		}
	}
	return nil
}
