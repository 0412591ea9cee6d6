// Package engine ties the catalog, partitioning, queries and storage into the
// operations the API serves: database, container, offer, user and permission
// management; item create/read/replace/upsert/delete with optimistic
// concurrency; read feeds and queries scoped to a logical partition, a
// physical partition (pk range) or the whole container; and the deletion of
// a whole logical partition (pkdelete.go).
//
// Invariants:
//   - An item lives at the key (keyspace, EPK, pk, id), so every physical
//     partition's items are one span of its keyspace and a logical partition
//     never spans two physical partitions.
//   - Writes to one logical partition are serialised by a lock on exactly that
//     logical partition (never wider), held across read-check-write, and are
//     durable when acknowledged under --durability sync (the store syncs its
//     WAL, shared between concurrent writers; in a cluster, a majority's logs).
//   - The engine reaches partition data only through package replica's
//     seam (docs/storage-seams.md), so replication sits behind it: in a cluster
//     (Config.Replicated, cluster.go) a transaction asks its keyspace's
//     replica Lead() before it reads, linearizable reads Sync() each
//     keyspace first, and reconcile does on each keyspace's leader what a
//     single node does inline when the catalog changes.
//
// Domain errors are translated to *status.Error here, in errors.go.
package engine
