package replication

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/partitadb/partita/internal/store"
)

// A group's Raft state lives in the node's store beside the keyspaces,
// under 0x11 <group:8>:
//
//	0x11 <group:8> 0x01               hard state (term, vote, commit)
//	0x11 <group:8> 0x02               log bounds: truncated index and term, conf state
//	0x11 <group:8> 0x03 <index:8>     log entry
//
// The group's applied state is inside its keyspace (appliedKey), written in
// the same batch as the entry it records, so data and applied index never
// disagree.
const (
	kindRaft      = 0x11
	raftHardState = 0x01
	raftBounds    = 0x02
	raftEntry     = 0x03
	raftPrefixLen = 9
)

// raftPrefix returns 0x11 <group:8>.
func raftPrefix(group uint64) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, raftPrefixLen+9), kindRaft), group)
}

func raftKey(group uint64, kind byte) []byte { return append(raftPrefix(group), kind) }

func entryKey(group, index uint64) []byte {
	return binary.BigEndian.AppendUint64(raftKey(group, raftEntry), index)
}

// entrySpan is the span of group's entries with index in [lo, hi).
func entrySpan(group, lo, hi uint64) store.Span {
	return store.Span{Lower: entryKey(group, lo), Upper: entryKey(group, hi)}
}

// bounds is what a log knows of its truncated prefix: the index and term
// of the last entry removed (or of the snapshot the log starts after) and
// the configuration at that point.
type bounds struct {
	index, term uint64
	conf        *pb.ConfState
}

func (b bounds) encode() ([]byte, error) {
	cs, err := proto.Marshal(b.conf)
	if err != nil {
		return nil, err
	}
	out := binary.BigEndian.AppendUint64(nil, b.index)
	out = binary.BigEndian.AppendUint64(out, b.term)
	return append(out, cs...), nil
}

func decodeBounds(v []byte) (bounds, error) {
	if len(v) < 16 {
		return bounds{}, fmt.Errorf("replication: log bounds of %d bytes", len(v))
	}
	b := bounds{index: binary.BigEndian.Uint64(v), term: binary.BigEndian.Uint64(v[8:]), conf: &pb.ConfState{}}
	if err := proto.Unmarshal(v[16:], b.conf); err != nil {
		return bounds{}, fmt.Errorf("replication: log bounds: %w", err)
	}
	pb.EnsureConfState(b.conf)
	return b, nil
}

// logStore is one group's Raft log and hard state in the node's store: the
// raft.Storage of its RawNode. Raft calls it under the host's mutex, from
// whichever goroutine steps, proposes or processes; only the driver's
// goroutine changes its fields, under that mutex once the store holds
// what they describe. It keeps the log's bounds in memory, the terms of
// the entries it appended since it was loaded (terms), and the most recent
// of those entries (cache); it reads the others from the store.
type logStore struct {
	st    *store.Store
	group uint64
	hard  *pb.HardState
	trunc bounds
	last  uint64 // the index of the last entry; trunc.index when there is none
	// terms are the terms of a suffix of the log, (terms[0].from-1, last]:
	// Raft asks Term on every append it sends or receives and every commit
	// it considers, and reading and decoding the entry each time was a
	// twentieth of a leader's CPU. Entries before the suffix (appended
	// before the store was loaded) are read from the store.
	terms []termRun
	// cache holds the entries of a suffix of the log, consecutive, with
	// their sizes (cacheSizes) and at most entryCacheBytes of them in all
	// (cacheBytes): the entries it appended, durable in the store. Raft
	// reads every committed entry back to apply it, and the leader the
	// entries of every append it sends once they are durable; reading and
	// decoding them from the store was up to a fourteenth of a member's
	// CPU (docs/cluster.md).
	cache      []*pb.Entry
	cacheSizes []uint64
	cacheBytes uint64
	// snapshot returns the group's current snapshot (its applied keyspace
	// state); set by the host.
	snapshot func() (*pb.Snapshot, error)
}

var _ raft.Storage = (*logStore)(nil)

// loadLog reads group's log state from st. ok is false when the store holds
// nothing of the group.
func loadLog(st *store.Store, group uint64) (ls *logStore, ok bool, err error) {
	ls = &logStore{st: st, group: group, hard: &pb.HardState{}}
	v, err := st.Get(raftKey(group, raftBounds))
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if ls.trunc, err = decodeBounds(v); err != nil {
		return nil, false, err
	}
	if v, err := st.Get(raftKey(group, raftHardState)); err == nil {
		if err := proto.Unmarshal(v, ls.hard); err != nil {
			return nil, false, fmt.Errorf("replication: group %d: hard state: %w", group, err)
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, false, err
	}
	ls.last = ls.trunc.index
	err = st.ScanReverse(context.Background(), entrySpan(group, ls.trunc.index+1, ^uint64(0)), func(k, _ []byte) bool {
		ls.last = binary.BigEndian.Uint64(k[len(k)-8:])
		return false
	})
	return ls, true, err
}

// InitialState returns the hard state and configuration saved.
func (ls *logStore) InitialState() (*pb.HardState, *pb.ConfState, error) {
	return proto.Clone(ls.hard).(*pb.HardState), proto.Clone(ls.trunc.conf).(*pb.ConfState), nil
}

// entryCacheBytes bounds the entries a group's log keeps in memory
// (logStore.cache): enough for the entries between their append and their
// apply, and for a follower a little behind.
const entryCacheBytes = 256 << 10

// Entries returns the entries in [lo, hi), at most maxSize bytes of them
// but at least one.
func (ls *logStore) Entries(lo, hi, maxSize uint64) ([]*pb.Entry, error) {
	if lo <= ls.trunc.index {
		return nil, raft.ErrCompacted
	}
	if hi > ls.last+1 {
		return nil, raft.ErrUnavailable
	}
	if n := len(ls.cache); n > 0 && lo >= ls.cache[0].GetIndex() && hi <= ls.cache[n-1].GetIndex()+1 {
		// A fresh slice: Raft may append to what it is given.
		k := lo - ls.cache[0].GetIndex()
		out := make([]*pb.Entry, 0, hi-lo)
		var size uint64
		for _, e := range ls.cache[k : k+hi-lo] {
			if size += ls.cacheSizes[e.GetIndex()-ls.cache[0].GetIndex()]; len(out) > 0 && size > maxSize {
				break
			}
			out = append(out, e)
		}
		return out, nil
	}
	var (
		out    []*pb.Entry
		size   uint64
		failed error
	)
	err := ls.st.Scan(context.Background(), entrySpan(ls.group, lo, hi), nil, func(_, v []byte) bool {
		e := &pb.Entry{}
		if err := proto.Unmarshal(v, e); err != nil {
			failed = err
			return false
		}
		size += uint64(proto.Size(e))
		if len(out) > 0 && size > maxSize {
			return false
		}
		out = append(out, e)
		return true
	})
	if err == nil {
		err = failed
	}
	if err != nil {
		panic(storeFailure{fmt.Errorf("replication: group %d: entries [%d, %d): %w", ls.group, lo, hi, err)})
	}
	if len(out) == 0 || out[0].GetIndex() != lo {
		return nil, raft.ErrUnavailable
	}
	return out, nil
}

// termRun says that the entries from index from on, up to the next run's
// from, have term term.
type termRun struct{ from, term uint64 }

// Term returns the term of entry i, in [FirstIndex()-1, LastIndex()]. Like
// Entries and Snapshot, it panics with a storeFailure when the store fails
// (the host recovers it: underRaft), since Raft would panic on the error;
// the host's own reads use term.
func (ls *logStore) Term(i uint64) (uint64, error) {
	t, err := ls.term(i)
	if err != nil && !errors.Is(err, raft.ErrCompacted) && !errors.Is(err, raft.ErrUnavailable) {
		panic(storeFailure{err})
	}
	return t, err
}

// term returns the term of entry i, in [FirstIndex()-1, LastIndex()].
func (ls *logStore) term(i uint64) (uint64, error) {
	switch {
	case i == ls.trunc.index:
		return ls.trunc.term, nil
	case i < ls.trunc.index:
		return 0, raft.ErrCompacted
	case i > ls.last:
		return 0, raft.ErrUnavailable
	}
	if n := len(ls.terms); n > 0 && i >= ls.terms[0].from {
		k := sort.Search(n, func(k int) bool { return ls.terms[k].from > i }) - 1
		return ls.terms[k].term, nil
	}
	v, err := ls.st.Get(entryKey(ls.group, i))
	if errors.Is(err, store.ErrNotFound) {
		return 0, raft.ErrUnavailable
	}
	if err != nil {
		return 0, fmt.Errorf("replication: group %d: entry %d: %w", ls.group, i, err)
	}
	e := &pb.Entry{}
	if err := proto.Unmarshal(v, e); err != nil {
		return 0, fmt.Errorf("replication: group %d: entry %d: %w", ls.group, i, err)
	}
	return e.GetTerm(), nil
}

// LastIndex returns the index of the last entry.
func (ls *logStore) LastIndex() (uint64, error) { return ls.last, nil }

// FirstIndex returns the index of the first entry kept.
func (ls *logStore) FirstIndex() (uint64, error) { return ls.trunc.index + 1, nil }

// Snapshot returns a snapshot of the group's applied state.
func (ls *logStore) Snapshot() (*pb.Snapshot, error) {
	snap, err := ls.snapshot()
	if err != nil {
		panic(storeFailure{err})
	}
	return snap, nil
}

// appendFrom adds entries to b, replacing the log, whose last index is
// last, from the first one's index on (Raft overwrites a conflicting
// suffix), and returns the log's new last index, which the caller sets
// once b is committed.
func (ls *logStore) appendFrom(b *store.Batch, last uint64, ents []*pb.Entry) (newLast uint64, err error) {
	if len(ents) == 0 {
		return last, nil
	}
	for _, e := range ents {
		v, err := proto.Marshal(e)
		if err != nil {
			return 0, err
		}
		b.Set(entryKey(ls.group, e.GetIndex()), v)
	}
	newLast = ents[len(ents)-1].GetIndex()
	if last > newLast {
		b.DeleteSpan(entrySpan(ls.group, newLast+1, last+1))
	}
	return newLast, nil
}

// appended records the terms of ents, which the store now holds from the
// first one's index on, replacing any later entries (appendFrom's batch,
// committed), and keeps them in the cache.
func (ls *logStore) appended(ents []*pb.Entry) {
	if len(ents) == 0 {
		return
	}
	first := ents[0].GetIndex()
	n := sort.Search(len(ls.terms), func(k int) bool { return ls.terms[k].from >= first })
	ls.terms = ls.terms[:n]
	for _, e := range ents {
		if n := len(ls.terms); n == 0 || ls.terms[n-1].term != e.GetTerm() {
			ls.terms = append(ls.terms, termRun{from: e.GetIndex(), term: e.GetTerm()})
		}
	}
	if n := len(ls.cache); n > 0 && first >= ls.cache[0].GetIndex() && first <= ls.cache[n-1].GetIndex()+1 {
		ls.dropCached(int(first - ls.cache[0].GetIndex())) // a conflicting suffix, replaced
	} else {
		ls.dropCached(0) // not adjacent to what it holds
	}
	for _, e := range ents {
		size := uint64(proto.Size(e))
		ls.cache, ls.cacheSizes, ls.cacheBytes = append(ls.cache, e), append(ls.cacheSizes, size), ls.cacheBytes+size
	}
	k := 0
	for k < len(ls.cache) && ls.cacheBytes > entryCacheBytes {
		ls.cacheBytes -= ls.cacheSizes[k]
		k++
	}
	ls.forgetCached(k)
}

// dropCached forgets the cached entries from position k on.
func (ls *logStore) dropCached(k int) {
	for _, s := range ls.cacheSizes[k:] {
		ls.cacheBytes -= s
	}
	clear(ls.cache[k:]) // the entries themselves are garbage
	ls.cache, ls.cacheSizes = ls.cache[:k], ls.cacheSizes[:k]
}

// forgetCached forgets the first k cached entries, whose bytes the caller
// has taken out of cacheBytes.
func (ls *logStore) forgetCached(k int) {
	if k == 0 {
		return
	}
	clear(ls.cache[:k])
	ls.cache, ls.cacheSizes = ls.cache[k:], ls.cacheSizes[k:]
	if len(ls.cache) == 0 {
		ls.cache, ls.cacheSizes = nil, nil // let the arrays go
	}
}

// reset forgets every entry it remembers (the log starts after a snapshot).
func (ls *logStore) reset() {
	ls.terms = nil
	ls.dropCached(0)
}

// truncated forgets the runs of entries at or before index, which the log
// no longer holds (truncate: the store dropped them), but the one that
// continues past it.
func (ls *logStore) truncated(index uint64) {
	k := 0
	for k+1 < len(ls.terms) && ls.terms[k+1].from <= index+1 {
		k++
	}
	ls.terms = slices.Delete(ls.terms, 0, k)
	k = 0
	for k < len(ls.cache) && ls.cache[k].GetIndex() <= index {
		ls.cacheBytes -= ls.cacheSizes[k]
		k++
	}
	ls.forgetCached(k)
}

// setHard adds hard state h to b.
func (ls *logStore) setHard(b *store.Batch, h *pb.HardState) error {
	v, err := proto.Marshal(h)
	if err != nil {
		return err
	}
	b.Set(raftKey(ls.group, raftHardState), v)
	return nil
}

// setBounds adds bounds t to b.
func (ls *logStore) setBounds(b *store.Batch, t bounds) error {
	v, err := t.encode()
	if err != nil {
		return err
	}
	b.Set(raftKey(ls.group, raftBounds), v)
	return nil
}
