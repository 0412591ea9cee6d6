package replication

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/partitadb/partita/internal/store"
)

// Snapshots (docs/cluster.md, "Snapshots, streamed"). A snapshot of a
// group is its keyspace's applied state, every key and value (the applied
// state among them). It never travels inside a Raft message, nor is it
// ever held whole in memory:
//
//   - Raft's Storage.Snapshot (the leader's, when a follower needs one)
//     returns only metadata, at the group's applied index, and data that
//     says "streamed" (snapStreamed and the applied state).
//   - The transport hands a MsgSnap to WriteSnapshot instead of sending it
//     as a message: WriteSnapshot reads the keyspace from one store
//     snapshot, rewrites the message's metadata to that snapshot's applied
//     index (at or past the one Raft named: Raft accepts a snapshot at any
//     index it can continue the log from) and writes the message and the
//     keyspace's pairs, in chunks, to a stream of its own.
//   - The receiver's ReadSnapshot writes the pairs into a table file,
//     with the deletion of the whole keyspace (store.Table), and only
//     then steps the message into Raft, its data naming the staged table
//     (snapStaged). Raft hands it back in a Ready; Process ingests it,
//     with a second table replacing the group's Raft state (log, bounds,
//     hard state), in one atomic store.Ingest: a crash leaves the old
//     replica or the new one, never a mix.
//   - The sender reports the outcome to Raft (ReportSnapshot): a snapshot
//     lost on the way no longer leaves the follower waiting for a new
//     leader.
//
// A stream is: a frame holding the group (8 bytes) and the MsgSnap
// (protobuf); frames of pairs (each a uvarint-length-prefixed relative key
// and value); an empty frame; the number of pairs (uvarint). A frame is its
// length (uvarint) and its bytes.

// Snapshot data kinds: the first byte of a pb.Snapshot's Data.
const (
	// snapStreamed: applied state (24 bytes). Raft's and the stream's.
	snapStreamed = 0x01
	// snapStaged: applied state (24 bytes), then the staged table's path.
	// Only ever local: ReadSnapshot makes it, Process consumes it.
	snapStaged = 0x02
)

// Stream bounds.
const (
	snapChunkBytes    = 1 << 20  // a writer's frames of pairs
	maxSnapFrameBytes = 16 << 20 // a reader's bound on any frame
)

// snapshot returns g's snapshot for Raft: metadata at its applied index,
// data snapStreamed. h.mu is held (Raft calls it while stepping).
func (h *Host) snapshot(g *group) (*pb.Snapshot, error) {
	a := g.applied
	term, err := g.ls.term(a.Index)
	if err != nil {
		return nil, fmt.Errorf("replication: group %d: snapshot at %d: %w", g.id, a.Index, err)
	}
	return &pb.Snapshot{
		Data:     append([]byte{snapStreamed}, a.encode()...),
		Metadata: &pb.SnapshotMetadata{Index: new(a.Index), Term: new(term), ConfState: g.ls.trunc.conf},
	}, nil
}

// snapshotApplied returns the applied state snapshot data holds.
func snapshotApplied(data []byte) (applied, error) {
	if len(data) < 25 || (data[0] != snapStreamed && data[0] != snapStaged) {
		return applied{}, errors.New("replication: snapshot data of an unknown kind")
	}
	return decodeApplied(data[1:25])
}

// stagedPath returns the table a snapStaged snapshot's data names.
func stagedPath(data []byte) (string, error) {
	if len(data) <= 25 || data[0] != snapStaged {
		return "", errors.New("replication: a snapshot to install that was not staged")
	}
	return string(data[25:]), nil
}

// IsSnapshot reports whether m is a snapshot, which a transport must send
// with WriteSnapshot rather than as a message.
func IsSnapshot(m Message) bool { return m.Raft.GetType() == pb.MsgSnap }

// WriteSnapshot writes to w the stream of the snapshot that m, a MsgSnap
// of this node's, announces: the group's keyspace as this node holds it
// now (see the comment at the top of snapshot.go). It returns how many
// pairs it wrote. The caller reports the outcome with ReportSnapshot once
// the receiver has it (or has not).
func (h *Host) WriteSnapshot(ctx context.Context, w io.Writer, m Message) (int, error) {
	if !IsSnapshot(m) {
		return 0, errors.New("replication: WriteSnapshot of a message that is not a snapshot")
	}
	sn, err := h.st.NewSnapshot()
	if err != nil {
		return 0, err
	}
	defer sn.Close()
	v, err := sn.Get(appliedKey(m.Group))
	if err != nil {
		return 0, fmt.Errorf("replication: group %d: snapshot: applied state: %w", m.Group, err)
	}
	a, err := decodeApplied(v)
	if err != nil {
		return 0, err
	}
	h.mu.Lock()
	g, ok := h.groups[m.Group]
	var (
		term uint64
		conf *pb.ConfState
	)
	if ok {
		term, err = g.ls.term(a.Index)
		conf = proto.Clone(g.ls.trunc.conf).(*pb.ConfState)
	}
	h.mu.Unlock()
	switch {
	case !ok:
		return 0, ErrNoGroup
	case err != nil:
		return 0, fmt.Errorf("replication: group %d: snapshot at %d: %w", m.Group, a.Index, err)
	}
	msg := proto.Clone(m.Raft).(*pb.Message)
	msg.Snapshot = &pb.Snapshot{
		Data:     append([]byte{snapStreamed}, a.encode()...),
		Metadata: &pb.SnapshotMetadata{Index: new(a.Index), Term: new(term), ConfState: conf},
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	head, err := proto.Marshal(msg)
	if err != nil {
		return 0, err
	}
	frame := binary.BigEndian.AppendUint64(nil, m.Group)
	if err := writeFrame(bw, append(frame, head...)); err != nil {
		return 0, err
	}
	prefix := keyspaceSpan(m.Group).Lower
	it := sn.NewIter(keyspaceSpan(m.Group), false)
	chunk := make([]byte, 0, snapChunkBytes+4096)
	pairs := 0
	for it.Next() {
		if err := ctx.Err(); err != nil {
			_ = it.Close()
			return pairs, err
		}
		k, v := it.Key()[len(prefix):], it.Value()
		chunk = binary.AppendUvarint(chunk, uint64(len(k)))
		chunk = append(chunk, k...)
		chunk = binary.AppendUvarint(chunk, uint64(len(v)))
		chunk = append(chunk, v...)
		pairs++
		if len(chunk) >= snapChunkBytes {
			if err := writeFrame(bw, chunk); err != nil {
				_ = it.Close()
				return pairs, err
			}
			chunk = chunk[:0]
		}
	}
	// Err first: an iterator that could not be made (the store closing or
	// failed) walks nothing and closes without error, which would ship an
	// empty keyspace.
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return pairs, fmt.Errorf("replication: group %d: snapshot: %w", m.Group, err)
	}
	if len(chunk) > 0 {
		if err := writeFrame(bw, chunk); err != nil {
			return pairs, err
		}
	}
	if err := writeFrame(bw, nil); err != nil {
		return pairs, err
	}
	if _, err := bw.Write(binary.AppendUvarint(nil, uint64(pairs))); err != nil {
		return pairs, err
	}
	return pairs, bw.Flush()
}

func writeFrame(w io.Writer, b []byte) error {
	if _, err := w.Write(binary.AppendUvarint(nil, uint64(len(b)))); err != nil {
		return err
	}
	_, err := w.Write(b)
	return err
}

// readFrame reads one frame into buf (reused), at most maxSnapFrameBytes.
func readFrame(r *bufio.Reader, buf []byte) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > maxSnapFrameBytes {
		return nil, fmt.Errorf("replication: snapshot frame of %d bytes, over the bound of %d", n, maxSnapFrameBytes)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// ReadSnapshot reads a snapshot stream that WriteSnapshot wrote from r,
// stages the keyspace it carries in a table and steps its message into
// the group, which installs it when Raft hands it back (Process). An
// error means nothing was stepped: the sender reports a failure.
func (h *Host) ReadSnapshot(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := readFrame(br, nil)
	if err != nil {
		return fmt.Errorf("replication: snapshot: %w", err)
	}
	if len(head) < 8 {
		return errors.New("replication: snapshot: a header shorter than its group id")
	}
	m := Message{Group: binary.BigEndian.Uint64(head), Raft: &pb.Message{}}
	if err := proto.Unmarshal(head[8:], m.Raft); err != nil {
		return fmt.Errorf("replication: snapshot: %w", err)
	}
	snap := m.Raft.GetSnapshot()
	switch {
	case !IsSnapshot(m):
		return errors.New("replication: snapshot stream of a message that is not a snapshot")
	case m.Raft.GetTo() != h.id:
		return fmt.Errorf("replication: snapshot for node %016x, not this one", m.Raft.GetTo())
	}
	a, err := snapshotApplied(snap.GetData())
	if err != nil {
		return err
	}
	if a.Index != snap.GetMetadata().GetIndex() {
		return fmt.Errorf("replication: snapshot at %d holds applied state %d", snap.GetMetadata().GetIndex(), a.Index)
	}
	h.mu.Lock()
	_, ok := h.groups[m.Group]
	stopped := h.stopped
	h.mu.Unlock()
	switch {
	case stopped:
		return ErrStopped
	case !ok:
		if h.cfg.Unknown != nil {
			h.cfg.Unknown(m.Group)
		}
		return ErrNoGroup
	}
	h.stageSeq.Add(1)
	t, err := h.st.NewTable(fmt.Sprintf("snap-%d-%d-%d.sst", m.Group, a.Index, h.stageSeq.Load()))
	if err != nil {
		return err
	}
	if err := h.stage(br, t, m.Group, a); err != nil {
		t.Abort()
		return err
	}
	if err := t.Finish(); err != nil {
		return err
	}
	data := append(append([]byte{snapStaged}, a.encode()...), t.Path()...)
	m.Raft.Snapshot.Data = data
	h.mu.Lock()
	defer h.mu.Unlock()
	g, ok := h.groups[m.Group]
	if h.stopped || !ok {
		_ = h.st.RemoveTable(t.Path())
		return ErrStopped
	}
	// Raft may hold an older staged snapshot still (a Ready taken, not
	// yet installed): its table stays until one of the group's snapshots
	// is installed, or the group removed, or the node restarts.
	g.staged = append(g.staged, t.Path())
	if !h.underRaft(func() { _ = g.rn.Step(m.Raft) }) { // a stale snapshot is ignored
		return ErrStopped
	}
	return nil
}

// stage writes the pairs of a snapshot stream of group, whose applied
// state is a, into t: the deletion of the whole keyspace, then every pair.
func (h *Host) stage(br *bufio.Reader, t *store.Table, group uint64, a applied) error {
	span := keyspaceSpan(group)
	if err := t.DeleteSpan(span); err != nil {
		return err
	}
	var (
		buf, key []byte
		pairs    uint64
		sawState bool
	)
	for {
		frame, err := readFrame(br, buf)
		if err != nil {
			return fmt.Errorf("replication: group %d: snapshot: %w", group, err)
		}
		if len(frame) == 0 {
			break
		}
		buf = frame
		var perr error
		err = eachPair(frame, func(k, v []byte) {
			if perr != nil {
				return
			}
			key = append(append(key[:0], span.Lower...), k...)
			if bytes.Equal(k, appliedRel) {
				sawState = true
				if !bytes.Equal(v, a.encode()) {
					perr = errors.New("replication: snapshot: its pairs hold another applied state than its header")
					return
				}
			}
			perr = t.Set(key, v)
			pairs++
		})
		if err == nil {
			err = perr
		}
		if err != nil {
			return fmt.Errorf("replication: group %d: snapshot: %w", group, err)
		}
	}
	n, err := binary.ReadUvarint(br)
	switch {
	case err != nil:
		return fmt.Errorf("replication: group %d: snapshot: its end: %w", group, err)
	case n != pairs:
		return fmt.Errorf("replication: group %d: snapshot of %d pairs, %d read", group, n, pairs)
	case !sawState:
		return fmt.Errorf("replication: group %d: snapshot without applied state", group)
	}
	return nil
}

// eachPair calls fn with every key and value of snapshot pairs.
func eachPair(data []byte, fn func(k, v []byte)) error {
	for len(data) > 0 {
		var kv [2][]byte
		for i := range kv {
			n, w := binary.Uvarint(data)
			if w <= 0 || uint64(len(data)-w) < n {
				return errors.New("replication: malformed snapshot")
			}
			kv[i], data = data[w:w+int(n)], data[w+int(n):]
		}
		fn(kv[0], kv[1])
	}
	return nil
}

// appliedRel is the applied state's key relative to the keyspace.
var appliedRel = []byte{0x00, 'a', 'p', 'p', 'l', 'i', 'e', 'd'}

// ReportSnapshot tells group's Raft whether the snapshot this node sent to
// node to arrived (ReadSnapshot returned nil there): after a failure the
// leader tries again (a new snapshot) once a heartbeat finds the follower
// still behind.
func (h *Host) ReportSnapshot(group, to uint64, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g, found := h.groups[group]
	if h.stopped || !found {
		return
	}
	status := raft.SnapshotFinish
	if !ok {
		status = raft.SnapshotFailure
	}
	h.underRaft(func() { g.rn.ReportSnapshot(to, status) })
	h.nudge()
}

// installSnapshot replaces g's keyspace and Raft state by snap, which
// ReadSnapshot staged, with hard state hs (the Ready's; g's if nil): one
// atomic ingestion of the staged table and a table of the Raft state.
// It runs on the driver's goroutine, without h.mu.
func (h *Host) installSnapshot(g *group, snap *pb.Snapshot, hs *pb.HardState) error {
	path, err := stagedPath(snap.GetData())
	if err != nil {
		return err
	}
	h.mu.Lock()
	mine := slices.Contains(g.staged, path)
	h.mu.Unlock()
	if !mine {
		return fmt.Errorf("replication: group %d: snapshot at %d: its table %s is not one this node staged", g.id, snap.GetMetadata().GetIndex(), path)
	}
	md := snap.GetMetadata()
	if hs == nil || raft.IsEmptyHardState(hs) {
		hs = proto.Clone(g.ls.hard).(*pb.HardState)
	}
	if hs.GetCommit() < md.GetIndex() {
		hs = proto.Clone(hs).(*pb.HardState)
		hs.Commit = new(md.GetIndex())
	}
	hv, err := proto.Marshal(hs)
	if err != nil {
		return err
	}
	bv, err := bounds{index: md.GetIndex(), term: md.GetTerm(), conf: md.GetConfState()}.encode()
	if err != nil {
		return err
	}
	h.stageSeq.Add(1)
	t, err := h.st.NewTable(fmt.Sprintf("raft-%d-%d-%d.sst", g.id, md.GetIndex(), h.stageSeq.Load()))
	if err != nil {
		return err
	}
	// Keys in order: hard state (0x01), bounds (0x02), then the deletion
	// of every entry (0x03 …) up to the next group.
	err = errors.Join(
		t.Set(raftKey(g.id, raftHardState), hv),
		t.Set(raftKey(g.id, raftBounds), bv),
		t.DeleteSpan(store.Span{Lower: entryKey(g.id, 0), Upper: raftPrefix(g.id + 1)}),
	)
	if err != nil {
		t.Abort()
		return err
	}
	if err := t.Finish(); err != nil {
		return err
	}
	defer func() { _ = h.st.RemoveTable(t.Path()) }()
	if err := h.st.Ingest(context.Background(), []string{path, t.Path()}); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("replication: group %d: snapshot at %d: staged table missing: %w", g.id, md.GetIndex(), err)
		}
		return fmt.Errorf("replication: group %d: install snapshot at %d: %w", g.id, md.GetIndex(), err)
	}
	h.mu.Lock()
	stale := g.staged
	g.staged = nil
	h.mu.Unlock()
	for _, p := range stale {
		_ = h.st.RemoveTable(p)
	}
	return nil
}

// ReportUnreachable tells every group's Raft that this node could not
// reach node to: a leader streaming appends to it goes back to probing it
// (one append, then wait for its answer), rather than filling its window
// with messages the transport drops.
func (h *Host) ReportUnreachable(to uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	for _, id := range h.ids {
		if !h.underRaft(func() { h.groups[id].rn.ReportUnreachable(to) }) {
			return
		}
	}
}
