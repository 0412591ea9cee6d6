package replication

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/store"
)

// Errors of proposals and reads.
var (
	// ErrNotLeader: this node does not lead the group (or leads it but has
	// not yet applied an entry of its term); nothing was proposed.
	ErrNotLeader = errors.New("replication: not the group's settled leader")
	// ErrNotApplied: the proposal was refused or dropped and will never
	// apply; retrying is safe.
	ErrNotApplied = errors.New("replication: proposal not applied")
	// ErrIndeterminate: leadership was lost while the proposal waited; it
	// may or may not apply.
	ErrIndeterminate = errors.New("replication: proposal outcome unknown")
	// ErrNoGroup: the node has no replica of the group.
	ErrNoGroup = errors.New("replication: no such group on this node")
	// ErrStopped: the host's driver has stopped (the node is shutting
	// down, or its store failed); nothing was proposed.
	ErrStopped = errors.New("replication: the host has stopped")
)

// Message is a Raft message of one group, as the transport carries it.
type Message struct {
	Group uint64
	Raft  *pb.Message
}

// Transport sends messages to other nodes. Send must not block; it may drop
// (Raft retries).
type Transport interface {
	Send(to uint64, m Message)
}

// Config configures a Host.
type Config struct {
	// ElectionTicks and HeartbeatTicks are Raft's election timeout and
	// heartbeat interval in ticks (defaults 10 and 1).
	ElectionTicks, HeartbeatTicks int
	// LogKeep is how many applied entries a group keeps before it
	// truncates its log (a replica further behind gets a snapshot);
	// default 4096.
	LogKeep uint64
	// Logger receives the host's messages; nil discards them.
	Logger *slog.Logger
	// Unknown, if set, is told of a message for a group this node has no
	// replica of (the message is dropped): its owner may create the group
	// if it should exist. It must not block or call back into the host.
	Unknown func(group uint64)
	// Settled, if set, is told when this node becomes a group's settled
	// leader (it has applied an entry of its term): what only a leader
	// does may start at once. It is called with the host's lock held, so
	// it must not block or call back into the host.
	Settled func(group uint64)
}

func (c *Config) defaults() {
	if c.ElectionTicks == 0 {
		c.ElectionTicks = 10
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = 1
	}
	if c.LogKeep == 0 {
		c.LogKeep = 4096
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Host is one node's replicas of Raft groups, in its store. Its core is
// synchronous: Tick, Step and Process drive it, from one goroutine (a
// driver, or the simulator), while Propose and ReadIndex may be called from
// any goroutine. Host is safe for concurrent use.
type Host struct {
	id  uint64
	st  *store.Store
	tr  Transport
	cfg Config

	// wake tells the driver that a proposal or read waits (buffer 1).
	wake chan struct{}

	// done is the driver's Run's ctx.Done (nil when Process is called
	// without Run, as the simulator does): a write that the store refuses
	// for want of space is retried until it is closed (commitWithRoom).
	done <-chan struct{}

	// proc is held by Process throughout and by Remove, so that a group is
	// never removed while Process writes its state (Process releases mu
	// while it writes). Lock order: proc, then mu.
	proc sync.Mutex

	mu sync.Mutex
	// stopped is set when the driver's Run returns: the store may close
	// next, and Raft must not read its log any more (it panics on a
	// storage error), so proposals, reads, steps and ticks are refused.
	stopped bool
	// failure is the store's error that Raft met reading its log (raft
	// panics on it; underRaft recovers it): the host stops, and Run
	// returns it. failed is set with it, for Run to look at without mu.
	failure error
	failed  atomic.Bool
	groups  map[uint64]*group
	ids     []uint64 // the groups' ids, sorted: Process visits them in order
	ticks   uint64   // Ticks so far (group.heard)
	nextID  uint64   // proposal and read ids
	// stageSeq names the tables of snapshots uniquely.
	stageSeq atomic.Uint64
	// advanced is closed, and cleared, when what Leader reports of a
	// group changes (Advanced); nil while no one waits for it.
	advanced chan struct{}
}

// group is one Raft group's replica on this node.
type group struct {
	id      uint64
	rn      *raft.RawNode
	ls      *logStore
	prefix  []byte // the keyspace's prefix
	applied applied
	soft    raft.SoftState
	term    uint64
	// settled: this node leads term and has applied an entry of it.
	settled bool
	pending map[uint64]*Waiter // proposals of this node, by id
	reads   map[uint64]*Waiter // read index requests, by id
	// readable are reads whose index is known, waiting for applied to
	// reach it.
	readable []readWait
	// staged are the tables of snapshots received (ReadSnapshot) and not
	// yet installed.
	staged []string
	// heard is, for each peer, the Host's tick count when a message of
	// this group last came from it (Progress.Active).
	heard map[uint64]uint64
	// above are the LSNs of proposals applied here above the stable mark
	// applied (applied.Stable), in order, at most maxAbove of the
	// largest (LSNApplied). Not kept across restarts or snapshots: an LSN
	// not found here waits for the stable mark.
	above []uint64
}

// maxAbove bounds a group's LSNs kept above its stable mark.
const maxAbove = 4096

type readWait struct {
	index uint64
	w     *Waiter
}

// Waiter reports the outcome of a proposal or a read index request once,
// on Done.
type Waiter struct {
	done chan error
}

func newWaiter() *Waiter { return &Waiter{done: make(chan error, 1)} }

// Done delivers the outcome: nil when the proposal applied (or the read
// may be served at the replica's applied state), or ErrNotApplied,
// ErrIndeterminate.
func (w *Waiter) Done() <-chan error { return w.done }

func (w *Waiter) finish(err error) {
	select {
	case w.done <- err:
	default:
	}
}

// discard is raft's logger when the host's is not wanted.
var discard = &raft.DefaultLogger{Logger: log.New(io.Discard, "", 0)}

// Open returns node id's host over st, with every group st holds.
func Open(st *store.Store, id uint64, tr Transport, cfg Config) (*Host, error) {
	cfg.defaults()
	h := &Host{id: id, st: st, tr: tr, cfg: cfg, groups: map[uint64]*group{}, wake: make(chan struct{}, 1)}
	var ids []uint64
	err := st.Scan(context.Background(), store.Span{Lower: []byte{kindRaft}, Upper: []byte{kindRaft + 1}}, nil, func(k, _ []byte) bool {
		if len(k) == raftPrefixLen+1 && k[raftPrefixLen] == raftBounds {
			ids = append(ids, binary.BigEndian.Uint64(k[1:]))
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	for _, g := range ids {
		if err := h.load(g); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// Create makes this node a replica of group with the given voters (node
// ids, this one among them), unless it is one already. Every voter must be
// created with the same set.
func (h *Host) Create(group uint64, voters []uint64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.groups[group]; ok {
		return nil
	}
	ls := &logStore{st: h.st, group: group}
	b := h.st.NewBatch()
	defer b.Close()
	if err := ls.setBounds(b, bounds{conf: pb.EnsureConfState(&pb.ConfState{Voters: slices.Clone(voters)})}); err != nil {
		return err
	}
	b.Set(appliedKey(group), applied{}.encode())
	if err := b.Commit(); err != nil {
		return err
	}
	return h.load(group)
}

// Remove deletes this node's replica of group: its Raft state and its
// keyspace, in one store batch. Proposals and reads waiting on it fail
// with ErrNotApplied. Removing a group this node has no replica of is a
// no-op. The group is gone for good from this node: keyspace ids are never
// reused, and a later Create makes an empty replica.
func (h *Host) Remove(group uint64) error {
	h.proc.Lock()
	defer h.proc.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.st.NewBatch()
	defer b.Close()
	p := raftPrefix(group)
	b.DeleteSpan(store.Span{Lower: p, Upper: raftPrefix(group + 1)})
	b.DeleteSpan(keyspaceSpan(group))
	if err := b.Commit(); err != nil {
		return fmt.Errorf("replication: remove group %d: %w", group, err)
	}
	g, ok := h.groups[group]
	if !ok {
		return nil
	}
	for _, w := range g.pending {
		w.finish(ErrNotApplied)
	}
	for _, w := range g.reads {
		w.finish(ErrNotApplied)
	}
	for _, r := range g.readable {
		r.w.finish(ErrNotApplied)
	}
	for _, p := range g.staged {
		_ = h.st.RemoveTable(p)
	}
	delete(h.groups, group)
	if i, found := slices.BinarySearch(h.ids, group); found {
		h.ids = slices.Delete(h.ids, i, i+1)
	}
	return nil
}

// appliedKey is where group's applied state lives: inside its keyspace,
// under the relative key 0x00 "applied" that only the replica writes.
func appliedKey(group uint64) []byte {
	return append(replica.KeyspacePrefix(group), appliedRel...)
}

// keyspaceSpan is group's keyspace.
func keyspaceSpan(group uint64) store.Span {
	return store.Span{Lower: replica.KeyspacePrefix(group), Upper: replica.KeyspacePrefix(group + 1)}
}

// load starts group's RawNode from the store.
func (h *Host) load(id uint64) error {
	ls, ok, err := loadLog(h.st, id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("replication: group %d: no log", id)
	}
	g := &group{id: id, ls: ls, prefix: replica.KeyspacePrefix(id), pending: map[uint64]*Waiter{}, reads: map[uint64]*Waiter{}}
	v, err := h.st.Get(appliedKey(id))
	if err != nil {
		return fmt.Errorf("replication: group %d: applied state: %w", id, err)
	}
	if g.applied, err = decodeApplied(v); err != nil {
		return err
	}
	ls.snapshot = func() (*pb.Snapshot, error) { return h.snapshot(g) }
	rn, err := raft.NewRawNode(&raft.Config{
		ID:                        h.id,
		ElectionTick:              h.cfg.ElectionTicks,
		HeartbeatTick:             h.cfg.HeartbeatTicks,
		Storage:                   ls,
		Applied:                   g.applied.Index,
		MaxSizePerMsg:             1 << 20,
		MaxInflightMsgs:           256,
		CheckQuorum:               true,
		PreVote:                   true,
		DisableProposalForwarding: true,
		Logger:                    discard,
	})
	if err != nil {
		return fmt.Errorf("replication: group %d: %w", id, err)
	}
	g.rn = rn
	// The stored term, until a Ready moves it (noteSoft): raft emits no
	// hard state it was started with, and Leader reported term 0 for a
	// group reopened and idle since (a cluster hunt).
	g.term = ls.hard.GetTerm()
	h.groups[id] = g
	i, _ := slices.BinarySearch(h.ids, id)
	h.ids = slices.Insert(h.ids, i, id)
	return nil
}

// Tick advances every group's logical clock by one tick.
func (h *Host) Tick() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	h.ticks++
	for _, id := range h.ids {
		if !h.underRaft(h.groups[id].rn.Tick) {
			return
		}
	}
}

// Step hands a message from a peer to its group. Messages of groups this
// node does not have are dropped.
func (h *Host) Step(m Message) {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	g, ok := h.groups[m.Group]
	if !ok {
		h.mu.Unlock()
		if h.cfg.Unknown != nil {
			h.cfg.Unknown(m.Group)
		}
		return
	}
	defer h.mu.Unlock()
	if IsSnapshot(m) {
		// A snapshot arrives as a stream (ReadSnapshot), which stages its
		// keyspace before its message is stepped; one inside a message
		// carries nothing to install.
		h.cfg.Logger.Warn("raft snapshot message without its stream dropped", "group", m.Group, "from", m.Raft.GetFrom())
		return
	}
	if from := m.Raft.GetFrom(); from != 0 && from != h.id {
		if g.heard == nil {
			g.heard = map[uint64]uint64{}
		}
		g.heard[from] = h.ticks
	}
	h.underRaft(func() { _ = g.rn.Step(m.Raft) }) // a message of an old term or from a removed node: dropped
}

// Campaign makes this node campaign to lead group (tests, and leader
// placement).
func (h *Host) Campaign(group uint64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return ErrStopped
	}
	g, ok := h.groups[group]
	if !ok {
		return ErrNoGroup
	}
	var err error
	if !h.underRaft(func() { err = g.rn.Campaign() }) {
		return ErrStopped
	}
	h.nudge() // its votes (or, as a sole voter, its leadership) wait in a Ready
	return err
}

// Leader describes this node's view of group's leadership.
type Leader struct {
	ID      uint64 // the leader's node id; 0 when unknown
	Term    uint64
	Settled bool   // this node leads Term, has applied an entry of it and is not handing leadership over
	LSN     uint64 // the largest LSN applied here
	Stable  uint64 // the stable LSN applied here
	Applied uint64 // the last log index applied here
	Voters  int    // how many voters the group has
}

// LSNApplied reports whether the proposal that took LSN lsn has applied
// here (or was abandoned): lsn is at or below the stable mark applied, or
// it is the LSN of a proposal applied since.
func (h *Host) LSNApplied(group, lsn uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	g, ok := h.groups[group]
	if !ok {
		return false
	}
	if lsn <= g.applied.Stable {
		return true
	}
	_, found := slices.BinarySearch(g.above, lsn)
	return found
}

// Groups returns the ids of the groups this node has a replica of, in
// order.
func (h *Host) Groups() []uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ids)
}

// Full reports whether this node's store refuses writes for want of space
// (store.Store.Full).
func (h *Host) Full() bool { return h.st.Full() }

// Leader returns this node's view of group's leadership and applied state.
func (h *Host) Leader(group uint64) (Leader, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g, ok := h.groups[group]
	if !ok {
		return Leader{}, ErrNoGroup
	}
	return Leader{ID: g.soft.Lead, Term: g.term, Settled: g.settled && !g.transferring(), LSN: g.applied.LSN, Stable: g.applied.Stable, Applied: g.applied.Index,
		Voters: len(g.ls.trunc.conf.GetVoters())}, nil
}

// Advanced returns a channel closed the next time a group applies here (an
// entry or a snapshot: what Leader reports of it moves on), or a Replica
// of this host releases an LSN (its StableLSN may move): a reader waiting
// for this node to reach a position takes it, checks the position, and
// waits on it if the position is not reached. (A change of leadership
// alone only takes positions back: a new leader reports its own once it
// has applied an entry of its term.)
func (h *Host) Advanced() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.advanced == nil {
		h.advanced = make(chan struct{})
	}
	return h.advanced
}

// advancedLocked closes the channel Advanced handed out, if any. h.mu is
// held.
func (h *Host) advancedLocked() {
	if h.advanced != nil {
		close(h.advanced)
		h.advanced = nil
	}
}

// signal is advancedLocked for a caller without h.mu.
func (h *Host) signal() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.advancedLocked()
}

// Propose proposes p to group, whose settled leader this node must be in
// p.Term. The Waiter reports when it has applied here (nil), or that it
// never will (ErrNotApplied), or that leadership was lost before it applied
// (ErrIndeterminate).
func (h *Host) Propose(group uint64, p Proposal) (*Waiter, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return nil, ErrStopped
	}
	g, ok := h.groups[group]
	if !ok {
		return nil, ErrNoGroup
	}
	if !g.settled || g.term != p.Term || g.transferring() {
		return nil, ErrNotLeader
	}
	h.nextID++
	e := envelope{Proposal: p, node: h.id, id: h.nextID}
	var err error
	if !h.underRaft(func() { err = g.rn.Propose(e.encode()) }) {
		return nil, ErrStopped
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotApplied, err)
	}
	w := newWaiter()
	g.pending[e.id] = w
	h.nudge()
	return w, nil
}

// ReadIndex asks group for a linearizable read: the Waiter reports nil once
// this replica has applied every entry committed when the request was made,
// so a read of its applied state then is linearizable.
func (h *Host) ReadIndex(group uint64) (*Waiter, error) {
	w := newWaiter()
	if err := h.rereadIndex(group, w); err != nil {
		return nil, err
	}
	return w, nil
}

// rereadIndex asks group's leader for a read index again on behalf of w,
// a waiter ReadIndex returned: Raft drops a read request that no leader
// answers (none known when it was made, a leader stepping down, a message
// lost), and the reader would wait for nothing. Whichever answer comes
// first finishes w; each was asked for after w's reader began, so either
// index serves it.
func (h *Host) rereadIndex(group uint64, w *Waiter) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return ErrStopped
	}
	g, ok := h.groups[group]
	if !ok {
		return ErrNoGroup
	}
	h.nextID++
	g.reads[h.nextID] = w
	if !h.underRaft(func() { g.rn.ReadIndex(binary.BigEndian.AppendUint64(nil, h.nextID)) }) {
		return ErrStopped
	}
	h.nudge()
	return nil
}

// forgetRead drops read request w of group (its reader stopped waiting;
// Raft drops a request no leader answers, so it would wait forever).
func (h *Host) forgetRead(group uint64, w *Waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g, ok := h.groups[group]
	if !ok {
		return
	}
	for id, v := range g.reads {
		if v == w {
			delete(g.reads, id)
		}
	}
	g.readable = slices.DeleteFunc(g.readable, func(r readWait) bool { return r.w == w })
}

// nudge wakes the driver.
func (h *Host) nudge() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Process handles every group's pending work: it persists new log entries
// and hard state (one store batch for all groups, synced when Raft needs it
// durable), sends messages, applies committed entries and answers the
// waiters. The driver calls it after Tick and Step. An error means the
// store failed: the host must stop (a restart resumes from what is
// durable).
//
// Its order, per Ready:
//
//  1. Messages that acknowledge nothing durable go out at once (sendsEarly):
//     a leader's appends and heartbeats among them, so its disk write
//     overlaps its followers' (Raft thesis §10.2.1).
//  2. Committed entries that are durable here already are applied, with
//     the Ready's hard state, before the Ready's new entries are synced
//     (appliesFirst): a write acknowledged by a majority while the driver
//     synced the next entries is applied, and its proposer answered,
//     without waiting for another sync.
//  3. The Ready's entries, snapshot and hard state are persisted.
//  4. The other messages go out (votes, acknowledgements of entries: Raft
//     may count them only once what they vouch for is durable), and the
//     remaining committed entries are applied.
//
// NB: h.mu is not held while the store writes (the persist's sync, the
// apply): Propose, ReadIndex, Leader and the rest go on meanwhile, as
// etcd raft's own node does between Ready and Advance (a RawNode takes
// proposals then; it only must not make another Ready before Advance,
// and only this goroutine makes Readys). Only Remove, which deletes a
// group's state, must not interleave with a Process of it: h.proc keeps
// them apart.
func (h *Host) Process() error {
	h.proc.Lock()
	defer h.proc.Unlock()
	type ready struct {
		g  *group
		rd raft.Ready
		// late are the messages to send once the Ready is persisted.
		late []*pb.Message
		// first: its committed entries were applied before the persist.
		first bool
	}
	var rds []ready
	h.mu.Lock()
	for _, id := range h.ids {
		g := h.groups[id]
		if !h.underRaft(func() {
			if g.rn.HasReady() {
				rds = append(rds, ready{g: g, rd: g.rn.Ready()})
			}
		}) {
			err := h.failure
			h.mu.Unlock()
			return err
		}
	}
	h.mu.Unlock()
	if len(rds) == 0 {
		return nil
	}
	// The fields of a group read below without h.mu (soft, term, applied,
	// ls's bounds and hard state) are written only by this goroutine,
	// under h.mu.
	for i := range rds {
		r := &rds[i]
		early := keepsVote(r.rd.HardState, r.g.ls.hard)
		for _, m := range r.rd.Messages {
			if early && sendsEarly(m) {
				h.tr.Send(m.GetTo(), Message{Group: r.g.id, Raft: m})
			} else {
				r.late = append(r.late, m)
			}
		}
	}
	for i := range rds {
		r := &rds[i]
		if !appliesFirst(r.g, r.rd) {
			continue
		}
		a, outs, err := h.applyWithRoom(r.g, r.rd.CommittedEntries, r.rd.HardState)
		if err != nil {
			return err
		}
		h.mu.Lock()
		if r.rd.HardState != nil && !raft.IsEmptyHardState(r.rd.HardState) {
			r.g.ls.hard = r.rd.HardState
		}
		h.noteSoft(r.g, r.rd.SoftState, r.rd.HardState)
		h.noteApplied(r.g, a, r.rd.CommittedEntries, outs)
		h.mu.Unlock()
		r.first = true
	}
	// Persist: snapshots, entries and hard states of every group, in one
	// batch. It is synced only when Raft needs it durable (raft.MustSync:
	// new entries, a new term or vote) or it installs a snapshot. A hard
	// state that only moves the commit index is not synced, as etcd's own
	// WAL does: a crash that loses it leaves an older commit index, which
	// the leader hands out again, and every later write is lost with it
	// (the write-ahead log is written in order), the applied state among
	// them, so the applied index never passes the commit index restored.
	//
	// A snapshot is installed first, on its own (installSnapshot: an
	// atomic ingestion of its keyspace and Raft state, durable when it
	// returns); the batch then adds the Ready's entries after it.
	for _, r := range rds {
		if r.rd.Snapshot != nil && !raft.IsEmptySnap(r.rd.Snapshot) {
			if err := h.installSnapshot(r.g, r.rd.Snapshot, r.rd.HardState); err != nil {
				return err
			}
		}
	}
	lasts := make([]uint64, len(rds))
	persist := func() error {
		b := h.st.NewBatch()
		sync := false
		for i, r := range rds {
			g, rd := r.g, r.rd
			lasts[i] = g.ls.last
			if rd.Snapshot != nil && !raft.IsEmptySnap(rd.Snapshot) {
				lasts[i] = rd.Snapshot.GetMetadata().GetIndex()
				sync = true
			}
			if len(rd.Entries) > 0 {
				last, err := g.ls.appendFrom(b, lasts[i], rd.Entries) // replaces from the first new entry on
				if err != nil {
					b.Close()
					return err
				}
				lasts[i] = last
				sync = true
			}
			if rd.HardState != nil && !raft.IsEmptyHardState(rd.HardState) && !r.first {
				if err := g.ls.setHard(b, rd.HardState); err != nil {
					b.Close()
					return err
				}
				sync = sync || raft.MustSync(rd.HardState, g.ls.hard, 0)
			}
		}
		// Most Readys write nothing (heartbeats and their answers, reads, an
		// acknowledgement stepped): Pebble would still log an empty batch.
		commit := b.CommitNoSync
		switch {
		case b.Empty():
			commit = func() error { b.Close(); return nil }
		case sync:
			commit = b.Commit
		}
		return commit()
	}
	if err := h.commitWithRoom(persist); err != nil {
		return fmt.Errorf("replication: persist: %w", err)
	}
	h.mu.Lock()
	for i, r := range rds {
		g, rd := r.g, r.rd
		g.ls.last = lasts[i]
		if rd.HardState != nil && !raft.IsEmptyHardState(rd.HardState) {
			g.ls.hard = rd.HardState
		}
		if rd.Snapshot != nil && !raft.IsEmptySnap(rd.Snapshot) {
			md := rd.Snapshot.GetMetadata()
			g.ls.trunc = bounds{index: md.GetIndex(), term: md.GetTerm(), conf: md.GetConfState()}
			g.ls.reset() // the log starts after the snapshot
			a, err := snapshotApplied(rd.Snapshot.GetData())
			if err != nil {
				h.mu.Unlock()
				return err
			}
			g.applied = a
			g.above = nil
			h.advancedLocked()
		}
		g.ls.appended(rd.Entries)
		h.noteSoft(g, rd.SoftState, rd.HardState)
		for _, rs := range rd.ReadStates {
			if len(rs.RequestCtx) != 8 {
				continue
			}
			id := binary.BigEndian.Uint64(rs.RequestCtx)
			if w, ok := g.reads[id]; ok {
				delete(g.reads, id)
				g.readable = append(g.readable, readWait{rs.Index, w})
			}
		}
	}
	h.mu.Unlock()
	for _, r := range rds {
		for _, m := range r.late {
			h.tr.Send(m.GetTo(), Message{Group: r.g.id, Raft: m})
		}
	}
	// Apply what is committed, then fail what a lost leadership leaves
	// pending.
	for _, r := range rds {
		var (
			a    applied
			outs []outcome
		)
		if !r.first {
			var err error
			if a, outs, err = h.applyWithRoom(r.g, r.rd.CommittedEntries, nil); err != nil {
				return err
			}
		}
		h.mu.Lock()
		if !r.first {
			h.noteApplied(r.g, a, r.rd.CommittedEntries, outs)
		}
		if r.g.soft.RaftState != raft.StateLeader {
			r.g.settled = false
			for id, w := range r.g.pending {
				w.finish(ErrIndeterminate)
				delete(r.g.pending, id)
			}
		}
		h.mu.Unlock()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	again := false
	for _, r := range rds {
		// Advance steps the leader's own acknowledgement of the Ready's
		// entries, which may complete a quorum by itself — a group of one
		// voter's always does — and so commit them: that makes a Ready
		// that no message, proposal or tick announces, and the driver is
		// woken for it. Without this the commit waited for the next tick
		// (a one-member cluster's writes took 49 ms at p50 with the 100 ms
		// tick; TestOneVoterCommits).
		if !h.underRaft(func() {
			r.g.rn.Advance(r.rd)
			again = again || r.g.rn.HasReady()
		}) {
			return h.failure
		}
		h.serveReads(r.g)
		// NB: under h.mu, unlike the writes above: between its batch and
		// the bounds kept in memory, the log would answer for entries it
		// no longer holds. It runs once every LogKeep entries.
		if err := h.truncate(r.g); err != nil {
			return err
		}
	}
	if again {
		h.nudge()
	}
	return nil
}

// sendsEarly reports whether m may be sent before the state of its Ready
// is durable: every message but those that vouch for that state, which
// are an acknowledgement of appended entries (MsgAppResp) and a vote
// (MsgVoteResp, MsgPreVoteResp), rejections included. That is etcd raft's
// own rule for asynchronous storage writes (raft.go, send: those three
// wait in msgsAfterAppend until the unstable state is durable, every other
// message goes out at once); a leader's appends, heartbeats and snapshots
// go early, so the leader writes its log while its followers write theirs
// (Raft thesis §10.2.1). The leader's own acknowledgement of its entries
// is stepped only at Advance, after the persist, so it counts them toward
// a commit only once they are durable here. Raft's synchronous contract
// is stricter (no message before the Ready's hard state is durable), so
// keepsVote must also hold.
func sendsEarly(m *pb.Message) bool {
	switch m.GetType() {
	case pb.MsgAppResp, pb.MsgVoteResp, pb.MsgPreVoteResp:
		return false
	}
	return true
}

// keepsVote reports whether hard state hs, the one a Ready asks to persist
// (nil when unchanged), keeps the term and vote of durable, the one
// persisted: then the Ready's messages speak for no term or vote that a
// crash could take back. A leader's Readys always keep them (its term and
// vote were persisted when it campaigned).
func keepsVote(hs, durable *pb.HardState) bool {
	if hs == nil || raft.IsEmptyHardState(hs) {
		return true
	}
	return hs.GetTerm() == durable.GetTerm() && hs.GetVote() == durable.GetVote()
}

// appliesFirst reports whether rd's committed entries may be applied, with
// rd's hard state in the same batch, before rd's entries and snapshot are
// persisted: they are all in g's durable log already, rd installs no
// snapshot and overwrites none of them, and rd's hard state keeps the
// durable term and vote and commits nothing beyond the durable log. A crash
// then finds either the apply with the hard state that commits it, or
// neither, whatever became of rd's new entries: the applied index never
// passes the commit index restored, nor that the log's last index.
func appliesFirst(g *group, rd raft.Ready) bool {
	ents := rd.CommittedEntries
	if len(ents) == 0 || (rd.Snapshot != nil && !raft.IsEmptySnap(rd.Snapshot)) {
		return false
	}
	last := ents[len(ents)-1].GetIndex()
	if last > g.ls.last || (len(rd.Entries) > 0 && rd.Entries[0].GetIndex() <= last) {
		return false
	}
	if hs := rd.HardState; hs != nil && !raft.IsEmptyHardState(hs) {
		return keepsVote(hs, g.ls.hard) && hs.GetCommit() <= g.ls.last
	}
	return true
}

// noteSoft follows a group's term and leadership; a new term is not
// settled until an entry of it applies. h.mu is held.
func (h *Host) noteSoft(g *group, soft *raft.SoftState, hard *pb.HardState) {
	if hard != nil && hard.GetTerm() > g.term {
		g.term = hard.GetTerm()
		g.settled = false
	}
	if soft != nil {
		g.soft = *soft
	}
}

// outcome is how the apply of a proposal of this node ended.
type outcome struct {
	id  uint64
	err error
}

// storeFailure is what logStore panics with when the store fails under a
// Raft call: Raft itself panics on any error of its storage but a few it
// expects, with no way to go on, so the failure is carried out of Raft as
// a panic and recovered where the host called in (underRaft).
type storeFailure struct{ err error }

// underRaft runs f, a call into a group's RawNode, with h.mu held, and
// reports whether it returned. A storeFailure it raises stops the host:
// h.failure records it, every later call answers ErrStopped, and Run
// returns it, so the node stops with the store's error (a bug hunt saw a
// log read after a failed write panic the process from a proposal). Other
// panics go on.
func (h *Host) underRaft(f func()) (ok bool) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		sf, isStore := r.(storeFailure)
		if !isStore {
			panic(r)
		}
		if h.failure == nil {
			h.failure = sf.err
			h.failed.Store(true)
		}
		h.stopped = true
		h.nudge()
		ok = false
	}()
	f()
	return true
}

// roomPause bounds the pause between a write the store refused for want of
// space and the next attempt (commitWithRoom).
const roomPause = time.Second

// commitWithRoom runs commit, which builds a store batch and commits it,
// and, while the store refuses it for want of space (*store.DiskFullError:
// nothing was written), runs it again after a pause, until it goes through
// or the driver stops. So a node whose disk is full stalls, as a paused one
// does: it neither persists nor applies, its peers go on without it (the
// groups it leads elect others, hearing no heartbeat), and once space
// returns it catches up. Stopping instead made it exit at the disk's floor
// and fail again at every restart until space was freed (a bug hunt).
// Without Run (the simulator) it does not wait.
func (h *Host) commitWithRoom(commit func() error) error {
	pause := 10 * time.Millisecond
	logged := false
	for {
		err := commit()
		if _, full := errors.AsType[*store.DiskFullError](err); !full || h.done == nil {
			if logged && err == nil {
				h.cfg.Logger.Info("disk space is back: Raft goes on on this node")
			}
			return err
		}
		if !logged {
			h.cfg.Logger.Error("the disk is full: Raft stalls on this node (it neither persists nor applies) until space returns; "+
				"its peers go on without it", "err", err)
			logged = true
		}
		select {
		case <-h.done:
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, roomPause)
	}
}

// applyWithRoom is apply, retried while the store refuses its batch for want
// of space (commitWithRoom): apply changes nothing until its batch commits.
func (h *Host) applyWithRoom(g *group, ents []*pb.Entry, hs *pb.HardState) (a applied, outs []outcome, err error) {
	err = h.commitWithRoom(func() error {
		var err error
		a, outs, err = h.apply(g, ents, hs)
		return err
	})
	return a, outs, err
}

// apply applies committed entries to g's keyspace, one store batch for
// them all (with hard state hs, unless nil), and returns g's new applied
// state and the outcomes of this node's proposals among them, for
// noteApplied to record. It runs without h.mu, on the driver's goroutine.
func (h *Host) apply(g *group, ents []*pb.Entry, hs *pb.HardState) (applied, []outcome, error) {
	a := g.applied
	if len(ents) == 0 {
		return a, nil, nil
	}
	a.lsns = nil
	b := h.st.NewBatch()
	defer b.Close()
	if hs != nil && !raft.IsEmptyHardState(hs) {
		if err := g.ls.setHard(b, hs); err != nil {
			return a, nil, err
		}
	}
	var outs []outcome
	for _, e := range ents {
		if e.GetIndex() <= a.Index {
			continue // applied already (a snapshot covered it)
		}
		a.Index = e.GetIndex()
		switch e.GetType() {
		case pb.EntryConfChange, pb.EntryConfChangeV2:
			// Membership is static in this stage: every group keeps the
			// voters it was created with, and none proposes a change.
			return a, nil, fmt.Errorf("replication: group %d: configuration change at index %d not supported", g.id, e.GetIndex())
		}
		if len(e.GetData()) == 0 {
			continue // a new leader's empty entry
		}
		env, err := decodeEnvelope(e.GetData())
		if err != nil {
			return a, nil, fmt.Errorf("replication: group %d: entry %d: %w", g.id, e.GetIndex(), err)
		}
		var outcomeErr error
		if env.Term != e.GetTerm() {
			outcomeErr = ErrNotApplied // evaluated under another leadership
		} else {
			if env.Kind == KindBatch {
				if err := b.ApplyRepr(env.Repr); err != nil {
					return a, nil, fmt.Errorf("replication: group %d: entry %d: %w", g.id, e.GetIndex(), err)
				}
			}
			a.LSN = max(a.LSN, env.LSN)
			a.Stable = max(a.Stable, env.Stable)
			a.lsns = append(a.lsns, env.LSNs...)
		}
		if env.node == h.id {
			outs = append(outs, outcome{env.id, outcomeErr})
		}
	}
	b.Set(appliedKey(g.id), a.encode())
	// Not synced: the entries are durable in the log (synced before they
	// could commit), and a crash that loses this batch loses every later
	// one too (the write-ahead log is written in order), so the restarted
	// replica finds its applied index before them and applies them again.
	if err := b.CommitNoSync(); err != nil {
		return a, nil, fmt.Errorf("replication: group %d: apply: %w", g.id, err)
	}
	return a, outs, nil
}

// noteApplied records what apply applied of ents: g's applied state, whether
// it settles this node's leadership, and the outcomes of its proposals,
// which it hands to their waiters. h.mu is held.
func (h *Host) noteApplied(g *group, a applied, ents []*pb.Entry, outs []outcome) {
	if len(ents) == 0 {
		return
	}
	g.applied = a
	g.noteAbove(a.lsns)
	g.applied.lsns = nil
	h.advancedLocked()
	last := ents[len(ents)-1]
	if g.soft.RaftState == raft.StateLeader && last.GetTerm() == g.term {
		if !g.settled && h.cfg.Settled != nil {
			h.cfg.Settled(g.id)
		}
		g.settled = true
	}
	for _, o := range outs {
		if w, ok := g.pending[o.id]; ok {
			delete(g.pending, o.id)
			w.finish(o.err)
		}
	}
}

// noteAbove adds the LSNs of proposals just applied to g.above and drops
// those the stable mark has passed.
func (g *group) noteAbove(lsns []uint64) {
	for _, l := range lsns {
		if l <= g.applied.Stable {
			continue
		}
		i, found := slices.BinarySearch(g.above, l)
		if !found {
			g.above = slices.Insert(g.above, i, l)
		}
	}
	i, _ := slices.BinarySearch(g.above, g.applied.Stable+1)
	g.above = g.above[i:]
	if n := len(g.above); n > maxAbove {
		g.above = g.above[n-maxAbove:]
	}
}

// serveReads answers the reads whose index g has applied.
func (h *Host) serveReads(g *group) {
	keep := g.readable[:0]
	for _, r := range g.readable {
		if r.index <= g.applied.Index {
			r.w.finish(nil)
		} else {
			keep = append(keep, r)
		}
	}
	g.readable = keep
}

// truncate drops applied entries beyond the LogKeep most recent.
func (h *Host) truncate(g *group) error {
	if g.applied.Index < g.ls.trunc.index+2*h.cfg.LogKeep {
		return nil
	}
	to := g.applied.Index - h.cfg.LogKeep
	term, err := g.ls.term(to)
	if err != nil {
		return err
	}
	t := bounds{index: to, term: term, conf: g.ls.trunc.conf}
	b := h.st.NewBatch()
	defer b.Close()
	b.DeleteSpan(entrySpan(g.id, g.ls.trunc.index+1, to+1))
	if err := g.ls.setBounds(b, t); err != nil {
		return err
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("replication: group %d: truncate: %w", g.id, err)
	}
	g.ls.trunc = t
	g.ls.truncated(t.index)
	return nil
}

// AppliedLSN returns the largest LSN that group's replica in st has
// applied (every LSN its keyspace holds is at most that), and whether st
// holds the group: for reading a stopped member's store (partita check),
// whose keyspaces' LSNs are the groups', not the local reservations'.
func AppliedLSN(st *store.Store, group uint64) (uint64, bool, error) {
	v, err := st.Get(appliedKey(group))
	if errors.Is(err, store.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	a, err := decodeApplied(v)
	if err != nil {
		return 0, false, fmt.Errorf("replication: group %d: %w", group, err)
	}
	return a.LSN, true, nil
}
