package throughput

import "testing"

func TestCosts(t *testing.T) {
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"read 1KB", ReadCost(1024), 1},
		{"read 100B", ReadCost(100), 1},
		{"read 100KB", ReadCost(100 * 1024), 10},
		{"write 1KB", WriteCost(1024, 0), 5},
		{"write 100KB", WriteCost(100*1024, 0), 50},
		{"query empty", QueryCost(0, 0, 1), 2},
		{"query 100 items 10KB", QueryCost(100, 10*1024, 1), 8},
		{"query fan-out 4", QueryCost(0, 0, 4), 5},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if ReadCost(2048) <= ReadCost(1024) || WriteCost(4096, 0) <= WriteCost(2048, 0) || WriteCost(1024, 20) <= WriteCost(1024, 0) {
		t.Errorf("charges do not grow with item size")
	}
}

// TestQueryWorkCostGrowsWithWork: every kind of work adds to a query's charge.
func TestQueryWorkCostGrowsWithWork(t *testing.T) {
	base := QueryWork{Entries: 10, Items: 10, InBytes: 10 << 10, OutBytes: 5 << 10, Partitions: 1}
	c0 := QueryWorkCost(base)
	for name, more := range map[string]func(w *QueryWork){
		"entries":    func(w *QueryWork) { w.Entries += 1000 },
		"items":      func(w *QueryWork) { w.Items += 100 },
		"in bytes":   func(w *QueryWork) { w.InBytes += 100 << 10 },
		"out bytes":  func(w *QueryWork) { w.OutBytes += 100 << 10 },
		"partitions": func(w *QueryWork) { w.Partitions += 3 },
	} {
		w := base
		more(&w)
		if c := QueryWorkCost(w); c <= c0 {
			t.Errorf("QueryWorkCost with more %s = %.2f, want more than %.2f", name, c, c0)
		}
	}
	if c := QueryWorkCost(QueryWork{}); c != queryBase {
		t.Errorf("QueryWorkCost(nothing) = %.2f, want %.2f", c, queryBase)
	}
}
