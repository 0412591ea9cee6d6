// Package throughput owns request-unit accounting: what an operation costs
// (the RU cost model, cost.go), the per-partition token bucket that enforces
// provisioned throughput (Limiter, with burst capacity and adaptive
// borrowing; limiter.go), and the space-saving sketch of the keys that take
// the most request units or 429s (Sketch; sketch.go), which the partitions
// report names.
package throughput
