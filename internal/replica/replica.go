// Package replica is the seam between the engine and the storage of
// physical partitions (docs/storage-seams.md). A physical partition's data
// lives in a keyspace: one contiguous span of the node's store holding its
// items, every entry derived from them and its sequence (LSN). The engine
// reaches keyspaces only through Host and Replica, with keys relative to the
// keyspace; it never imports the store.
//
// Local implements the seam on the node's Pebble store (package store), and
// Meta the catalog's backend on the same store; in a cluster,
// cluster.Keyspaces implements Host over Raft groups, each keyspace's
// Replica a replication.Replica. The store records its DataFormat, the
// version of everything a release stores, and OpenLocal refuses a store a
// later release opened.
//
// Invariants:
//   - Every key of a keyspace lies in its span; dropping a keyspace removes
//     its data and nothing else.
//   - Relative keys starting with 0x00 belong to the replica itself (its LSN
//     reservation); a Batch refuses them, and readers see them only in spans
//     that start below 0x01.
//   - LSNs issued by a Replica strictly increase and are never reused, across
//     restarts too; StableLSN never passes an LSN held by an open
//     transaction.
package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// ErrNotFound is returned by Get when a key has no value.
var ErrNotFound = errors.New("replica: not found")

// ErrUnavailable is returned while a replica cannot serve (its store
// recovers from a failed disk write, or is shutting down). Nothing the
// failed operation carried was applied; retrying later is safe.
var ErrUnavailable = errors.New("replica: unavailable")

// ErrCorrupt is returned by a read that met data the store found damaged
// on disk (a checksum that does not match). The rest of the replica is
// served; the damage stays until the replica's data is replaced.
var ErrCorrupt = errors.New("replica: on-disk corruption")

// ErrNotHeld is returned by a Host that holds no replica of a keyspace
// and cannot read it (a stopped cluster member's data, checked offline:
// the keyspace's replicas are on other members).
var ErrNotHeld = errors.New("replica: this node holds no replica of the keyspace")

// NoSpaceError is returned by Commit when the store refuses writes for
// lack of disk space; reads go on.
type NoSpaceError struct {
	Free     int64 // bytes free when the write was refused
	ResumeAt int64 // free bytes above which writes resume
	Err      error // the underlying error
}

// Error says how much space is free and when writes resume.
func (e *NoSpaceError) Error() string {
	return fmt.Sprintf("replica: disk full: %d bytes free, writes resume above %d", e.Free, e.ResumeAt)
}

// Unwrap returns the store's refusal.
func (e *NoSpaceError) Unwrap() error { return e.Err }

// Span is a half-open span [Lower, Upper) of keys relative to a keyspace. A
// nil Upper means the end of the keyspace.
type Span struct {
	Lower, Upper []byte
}

// Contains reports whether key lies in s.
func (s Span) Contains(key []byte) bool {
	return bytes.Compare(key, s.Lower) >= 0 && (s.Upper == nil || bytes.Compare(key, s.Upper) < 0)
}

// Empty reports whether s holds no key.
func (s Span) Empty() bool {
	return s.Upper != nil && bytes.Compare(s.Lower, s.Upper) >= 0
}

// PrefixSpan is the span of the keys that start with p.
func PrefixSpan(p []byte) Span {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return Span{Lower: p, Upper: end[:i+1]}
		}
	}
	return Span{Lower: p} // p is all 0xFF: no upper bound
}

// Iter walks a span in key order (or in reverse). It starts before the
// first key: call Next first. Key and Value are valid until the next call
// of Next or Close.
type Iter interface {
	// Next moves to the next key and reports whether there is one.
	Next() bool
	// Key is the current key.
	Key() []byte
	// Value is the current value.
	Value() []byte
	// Err is the error that ended the walk, if any.
	Err() error
	// Close releases the iterator; it is safe to call twice.
	Close() error
}

// Reader reads a keyspace.
type Reader interface {
	// Get returns a copy of key's value, or ErrNotFound.
	Get(key []byte) ([]byte, error)
	// NewIter returns an iterator over span, in reverse key order when
	// reverse is set. The caller must close it.
	NewIter(span Span, reverse bool) Iter
}

// BatchReader is a Reader whose point reads each cost a round trip (a
// keyspace read from another node): a reader that knows the keys it will
// read next asks for many at once.
type BatchReader interface {
	Reader
	// GetMany returns the values of keys in order, nil for a key that
	// has none.
	GetMany(keys [][]byte) ([][]byte, error)
}

// Snapshot is a consistent view of a keyspace's applied state: every read
// sees the same writes. It must be closed.
type Snapshot interface {
	Reader
	// Version names the state the snapshot holds, when it is known: two
	// snapshots of one keyspace with equal versions hold the same data (a
	// query's pages may then reuse one evaluation of it). False when the
	// snapshot cannot tell (writes were under way as it was taken, or its
	// reads go to another node).
	Version() (Version, bool)
	Close()
}

// Version is a keyspace's state: Epoch tells apart the lives of a
// keyspace's replica (a dropped keyspace opened again starts another;
// 0 for a replicated keyspace, whose states are its Raft applied indexes,
// which no two lives share), N counts the writes of that life.
type Version struct {
	Epoch, N uint64
}

// Batch collects writes to one keyspace, applied atomically by
// Replica.Commit. An indexed batch also reads: its reads see the latest
// applied state with the batch's own writes on top. A batch must be closed
// (after Commit too).
type Batch interface {
	Reader
	Set(key, value []byte)
	Delete(key []byte)
	DeleteSpan(span Span)
	// Empty reports whether the batch holds no write.
	Empty() bool
	Close()
}

// Replica is one keyspace: the data of one physical partition, or of
// sibling partitions split from one parent that still share it.
type Replica interface {
	// ID is the keyspace's id.
	ID() uint64
	// Reader reads the latest applied state, one key or iterator at a
	// time (a point read needs no snapshot).
	Reader
	// Snapshot returns a consistent view of the applied state.
	Snapshot() (Snapshot, error)
	// NewBatch returns a batch for this keyspace; indexed batches read.
	NewBatch(indexed bool) Batch
	// Commit applies b atomically (durably, if the store syncs). When it
	// fails nothing was applied: ErrUnavailable, *NoSpaceError, or the
	// refusal of a batch that wrote an empty or reserved (0x00) key or
	// belongs to another keyspace.
	Commit(b Batch) error

	// NextLSN issues the next LSN to a transaction, for a write it makes
	// in b, its batch (a replicated keyspace's proposal carries b's LSNs,
	// so that a follower knows which writes it applied). If *first is 0,
	// the LSN becomes *first and holds StableLSN below it until
	// ReleaseLSN(*first).
	NextLSN(b Batch, first *uint64) (uint64, error)
	// ReleaseLSN ends the hold of a transaction whose first LSN was first
	// (after its commit, or when it is abandoned); 0 is a no-op. After a
	// Commit of a replicated keyspace that answered ErrIndeterminate
	// because it gave up waiting, the hold lasts until the proposal's
	// outcome is known (ErrInDoubt).
	ReleaseLSN(first uint64)
	// StableLSN is the largest LSN at or below which every LSN issued is
	// committed or abandoned.
	StableLSN() uint64
	// AwaitDoubts waits until no write committed through this replica is
	// in doubt: a Commit that answered ErrIndeterminate because it gave up
	// waiting, whose proposal may still apply (ErrInDoubt). It returns
	// ctx's error if one still is when ctx is done. A keyspace of one node
	// never has any.
	AwaitDoubts(ctx context.Context) error
	// AdvanceLSN makes every LSN issued from now on, across restarts too,
	// greater than lsn: a keyspace taking over a range from another
	// continues its sequence.
	AdvanceLSN(lsn uint64) error
	// LastLSN is the most recently issued LSN; before the first, the one
	// below the keyspace's first LSN (which starts above every LSN an older
	// release issued, so old session tokens stay valid).
	LastLSN() uint64
	// Visible reports whether a read here sees the write that took LSN
	// lsn (a session token's): lsn ≤ LastLSN for a keyspace only this node
	// holds; on a replicated keyspace, leader or follower, the write is
	// applied here, which its LastLSN (the largest issued or applied) does
	// not tell, as writes apply in the order they were proposed, not of
	// their LSNs.
	Visible(lsn uint64) bool

	// Lead reports whether writes to the keyspace may be evaluated here:
	// nil for a keyspace only this node holds, *NotLeaderError for a
	// replicated one whose group this node does not lead (or not yet as
	// settled leader, docs/cluster.md). A transaction asks before it reads,
	// so that no write is evaluated against a follower's state.
	Lead() error

	// Campaign asks for this node to lead the keyspace, and returns once
	// asked: Lead tells when it does. A new group has no leader, so the
	// first member to campaign wins unless another's election timer ran
	// out first (a separation takes the new keyspace's leadership so). A
	// keyspace only this node holds is led already: nil.
	Campaign() error
	// Sync waits until the applied state this node reads holds every write
	// acknowledged anywhere before the call, so that a read after it is
	// linearizable: at once for a keyspace only this node holds; a
	// replicated one asks its group's leader (Raft's ReadIndex). It fails
	// with ErrUnavailable when the group has no leader within its wait, or
	// with ctx's error.
	Sync(ctx context.Context) error
}

// Host is a node's set of keyspaces.
type Host interface {
	// Replica returns keyspace id's replica (an empty keyspace if it holds
	// nothing yet).
	Replica(id uint64) (Replica, error)
	// Keyspaces lists the ids of the keyspaces holding at least one key
	// (an LSN reservation counts), in order.
	Keyspaces(ctx context.Context) ([]uint64, error)
	// Drop deletes everything keyspace id holds, its LSN too.
	Drop(id uint64) error
	// Compact rewrites keyspace id's storage, dropping what deletions left
	// behind, so that reads need not pass over their tombstones.
	Compact(ctx context.Context, id uint64) error
	// Holds reports whether this node holds a replica of keyspace id (and
	// so may lead it: a separation's new keyspace must be one the
	// separating node holds). Always on a single node; in a cluster, for
	// the keyspaces the placement gives this node.
	Holds(id uint64) bool
	// ReadsHere reports whether reads of keyspace id are served from this
	// node's own replica: it holds one and can keep it current. Always on
	// a single node; in a cluster not while this node's disk is full (its
	// replica may stall behind the others: reads go to the leader).
	ReadsHere(id uint64) bool
}

// Scan calls fn with every key and value of span in r, in key order, until
// fn returns false; it checks ctx every few hundred keys. Key and value are
// valid only during the call.
func Scan(ctx context.Context, r Reader, span Span, fn func(key, value []byte) bool) error {
	return scan(ctx, r.NewIter(span, false), fn)
}

// ScanReverse is Scan in reverse key order.
func ScanReverse(ctx context.Context, r Reader, span Span, fn func(key, value []byte) bool) error {
	return scan(ctx, r.NewIter(span, true), fn)
}

func scan(ctx context.Context, it Iter, fn func(key, value []byte) bool) (err error) {
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	for n := 0; it.Next(); n++ {
		if n%256 == 255 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !fn(it.Key(), it.Value()) {
			return nil
		}
	}
	return it.Err()
}

// KeyspacePrefix returns the prefix of keyspace id's keys in a node's
// store, 0x10 <id:8>: the span a replicated keyspace ships, applies and
// drops.
func KeyspacePrefix(id uint64) []byte { return keyspacePrefix(id) }

// NotLeaderError is returned by the writes of a replicated keyspace's
// replica that does not lead its group: nothing was proposed; the write
// belongs on the leader (Leader, a node id; 0 when unknown).
type NotLeaderError struct {
	Keyspace uint64
	Leader   uint64
}

func (e *NotLeaderError) Error() string {
	return fmt.Sprintf("replica: keyspace %d: this node does not lead its group (leader: node %d)", e.Keyspace, e.Leader)
}

// ErrNoLeader is returned, with ErrUnavailable, by Sync of a replicated
// keyspace when no leader of its group confirmed the read within its
// wait: the group has no leader (an election, or a majority of its
// replicas down or cut off), or this replica is far behind it.
var ErrNoLeader = errors.New("replica: no leader of the keyspace's group confirmed the read")

// ErrNotApplied is returned, with ErrUnavailable, by Commit of a
// replicated keyspace when the batch was not applied and never will be:
// its proposal was dropped or refused (the group's leadership changed or
// was being handed over, or the group is gone). Nothing was written: the
// write may be evaluated again, on whichever replica leads now.
var ErrNotApplied = errors.New("replica: the write was not applied (its proposal was dropped or refused)")

// ErrInDoubt is returned, with ErrNotApplied and ErrUnavailable, by Commit
// of a replicated keyspace that refused the batch because an earlier
// write's Commit gave up waiting (ErrIndeterminate) and its proposal may
// still apply: no other write is taken until it has, or is known never to.
var ErrInDoubt = errors.New("replica: an earlier write to the keyspace gave up waiting and may still apply")

// ErrIndeterminate is returned by Commit of a replicated keyspace when the
// batch was proposed but leadership was lost (or the wait timed out)
// before it applied: it may or may not take effect.
var ErrIndeterminate = errors.New("replica: the write's outcome is unknown (proposed, but not applied before leadership changed or the wait ended)")
