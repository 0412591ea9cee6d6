// Package throughput owns request-unit accounting: what an operation costs
// (the RU cost model). Provisioned-throughput enforcement (per-partition token
// buckets and 429s) builds on it.
package throughput
