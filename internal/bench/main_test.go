package bench

import (
	"bytes"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// TestMain fails the run if a goroutine started by this package (a worker,
// the preloader or the progress line) outlives the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := waitForLeaks(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "leaked goroutines:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// waitForLeaks returns the stacks of this package's goroutines still
// running after d, or "".
func waitForLeaks(d time.Duration) string {
	deadline := time.Now().Add(d)
	for {
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
		var leaked []string
		for g := range strings.SplitSeq(buf.String(), "\n\n") {
			if strings.Contains(g, "partita/internal/bench.") && !strings.Contains(g, "bench.TestMain") && !strings.Contains(g, "bench.waitForLeaks") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
