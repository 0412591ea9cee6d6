package main

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/partitadb/partita/internal/bench"
)

// TestBenchFloorBinary runs `partita bench --floor` as built: it starts
// `partita serve` and `partita floor` as children, runs two interleaved
// rounds of a fixed number of reads on each, and reports both servers' CPU.
func TestBenchFloorBinary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := build(t)
	out, err := exec.Command(bin, "bench", "--floor", "--workload", "ycsb-c", "--records", "50", "--ops", "300",
		"--rounds", "2", "--concurrency", "2", "--json", "--no-progress").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("bench --floor: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var cmp bench.Comparison
	if err := json.Unmarshal(out, &cmp); err != nil {
		t.Fatalf("output is not a comparison: %v\n%s", err, out)
	}
	if len(cmp.Sides) != 2 || cmp.Sides[0].Name != "partita" || cmp.Sides[1].Name != "floor" {
		t.Fatalf("sides = %+v, want partita and floor", cmp.Sides)
	}
	for _, s := range cmp.Sides {
		if len(s.Rounds) != 2 {
			t.Fatalf("%s: %d rounds, want 2", s.Name, len(s.Rounds))
		}
		for _, r := range s.Rounds {
			if r.Total.Count != 300 || r.Total.Errors != 0 || r.CPUSeconds <= 0 {
				t.Errorf("%s round %d: %d ops, %d errors, %v s of server CPU; want 300, 0 and some", s.Name, r.Round, r.Total.Count, r.Total.Errors, r.CPUSeconds)
			}
		}
	}
}
