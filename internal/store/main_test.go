package store

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestMain fails the package when a store's monitor goroutine outlives the
// tests (STYLE §5: Close stops what Open started).
func TestMain(m *testing.M) {
	code := m.Run()
	buf := make([]byte, 1<<20)
	if stacks := string(buf[:runtime.Stack(buf, true)]); code == 0 && strings.Contains(stacks, "store.(*Store).monitor") {
		fmt.Fprintf(os.Stderr, "a store's monitor goroutine is still running after the tests:\n%s\n", stacks)
		code = 1
	}
	os.Exit(code)
}
