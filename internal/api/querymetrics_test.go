package api

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/engine"
)

// TestQueryMetricsFormat checks queryMetrics against the format it
// replaced (fmt.Sprintf) on random pages.
func TestQueryMetricsFormat(t *testing.T) {
	sprintf := func(p engine.Page) string {
		size := 0
		for _, it := range p.Items {
			size += len(it)
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		m := p.Metrics
		vm := max(0, p.Elapsed-m.Compile-m.Load)
		ratio := 0.0
		if p.Loaded > 0 {
			ratio = min(1, float64(len(p.Items))/float64(p.Loaded))
		}
		return fmt.Sprintf("totalExecutionTimeInMs=%.2f;queryCompileTimeInMs=%.2f;queryLogicalPlanBuildTimeInMs=0.00;queryPhysicalPlanBuildTimeInMs=0.00;"+
			"queryOptimizationTimeInMs=0.00;VMExecutionTimeInMs=%.2f;indexLookupTimeInMs=0.00;documentLoadTimeInMs=%.2f;"+
			"systemFunctionExecuteTimeInMs=0.00;userFunctionExecuteTimeInMs=0.00;retrievedDocumentCount=%d;retrievedDocumentSize=%d;"+
			"outputDocumentCount=%d;outputDocumentSize=%d;writeOutputTimeInMs=0.00;indexUtilizationRatio=%.2f",
			ms(p.Elapsed), ms(m.Compile), ms(vm), ms(m.Load), p.Loaded, m.LoadedBytes, len(p.Items), size, ratio)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	dur := func() time.Duration { return time.Duration(rng.Int64N(int64(10 * time.Second))) }
	for i := range 2000 {
		p := engine.Page{Items: make([][]byte, rng.IntN(30)), Elapsed: dur(), Loaded: rng.IntN(50)}
		for j := range p.Items {
			p.Items[j] = make([]byte, rng.IntN(2000))
		}
		p.Metrics = engine.QueryMetrics{Compile: dur() / 10, Load: dur(), LoadedBytes: rng.IntN(1 << 20)}
		if i == 0 {
			p = engine.Page{}
		}
		if got, want := queryMetrics(p), sprintf(p); got != want {
			t.Fatalf("queryMetrics = %q, want %q", got, want)
		}
	}
}
