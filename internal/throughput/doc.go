// Package throughput owns request-unit accounting: what an operation costs
// (the RU cost model, cost.go), the token bucket per budget that enforces
// provisioned throughput (Limiter, with burst capacity, adaptive borrowing
// and low-priority admission; limiter.go), and the space-saving sketch of
// the keys that take the most request units or 429s, since the start or
// lately with forward decay (Sketch, NewDecayingSketch; sketch.go), which
// the partitions report names.
package throughput
