// Package catalog owns the engine's metadata: databases, containers (with
// their partition key definitions, partition maps and the keyspace holding
// each range's data), scripts, offers (provisioned throughput), users and
// their permissions, and pending partition key deletes, with
// their resource ids (_rid, including the per-container reservation of
// items' _rid sequence numbers) and the JSON resources the wire protocol
// returns. It persists every change as one atomic change of a Backend (the
// node's store on a single node, etcd in a cluster: cluster.Backend) and
// keeps an in-memory
// copy for lookups on the hot path. It holds no item data: dropping a
// deleted container's keyspaces is the engine's job.
//
// Values returned by Catalog (*Database, *Container, *Offer) are immutable
// snapshots: a change replaces them, so callers may keep and share them.
package catalog
