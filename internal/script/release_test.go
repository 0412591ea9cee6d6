package script

import (
	"runtime"
	"testing"
	"time"
)

// TestMemoryStopReleases: what a script stopped by its memory limit built
// is freed when the call returns, so that the next script's growth is not
// measured from a heap still holding it (a robustness review: three runs
// of a doubling string peaked at 0.6, 2.9 and 4.7 GB of RSS, each starting
// from the last one's garbage). Each run's heap right after it returns
// must be back near where it started, not hundreds of megabytes above.
func TestMemoryStopReleases(t *testing.T) {
	const limit = 64 << 20
	runtime.GC()
	for i := range 3 {
		before := readMetric(heapMetric)
		_, err := run(t, newFakeHost(), `function f(){var s='x';while(true)s=s+s;}`, ``, Limits{Timeout: 20 * time.Second, MaxHeapGrowth: limit})
		if se := asError(t, err); se.Kind != KindMemory {
			t.Fatalf("run %d: %v, want the memory limit", i+1, err)
		}
		if after := readMetric(heapMetric); after-before > limit {
			t.Errorf("run %d: the heap is %d MiB above where it started once the call returned, past the %d MiB limit: the script's strings were not released",
				i+1, (after-before)>>20, limit>>20)
		}
	}
}
