package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/advise"
	"github.com/partitadb/partita/internal/config"
)

// adviseConfig holds the advise flags.
type adviseConfig struct {
	input, workload, onError string
	sample, top, buckets     int
	maxPaths                 int
	totalItems               int64
	totalBytes               byteSize
	timePath                 string
	window                   time.Duration
	jsonOut, noProgress      bool

	live                               bool
	hotWindow                          time.Duration
	endpoint, key, database, container string
	caCert                             string
	insecure                           bool
}

// byteSize is a flag of bytes: a number with an optional unit, B, KB, MB,
// GB, TB (powers of 1024, as Cosmos DB's limits are written).
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(given string) error {
	s := strings.TrimSpace(strings.ToUpper(given))
	mult := int64(1)
	for i, u := range []string{"KB", "MB", "GB", "TB"} {
		if strings.HasSuffix(s, u) {
			mult = 1 << (10 * (i + 1))
			s = strings.TrimSpace(strings.TrimSuffix(s, u))
			break
		}
	}
	s = strings.TrimSuffix(s, "B")
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(f >= 0) || f*float64(mult) > 1<<62 { // !(f >= 0): NaN too
		return fmt.Errorf("%q is not a size like 500GB", given) // as given: "2XB", not the "2X" left after its unit
	}
	*b = byteSize(f * float64(mult))
	return nil
}

const adviseUsage = `Usage:
  partita advise --input items.jsonl [--workload workload.json] [flags]
  partita advise --live --endpoint URL --database DB --container C [flags]

Ranks candidate partition keys (single paths, concatenations of two,
entities with a time bucket of the write time, hierarchical keys of 2-3
levels, and value + random or hash suffix variants of hot paths) by how they
spread storage and writes, the hottest key's RU/s at the stated write rate,
and how many queries they keep single-partition or targeted, and explains
the recommendation. Input is JSON lines or a JSON array of items. With
--live it samples every physical partition and names the key that is hot
now: over --hot-window, from two of the server's partition reports.

Flags:
`

// parseAdvise parses the advise flags over PARTITA_* variables (flags win).
func parseAdvise(args []string, getenv func(string) string, stderr io.Writer) (adviseConfig, error) {
	c := adviseConfig{onError: "stop", sample: 100000, top: 15, buckets: advise.DefaultBuckets,
		endpoint: "https://127.0.0.1:8081/", key: config.EmulatorKey}
	fs := newFlagSet("partita advise", adviseUsage, stderr)
	fs.StringVar(&c.input, "input", "", "JSON-lines file of items, one per line (- for stdin)")
	fs.StringVar(&c.workload, "workload", "", "workload description, JSON: queries with the paths they filter on and weights, and writes (see go doc internal/advise)")
	fs.StringVar(&c.onError, "on-error", c.onError, "what a malformed line does: stop (exit 1 naming the line) or skip (report it and go on)")
	fs.IntVar(&c.sample, "sample", c.sample, "analyse at most this many items, sampled uniformly; 0: all")
	fs.Int64Var(&c.totalItems, "total-items", 0, "items in the whole data set, to project the sample onto it (default: the input's count)")
	fs.Var(&c.totalBytes, "total-bytes", "size of the whole data set, e.g. 2TB, to project the sample onto it (default: the input's size)")
	fs.IntVar(&c.buckets, "buckets", c.buckets, "N of the suffix variants (suffix 1..N)")
	fs.StringVar(&c.timePath, "time-path", "", "path of each item's write time (default: the workload's, else detected)")
	fs.DurationVar(&c.window, "window", 0, "window over which write skew is measured (default: the workload's, else 24h)")
	fs.IntVar(&c.top, "top", c.top, "candidates listed in the table; 0: all")
	fs.IntVar(&c.maxPaths, "max-paths", advise.DefaultMaxPaths, "most property paths tracked")
	fs.BoolVar(&c.jsonOut, "json", false, "write the report as JSON")
	fs.BoolVar(&c.noProgress, "no-progress", false, "no progress bar on stderr")
	fs.BoolVar(&c.live, "live", false, "sample a live container through the SDK and read its partition report")
	fs.DurationVar(&c.hotWindow, "hot-window", advise.DefaultHotWindow/3, "with --live: name the keys hot over this window, between two partition reports (0: busiest since the server started)")
	fs.StringVar(&c.endpoint, "endpoint", c.endpoint, "account endpoint (--live)")
	fs.StringVar(&c.key, "key", c.key, "master key, base64 (--live; default: the Cosmos DB emulator's well-known key)")
	fs.StringVar(&c.database, "database", "", "database (--live)")
	fs.StringVar(&c.container, "container", "", "container (--live)")
	fs.StringVar(&c.caCert, "ca-cert", "", "PEM file of a CA (or the server's self-signed certificate) to trust (--live)")
	fs.BoolVar(&c.insecure, "insecure", false, "skip TLS certificate verification, as for the emulator (--live)")
	if err := parseFlags(fs, args, getenv); err != nil {
		return c, err
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if fs.NArg() > 0 {
		bad("unexpected arguments: %q", fs.Args())
	}
	switch {
	case c.live && c.input != "":
		bad("--input and --live exclude each other")
	case c.live && (c.database == "" || c.container == ""):
		bad("--live needs --database and --container")
	case !c.live && c.input == "":
		bad("give --input FILE (or - for stdin), or --live")
	}
	if c.onError != "stop" && c.onError != "skip" {
		bad("--on-error %q: want stop or skip", c.onError)
	}
	if c.sample < 0 || c.top < 0 || c.buckets < 1 || c.buckets > advise.MaxBuckets || c.totalItems < 0 || c.window < 0 || c.maxPaths < 1 || c.hotWindow < 0 {
		bad("--sample, --top, --total-items, --window and --hot-window must not be negative; --max-paths at least 1; --buckets from 1 to %d (what synthkey builds)", advise.MaxBuckets)
	}
	return c, errors.Join(errs...)
}

// adviseCmd runs `partita advise`.
func adviseCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parseAdvise(args, os.Getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "partita advise: %v\n", err)
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "partita advise: %v\n", err)
		return 1
	}
	var w *advise.Workload
	if c.workload != "" {
		data, err := os.ReadFile(c.workload)
		if err != nil {
			return fail(err)
		}
		if w, err = advise.ParseWorkload(data); err != nil {
			return fail(fmt.Errorf("%s: %w", c.workload, err))
		}
	}
	bar := newProgressBar(stderr, !c.noProgress)
	defer bar.done()
	skipped := 0
	ropts := advise.ReadOptions{Sample: c.sample, MaxPaths: c.maxPaths, Progress: bar.update,
		Malformed: func(e *advise.LineError) {
			skipped++
			if skipped <= maxMalformedShown {
				bar.clear()
				fmt.Fprintf(stderr, "partita advise: skipped %v\n", e)
			}
		}}
	if c.onError == "skip" {
		ropts.OnError = advise.Skip
	}

	var a *advise.Analyzer
	var (
		hotKeys   []advise.HotKey
		measured  float64
		reportErr error
	)
	if c.live {
		hc, err := liveHTTPClient(c)
		if err != nil {
			return fail(err)
		}
		a = advise.NewAnalyzer(ropts)
		live := &advise.Live{Endpoint: c.endpoint, Key: c.key, Database: c.database, Container: c.container, HTTPClient: hc}
		// The sample first, then the window's two reports: the sample's
		// own reads, inside the window, were counted as the container's
		// load and named an idle key hot (a bug hunt: 1,098 RU/s
		// "measured" on a container nothing else touched).
		if err := live.Sample(ctx, a, c.sample); err != nil {
			bar.clear()
			return fail(err)
		}
		hot := &advise.HotNow{Window: c.hotWindow}
		start := time.Now()
		parts, err := live.Partitions(ctx)
		reportErr = err
		hot.Observe(start, parts)
		switch {
		case reportErr != nil:
		case c.hotWindow == 0:
			hotKeys = advise.HotKeys(parts)
		default:
			select {
			case <-time.After(time.Until(start.Add(c.hotWindow))):
			case <-ctx.Done():
				return fail(ctx.Err())
			}
			end := time.Now()
			if parts, reportErr = live.Partitions(ctx); reportErr == nil {
				hot.Observe(end, parts)
				hotKeys = hot.Hot()
				measured, _ = hot.RUPerSecond()
			}
		}
	} else {
		in := io.Reader(os.Stdin)
		if c.input != "-" {
			f, err := os.Open(c.input)
			if err != nil {
				return fail(err)
			}
			defer f.Close()
			if st, err := f.Stat(); err == nil {
				ropts.InputBytes = st.Size()
				bar.enable(st.Size() >= progressMinBytes)
			}
			in = f
		}
		a = advise.NewAnalyzer(ropts)
		if err := a.ReadLines(ctx, in); err != nil {
			bar.clear()
			return fail(fmt.Errorf("%s: %w", c.input, err))
		}
	}
	if skipped > maxMalformedShown {
		bar.clear()
		fmt.Fprintf(stderr, "partita advise: skipped %d more malformed lines\n", skipped-maxMalformedShown)
	}
	rep, err := a.Analyze(ctx, advise.Options{Workload: w, TotalItems: c.totalItems, TotalBytes: int64(c.totalBytes),
		Buckets: c.buckets, TimePath: c.timePath, Window: c.window, MeasuredRU: measured, Progress: bar.update})
	if err != nil {
		bar.clear()
		return fail(err)
	}
	if c.live {
		if reportErr != nil {
			// A Cosmos DB account has no Partita admin endpoint: advise from
			// the sample alone.
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("no partition report (%v): hot keys not named", reportErr))
		} else {
			if c.hotWindow > 0 {
				rep.HotWindow = c.hotWindow.String()
			}
			rep.AddHotKeys(hotKeys)
		}
	}
	bar.done()
	if c.jsonOut {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteTable(stdout, c.top)
	}
	if err != nil {
		return fail(err)
	}
	return 0
}

// maxMalformedShown is how many skipped lines are named one by one.
const maxMalformedShown = 20

// liveHTTPClient returns the HTTP client for --live: trusting --ca-cert
// besides the system's roots, or nothing with --insecure.
func liveHTTPClient(c adviseConfig) (*http.Client, error) {
	tc := &tls.Config{}
	if c.caCert != "" {
		pem, err := os.ReadFile(c.caCert)
		if err != nil {
			return nil, err
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-cert %s: no PEM certificate in it", c.caCert)
		}
		tc.RootCAs = pool
	}
	tc.InsecureSkipVerify = c.insecure
	return &http.Client{Timeout: 60 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true, Proxy: http.ProxyFromEnvironment}}, nil
}

// progressMinBytes is the input size from which a progress bar is drawn.
const progressMinBytes = 8 << 20

// progressBar draws progress on a terminal's stderr, at most every 100 ms.
// On anything but a terminal it draws nothing.
type progressBar struct {
	w       io.Writer
	on      bool
	drawn   bool
	last    time.Time
	minStep time.Duration
}

func newProgressBar(w io.Writer, want bool) *progressBar {
	f, ok := w.(*os.File)
	if ok && want {
		st, err := f.Stat()
		ok = err == nil && st.Mode()&os.ModeCharDevice != 0
	}
	return &progressBar{w: w, on: ok && want, minStep: 100 * time.Millisecond}
}

// enable turns the bar off for small inputs.
func (p *progressBar) enable(large bool) { p.on = p.on && large }

func (p *progressBar) update(pr advise.Progress) {
	if !p.on {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < p.minStep {
		return
	}
	p.last = now
	var line string
	switch {
	case pr.Phase == "analyze":
		line = fmt.Sprintf("analysing %d items: %d candidates", pr.Items, pr.Done)
	case pr.Total > 0:
		frac := min(1, float64(pr.Done)/float64(pr.Total))
		const width = 30
		n := int(frac * width)
		line = fmt.Sprintf("reading [%s%s] %3.0f%%  %d items", strings.Repeat("=", n), strings.Repeat(" ", width-n), 100*frac, pr.Items)
	default:
		line = fmt.Sprintf("reading  %d items", pr.Items)
	}
	fmt.Fprintf(p.w, "\r\033[K%s", line)
	p.drawn = true
}

// clear erases the bar so that a message can be printed.
func (p *progressBar) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
		p.last = time.Time{}
	}
}

func (p *progressBar) done() { p.clear() }
