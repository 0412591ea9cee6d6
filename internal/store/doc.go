// Package store is the only importer of Pebble. It owns the on-disk key
// layout, write batches (atomic, durably synced when the store is opened
// with Sync), point reads and ordered span scans. It knows bytes only: no
// HTTP, no JSON semantics.
//
// Key layout (all keys start with a one-byte kind):
//
//	0x01 meta-key                                   catalog and bookkeeping
//	0x02 container(8) esc(epk) esc(pk) esc(id)      items
//
// esc is an order-preserving, self-delimiting escape of a byte string
// (0x00 → 0x00 0xFF, terminated by 0x00 0x01), so a container's items sort
// by effective partition key first. A physical partition, an EPK range
// [min, max), is therefore one contiguous key span, and splitting it is a
// metadata change only.
package store
