package bench

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/synthkey"
)

// runner is the state a run's workers share; all of it is read-only while
// they run.
type runner struct {
	cfg        Config
	container  *azcosmos.ContainerClient
	partitions int
	key        *synthkey.Key // vehicles only
	date       string        // vehicles: "today", fixed at the start (UTC)
	pad        string        // filler bringing items to about ItemBytes
	run        string        // vehicles: unique per run, in reading ids so runs never collide
}

// Run sets up the container (creating or resetting it as cfg says, and
// preloading records for ycsb-*, query, query-pk and query-filter), then
// runs cfg.Workload with cfg.Concurrency workers for cfg.Warmup and then
// cfg.Duration, until cfg.Ops operations completed or ctx is done, and
// returns the statistics of the operations begun after the warmup. When ctx
// ends the load early, Run returns what was measured so far with
// Interrupted set and a nil error.
//
// If progress is not nil, a one-line progress report is rewritten on it
// (with carriage returns) twice a second and ended with a newline.
//
// Errors: configuration errors wrap ErrInvalidConfig; setup failures (TLS,
// authentication, a missing container without Create) are returned as
// they come. Operation failures are not errors of Run: they are counted.
func Run(ctx context.Context, cfg Config, progress io.Writer) (*Result, error) {
	p, err := Prepare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Load(ctx, progress), nil
}

// Prepared is a workload set up against one endpoint (Prepare): its
// container created, reset and preloaded as the Config says, ready to run
// the load once (Run) or in rounds (Compare). Close releases its
// connections.
type Prepared struct {
	r         *runner
	info      RunInfo
	transport *http.Transport
}

// Prepare does Run's setup: it checks cfg, connects, sets up the
// container and preloads it. Errors are Run's.
func Prepare(ctx context.Context, cfg Config) (*Prepared, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	client, transport, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	p := &Prepared{transport: transport}
	if err := p.prepare(ctx, cfg, client); err != nil {
		transport.CloseIdleConnections()
		return nil, err
	}
	return p, nil
}

func (p *Prepared) prepare(ctx context.Context, cfg Config, client *azcosmos.Client) error {
	now := time.Now()
	r := &runner{cfg: cfg, date: now.UTC().Format(time.DateOnly), run: strconv.FormatInt(now.UnixNano(), 36)}
	info := RunInfo{
		Endpoint: cfg.Endpoint, Database: cfg.Database, Container: cfg.Container, Workload: cfg.Workload,
		Mix: cfg.Mix.String(), FanOut: cfg.FanOut, Concurrency: cfg.Concurrency, Rate: cfg.Rate,
		Retries: cfg.Retries, Duration: cfg.Duration.String(), Warmup: cfg.Warmup.String(), Ops: cfg.Ops, ItemBytes: cfg.ItemBytes, Seed: cfg.Seed,
		PageSize: cfg.PageSize,
	}
	var err error
	if info.Throughput, err = r.setup(ctx, client); err != nil {
		return err
	}
	info.Partitions = r.partitions
	if isVehicles(cfg.Workload) {
		info.Buckets, info.Vehicles = cfg.Buckets, cfg.Vehicles
		if cfg.Workload == VehiclesDate {
			info.Buckets = 0
		}
		if r.key, err = newKey(cfg.Workload, cfg.Buckets); err != nil {
			return err
		}
		r.pad = padding(cfg.ItemBytes, 230) // the other properties, system properties included
	} else {
		info.Records = cfg.Records
		if r.choices() > 0 {
			info.Keys = cfg.Keys
		}
		r.pad = padding(cfg.ItemBytes, 200)
		if !cfg.NoPreload {
			if err := r.preload(ctx); err != nil {
				return err
			}
		}
	}
	p.r, p.info = r, info
	return nil
}

// Load runs the prepared workload once, as Run does after its setup.
// Loads of one Prepared must not run concurrently.
func (p *Prepared) Load(ctx context.Context, progress io.Writer) *Result {
	return p.r.load(ctx, p.info, progress)
}

// Close releases the connections of p.
func (p *Prepared) Close() { p.transport.CloseIdleConnections() }

// newClient returns an azcosmos client for cfg and its transport.
func newClient(cfg Config) (*azcosmos.Client, *http.Transport, error) {
	tlsCfg := &tls.Config{InsecureSkipVerify: cfg.Insecure} //nolint:gosec // only when asked, as for the emulator
	if cfg.CACert != "" {
		pem, err := os.ReadFile(cfg.CACert)
		if err != nil {
			return nil, nil, fmt.Errorf("ca-cert: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("%w: ca-cert %s holds no PEM certificate", ErrInvalidConfig, cfg.CACert)
		}
		tlsCfg.RootCAs = pool
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSClientConfig:     tlsCfg,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: cfg.Concurrency * 2, // fan-outs run several requests per worker
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	retry := policy.RetryOptions{MaxRetries: -1} // -1: none; 0 would mean the SDK's default of 3
	if cfg.Retries > 0 {
		retry = policy.RetryOptions{MaxRetries: int32(min(cfg.Retries, 1000)), MaxRetryDelay: 10 * time.Second}
	}
	cred, err := azcosmos.NewKeyCredential(cfg.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: key: %w", ErrInvalidConfig, err)
	}
	c, err := azcosmos.NewClientWithKey(cfg.Endpoint, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Transport: tr, Timeout: 60 * time.Second},
		Retry:     retry,
	}})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: endpoint %q: %w", ErrInvalidConfig, cfg.Endpoint, err)
	}
	return c, tr, nil
}

// setup creates, resets and checks the container, and learns its
// partitions and throughput (0 when it has no offer of its own).
func (r *runner) setup(ctx context.Context, client *azcosmos.Client) (int, error) {
	cfg := r.cfg
	db, err := client.NewDatabase(cfg.Database)
	if err != nil {
		return 0, err
	}
	if r.container, err = db.NewContainer(cfg.Container); err != nil {
		return 0, err
	}
	if cfg.Reset {
		if _, err := r.container.Delete(ctx, nil); err != nil && !hasStatus(err, http.StatusNotFound) {
			return 0, fmt.Errorf("reset: delete container %s: %w", cfg.Container, err)
		}
	}
	if cfg.Create {
		if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: cfg.Database}, nil); err != nil && !hasStatus(err, http.StatusConflict) {
			return 0, fmt.Errorf("create database %s: %w", cfg.Database, err)
		}
		if err := r.createContainer(ctx, db); err != nil {
			return 0, err
		}
	}
	if _, err := r.container.Read(ctx, nil); err != nil {
		if hasStatus(err, http.StatusNotFound) {
			return 0, fmt.Errorf("container %s/%s does not exist (use --create): %w", cfg.Database, cfg.Container, err)
		}
		return 0, fmt.Errorf("read container %s/%s: %w", cfg.Database, cfg.Container, err)
	}
	ranges, err := r.container.ReadFeedRanges(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("read partition key ranges: %w", err)
	}
	r.partitions = max(1, len(ranges))
	tp := 0
	if resp, err := r.container.ReadThroughput(ctx, nil); err == nil {
		if m, ok := resp.ThroughputProperties.ManualThroughput(); ok {
			tp = int(m)
		} else if m, ok := resp.ThroughputProperties.AutoscaleMaxThroughput(); ok {
			tp = int(m)
		}
	}
	return tp, nil
}

// ruPerPartition is the throughput per physical partition a new manual
// container gets on Cosmos DB (and Partita): ceil(RU/6,000) partitions.
const ruPerPartition = 6000

// createContainer creates the container unless it exists; with
// Config.Partitions it creates it large enough for that many partitions
// and then lowers its throughput to Config.Throughput.
func (r *runner) createContainer(ctx context.Context, db *azcosmos.DatabaseClient) error {
	cfg := r.cfg
	ru := cfg.Throughput
	if (ru+ruPerPartition-1)/ruPerPartition < cfg.Partitions {
		ru = cfg.Partitions * ruPerPartition
	}
	tp := azcosmos.NewManualThroughputProperties(int32(ru))
	props := azcosmos.ContainerProperties{ID: cfg.Container, PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}
	if cfg.IndexingPolicy != "" {
		p, err := cfg.indexingPolicy()
		if err != nil {
			return err
		}
		props.IndexingPolicy = p
	}
	_, err := db.CreateContainer(ctx, props, &azcosmos.CreateContainerOptions{ThroughputProperties: &tp})
	if hasStatus(err, http.StatusConflict) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create container %s: %w", cfg.Container, err)
	}
	if ru != cfg.Throughput {
		c, err := db.NewContainer(cfg.Container)
		if err != nil {
			return err
		}
		if _, err := c.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(int32(cfg.Throughput)), nil); err != nil {
			return fmt.Errorf("set throughput of %s to %d RU/s: %w", cfg.Container, cfg.Throughput, err)
		}
	}
	return nil
}

// preload upserts the records ycsb-* and query read, waiting out 429s.
func (r *runner) preload(ctx context.Context) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, r.cfg.Concurrency)
	for w := range r.cfg.Concurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= r.cfg.Records {
					return
				}
				body, err := r.record(i, 0)
				if err != nil {
					errs[w] = err
					return
				}
				for {
					_, err = r.container.UpsertItem(ctx, azcosmos.NewPartitionKeyString(r.recordPK(i)), body, nil)
					d, throttled := retryAfter(err)
					if !throttled {
						break
					}
					if sleep(ctx, d) != nil {
						errs[w] = ctx.Err()
						return
					}
				}
				if err != nil {
					errs[w] = fmt.Errorf("preload %s: %w", recordID(i), err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// live holds the counters the progress line shows.
type live struct {
	ops, throttled, errors atomic.Int64
}

// load runs the workers and collects their counters.
func (r *runner) load(ctx context.Context, info RunInfo, progress io.Writer) *Result {
	cfg := r.cfg
	runCtx, cancel := context.WithTimeout(ctx, cfg.Warmup+cfg.Duration)
	defer cancel()
	var (
		issued atomic.Int64
		lv     live
		wg     sync.WaitGroup
		pace   *pacer
	)
	if cfg.Rate > 0 {
		pace = newPacer(cfg.Rate)
	}
	workers := make([]*worker, cfg.Concurrency)
	begin := time.Now()
	start := begin.Add(cfg.Warmup) // measuring starts
	for i := range workers {
		w := newWorker(r, i, start)
		workers[i] = w
		wg.Go(func() {
			for runCtx.Err() == nil {
				if cfg.Ops > 0 && issued.Add(1) > cfg.Ops {
					return
				}
				if pace != nil && pace.wait(runCtx) != nil {
					return
				}
				w.step(runCtx, &lv)
			}
		})
	}
	var pwg sync.WaitGroup
	stop := make(chan struct{})
	if progress != nil {
		pwg.Go(func() { showProgress(progress, stop, begin, cfg, &lv) })
	}
	wg.Wait()
	// Operations still in flight at the deadline are cancelled and not
	// counted, so the measured time is at most Duration even if workers
	// took a moment to return.
	elapsed := min(max(0, time.Since(start)), cfg.Duration)
	close(stop)
	pwg.Wait()
	var per [numKinds]counters
	for _, w := range workers {
		for k := range per {
			per[k].merge(&w.stats[k])
		}
	}
	return newResult(info, &per, elapsed, ctx.Err() != nil)
}

// step runs one operation and accounts for it; after a 429 it waits the
// retry-after the service asked for.
func (w *worker) step(ctx context.Context, lv *live) {
	o := w.next()
	t0 := time.Now()
	kind, res, err := w.exec(ctx, o)
	lat := time.Since(t0)
	if err != nil && ctx.Err() != nil {
		return // cut short by the end of the run: not a result
	}
	lv.ops.Add(1)
	c := &w.stats[kind]
	if t0.Before(w.start) {
		c = &counters{} // warming up: not measured
	}
	c.count++
	if err == nil {
		c.ok++
		c.ru += res.ru
		c.requests += int64(res.requests)
		c.partitions += int64(res.partitions)
		c.rows += int64(res.rows)
		c.latency.Record(lat)
		return
	}
	if d, throttled := retryAfter(err); throttled {
		c.throttled++
		lv.throttled.Add(1)
		_ = sleep(ctx, d)
		return
	}
	c.errors++
	lv.errors.Add(1)
	if c.firstErr == "" {
		c.firstErr = describe(err)
	}
}

// describe returns a one-line account of an operation's failure (the
// SDK's own text spans many lines).
func describe(err error) string {
	if re, ok := errors.AsType[*azcore.ResponseError](err); ok {
		s := fmt.Sprintf("HTTP %d %s", re.StatusCode, re.ErrorCode)
		if re.RawResponse != nil {
			if sub := re.RawResponse.Header.Get("x-ms-substatus"); sub != "" && sub != "0" {
				s += ", substatus " + sub
			}
			if req := re.RawResponse.Request; req != nil {
				s += ": " + req.Method + " " + req.URL.Path
			}
		}
		return s
	}
	return err.Error()
}

// hasStatus reports whether err is a service response with HTTP status code.
func hasStatus(err error, code int) bool {
	re, ok := errors.AsType[*azcore.ResponseError](err)
	return ok && re.StatusCode == code
}

// maxBackoff bounds the wait after a 429, whatever the service asks.
const maxBackoff = 5 * time.Second

// retryAfter reports whether err is a 429 and how long the service asked
// the client to wait (x-ms-retry-after-ms; 100 ms when absent).
func retryAfter(err error) (time.Duration, bool) {
	re, ok := errors.AsType[*azcore.ResponseError](err)
	if !ok || re.StatusCode != http.StatusTooManyRequests {
		return 0, false
	}
	d := 100 * time.Millisecond
	if re.RawResponse != nil {
		if ms, err := strconv.ParseFloat(re.RawResponse.Header.Get("x-ms-retry-after-ms"), 64); err == nil && ms >= 0 {
			d = time.Duration(ms * float64(time.Millisecond))
		}
	}
	return min(d, maxBackoff), true
}

// sleep waits d or until ctx is done, returning ctx.Err() then.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pacer spaces operations rate per second apart over all workers. A slot
// missed by more than maxLag is dropped rather than made up in a burst.
type pacer struct {
	interval int64        // ns between operations
	next     atomic.Int64 // unix ns of the next free slot
}

const maxLag = 100 * time.Millisecond

func newPacer(rate float64) *pacer {
	p := &pacer{interval: max(1, int64(float64(time.Second)/rate))}
	p.next.Store(time.Now().UnixNano())
	return p
}

// wait blocks until the caller's slot, or returns ctx.Err().
func (p *pacer) wait(ctx context.Context) error {
	for {
		now := time.Now().UnixNano()
		n := p.next.Load()
		slot := max(n, now-int64(maxLag))
		if p.next.CompareAndSwap(n, slot+p.interval) {
			return sleep(ctx, time.Duration(slot-now))
		}
	}
}

// showProgress rewrites one status line on w until stop is closed.
func showProgress(w io.Writer, stop <-chan struct{}, start time.Time, cfg Config, lv *live) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	line := func() {
		el := time.Since(start)
		ops := lv.ops.Load()
		frac := min(1, el.Seconds()/(cfg.Warmup+cfg.Duration).Seconds())
		if cfg.Ops > 0 {
			frac = max(frac, min(1, float64(ops)/float64(cfg.Ops)))
		}
		const width = 20
		bar := make([]byte, width)
		for i := range bar {
			bar[i] = ' '
			if i < int(frac*width) {
				bar[i] = '='
			}
		}
		rate := 0.0
		if el > 0 {
			rate = float64(ops) / el.Seconds()
		}
		fmt.Fprintf(w, "\r[%s] %5.1fs  %d ops  %.0f ops/s  %d 429s  %d errors ", bar, el.Seconds(), ops, rate, lv.throttled.Load(), lv.errors.Load())
	}
	for {
		select {
		case <-t.C:
			line()
		case <-stop:
			line()
			fmt.Fprintln(w)
			return
		}
	}
}
