package advise

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReadLines feeds arbitrary input to the JSON-lines reader and the
// analysis: nothing panics, every tracked path is a valid path, and the
// report's measures stay in range.
func FuzzReadLines(f *testing.F) {
	f.Add([]byte("{\"id\":\"1\",\"a\":{\"b\":2}}\n{\"id\":\"2\",\"a\":{\"b\":2.0}}\n"))
	f.Add([]byte("{\"x\":null,\"y\":[1,{\"z\":1}],\"w\":true}\n\n[1]\n{bad\n"))
	f.Add([]byte("\uFEFF{\"date\":\"2024-05-01\",\"k\":\"a\"}\r\n{\"date\":\"2024-05-02\",\"k\":\"a\"}"))
	f.Add([]byte("{\"_ts\":1714521600,\"k\":1e308,\"j\":-0,\"\":1,\"a/b\":2}"))
	f.Add(ordersData(2, 15))
	f.Add([]byte("[{\"k\":17},{\"k\":\"17\",\"a/b\":1},[1]]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, sample := range []int{0, 3} {
			a := NewAnalyzer(ReadOptions{OnError: Skip, Sample: sample, MaxPaths: 32})
			if err := a.ReadLines(t.Context(), bytes.NewReader(data)); err != nil {
				t.Fatalf("ReadLines(skip) = %v", err)
			}
			lines := bytes.Count(data, []byte("\n")) + 1
			if array := bytes.HasPrefix(bytes.TrimLeft(bytes.TrimPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("\uFEFF")), " \t\r\n"), []byte("[")); array {
				lines = len(data) // an array's items need not be on lines of their own
			}
			if a.Items() > lines || (sample > 0 && a.Items() > sample) {
				t.Fatalf("%d items from %d lines (sample %d)", a.Items(), lines, sample)
			}
			for _, n := range a.nodes[1:] {
				if !validPath(n.path) || a.node(n.path) < 0 {
					t.Fatalf("tracked path %q is not valid or not found", n.path)
				}
			}
			r, err := a.Analyze(t.Context(), Options{Buckets: 7, TotalBytes: 1 << 40})
			if errors.Is(err, ErrNoItems) {
				continue
			}
			if err != nil {
				t.Fatalf("Analyze = %v", err)
			}
			for i, c := range r.Candidates {
				if c.Rank != i+1 || c.Score < 0 || c.Score > 100 || c.LargestShare <= 0 || c.LargestShare > 1 ||
					c.Missing < 0 || c.Missing > 1 || (c.WriteSkew != nil && (*c.WriteSkew <= 0 || *c.WriteSkew > 1)) {
					t.Fatalf("candidate %+v out of range", c)
				}
			}
			if err := r.WriteTable(io.Discard, 0); err != nil {
				t.Fatal(err)
			}
			if err := r.WriteJSON(io.Discard); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzParseWorkload: a workload either fails with ErrWorkload or has valid
// paths and positive weights.
func FuzzParseWorkload(f *testing.F) {
	f.Add([]byte(devicesWorkload))
	f.Add([]byte(fleetWorkload))
	f.Add([]byte(`{"queries":[{"filters":["/a//b"],"weight":-1}],"writes":{"window":"-1h"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ParseWorkload(data)
		if err != nil {
			if !errors.Is(err, ErrWorkload) {
				t.Fatalf("ParseWorkload error %v does not wrap ErrWorkload", err)
			}
			return
		}
		for _, q := range w.Queries {
			if q.Weight <= 0 {
				t.Fatalf("query %+v has weight %v", q, q.Weight)
			}
			for _, p := range q.Filters {
				if !validFilter(p) {
					t.Fatalf("query %+v has invalid filter %q", q, p)
				}
			}
		}
		if w.window() <= 0 {
			t.Fatalf("window %v", w.window())
		}
	})
}
