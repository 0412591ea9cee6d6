// Package bench is the load generator behind `partita bench`. It speaks
// to a server only over the Cosmos DB protocol, through the official Go
// SDK (azcosmos), so it measures Partita, the Cosmos DB emulator or a Cosmos
// DB account alike. Run sets up a container (partition key path /pk), runs
// a workload with a number of workers for a duration or a number of
// operations, and returns a Result: per operation kind the count, 429s,
// other errors, RU and RU/s, operations per second, latency percentiles
// (p50/p99/p999, from an HDR-style Histogram) and how many requests and
// physical partitions an operation needed. WriteText prints it as a table,
// WriteJSON as one document.
//
// # Workloads
//
//   - ycsb-a, ycsb-b, ycsb-c: YCSB's update-heavy (50/50), read-mostly
//     (5/95) and read-only mixes over Records preloaded records (id = pk),
//     chosen with a zipfian skew.
//   - query: the preloaded records queried by partition key (single
//     partition, "query") and by a property (cross-partition,
//     "query-cross").
//   - query-pk, query-filter: Records records (default 20,000), RowsPerKey
//     (20) to a partition key; query-pk reads one key's 20 with a
//     single-partition query, query-filter drains a cross-partition filter
//     that matches half of them, in pages of PageSize.
//   - vehicles-date, vehicles-random, vehicles-hash: the synthetic-key
//     scenario of the Cosmos DB documentation. Vehicles report readings
//     (write), a recent reading is read back knowing its id, VIN and date
//     (read), and all of one VIN's readings of today are fetched (query),
//     80/10/10 by default. The key is (a) the date: one hot logical
//     partition; (b) the date plus a random suffix 1..Buckets; (c) the date
//     plus a suffix computed from a hash of the VIN (package synthkey).
//     With (a) and (c) the reader computes the one key, so reads and queries
//     are single-partition. With (b) it cannot: by default (FanOutCross) it
//     sends one cross-partition query, which the service runs on every
//     physical partition; with FanOutKeys it sends one request per suffix
//     (synthkey.ReadItem and synthkey.Query), Buckets requests per read.
//
// # Measuring
//
// Each worker has one operation in flight. With Retries 0 (the default) the
// SDK does not retry: a 429 is counted and the worker waits the
// x-ms-retry-after-ms the service sent before its next operation, so the
// 429 rate shows how hard the load pushes past the provisioned throughput.
// Latencies and RU are of successful operations. Rate paces the load over
// all workers; Warmup discards the first moments (each partition starts
// with one second of throughput banked). The operation mix and key choice
// are drawn from Seed, per worker, so a seed repeats the same sequence.
//
// # Comparing servers
//
// Compare runs one workload against several servers (Sides) in one run:
// each is prepared once (Prepare), then rounds of the load alternate
// between them, and the result (Comparison) gives per side the median over
// rounds and, for each side, its ratio to the last one: `partita bench
// --floor` compares Partita with the floor server (package floor) this
// way. A Side's CPU function, when set, gives the server's CPU per
// operation. Prepared.LoadN runs a fixed number of operations, for Go
// benchmarks.
package bench
