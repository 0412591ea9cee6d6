package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// ErrNotFound is returned by Get when a key has no value.
var ErrNotFound = errors.New("store: not found")

// Options configure a Store.
type Options struct {
	// Dir is the data directory. Required.
	Dir string
	// FS is the filesystem; nil means the operating system's. Tests pass
	// vfs.NewMem() or an error-injecting FS.
	FS vfs.FS
	// Sync makes every Commit wait until the batch is in the synced
	// write-ahead log. Concurrent committers share syncs (group commit).
	Sync bool
	// Logger receives Pebble's messages; nil discards them.
	Logger *slog.Logger
	// CacheBytes is the size of the block cache (data and index blocks
	// kept decompressed in memory). Zero means 64 MiB.
	CacheBytes int64
}

// Store is a Pebble database holding catalog entries and items. It is safe
// for concurrent use.
type Store struct {
	db   *pebble.DB
	sync *pebble.WriteOptions
}

// Open opens (creating if needed) the store in opts.Dir.
func Open(opts Options) (*Store, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = 64 << 20
	}
	cache := pebble.NewCache(opts.CacheBytes)
	defer cache.Unref() // the database holds its own reference
	po := &pebble.Options{FS: opts.FS, Logger: pebbleLogger{log}, Cache: cache, MemTableSize: 32 << 20}
	db, err := pebble.Open(opts.Dir, po)
	if err != nil {
		return nil, fmt.Errorf("open store in %s: %w", opts.Dir, err)
	}
	wo := pebble.NoSync
	if opts.Sync {
		wo = pebble.Sync
	}
	return &Store{db: db, sync: wo}, nil
}

// Close flushes nothing extra and closes the database; committed batches are
// already in the write-ahead log.
func (s *Store) Close() error { return s.db.Close() }

// Get returns a copy of the value stored at key, or ErrNotFound.
func (s *Store) Get(key []byte) ([]byte, error) { return get(s.db, key) }

// get reads a copy of key's value from a database or an indexed batch.
func get(r pebble.Reader, key []byte) ([]byte, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), v...)
	return out, closer.Close()
}

// Scan calls fn with every key and value in span, in key order, starting
// strictly after the key after when it is non-nil. fn returns false to stop.
// key and value are valid only during the call. Scan checks ctx every 256
// entries.
func (s *Store) Scan(ctx context.Context, span Span, after []byte, fn func(key, value []byte) bool) error {
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: span.Lower, UpperBound: span.Upper})
	if err != nil {
		return err
	}
	return scanIter(ctx, it, after, fn)
}

// ScanReverse is Scan in descending key order, from the end of span.
func (s *Store) ScanReverse(ctx context.Context, span Span, fn func(key, value []byte) bool) error {
	it, err := s.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: span.Lower, UpperBound: span.Upper})
	if err != nil {
		return err
	}
	for n, ok := 0, it.Last(); ok; n, ok = n+1, it.Prev() {
		if n%256 == 255 {
			if err := ctx.Err(); err != nil {
				_ = it.Close()
				return err
			}
		}
		if !fn(it.Key(), it.Value()) {
			break
		}
	}
	return errors.Join(it.Error(), it.Close())
}

func scanIter(ctx context.Context, it *pebble.Iterator, after []byte, fn func(key, value []byte) bool) error {
	var ok bool
	if after != nil {
		ok = it.SeekGE(after)
		if ok && string(it.Key()) == string(after) {
			ok = it.Next()
		}
	} else {
		ok = it.First()
	}
	for n := 0; ok; n++ {
		if n%256 == 255 {
			if err := ctx.Err(); err != nil {
				_ = it.Close()
				return err
			}
		}
		if !fn(it.Key(), it.Value()) {
			break
		}
		ok = it.Next()
	}
	return errors.Join(it.Error(), it.Close())
}

// Batch is a set of writes applied atomically by Commit. A Batch is not safe
// for concurrent use.
type Batch struct {
	s *Store
	b *pebble.Batch // nil once committed or closed: Pebble recycles batches
}

// NewBatch returns an empty batch. Callers must Commit or Close it.
func (s *Store) NewBatch() *Batch { return &Batch{s: s, b: s.db.NewBatch()} }

// NewIndexedBatch returns an empty batch whose Get and Scan see its own
// uncommitted writes on top of the store: the building block of a
// transaction. Callers must Commit or Close it.
func (s *Store) NewIndexedBatch() *Batch { return &Batch{s: s, b: s.db.NewIndexedBatch()} }

// Get returns a copy of the value at key as the batch sees it (its own
// writes over the store), or ErrNotFound. Only for indexed batches.
func (b *Batch) Get(key []byte) ([]byte, error) { return get(b.b, key) }

// Scan is Store.Scan as the batch sees the data. Only for indexed batches.
func (b *Batch) Scan(ctx context.Context, span Span, after []byte, fn func(key, value []byte) bool) error {
	it, err := b.b.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: span.Lower, UpperBound: span.Upper})
	if err != nil {
		return err
	}
	return scanIter(ctx, it, after, fn)
}

// Set writes value at key.
func (b *Batch) Set(key, value []byte) { _ = b.b.Set(key, value, nil) }

// Delete removes key.
func (b *Batch) Delete(key []byte) { _ = b.b.Delete(key, nil) }

// DeleteSpan removes every key in span (a range tombstone: cheap for large spans).
func (b *Batch) DeleteSpan(span Span) { _ = b.b.DeleteRange(span.Lower, span.Upper, nil) }

// Empty reports whether the batch holds no writes.
func (b *Batch) Empty() bool { return b.b.Empty() }

// Commit applies the batch atomically and, for a store opened with Sync,
// returns only once it is durable. The batch is closed afterwards.
func (b *Batch) Commit() error {
	err := b.b.Commit(b.s.sync)
	err = errors.Join(err, b.b.Close())
	b.b = nil
	return err
}

// Close discards an uncommitted batch; after Commit it does nothing, so
// `defer b.Close()` is always safe.
func (b *Batch) Close() {
	if b.b != nil {
		_ = b.b.Close()
		b.b = nil
	}
}

// pebbleLogger sends Pebble's log lines to slog.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug("pebble", "msg", fmt.Sprintf(format, args...))
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("pebble", "msg", fmt.Sprintf(format, args...))
}

// Fatalf is called by Pebble on unrecoverable corruption; it must not return.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error("pebble fatal", "msg", msg)
	panic("pebble: " + msg)
}
