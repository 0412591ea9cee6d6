package replication

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/store"
)

// Replica is the engine's view of one replicated keyspace on this node
// (replica.Replica): reads see this node's applied state; writes are
// evaluated here and proposed to the group, which this node must lead.
//
// Batches are tagged with the term in which they were created: Commit
// proposes only in that term, so a write whose reads began under one
// leadership cannot be applied under another (docs/cluster.md, invariants
// 1–2). LSNs are issued by the leader above every LSN applied, and travel
// with the proposals (the LSN and the stable mark), so followers know them.
type Replica struct {
	h     *Host
	id    uint64
	local replica.Replica // reads and batches over this node's store
	// wait bounds how long Commit waits for its proposal to apply before
	// answering ErrIndeterminate.
	wait time.Duration

	mu struct {
		sync.Mutex
		term uint64              // the term the sequence below was started in
		next uint64              // the next LSN to issue
		open map[uint64]struct{} // first LSNs of open transactions
		// doubts are the proposals of this term whose Commit gave up
		// waiting (r.wait) before they applied: still in the log, they
		// may yet. Until each is settled the replica takes no other
		// write, and the first LSN of its transaction stays open.
		doubts []doubt
	}
}

// doubt is a proposal in doubt: its transaction's first LSN (0: it took
// none) and the waiter that learns its outcome.
type doubt struct {
	first uint64
	w     *Waiter
}

var _ replica.Replica = (*Replica)(nil)

// NewReplica returns the replica of group id, reading and building batches
// through local (this node's replica.Local keyspace of the same id).
func NewReplica(h *Host, id uint64, local replica.Replica, wait time.Duration) *Replica {
	r := &Replica{h: h, id: id, local: local, wait: wait}
	r.mu.open = map[uint64]struct{}{}
	return r
}

// ID returns the keyspace's id.
func (r *Replica) ID() uint64 { return r.id }

// Get reads key from this node's applied state.
func (r *Replica) Get(key []byte) ([]byte, error) { return r.local.Get(key) }

// NewIter iterates span of this node's applied state.
func (r *Replica) NewIter(span replica.Span, reverse bool) replica.Iter {
	return r.local.NewIter(span, reverse)
}

// Snapshot returns a snapshot of this node's applied state.
func (r *Replica) Snapshot() (replica.Snapshot, error) {
	s, err := r.local.Snapshot()
	if err != nil {
		return nil, err
	}
	return appliedSnapshot{s}, nil
}

// appliedSnapshot is a snapshot of a group's keyspace, whose version is
// the applied index it holds: every change to the keyspace is an entry
// applied (or a Raft snapshot installed) with the applied state written
// in the same store batch (appliedKey), so the snapshot reads its own.
type appliedSnapshot struct{ replica.Snapshot }

// Version returns the snapshot's applied index (Epoch 0); false when the
// keyspace holds no applied state (its group removed).
func (s appliedSnapshot) Version() (replica.Version, bool) {
	v, err := s.Get(appliedRel)
	if err != nil {
		return replica.Version{}, false
	}
	a, err := decodeApplied(v)
	if err != nil {
		return replica.Version{}, false
	}
	return replica.Version{N: a.Index}, true
}

// batch is a Batch tagged with the term it was created in (0: this node
// was not the group's settled leader then, and Commit refuses it), and
// the LSNs issued for its writes (NextLSN), which its proposal carries.
type batch struct {
	replica.Batch
	term  uint64
	lsns  []uint64
	first uint64 // the transaction's first LSN, if it took it here
}

// NewBatch returns a batch tagged with the current term if this node is
// the group's settled leader.
func (r *Replica) NewBatch(indexed bool) replica.Batch {
	b := &batch{Batch: r.local.NewBatch(indexed)}
	if l, err := r.h.Leader(r.id); err == nil && l.Settled {
		b.term = l.Term
	}
	return b
}

// Lead is nil when this node is the group's settled leader, else
// *replica.NotLeaderError naming the leader it knows. A leader whose disk
// is full leads no write of a group that has other voters: it names no
// leader, and the write goes to the others (cluster.Node.Forward), one of
// which leads, or soon will (a full node hands its leaderships over, and a
// driver stalled on its full disk is superseded as a paused one is).
// Before, it answered 507 for writes the others could serve, and went on
// doing so after they had elected a leader it could not hear of (a bug
// hunt: 20,463 writes over two minutes). A sole voter refuses them as a
// single node does (Commit: 507).
func (r *Replica) Lead() error {
	if l, err := r.h.Leader(r.id); err == nil && l.Settled {
		if l.Voters > 1 && r.h.st.Full() {
			return &replica.NotLeaderError{Keyspace: r.id}
		}
		return nil
	}
	return r.notLeader()
}

// Campaign makes this node campaign to lead the group (a separation takes
// a new group's leadership so): Raft's pre-vote wins it only from members
// that have no leader.
func (r *Replica) Campaign() error { return r.h.Campaign(r.id) }

// Sync waits until this node has applied every entry committed when it was
// called (ReadIndex), at most r.wait: a read of its applied state after
// that is linearizable. Raft drops a read request that no leader answers
// (none known, a leader stepping down or transferring its leadership, a
// message lost), so it asks again every readRetry until one is answered.
// After r.wait it fails with replica.ErrNoLeader (and
// replica.ErrUnavailable).
func (r *Replica) Sync(ctx context.Context) error {
	w, err := r.h.ReadIndex(r.id)
	if err != nil {
		return fmt.Errorf("replication: keyspace %d: %w: %w", r.id, replica.ErrUnavailable, err)
	}
	answered, asked := false, 1
	defer func() {
		if !answered || asked > 1 {
			r.h.forgetRead(r.id, w) // the requests not answered, if any
		}
	}()
	t := time.NewTimer(r.wait)
	defer t.Stop()
	again := time.NewTicker(readRetry)
	defer again.Stop()
	for {
		select {
		case err := <-w.Done():
			answered = true
			if err != nil {
				return fmt.Errorf("replication: keyspace %d: %w: %w", r.id, replica.ErrUnavailable, err)
			}
			return nil
		case <-again.C:
			asked++
			if err := r.h.rereadIndex(r.id, w); err != nil {
				return fmt.Errorf("replication: keyspace %d: %w: %w", r.id, replica.ErrUnavailable, err)
			}
		case <-t.C:
			return fmt.Errorf("replication: keyspace %d: within %v: %w: %w", r.id, r.wait, replica.ErrNoLeader, replica.ErrUnavailable)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// readRetry is how long Sync waits for a read index before asking again:
// a healthy group answers in a round trip, and an election takes about a
// second.
const readRetry = 500 * time.Millisecond

// notLeader returns the error of a write on a replica that does not lead.
func (r *Replica) notLeader() error {
	l, _ := r.h.Leader(r.id)
	return &replica.NotLeaderError{Keyspace: r.id, Leader: l.ID}
}

// Commit proposes b and waits until it has applied on this node. Errors:
// *replica.NotLeaderError (nothing proposed), replica.ErrUnavailable (it
// will never apply: safe to retry), replica.ErrIndeterminate (it may yet
// apply), or the batch's own refusal.
//
// A Commit that gives up waiting (r.wait) leaves its proposal in the log,
// where it may yet apply, in this term: until it does, or is known never
// to, Commit refuses every other batch (ErrInDoubt, with ErrNotApplied and
// ErrUnavailable: the write may be retried) and the stable mark stays
// below the transaction's first LSN, whatever ReleaseLSN is told. Another
// write evaluated
// meanwhile would not see the first one's effects, and applied after them
// would undo them (a lost update, and index entries of the first version
// left behind); a change feed read to a mark past it would never deliver
// it. Nothing is lost by refusing: Raft commits in log order, so no later
// write could commit before this one anyway.
func (r *Replica) Commit(b replica.Batch) error {
	var first uint64
	if tb, ok := b.(*batch); ok {
		first = tb.first
	}
	// A leader whose disk is full could not persist the entry: nothing is
	// proposed, which would stall (commitWithRoom) and answer 408. A group
	// with other voters has the write served by them (Lead); a sole voter
	// refuses it as a single node does (507, nothing written).
	if err := r.h.st.Room(0); err != nil {
		if l, lerr := r.h.Leader(r.id); lerr == nil && l.Voters > 1 {
			return &replica.NotLeaderError{Keyspace: r.id}
		}
		df, _ := errors.AsType[*store.DiskFullError](err)
		return &replica.NoSpaceError{Free: df.Free, ResumeAt: df.ResumeAt, Err: err}
	}
	w, err := r.propose(b)
	if err != nil {
		return err
	}
	err = r.await(context.Background(), w) // the engine's seam has no ctx
	if errors.Is(err, errGaveUp) {
		r.gaveUp(first, w)
	}
	return err
}

// gaveUp records that the Commit of the transaction whose first LSN is
// first stopped waiting for w, its proposal's outcome.
func (r *Replica) gaveUp(first uint64, w *Waiter) {
	r.mu.Lock()
	r.mu.doubts = append(r.mu.doubts, doubt{first: first, w: w})
	r.mu.Unlock()
}

// inDoubt reports whether a write committed here is in doubt.
func (r *Replica) inDoubt() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settleLocked()
	return len(r.mu.doubts) > 0
}

// doubtPoll is how often AwaitDoubts looks again.
const doubtPoll = 5 * time.Millisecond

// AwaitDoubts waits until no write committed here is in doubt (see
// Commit), or ctx is done.
func (r *Replica) AwaitDoubts(ctx context.Context) error {
	for r.inDoubt() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("replication: keyspace %d: a write is still in doubt: %w", r.id, ctx.Err())
		case <-time.After(doubtPoll):
		}
	}
	return nil
}

// errGaveUp marks await's error when it stopped waiting for an outcome
// still to come.
var errGaveUp = errors.New("gave up waiting")

// settleLocked forgets the proposals in doubt whose outcome is known now,
// releasing their transactions' first LSNs.
func (r *Replica) settleLocked() {
	keep := r.mu.doubts[:0]
	for _, d := range r.mu.doubts {
		select {
		case <-d.w.Done():
			delete(r.mu.open, d.first)
		default:
			keep = append(keep, d)
		}
	}
	clear(r.mu.doubts[len(keep):])
	r.mu.doubts = keep
}

// propose proposes b, with the LSNs its writes took and this leader's
// stable mark, and returns the waiter of its outcome: Commit without the
// wait (the simulation, which must not block, waits on the Waiter).
func (r *Replica) propose(b replica.Batch) (*Waiter, error) {
	tb, ok := b.(*batch)
	if !ok {
		return nil, fmt.Errorf("replication: keyspace %d: commit of a %T", r.id, b)
	}
	if tb.term == 0 {
		return nil, r.notLeader()
	}
	l, err := r.h.Leader(r.id)
	if err != nil || !l.Settled || l.Term != tb.term {
		return nil, r.notLeader()
	}
	repr, err := replica.BatchRepr(tb.Batch)
	if err != nil {
		return nil, err
	}
	tb.Batch.Close()
	r.mu.Lock()
	// A batch that took no LSN (the engine's own writes: format records,
	// rebuilds) may be this term's first: its sequence starts here too.
	r.startLocked(l)
	if r.settleLocked(); len(r.mu.doubts) > 0 {
		r.mu.Unlock()
		return nil, fmt.Errorf("replication: keyspace %d: %w: %w: %w", r.id, replica.ErrInDoubt, replica.ErrNotApplied, replica.ErrUnavailable)
	}
	lsn, stable := r.mu.next-1, r.stableLocked()
	r.mu.Unlock()
	w, err := r.h.Propose(r.id, Proposal{Kind: KindBatch, Term: tb.term, LSN: lsn, Stable: stable, LSNs: tb.lsns, Repr: repr})
	if err != nil {
		return nil, r.proposeErr(err)
	}
	return w, nil
}

func (r *Replica) proposeErr(err error) error {
	switch {
	case errors.Is(err, ErrNotLeader):
		return r.notLeader()
	case errors.Is(err, ErrNotApplied), errors.Is(err, ErrNoGroup):
		// The group gone from this node (its container deleted, its range
		// moved away and collected) takes no proposal either: nothing was
		// written, and the request served again finds where its data is
		// now, or that it is gone (a race hunt: a write racing its
		// container's deletion answered 500 "no such group").
		return fmt.Errorf("replication: keyspace %d: %w: %w: %w", r.id, replica.ErrNotApplied, replica.ErrUnavailable, err)
	}
	return fmt.Errorf("replication: keyspace %d: %w: %w", r.id, replica.ErrUnavailable, err)
}

// await waits for w's outcome, at most r.wait, or until ctx is done (then
// it returns ctx's error: the outcome is unknown).
func (r *Replica) await(ctx context.Context, w *Waiter) error {
	t := time.NewTimer(r.wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("replication: keyspace %d: %w (%w)", r.id, ctx.Err(), errGaveUp)
	case err := <-w.Done():
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrIndeterminate):
			return fmt.Errorf("replication: keyspace %d: %w", r.id, replica.ErrIndeterminate)
		}
		return r.proposeErr(err)
	case <-t.C:
		return fmt.Errorf("replication: keyspace %d: no outcome after %v: %w (%w)", r.id, r.wait, replica.ErrIndeterminate, errGaveUp)
	}
}

// NextLSN issues the next LSN, if this node is the group's settled leader,
// for a write in b: b's proposal carries it (Proposal.LSNs). A new term's
// sequence starts above every LSN applied (and every LSN this node issued
// before).
func (r *Replica) NextLSN(b replica.Batch, first *uint64) (uint64, error) {
	l, err := r.h.Leader(r.id)
	if err != nil {
		return 0, r.proposeErr(err)
	}
	if !l.Settled {
		return 0, r.notLeader()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.startLocked(l)
	n := r.mu.next
	r.mu.next++
	tb, _ := b.(*batch)
	if *first == 0 {
		*first = n
		r.mu.open[n] = struct{}{}
		if tb != nil {
			tb.first = n
		}
	}
	if tb != nil {
		tb.lsns = append(tb.lsns, n)
	}
	return n, nil
}

// startLocked starts the sequence of leader l's term, unless it has: above
// every LSN applied and every LSN this node issued before.
func (r *Replica) startLocked(l Leader) {
	if r.mu.term != l.Term {
		r.mu.term = l.Term
		r.mu.next = max(r.mu.next, l.LSN+1)
		clear(r.mu.open)
		// Settled in a new term, this node has applied every entry
		// committed before it: an earlier term's proposal in doubt
		// either applied or never will.
		r.mu.doubts = nil
	}
}

// ReleaseLSN ends the hold of the transaction whose first LSN was first,
// or, if its Commit gave up waiting, leaves that to the proposal's outcome
// (Commit).
func (r *Replica) ReleaseLSN(first uint64) {
	if first == 0 {
		return
	}
	r.mu.Lock()
	held := false
	for _, d := range r.mu.doubts {
		held = held || d.first == first
	}
	if !held { // else settleLocked releases it
		delete(r.mu.open, first)
	}
	r.mu.Unlock()
	r.h.signal() // StableLSN may have moved (Host.Advanced)
}

// stableLocked is the leader's stable LSN: below every open transaction's
// first LSN, else the last issued.
func (r *Replica) stableLocked() uint64 {
	r.settleLocked()
	s := r.mu.next - 1
	for f := range r.mu.open {
		s = min(s, f-1)
	}
	return s
}

// StableLSN is the largest LSN at or below which every LSN is applied here
// or abandoned for good: the leader's own mark while it leads (but not
// past the LSNs its log has fixed), else the mark the last applied
// proposal carried.
func (r *Replica) StableLSN() uint64 {
	l, err := r.h.Leader(r.id)
	if err != nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if l.Settled && r.mu.term == l.Term {
		// Not past l.LSN, the largest LSN a committed proposal carried:
		// LSNs issued since and abandoned (a transaction that failed, a
		// proposal refused) are fixed only once a later proposal
		// commits, and a leader deposed before that leaves them to its
		// successor, which issues them again. A change feed read to a
		// mark past them stepped over the successor's writes (the
		// simulation's feed readers: 5 seeds of 100).
		return min(r.stableLocked(), l.LSN)
	}
	return l.Stable
}

// LastLSN is the last LSN issued here while leading, or applied.
func (r *Replica) LastLSN() uint64 {
	l, _ := r.h.Leader(r.id)
	r.mu.Lock()
	defer r.mu.Unlock()
	if l.Settled && r.mu.term == l.Term {
		return r.mu.next - 1
	}
	return l.LSN
}

// Visible reports whether the write that took lsn is applied here: lsn is
// at or below the stable mark applied, or the LSN of a write applied above
// it (Host.LSNApplied), on the leader as on a follower. LastLSN, the
// largest LSN issued or applied, does not tell: proposals apply in log
// order, and a later LSN may be proposed, and applied, before an earlier.
// Nor does this node's leading: a leader paused (SIGSTOP) and resumed
// still believes it leads until it hears of the next term, while the new
// leader issues again the LSNs it had issued to writes that never
// committed (the kill loop read, through such a node, a value two writes
// old with the token of the new leader's write). An LSN applied is the
// one write's everywhere: a leader issues above every LSN an entry it
// has applied carries.
func (r *Replica) Visible(lsn uint64) bool {
	return r.h.LSNApplied(r.id, lsn)
}

// PublishStable proposes a mark carrying this leader's stable LSN when it
// is ahead of the one applied, and waits for it: a write's own proposal
// carries the stable mark from before it committed, so without another
// write the followers' stable mark (their change feeds' horizon) would
// stay one write behind. It does nothing when this node does not lead, or
// the mark is applied already. It returns ctx's error once ctx is done,
// whatever becomes of the mark: a stopping node stops the driver that
// would decide it, and must not wait r.wait for it.
func (r *Replica) PublishStable(ctx context.Context) error {
	l, err := r.h.Leader(r.id)
	if err != nil || !l.Settled {
		return nil
	}
	r.mu.Lock()
	// A leader that has evaluated no write in its term publishes too: the
	// last proposal of the term before may have left the mark behind.
	r.startLocked(l)
	lsn, stable := r.mu.next-1, r.stableLocked()
	r.mu.Unlock()
	if stable <= l.Stable {
		return nil
	}
	w, err := r.h.Propose(r.id, Proposal{Kind: KindMark, Term: l.Term, LSN: lsn, Stable: stable})
	if err != nil {
		return r.proposeErr(err)
	}
	return r.await(ctx, w)
}

// AdvanceLSN makes every LSN issued from now on, by any leader, greater
// than lsn: it proposes the mark and waits until it applies.
func (r *Replica) AdvanceLSN(lsn uint64) error {
	w, err := r.proposeAdvance(lsn)
	if err != nil {
		return err
	}
	return r.await(context.Background(), w) // the engine's seam has no ctx
}

// proposeAdvance is AdvanceLSN's proposal, without the wait (the
// simulation, single-threaded, polls the Waiter).
func (r *Replica) proposeAdvance(lsn uint64) (*Waiter, error) {
	l, err := r.h.Leader(r.id)
	if err != nil {
		return nil, err
	}
	if !l.Settled {
		return nil, r.notLeader()
	}
	r.mu.Lock()
	r.startLocked(l)
	r.mu.next = max(r.mu.next, lsn+1)
	stable := r.stableLocked()
	r.mu.Unlock()
	w, err := r.h.Propose(r.id, Proposal{Kind: KindMark, Term: l.Term, LSN: lsn, Stable: min(stable, lsn)})
	if err != nil {
		return nil, r.proposeErr(err)
	}
	return w, nil
}
