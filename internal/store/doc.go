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
//
// A full or failing disk (disk.go, fs.go): Commit refuses writes with a
// *DiskFullError while free space is under Options.MinFreeBytes; a ballast
// file keeps space in reserve for Pebble; and if a write to the write-ahead
// log fails anyway, the store refuses everything (ErrUnavailable), cuts the
// unsynced tail off the log, and reopens the database, so that a batch
// whose commit failed is never read. Store.Done reports a store that could
// not recover in-process.
package store
