// Package catalog owns the engine's metadata: databases, containers (with
// their partition key definitions and partition maps), and offers
// (provisioned throughput), with their resource ids (_rid) and the JSON
// resources the wire protocol returns. It persists every change in the
// store's meta span in one atomic batch, and keeps an in-memory copy for
// lookups on the hot path.
//
// Values returned by Catalog (*Database, *Container, *Offer) are immutable
// snapshots: a change replaces them, so callers may keep and share them.
package catalog
