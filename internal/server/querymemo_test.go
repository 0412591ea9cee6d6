package server

import "testing"

// TestQueryMemoBytes: --query-memo-mb 0 keeps no query results (the
// engine's negative budget: its zero means the default).
func TestQueryMemoBytes(t *testing.T) {
	for mb, want := range map[int]int{0: -1, 1: 1 << 20, 64: 64 << 20} {
		if got := queryMemoBytes(mb); got != want {
			t.Errorf("queryMemoBytes(%d) = %d, want %d", mb, got, want)
		}
	}
}
