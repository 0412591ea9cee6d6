package cluster

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the package when a goroutine running this package's code
// (a transport's sender, a test's server) outlives the tests: Close stops
// what New started (STYLE §5).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(5 * time.Second)
		leaked := ourGoroutines()
		for leaked != "" && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond) // goroutines exit asynchronously; poll briefly
			leaked = ourGoroutines()
		}
		if leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutine leak:\n%s", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// ourGoroutines returns the stacks of goroutines running or started by
// this package's code, but TestMain's.
func ourGoroutines() string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var b strings.Builder
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "partita/internal/cluster.") && !strings.Contains(g, "cluster.TestMain") {
			b.WriteString(g + "\n\n")
		}
	}
	return b.String()
}
