package bench

import (
	"bytes"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/testserver"
)

// TestCompareWithFloor runs the rows workloads against Partita and the
// floor server in interleaved rounds of a fixed number of operations: both
// must return the same rows, and the report must hold both sides' medians
// and their ratio.
func TestCompareWithFloor(t *testing.T) {
	s, ca := startServer(t)
	f := testserver.StartFloor(t, testserver.Options{})
	fca := t.TempDir() + "/floor.pem"
	if err := os.WriteFile(fca, f.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	var ticks atomic.Int64 // a fake CPU clock: 1 ms per reading
	cpu := func() (time.Duration, error) { return time.Duration(ticks.Add(1)) * time.Millisecond, nil }
	sides := []Side{
		{Name: "partita", Endpoint: s.Endpoint, CACert: ca},
		{Name: "floor", Endpoint: f.Endpoint, CACert: fca, CPU: cpu},
	}
	tests := []struct {
		workload string
		pageSize int
		rows     float64
		kind     string
	}{
		{QueryPK, 0, RowsPerKey, "query"},
		{QueryFilter, 7, 100, "query-cross"}, // half of 200 records
	}
	for _, tt := range tests {
		t.Run(tt.workload, func(t *testing.T) {
			cfg := Config{Key: s.Key, Workload: tt.workload, Create: true, Throughput: 24000, Records: 200, PageSize: tt.pageSize,
				Ops: 6, Concurrency: 2, Duration: time.Minute}
			cmp, err := Compare(t.Context(), cfg, sides, 2, nil)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := cmp.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + buf.String())
			for _, side := range cmp.Sides {
				if len(side.Rounds) != 2 {
					t.Fatalf("%s: %d rounds, want 2", side.Name, len(side.Rounds))
				}
				m := side.Medians[0]
				if m.Op != tt.kind || m.RowsPerOp != tt.rows || m.Errors != 0 {
					t.Errorf("%s: %+v, want %s with %v rows per query and no errors", side.Name, m, tt.kind, tt.rows)
				}
				if (side.Name == "floor") != (m.CPUPerOp > 0) {
					t.Errorf("%s: CPU per op %v; want it measured for the floor only", side.Name, m.CPUPerOp)
				}
			}
			if len(cmp.Ratios) == 0 || cmp.Ratios[0].Side != "partita" || cmp.Ratios[0].Baseline != "floor" || cmp.Ratios[0].OpsPerSec <= 0 {
				t.Errorf("ratios = %+v, want partita/floor", cmp.Ratios)
			}
			if !strings.Contains(buf.String(), "partita/floor") {
				t.Errorf("report lacks the ratio row")
			}
		})
	}
}
