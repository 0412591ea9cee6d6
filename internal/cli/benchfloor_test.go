package cli

import (
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		// utime 150 and stime 50 ticks: 2 s.
		{"4242 (partita) S 1 4242 4242 0 -1 4194560 1000 0 0 0 150 50 0 0 20 0 12 0 100 0 0", 2 * time.Second, true},
		// A command name with spaces and parentheses.
		{"7 (a b) c)) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0", 70 * time.Millisecond, true},
		{"7 (short) R 1 2", 0, false},
		{"no name", 0, false},
		{"7 (x) R 1 7 7 0 -1 0 0 0 0 0 u 4 0 0", 0, false},
	}
	for _, tt := range tests {
		got, err := parseProcStat(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseProcStat(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
