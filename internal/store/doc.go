// Package store is the only importer of Pebble. It owns the database's
// lifecycle, write batches (atomic, durably synced when the store is opened
// with Sync), point reads, ordered span scans and iterators, snapshots,
// and tables: files of keys and span deletions built outside the database
// and ingested into it at once (tables.go), for state too large for a
// batch; and when Pebble compacts (compactions.go: not before its Open
// has returned, so a restart does not wait for one). It knows bytes
// only: no HTTP, no JSON semantics, no key layout: package replica lays
// out keyspaces (0x10 <id> …) and the catalog's records (0x01 …) on it
// (docs/storage-seams.md).
//
// A full or failing disk (disk.go, fs.go): Commit refuses writes with a
// *DiskFullError while free space is under Options.MinFreeBytes; a ballast
// file keeps space in reserve for Pebble; and if a write to the write-ahead
// log fails anyway, the store refuses everything (ErrUnavailable), cuts the
// unsynced tail off the log, and reopens the database, so that a batch
// whose commit failed is never read. Store.Done reports a store that could
// not recover in-process. A file found damaged on disk (a checksum that does
// not match) fails only the reads that meet it, with Pebble's corruption
// error (IsCorruption), and is logged; the store goes on.
//
// Open refuses a directory that is not a data directory (no store, but other
// files: CheckDir) and tells a lock another process holds (ErrInUse) from a
// directory it may not write.
//
// Pebble shows a synced commit to readers before its log sync ends;
// Store.AwaitDurable (durable.go) waits out the synced commits under way,
// so that a read answered after it holds only durable writes.
package store
