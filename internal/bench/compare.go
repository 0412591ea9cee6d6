package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Side is one server a comparison measures, e.g. Partita or the floor
// server (package floor).
type Side struct {
	Name string // shown in the report, e.g. "partita"
	// Endpoint, Key, CACert and Insecure replace Config's for this side
	// (an empty Key keeps Config's).
	Endpoint, Key, CACert string
	Insecure              bool
	// Container, Partitions and Throughput, when set, replace Config's
	// for this side: two sides on one server, each with a container of its
	// own, compare partition counts (partita bench --compare-partitions).
	Container              string
	Partitions, Throughput int
	// CPU, if set, returns the server's CPU time (user and system) so far;
	// a round's server CPU per operation is its difference over the round
	// divided by the operations completed. Nil: not measured.
	CPU func() (time.Duration, error)
}

// Compare measures cfg's workload against each side in one run: it
// prepares every side (setup and preload), runs a warm-up of cfg.Warmup on
// each, then rounds rounds in which every side runs the load for
// cfg.Duration in turn, the order alternating from round to round (A B, B
// A, …) so that the machine's drift and noise fall on all sides alike. It
// reports, per side and operation kind, the median over rounds of ok/s,
// p50, p99 and server CPU per operation, and for every side after the
// first its ratio to the last side (the floor when the floor is last).
//
// cfg.Ops, if set, bounds each round. Errors are Prepare's; when ctx ends,
// Compare returns what it measured with Interrupted set.
func Compare(ctx context.Context, cfg Config, sides []Side, rounds int, progress io.Writer) (*Comparison, error) {
	if len(sides) == 0 || rounds < 1 {
		return nil, fmt.Errorf("%w: compare needs a side and a round", ErrInvalidConfig)
	}
	warmup := cfg.Warmup
	cfg.Warmup = 0
	preps := make([]*Prepared, len(sides))
	defer func() {
		for _, p := range preps {
			if p != nil {
				p.Close()
			}
		}
	}()
	cmp := &Comparison{Rounds: rounds, RoundDuration: cfg.Duration.String(), Warmup: warmup.String()}
	for i, s := range sides {
		c := cfg
		c.Endpoint, c.CACert, c.Insecure = s.Endpoint, s.CACert, s.Insecure
		if s.Key != "" {
			c.Key = s.Key
		}
		if s.Container != "" {
			c.Container = s.Container
		}
		if s.Partitions > 0 {
			c.Partitions = s.Partitions
		}
		if s.Throughput > 0 {
			c.Throughput = s.Throughput
		}
		if progress != nil {
			fmt.Fprintf(progress, "preparing %s (%s)\n", s.Name, s.Endpoint)
		}
		p, err := Prepare(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		preps[i] = p
		if i == 0 {
			cmp.Config = p.info
		}
		cmp.Sides = append(cmp.Sides, SideResult{Name: s.Name, Endpoint: s.Endpoint, Partitions: p.info.Partitions})
	}
	if warmup > 0 {
		for i, p := range preps {
			if progress != nil {
				fmt.Fprintf(progress, "warming up %s for %s\n", sides[i].Name, warmup)
			}
			p.loadFor(ctx, warmup)
		}
	}
	for round := range rounds {
		order := make([]int, len(sides))
		for i := range order {
			order[i] = i
		}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, i := range order {
			if ctx.Err() != nil {
				cmp.Interrupted = true
				break
			}
			rr, err := measure(ctx, preps[i], sides[i], cfg.Duration)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sides[i].Name, err)
			}
			rr.Round = round + 1
			cmp.Sides[i].Rounds = append(cmp.Sides[i].Rounds, rr)
			if progress != nil {
				fmt.Fprintf(progress, "round %d/%d %-8s %8.1f ok/s  p50 %.2f ms%s\n", round+1, rounds, sides[i].Name,
					rr.Total.OpsPerSec, rr.Total.P50, cpuNote(rr))
			}
		}
	}
	for i := range cmp.Sides {
		cmp.Sides[i].summarize()
	}
	last := cmp.Sides[len(cmp.Sides)-1]
	for _, s := range cmp.Sides[:len(cmp.Sides)-1] {
		cmp.Ratios = append(cmp.Ratios, ratios(s, last)...)
	}
	return cmp, nil
}

func cpuNote(rr RoundResult) string {
	if rr.CPUPerOp == 0 {
		return ""
	}
	return fmt.Sprintf("  server CPU %.0f µs/op", rr.CPUPerOp)
}

// loadFor runs the prepared load once for d with no warmup.
func (p *Prepared) loadFor(ctx context.Context, d time.Duration) *Result {
	r := *p.r
	r.cfg.Warmup, r.cfg.Duration = 0, d
	info := p.info
	info.Warmup, info.Duration = "0s", d.String()
	return r.load(ctx, info, nil)
}

// LoadN runs the prepared load until n operations completed (no warmup,
// no time limit) and returns their statistics: what a Go benchmark runs
// for b.N. Loads of one Prepared must not run concurrently.
func (p *Prepared) LoadN(ctx context.Context, n int64) *Result {
	r := *p.r
	r.cfg.Warmup, r.cfg.Duration, r.cfg.Ops = 0, 24*time.Hour, n
	info := p.info
	info.Warmup, info.Duration, info.Ops = "0s", "", n
	return r.load(ctx, info, nil)
}

// measure runs one round against one side.
func measure(ctx context.Context, p *Prepared, s Side, d time.Duration) (RoundResult, error) {
	var before time.Duration
	if s.CPU != nil {
		var err error
		if before, err = s.CPU(); err != nil {
			return RoundResult{}, fmt.Errorf("server CPU: %w", err)
		}
	}
	res := p.loadFor(ctx, d)
	rr := RoundResult{Ops: res.Ops, Total: res.Total}
	if s.CPU != nil {
		after, err := s.CPU()
		if err != nil {
			return RoundResult{}, fmt.Errorf("server CPU: %w", err)
		}
		rr.CPUSeconds = round((after - before).Seconds(), 3)
		if res.Total.Count > 0 {
			rr.CPUPerOp = round(float64((after-before).Microseconds())/float64(res.Total.Count), 1)
		}
	}
	return rr, nil
}

// Comparison is the outcome of Compare.
type Comparison struct {
	Config        RunInfo      `json:"config"` // the first side's
	Rounds        int          `json:"rounds"`
	RoundDuration string       `json:"round_duration"`
	Warmup        string       `json:"warmup"` // per side, before the first round
	Interrupted   bool         `json:"interrupted"`
	Sides         []SideResult `json:"sides"`
	// Ratios compare every side but the last with the last, per
	// operation kind and for the total.
	Ratios []Ratio `json:"ratios"`
}

// SideResult is one side's rounds and their medians.
type SideResult struct {
	Name       string        `json:"name"`
	Endpoint   string        `json:"endpoint"`
	Partitions int           `json:"partitions"`
	Rounds     []RoundResult `json:"rounds"`
	// Medians has per operation kind (and "total", last) the median over
	// rounds of each figure.
	Medians []Median `json:"medians"`
}

// RoundResult is one round of one side.
type RoundResult struct {
	Round int       `json:"round"`
	Ops   []OpStats `json:"ops"`
	Total OpStats   `json:"total"`
	// CPUSeconds is the server's CPU time over the round and CPUPerOp that
	// divided by the operations completed (of every kind), in µs; both 0
	// when the side's CPU is not measured.
	CPUSeconds float64 `json:"server_cpu_s,omitempty"`
	CPUPerOp   float64 `json:"server_cpu_us_per_op,omitempty"`
}

// Median is the median over rounds of one operation kind's figures.
type Median struct {
	Op        string  `json:"op"`
	OpsPerSec float64 `json:"ops_per_s"`
	P50       float64 `json:"p50_ms"`
	P99       float64 `json:"p99_ms"`
	RowsPerOp float64 `json:"rows_per_op,omitempty"`
	// CPUPerOp is the median round's server CPU per operation of any kind
	// (µs), the same for every kind of a side; 0 when not measured.
	CPUPerOp float64 `json:"server_cpu_us_per_op,omitempty"`
	// Errors and Throttled are summed over rounds.
	Errors    int64 `json:"errors"`
	Throttled int64 `json:"throttled"`
}

// Ratio is a side's medians divided by the last side's, for one kind.
type Ratio struct {
	Side      string  `json:"side"`
	Baseline  string  `json:"baseline"`
	Op        string  `json:"op"`
	OpsPerSec float64 `json:"ops_per_s"` // side / baseline: below 1 is slower
	P50       float64 `json:"p50"`       // side / baseline: above 1 is slower
	P99       float64 `json:"p99"`
	CPUPerOp  float64 `json:"server_cpu_per_op,omitempty"`
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// summarize fills s.Medians from s.Rounds.
func (s *SideResult) summarize() {
	var cpu []float64
	for _, r := range s.Rounds {
		if r.CPUPerOp > 0 {
			cpu = append(cpu, r.CPUPerOp)
		}
	}
	var kinds []string
	for _, r := range s.Rounds {
		for _, o := range r.Ops {
			if !slices.Contains(kinds, o.Op) {
				kinds = append(kinds, o.Op)
			}
		}
	}
	kinds = append(kinds, "total")
	for _, k := range kinds {
		var ops, p50, p99, rows []float64
		m := Median{Op: k, CPUPerOp: round(median(cpu), 1)}
		for _, r := range s.Rounds {
			st, ok := r.op(k)
			if !ok {
				continue
			}
			ops, p50, p99, rows = append(ops, st.OpsPerSec), append(p50, st.P50), append(p99, st.P99), append(rows, st.RowsPerOp)
			m.Errors += st.Errors
			m.Throttled += st.Throttled
		}
		m.OpsPerSec, m.P50, m.P99, m.RowsPerOp = round(median(ops), 1), median(p50), median(p99), median(rows)
		s.Medians = append(s.Medians, m)
	}
}

func (r RoundResult) op(kind string) (OpStats, bool) {
	if kind == "total" {
		return r.Total, true
	}
	for _, o := range r.Ops {
		if o.Op == kind {
			return o, true
		}
	}
	return OpStats{}, false
}

func ratios(s, base SideResult) []Ratio {
	div := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return round(a/b, 2)
	}
	var out []Ratio
	for _, m := range s.Medians {
		for _, b := range base.Medians {
			if b.Op == m.Op {
				out = append(out, Ratio{Side: s.Name, Baseline: base.Name, Op: m.Op, OpsPerSec: div(m.OpsPerSec, b.OpsPerSec),
					P50: div(m.P50, b.P50), P99: div(m.P99, b.P99), CPUPerOp: div(m.CPUPerOp, b.CPUPerOp)})
			}
		}
	}
	return out
}

// WriteText writes c as a header, a table of medians per side and kind,
// the ratios, and each side's ok/s per round.
func (c *Comparison) WriteText(w io.Writer) error {
	i := c.Config
	stop := ""
	if c.Interrupted {
		stop = " (interrupted)"
	}
	page := ""
	if i.PageSize != 0 {
		page = fmt.Sprintf(", page size %d", i.PageSize)
	}
	if _, err := fmt.Fprintf(w, "%s (mix %s, %d item bytes%s), %d workers; %d rounds of %s per side, interleaved, after a %s warm-up; medians over rounds%s\n",
		i.Workload, i.Mix, i.ItemBytes, page, i.Concurrency, c.Rounds, c.RoundDuration, c.Warmup, stop); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "side\top\tok/s\tp50 ms\tp99 ms\trows/op\tserver CPU µs/op\terrors\t429s\t")
	for _, s := range c.Sides {
		for _, m := range s.Medians {
			if m.Op == "total" && len(s.Medians) == 2 {
				continue // the one kind's figures again
			}
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.2f\t%.2f\t%.1f\t%s\t%d\t%d\t\n", s.Name, m.Op, m.OpsPerSec, m.P50, m.P99, m.RowsPerOp,
				orDash(m.CPUPerOp, "%.0f"), m.Errors, m.Throttled)
		}
	}
	for _, r := range c.Ratios {
		if r.Op == "total" && len(c.Sides[0].Medians) == 2 {
			continue
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%.2f×\t%.2f×\t%.2f×\t\t%s\t\t\t\n", r.Side, r.Baseline, r.Op, r.OpsPerSec, r.P50, r.P99, orDash(r.CPUPerOp, "%.2f×"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var errs []error
	for _, s := range c.Sides {
		var b strings.Builder
		for _, r := range s.Rounds {
			fmt.Fprintf(&b, " %.0f", r.Total.OpsPerSec)
		}
		parts := ""
		switch {
		case s.Partitions == 1:
			parts = " (1 physical partition)"
		case s.Partitions > 1:
			parts = fmt.Sprintf(" (%d physical partitions)", s.Partitions)
		}
		_, err := fmt.Fprintf(w, "%s%s ok/s per round:%s\n", s.Name, parts, b.String())
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func orDash(v float64, format string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}
