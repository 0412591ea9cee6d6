package cluster

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/partitadb/partita/internal/replica"
)

// Remote reads (docs/cluster.md, "Placement on a subset"): a member of a
// keyspace's group serves reads of it to nodes that hold no replica of it.
// This file is the member's side; remote.go the reader's.

// KVPath is the cluster listener's path of remote reads: POST KVPath/<id>.
const KVPath = "/kv"

// Answer headers of a remote read.
const (
	kvApplied  = "X-Partita-Applied"   // the member's applied index of the group
	kvLeader   = "X-Partita-Leader"    // the leader the member knows, 16 hex digits (0: none)
	kvLastLSN  = "X-Partita-Last-Lsn"  // the member's LastLSN of the keyspace
	kvSnap     = "X-Partita-Snapshot"  // an open snapshot's id, for the rest of a scan
	kvNotFound = "X-Partita-Not-Found" // a Get found no value
	kvMore     = "X-Partita-More"      // a scan's page ended before its span did
)

// Remote read operations.
const (
	kvGet     = "get"     // Key's value
	kvGetMany = "getmany" // Keys' values, as frames: a found byte (0, 1), then the value's frame if found
	kvScan    = "scan"    // a page of Span from After (in Snap, or a new snapshot)
	kvSync    = "sync"    // Sync, then answer
	kvVisible = "visible" // Visible(LSN): "1" or "0"
	kvStable  = "stable"  // StableLSN, decimal
	kvLead    = "lead"    // nothing: the headers say who leads
	kvOpen    = "open"    // a new snapshot, its id in kvSnap
	kvClose   = "close"   // release Snap
)

// kvRequest is a remote read. Fence is the largest applied index the
// reader has seen of the group: the member serves it only once it has
// applied as much.
type kvRequest struct {
	Op      string       `json:"op"`
	Fence   uint64       `json:"fence,omitempty"`
	Key     []byte       `json:"key,omitempty"`
	Keys    [][]byte     `json:"keys,omitempty"`
	Span    replica.Span `json:"span"`
	Reverse bool         `json:"reverse,omitempty"`
	After   []byte       `json:"after,omitempty"` // resume after this key (before it, in reverse)
	Snap    uint64       `json:"snap,omitempty"`  // read in this open snapshot
	Keep    bool         `json:"keep,omitempty"`  // Snap stays open when the scan ends (the reader's Snapshot)
	LSN     uint64       `json:"lsn,omitempty"`
}

// Bounds of a scan's page: whichever is reached first ends it.
const (
	kvPageKeys  = 256
	kvPageBytes = 1 << 20
)

// kvSnapIdle is how long a member keeps a snapshot no request uses;
// kvMaxSnaps bounds how many it keeps open.
const (
	kvSnapIdle = 30 * time.Second
	kvMaxSnaps = 4096
)

// kvFenceWait bounds how long a member waits to apply a request's fence.
const kvFenceWait = 2 * time.Second

// maxKVRequest bounds a remote read's request body.
const maxKVRequest = 1 << 20

// openSnap is a snapshot a member keeps for a reader.
type openSnap struct {
	ks     uint64
	snap   replica.Snapshot
	used   time.Time
	inUse  int  // requests reading it now
	closed bool // dropped: closed when the last request is done
}

// kvSnaps are a member's open snapshots. A snapshot may serve several
// requests at once; it is closed when dropped (the reader's close, its
// scan's end, expiry) and no request reads it any more.
type kvSnaps struct {
	mu   sync.Mutex
	next uint64
	open map[uint64]*openSnap
}

// add registers s, or refuses when too many are open.
func (k *kvSnaps) add(ks uint64, s replica.Snapshot) (uint64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.open == nil {
		k.open = map[uint64]*openSnap{}
	}
	if len(k.open) >= kvMaxSnaps {
		return 0, fmt.Errorf("cluster: %d snapshots open for remote readers: %w", len(k.open), replica.ErrUnavailable)
	}
	k.next++
	k.open[k.next] = &openSnap{ks: ks, snap: s, used: time.Now()}
	return k.next, nil
}

// take returns snapshot id of keyspace ks for a request to read; the
// request gives it back with put.
func (k *kvSnaps) take(id, ks uint64) (*openSnap, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.open[id]
	if !ok || s.ks != ks {
		return nil, false
	}
	s.inUse++
	return s, true
}

// put gives back a snapshot taken, closing it if it was dropped meanwhile.
func (k *kvSnaps) put(s *openSnap) {
	k.mu.Lock()
	s.inUse--
	s.used = time.Now()
	done := s.closed && s.inUse == 0
	k.mu.Unlock()
	if done {
		s.snap.Close()
	}
}

// drop forgets snapshot id of keyspace ks, closing it once no request
// reads it.
func (k *kvSnaps) drop(id, ks uint64) {
	k.mu.Lock()
	s, ok := k.open[id]
	if !ok || s.ks != ks {
		k.mu.Unlock()
		return
	}
	delete(k.open, id)
	s.closed = true
	done := s.inUse == 0
	k.mu.Unlock()
	if done {
		s.snap.Close()
	}
}

// expire drops the snapshots unused for kvSnapIdle (all when all is set).
func (k *kvSnaps) expire(all bool) {
	k.mu.Lock()
	var ids []uint64
	for id, s := range k.open {
		if all || s.inUse == 0 && time.Since(s.used) > kvSnapIdle {
			ids = append(ids, id)
		}
	}
	var done []*openSnap
	for _, id := range ids {
		s := k.open[id]
		delete(k.open, id)
		s.closed = true
		if s.inUse == 0 {
			done = append(done, s)
		}
	}
	k.mu.Unlock()
	for _, s := range done {
		s.snap.Close()
	}
}

// kvSource is what a member serves remote reads from: the node's groups
// (nodeKV), or a test's.
type kvSource interface {
	// held returns this member's replica of keyspace ks, if it has
	// created one (a remote read never creates one).
	held(ks uint64) (replica.Replica, bool)
	// position returns this member's applied index of group ks and the
	// leader it knows (0: none).
	position(ks uint64) (applied, leader uint64)
	// advanced is replication.Host.Advanced.
	advanced() <-chan struct{}
}

// kvServer serves remote reads from src, keeping the snapshots readers
// leave open.
type kvServer struct {
	self      uint64
	src       kvSource
	snaps     kvSnaps
	fenceWait time.Duration // 0: kvFenceWait
	pageBytes int           // 0: kvPageBytes
}

// page returns the bytes past which an answer ends.
func (kv *kvServer) page() int {
	if kv.pageBytes > 0 {
		return kv.pageBytes
	}
	return kvPageBytes
}

// register routes the remote reads on mux to kv.
func (kv *kvServer) register(mux *http.ServeMux) { mux.Handle("POST "+KVPath+"/{id}", kv) }

// nodeKV is a node's kvSource.
type nodeKV struct{ n *Node }

func (s nodeKV) held(ks uint64) (replica.Replica, bool) {
	r, ok := s.n.ks.held(ks)
	if !ok {
		return nil, false
	}
	return r, true
}

func (s nodeKV) position(ks uint64) (applied, leader uint64) {
	l, _ := s.n.host.Leader(ks)
	return l.Applied, l.ID
}

func (s nodeKV) advanced() <-chan struct{} { return s.n.host.Advanced() }

// ServeHTTP serves a remote read of keyspace <id> (the cluster listener's
// mutual TLS admitted only members).
func (kv *kvServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ks, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil {
		http.Error(w, "a keyspace id that is not a number", http.StatusBadRequest)
		return
	}
	var req kvRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxKVRequest)).Decode(&req); err != nil {
		http.Error(w, "a remote read that is not JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	rep, ok := kv.src.held(ks)
	if !ok {
		http.Error(w, fmt.Sprintf("node %016x holds no replica of keyspace %d (not one of its voters, or not created here yet)", kv.self, ks), http.StatusServiceUnavailable)
		return
	}
	ctx := r.Context()
	if err := kv.awaitApplied(ctx, ks, req.Fence); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	var body []byte
	switch req.Op {
	case kvGet:
		var v []byte
		if req.Snap != 0 {
			s, ok := kv.snaps.take(req.Snap, ks)
			if !ok {
				http.Error(w, snapGone(ks, req.Snap).Error(), http.StatusServiceUnavailable)
				return
			}
			v, err = s.snap.Get(req.Key)
			kv.snaps.put(s)
		} else {
			v, err = rep.Get(req.Key)
		}
		switch {
		case errors.Is(err, replica.ErrNotFound):
			w.Header().Set(kvNotFound, "1")
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		body = v
	case kvGetMany:
		var r replica.Reader = rep
		if req.Snap != 0 {
			s, ok := kv.snaps.take(req.Snap, ks)
			if !ok {
				http.Error(w, snapGone(ks, req.Snap).Error(), http.StatusServiceUnavailable)
				return
			}
			defer kv.snaps.put(s)
			r = s.snap
		}
		// As many values as fit a page (at least one): the reader asks
		// again for the rest.
		for _, k := range req.Keys {
			if len(body) >= kv.page() {
				break
			}
			v, err := r.Get(k)
			switch {
			case errors.Is(err, replica.ErrNotFound):
				body = append(body, 0)
			case err != nil:
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			default:
				body = append(body, 1)
				body = binary.AppendUvarint(body, uint64(len(v)))
				body = append(body, v...)
			}
		}
	case kvScan:
		var page []byte
		page, err = kv.kvScan(w, rep, ks, &req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		body = page
	case kvSync:
		if err := rep.Sync(ctx); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
	case kvVisible:
		body = []byte("0")
		if rep.Visible(req.LSN) {
			body = []byte("1")
		}
	case kvStable:
		body = strconv.AppendUint(nil, rep.StableLSN(), 10)
	case kvLead:
	case kvOpen:
		s, err := rep.Snapshot()
		if err == nil {
			var id uint64
			if id, err = kv.snaps.add(ks, s); err == nil {
				w.Header().Set(kvSnap, strconv.FormatUint(id, 10))
			} else {
				s.Close()
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
	case kvClose:
		kv.snaps.drop(req.Snap, ks)
	default:
		http.Error(w, "unknown remote read "+strconv.Quote(req.Op), http.StatusBadRequest)
		return
	}
	kv.kvHeaders(w, ks, rep)
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(body)
}

// kvHeaders sets the headers every answer carries: what the member has
// applied of keyspace ks, its last LSN and the leader it knows. The
// applied index is read after the operation, so it is at least the state
// the operation saw.
func (kv *kvServer) kvHeaders(w http.ResponseWriter, ks uint64, rep replica.Replica) {
	applied, leader := kv.src.position(ks)
	w.Header().Set(kvApplied, strconv.FormatUint(applied, 10))
	w.Header().Set(kvLeader, fmt.Sprintf("%016x", leader))
	w.Header().Set(kvLastLSN, strconv.FormatUint(rep.LastLSN(), 10))
}

// awaitApplied waits until this node has applied index fence of group ks,
// at most kvFenceWait.
func (kv *kvServer) awaitApplied(ctx context.Context, ks, fence uint64) error {
	if fence == 0 {
		return nil
	}
	wait := kv.fenceWait
	if wait == 0 {
		wait = kvFenceWait
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		advanced := kv.src.advanced()
		applied, _ := kv.src.position(ks)
		if applied >= fence {
			return nil
		}
		select {
		case <-advanced:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("cluster: keyspace %d: this member has applied index %d, the reader has seen %d: %w", ks, applied, fence, replica.ErrUnavailable)
		}
	}
}

// kvScan reads a page of req's scan into a body of frames (uvarint key
// length, key, uvarint value length, value). When more remains, the
// snapshot it read stays open for the rest and its id goes in kvSnap.
func (kv *kvServer) kvScan(w http.ResponseWriter, rep replica.Replica, ks uint64, req *kvRequest) ([]byte, error) {
	var (
		s    *openSnap
		id   = req.Snap
		snap replica.Snapshot
	)
	if id != 0 {
		var ok bool
		if s, ok = kv.snaps.take(id, ks); !ok {
			return nil, snapGone(ks, id)
		}
		snap = s.snap
	} else {
		var err error
		if snap, err = rep.Snapshot(); err != nil {
			return nil, err
		}
	}
	span := req.Span
	if req.After != nil {
		if req.Reverse {
			span.Upper = req.After
		} else {
			span.Lower = append(bytes.Clone(req.After), 0)
		}
	}
	var page []byte
	it := snap.NewIter(span, req.Reverse)
	more := false
	for keys := 0; it.Next(); keys++ {
		if keys >= kvPageKeys || len(page) >= kv.page() {
			more = true
			break
		}
		page = binary.AppendUvarint(page, uint64(len(it.Key())))
		page = append(page, it.Key()...)
		page = binary.AppendUvarint(page, uint64(len(it.Value())))
		page = append(page, it.Value()...)
	}
	err := it.Err()
	_ = it.Close()
	kept := false
	switch {
	case s != nil: // an open snapshot, kept while the reader may read it again
		kept = err == nil && (more || req.Keep)
		kv.snaps.put(s)
		if !kept {
			kv.snaps.drop(id, ks)
		}
	case err == nil && more: // a new snapshot, kept for the rest of the scan
		if id, err = kv.snaps.add(ks, snap); err != nil {
			snap.Close()
		}
		kept = err == nil
	default:
		snap.Close()
	}
	if err != nil {
		return nil, err
	}
	if more {
		w.Header().Set(kvMore, "1")
	}
	if kept {
		w.Header().Set(kvSnap, strconv.FormatUint(id, 10))
	}
	return page, nil
}

// snapGone is the error of a read in a snapshot this member does not keep.
func snapGone(ks, id uint64) error {
	return fmt.Errorf("cluster: keyspace %d: snapshot %d is not open here (expired after %v unused, or this member restarted): %w", ks, id, kvSnapIdle, replica.ErrUnavailable)
}
