package advise

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkAnalyze measures Analyze over device readings with a workload
// (the whole candidate search: singles, pairs, suffix variants).
func BenchmarkAnalyze(b *testing.B) {
	for _, devices := range []int{100, 1000} {
		data := readingsData(devices, 10, 10)
		a := NewAnalyzer(ReadOptions{})
		if err := a.ReadLines(b.Context(), bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
		w, err := ParseWorkload([]byte(devicesWorkload))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("items=%d", a.Items()), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Analyze(b.Context(), Options{Workload: w, TotalBytes: 1 << 40}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(a.Items())*float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}

// BenchmarkReadLines measures parsing JSON lines into the sample.
func BenchmarkReadLines(b *testing.B) {
	data := readingsData(1000, 10, 1)
	n := bytes.Count(data, []byte("\n"))
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		a := NewAnalyzer(ReadOptions{})
		if err := a.ReadLines(b.Context(), bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "items/s")
}
