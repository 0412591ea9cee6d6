package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/errors/oserror"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
)

// Tables: state too large for one batch (a Raft snapshot of a keyspace,
// streamed in from another node) is written into table files beside the
// database and then ingested, all of them at once: Ingest makes every
// table's keys visible in one step, or none after a crash (Pebble records
// the ingestion in its manifest in one edit). A table's span deletions
// delete what the database held in their spans before, never the table's
// own keys (an ingested table's keys all get one sequence number, newer
// than the database's, and a span deletion deletes only older keys): so a
// table that deletes a span and sets keys in it replaces the span whole.

// tablesDir is the directory, in the data directory, of tables being built
// or waiting to be ingested. Open empties it: a table not ingested before
// a restart is never wanted after it.
const tablesDir = "ingest"

// Table is a table file being built for Ingest. Keys must be added in
// increasing order, and span deletions in increasing order of their
// non-overlapping spans. It is not safe for concurrent use.
type Table struct {
	w    *sstable.Writer
	path string
	s    *Store
	done bool
	// unchecked counts the bytes added since the free space was last
	// checked (tableCheckBytes).
	unchecked int64
}

// tableCheckBytes is how many bytes a table takes between two checks of
// the disk's free space against the store's floor (Options.MinFreeBytes).
const tableCheckBytes = 4 << 20

// NewTable starts table name (a file name, unique among the tables not yet
// ingested or removed) in the store's tables directory.
func (s *Store) NewTable(name string) (*Table, error) {
	g, err := s.acquire(true)
	if err != nil {
		return nil, err
	}
	format := g.db.FormatMajorVersion().MaxTableFormat()
	s.release(g)
	dir := s.fs.PathJoin(s.opts.Dir, tablesDir)
	if err := s.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: table %s: %w", name, err)
	}
	path := s.fs.PathJoin(dir, name)
	f, err := s.fs.Create(path, "")
	if err != nil {
		return nil, fmt.Errorf("store: table %s: %w", name, err)
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), sstable.WriterOptions{TableFormat: format})
	return &Table{w: w, path: path, s: s}, nil
}

// Path returns the table's file path, for Ingest and RemoveTable.
func (t *Table) Path() string { return t.path }

// Set adds key with value. Like a batch's Commit it refuses, with a
// *DiskFullError, to take the disk's free space below the store's floor
// (checked every few MiB): a table as large as a partition must not fill
// the disk the database needs.
func (t *Table) Set(key, value []byte) error {
	if t.unchecked += int64(len(key) + len(value)); t.unchecked >= tableCheckBytes {
		if err := t.s.room(t.unchecked); err != nil {
			return err
		}
		t.unchecked = 0
	}
	return t.w.Set(key, value)
}

// DeleteSpan adds the deletion of every key the database holds in span.
func (t *Table) DeleteSpan(span Span) error { return t.w.DeleteRange(span.Lower, span.Upper) }

// Finish completes the table and syncs its file. A table that failed is
// removed.
func (t *Table) Finish() error {
	if t.done {
		return errors.New("store: table finished already")
	}
	t.done = true
	if err := t.w.Close(); err != nil {
		_ = t.s.RemoveTable(t.path)
		return fmt.Errorf("store: table %s: %w", t.path, err)
	}
	return nil
}

// Abort abandons an unfinished table and removes its file; after Finish
// it does nothing.
func (t *Table) Abort() {
	if t.done {
		return
	}
	t.done = true
	_ = t.w.Close()
	_ = t.s.RemoveTable(t.path)
}

// room refuses, as admit does for a batch, writing n more bytes when they
// would take the free space below the floor.
func (s *Store) room(n int64) error {
	g, err := s.acquire(true)
	if err != nil {
		return err
	}
	defer s.release(g)
	return s.admit(g, n)
}

// Ingest adds the finished tables at paths to the database, atomically:
// after it returns nil every table's keys and span deletions are durable
// and visible, and a crash before then leaves none of them. The tables'
// spans (their keys and span deletions) must not overlap one another. The
// files themselves stay until RemoveTable (the database keeps links of
// its own).
func (s *Store) Ingest(ctx context.Context, paths []string) (err error) {
	g, err := s.acquire(true)
	if err != nil {
		return err
	}
	defer s.release(g)
	defer func() {
		// As in apply: Pebble reports an unrecoverable manifest write
		// through Logger.Fatalf, which panics here.
		if p := recover(); p != nil {
			s.fail(fmt.Errorf("pebble: ingest: %v", p))
			err = s.unavailable(true)
		}
	}()
	if err := g.db.Ingest(ctx, paths); err != nil {
		return fmt.Errorf("store: ingest: %w", err)
	}
	return nil
}

// RemoveTable removes the table file at path (not yet ingested, or
// ingested already); a missing file is not an error.
func (s *Store) RemoveTable(path string) error {
	if err := s.fs.Remove(path); err != nil && !oserror.IsNotExist(err) {
		return err
	}
	return nil
}

// clearTables removes every file of the tables directory.
func (s *Store) clearTables() error {
	dir := s.fs.PathJoin(s.opts.Dir, tablesDir)
	names, err := s.fs.List(dir)
	if oserror.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := s.fs.Remove(s.fs.PathJoin(dir, n)); err != nil && !oserror.IsNotExist(err) {
			return err
		}
	}
	return nil
}
