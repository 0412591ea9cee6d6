package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/bench"
	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/testserver"
)

func TestParseBenchFlagsAndEnv(t *testing.T) {
	env := map[string]string{
		"PARTITA_KEY":         "a2V5",
		"PARTITA_WORKLOAD":    "ycsb-a",
		"PARTITA_CONCURRENCY": "3",
	}
	cfg, o, err := parseBench([]string{"--workload", "vehicles-random", "--mix=70,20,10", "--duration=5s", "--json", "--fan-out=keys"},
		func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Workload != bench.VehiclesRandom || cfg.Key != "a2V5" || cfg.Concurrency != 3 {
		t.Errorf("workload %q key %q concurrency %d; want the flag's vehicles-random, the environment's a2V5 and 3", cfg.Workload, cfg.Key, cfg.Concurrency)
	}
	if cfg.Mix == nil || *cfg.Mix != (bench.Mix{Write: 70, Read: 20, Query: 10}) || cfg.Duration != 5*time.Second || !o.json || cfg.FanOut != bench.FanOutKeys {
		t.Errorf("flags not applied: %+v, %+v", cfg, o)
	}
	cfg, _, err = parseBench(nil, func(string) string { return "" }, &bytes.Buffer{})
	if err != nil || cfg.Endpoint != "https://127.0.0.1:8081/" || cfg.Key != config.EmulatorKey || cfg.Workload != bench.VehiclesHash || cfg.Mix != nil {
		t.Errorf("defaults: %+v, %v; want the emulator's endpoint and key, vehicles-hash, no mix", cfg, err)
	}
}

func TestBenchCmdErrors(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"-h"}, 0},
		{[]string{"--nope"}, 2},
		{[]string{"extra"}, 2},
		{[]string{"--mix=1,2,3"}, 2},
		{[]string{"--workload=ycsb-z"}, 2},
		{[]string{"--duration=-1s"}, 2},
		{[]string{"--floor", "--compare-partitions=4"}, 2},
		{[]string{"--compare-partitions=1"}, 2},
		{[]string{"--compare-partitions=-3"}, 2},
		{[]string{"--compare-partitions=4", "--rounds=0"}, 2},
		{[]string{"--endpoint=https://127.0.0.1:1/", "--duration=1s"}, 1}, // nothing listens there
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		if got := benchCmd(t.Context(), tt.args, &out, &errb); got != tt.want {
			t.Errorf("benchCmd(%q) = %d, want %d (stderr %q)", tt.args, got, tt.want, errb.String())
		}
	}
	var errb bytes.Buffer
	benchCmd(t.Context(), []string{"-h"}, &bytes.Buffer{}, &errb)
	for _, f := range []string{"-endpoint", "-workload", "-json", "-no-progress", "-rate", "PARTITA_KEY"} {
		if !strings.Contains(errb.String(), f) {
			t.Errorf("benchCmd(-h) output lacks %q", f)
		}
	}
}

// TestBenchCmd runs `partita bench` against a server, as text and as JSON.
func TestBenchCmd(t *testing.T) {
	s := testserver.Start(t, testserver.Options{Configure: func(c *config.Config) { c.Engine.RateLimit = "on" }})
	ca := t.TempDir() + "/ca.pem"
	if err := os.WriteFile(ca, s.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--endpoint", s.Endpoint, "--key", s.Key, "--ca-cert", ca, "--create", "--workload=vehicles-hash", "--ops=100", "--concurrency=2"}
	var out, errb bytes.Buffer
	if code := benchCmd(t.Context(), args, &out, &errb); code != 0 {
		t.Fatalf("benchCmd = %d, stderr %q", code, errb.String())
	}
	text := out.String()
	for _, want := range []string{"vehicles-hash on " + s.Endpoint + "bench/vehicles-hash: 4 partitions, 24000 RU/s", "p999 ms", "\n  write", "\n  total"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	if errb.Len() != 0 {
		t.Errorf("stderr = %q, want no progress line off a terminal", errb.String())
	}
	out.Reset()
	if code := benchCmd(t.Context(), append(args, "--json", "--insecure", "--ca-cert="), &out, &errb); code != 0 {
		t.Fatalf("benchCmd --json = %d, stderr %q", code, errb.String())
	}
	var r bench.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out.String())
	}
	if r.Total.Count != 100 || r.Config.Partitions != 4 || r.Op(bench.KindWrite).OK == 0 {
		t.Errorf("--json result: total %d, %d partitions, %d writes; want 100, 4, some", r.Total.Count, r.Config.Partitions, r.Op(bench.KindWrite).OK)
	}
}

// TestBenchComparePartitions runs `partita bench --compare-partitions`
// against a server: a container of three physical partitions and one of
// one, the same query returning the same rows on both, and their ratio.
func TestBenchComparePartitions(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	ca := t.TempDir() + "/ca.pem"
	if err := os.WriteFile(ca, s.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--endpoint", s.Endpoint, "--key", s.Key, "--ca-cert", ca, "--create", "--compare-partitions=3",
		"--workload=query-filter", "--records=60", "--page-size=7", "--ops=4", "--concurrency=2", "--rounds=2", "--warmup=0s", "--json"}
	var out, errb bytes.Buffer
	if code := benchCmd(t.Context(), args, &out, &errb); code != 0 {
		t.Fatalf("benchCmd = %d, stderr %q", code, errb.String())
	}
	var cmp bench.Comparison
	if err := json.Unmarshal(out.Bytes(), &cmp); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out.String())
	}
	if len(cmp.Sides) != 2 || cmp.Sides[0].Name != "3-partitions" || cmp.Sides[1].Name != "1-partition" {
		t.Fatalf("sides %+v, want 3-partitions and 1-partition", cmp.Sides)
	}
	for i, want := range []int{3, 1} {
		side := cmp.Sides[i]
		if side.Partitions != want || len(side.Rounds) != 2 {
			t.Errorf("%s: %d partitions, %d rounds; want %d and 2", side.Name, side.Partitions, len(side.Rounds), want)
		}
		if m := side.Medians[0]; m.RowsPerOp != 30 || m.Errors != 0 {
			t.Errorf("%s: %+v, want 30 rows per query (half of 60) and no errors", side.Name, m)
		}
	}
	if len(cmp.Ratios) == 0 || cmp.Ratios[0].Side != "3-partitions" || cmp.Ratios[0].Baseline != "1-partition" {
		t.Errorf("ratios %+v, want 3-partitions/1-partition", cmp.Ratios)
	}
}
