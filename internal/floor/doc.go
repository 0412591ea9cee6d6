// Package floor is a null Cosmos DB server: the measuring stick of issue
// #15. It serves the subset of the Cosmos DB NoSQL REST protocol that
// `partita bench` and the Go benchmarks use, from in-memory maps, with no
// storage engine, no indexes, no query engine, no cost model and no
// throttling. package server runs it behind the same listener, TLS and
// HTTP/2 setup as `partita serve` (server.OpenFloor), and it verifies the
// same master-key signatures (package auth) and writes the same response
// shapes and headers as package api, so that Partita's time on a workload
// divided by the floor's is what storage, indexing, querying and accounting
// cost over the bare protocol.
//
// # What it serves
//
//   - GET / (the database account).
//   - POST /dbs, GET and DELETE /dbs/{db} (databases).
//   - POST /dbs/{db}/colls, GET and DELETE /dbs/{db}/colls/{coll}
//     (containers; the partition key definition is kept, a throughput
//     header is accepted and recorded, never enforced).
//   - GET /dbs/{db}/colls/{coll}/pkranges: one range covering the whole
//     key space (the floor has one physical partition per container).
//   - Items: create and upsert (POST …/docs), read (GET), replace (PUT)
//     and delete (DELETE) …/docs/{id}, with If-Match on writes and
//     If-None-Match on reads. Bodies are validated and given their system
//     properties by package document, as Partita does.
//   - Queries (POST …/docs with a query body) of the form
//     SELECT * FROM c [WHERE c.p = v [AND c.q = w …]], where each v is a
//     @parameter or a string, number, boolean or null literal, scoped to one
//     logical partition (partition key header) or cross-partition, paged by
//     x-ms-max-item-count (default 100, -1 for all) and x-ms-continuation.
//     Items come back in the order they were created, each filter is
//     evaluated on the stored item (document.ExtractPK at the property's
//     path), so the rows are exactly what Cosmos DB would return, in one
//     valid order.
//
// Everything else (other queries, query plans, read feeds, patch, batch,
// scripts, users, offers, change feed, resource tokens) is refused with a
// Cosmos-style error ({"code","message"}, 400 "not supported by the floor
// server") rather than answered wrongly. Charges (x-ms-request-charge) are a
// constant 1 RU: the floor has no cost model, so compare times, not RUs.
//
// The floor never forgets acknowledged writes while it runs and keeps
// nothing when it stops. A Handler is safe for concurrent use: the
// account's databases and containers are guarded by one RWMutex, each
// container's items by their own.
package floor
