package bench

import (
	"testing"
	"time"
)

// BenchmarkVehiclesScenario measures what TestVehiclesScenario proves by
// budget: the same paced load of vehicle readings (350 operations/s, 16
// workers) against 4 partitions and 2,400 RU/s, keyed by date (one hot
// partition), by date and a random suffix, and by date and a hash of the VIN.
// It reports successful writes per second and the share of 429s for each, so
// runs compare the three as ratios:
//
//	go test -run=NONE -bench=VehiclesScenario -benchtime=1x -count=3 ./internal/bench
func BenchmarkVehiclesScenario(b *testing.B) {
	s, ca := startServer(b)
	for _, w := range []string{VehiclesDate, VehiclesRandom, VehiclesHash} {
		b.Run(w, func(b *testing.B) {
			for b.Loop() {
				r, err := Run(b.Context(), Config{Endpoint: s.Endpoint, Key: s.Key, CACert: ca, Workload: w, Reset: true,
					Throughput: 2400, Partitions: 4, Rate: 350, Warmup: time.Second, Duration: 5 * time.Second, Concurrency: 16}, nil)
				if err != nil {
					b.Fatal(err)
				}
				wr := r.Op(KindWrite)
				b.ReportMetric(wr.OpsPerSec, "writes/s")
				b.ReportMetric(r.Total.ThrottledRate*100, "429%")
			}
		})
	}
}
