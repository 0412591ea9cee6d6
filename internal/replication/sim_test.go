package replication

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/cryptotest"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/cockroachdb/pebble/v2/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/store"
)

// The deterministic simulation (docs/cluster.md, "How it is proven"): three
// hosts in one goroutine, a seeded network that drops, delays, duplicates
// and reorders messages and cuts nodes off, crashes that keep only what was
// synced (Pebble's crash-simulating filesystem), pauses (SIGSTOP), clients
// writing through Replica (LSNs taken, proposals in shuffled order) and
// reading logical partitions, writes given up on (an indeterminate Commit,
// its proposal kept in doubt), session reads checked against
// Replica.Visible, change feeds read to each node's stable mark
// (sim_feed_test.go), leadership transfers, and logical partitions moved
// from their group to a new one by the separation protocol
// (sim_move_test.go).
// Every history is checked with porcupine (linearizable per logical
// partition, across its moves; a multi-key write as one operation) and the
// replicas must converge. The simulator owns every source of
// nondeterminism, so a seed replays a run exactly:
//
//	SIM_SEED=<seed> go test -run TestSimulation ./internal/replication
//
// make sim runs many seeds (SIM_RUNS) of more steps (SIM_STEPS).

const (
	simNodes  = 3
	simGroups = 2
	simLPs    = 4 // logical partitions; lp starts in group lp%simGroups+1
	simKeys   = 3 // keys per logical partition
)

func TestSimulation(t *testing.T) {
	runs, steps := envInt(t, "SIM_RUNS", 3), envInt(t, "SIM_STEPS", 1500)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SIM_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SIM_SEED: %v", err)
		}
		seed, runs = v, 1
	}
	for i := range runs {
		s := seed + uint64(i)
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			// Raft draws its election timeouts from crypto/rand.
			cryptotest.SetGlobalRandom(t, s)
			if err := runSim(t, s, steps); err != nil {
				t.Fatalf("seed %d: %v\nreplay: SIM_SEED=%d SIM_STEPS=%d go test -run TestSimulation ./internal/replication", s, err, s, steps)
			}
		})
	}
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

type inflight struct {
	at, seq int64
	to      uint64
	m       Message
}

type simNode struct {
	id uint64
	fs *vfs.MemFS
	st *store.Store
	h  *Host
	// local and reps are the engine's seam over this node's store: writes
	// take their LSNs and propose through a Replica per group, as the
	// engine's transactions do, and session reads ask it what is visible.
	local *replica.Local
	reps  map[uint64]*Replica
	down  int64 // the step it comes back at; 0 when up
	// paused is the step a paused node (SIGSTOP) resumes at; 0 when it
	// runs. A paused node keeps its state and its messages wait for it,
	// but it neither ticks nor processes, so it still believes what it
	// believed (that it leads, say) when it resumes.
	paused int64
	// view is the group this node believes each logical partition is in:
	// its copy of the catalog, which follows sim.route with a lag.
	view [simLPs]uint64
}

// simOp is a client operation in flight.
type simOp struct {
	client int
	node   *simNode
	lp     int
	group  uint64 // the group it was served by
	write  bool
	vals   [simKeys]string // a write's values ("" leaves the key alone)
	// appended: the write read key 0 at the leader and wrote it back with
	// this suffix (a read-modify-write, evaluated like a transaction).
	appended string
	call     int64
	w        *Waiter
	// A write's: the Replica it took its LSN from (released when its
	// outcome is known), the LSN and the transaction's first, the batch
	// until it is proposed, and num, the number its value of key 0 ends
	// with (every write sets or appends to key 0).
	rep        *Replica
	lsn, first uint64
	b          replica.Batch
	num        int
}

type lpState [simKeys]string

type sim struct {
	rng     *rand.Rand
	now     int64
	seq     int64
	nodes   []*simNode
	queue   []inflight
	cut     map[uint64]int64 // node → step its links heal at
	ops     []*simOp
	history []porcupine.Operation
	nextVal int
	stats   struct {
		writes, reads, indeterminate, crashes, cuts, transfers int
		snapshots                                              int
		moves, abandoned, fenced                               int
		sessions, sessionWaits, pauses                         int
		gaveUp                                                 int // writes whose Commit stopped waiting
		feedReads, feedVersions, feedUndrained, feedAbove      int
		movedSessions                                          int // session reads checked in a group the partition moved to
	}
	// The catalog: the group each logical partition is in, the group it is
	// being moved to (0: none), every group made so far, and the move or
	// settling under way (sim_move_test.go).
	route  [simLPs]uint64
	moving [simLPs]uint64
	// lastMoved is the logical partition most recently moved (-1: none),
	// which a third of the session reads pick: its tokens from before the
	// move are the ones checked in a group they were not issued by.
	lastMoved int
	groups    []uint64
	move      *simMove
	movesOn   bool // start moves (runSim); settling one under way goes on regardless
	// failedSnaps are snapshots the network lost, to report to their
	// senders (a transport learns of the loss when its stream fails).
	failedSnaps []inflight
	// evaluated are the writes this step evaluated, each with its LSN
	// taken; they are proposed at the step's end in a random order, as
	// transactions on different logical partitions commit in another
	// order than they took their LSNs.
	evaluated []*simOp
	// lastAcked is, per logical partition, the acknowledged write with
	// the largest num: what a session holding its token must see.
	lastAcked [simLPs]*simOp
	// sessionErr is the first session read that missed its write.
	sessionErr error
	// readers follow the logical partitions' change feeds
	// (sim_feed_test.go); feedErr is the first violation they found.
	readers []*feedReader
	feedErr error
}

type simTransport struct {
	s    *sim
	from uint64
}

func (tr simTransport) Send(to uint64, m Message) {
	s := tr.s
	if s.cut[tr.from] > s.now || s.cut[to] > s.now || s.rng.IntN(100) < 3 {
		if IsSnapshot(m) {
			s.failedSnaps = append(s.failedSnaps, inflight{to: to, m: m})
		}
		return // cut off, or dropped
	}
	copies := 1
	if s.rng.IntN(100) < 2 {
		copies = 2 // duplicated
	}
	for range copies {
		s.seq++
		s.queue = append(s.queue, inflight{at: s.now + 1 + int64(s.rng.IntN(4)), seq: s.seq, to: to,
			m: Message{Group: m.Group, Raft: proto.Clone(m.Raft).(*pb.Message)}})
	}
}

func (s *sim) open(n *simNode) error {
	st, err := store.Open(store.Options{Dir: "data", FS: n.fs, Sync: true})
	if err != nil {
		return err
	}
	h, err := Open(st, n.id, simTransport{s, n.id}, Config{LogKeep: 3})
	if err != nil {
		st.Close()
		return err
	}
	local, err := replica.OpenLocal(context.Background(), st, nil)
	if err != nil {
		st.Close()
		return err
	}
	n.st, n.h, n.local, n.reps = st, h, local, map[uint64]*Replica{}
	return s.observe(n)
}

// rep returns node n's Replica of group g.
func (n *simNode) rep(g uint64) (*Replica, error) {
	if r := n.reps[g]; r != nil {
		return r, nil
	}
	lr, err := n.local.Replica(g)
	if err != nil {
		return nil, err
	}
	r := NewReplica(n.h, g, lr, time.Second)
	n.reps[g] = r
	return r, nil
}

// running reports whether n is up and not paused.
func (n *simNode) running() bool { return n.down == 0 && n.paused == 0 }

// relKey is lpKey inside the group's keyspace (a Replica batch's key).
func relKey(lp, k int) []byte {
	return fmt.Appendf(nil, "\x02lp%d/k%d", lp, k)
}

// lastNum returns the number key 0's value ends with ("v12|a15": 15).
func lastNum(v string) int {
	i := strings.LastIndexAny(v, "va")
	if i < 0 {
		return 0
	}
	n, _ := strconv.Atoi(v[i+1:])
	return n
}

func lpKey(group uint64, lp, k int) []byte {
	return append(replica.KeyspacePrefix(group), fmt.Sprintf("\x02lp%d/k%d", lp, k)...)
}

// newSim returns a simulation of seed: simNodes hosts, each a replica of
// groups 1..simGroups. The caller closes it.
func newSim(seed uint64) (*sim, error) {
	s := &sim{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), cut: map[uint64]int64{}, lastMoved: -1}
	for g := uint64(1); g <= simGroups; g++ {
		s.groups = append(s.groups, g)
	}
	for lp := range simLPs {
		s.route[lp] = uint64(lp%simGroups + 1)
		for range feedReaders {
			s.readers = append(s.readers, &feedReader{lp: lp, got: map[int]bool{}})
		}
	}
	for i := range simNodes {
		n := &simNode{id: uint64(i + 1), fs: vfs.NewCrashableMem()}
		if err := s.open(n); err != nil {
			s.close()
			return nil, err
		}
		s.nodes = append(s.nodes, n)
	}
	return s, nil
}

// close closes the nodes' stores.
func (s *sim) close() {
	for _, n := range s.nodes {
		if n.st != nil {
			n.st.Close()
		}
	}
}

func runSim(t *testing.T, seed uint64, steps int) error {
	s, err := newSim(seed)
	if err != nil {
		return err
	}
	defer s.close()
	s.movesOn = true
	for step := 0; step < steps; step++ {
		faults := step < steps-300 // the last steps heal and settle
		if err := s.step(faults, faults); err != nil {
			return err
		}
	}
	for _, op := range s.ops { // still pending: unknown outcome
		if op.write {
			s.finishWrite(op, ErrIndeterminate)
		}
	}
	s.ops = nil
	t.Logf("seed %d: %d steps, %d writes, %d reads (%d indeterminate), %d session reads (%d in a group moved to, %d not yet visible), %d crashes, %d cuts, %d pauses, %d leadership transfers, %d writes given up, "+
		"%d moves completed, %d abandoned, %d operations refused by a fence, %d snapshots received, %d change feed reads delivering %d versions (%d readers not drained, %d versions above a drained position)",
		seed, steps, s.stats.writes, s.stats.reads, s.stats.indeterminate, s.stats.sessions, s.stats.movedSessions, s.stats.sessionWaits, s.stats.crashes, s.stats.cuts, s.stats.pauses, s.stats.transfers, s.stats.gaveUp,
		s.stats.moves, s.stats.abandoned, s.stats.fenced, s.stats.snapshots, s.stats.feedReads, s.stats.feedVersions, s.stats.feedUndrained, s.stats.feedAbove)
	if s.sessionErr != nil {
		return s.sessionErr
	}
	if err := s.drainFeeds(); err != nil {
		return err
	}
	if err := s.converged(); err != nil {
		return err
	}
	return s.linearizable()
}

// step runs one tick: deliveries, ticks, processing, outcomes, new
// operations and (when faults) new failures.
func (s *sim) step(ops, faults bool) error {
	s.now++
	for _, n := range s.nodes {
		if n.down != 0 && n.down <= s.now {
			if err := s.open(n); err != nil {
				return fmt.Errorf("restart node %d: %w", n.id, err)
			}
			n.down = 0
		}
		if n.paused != 0 && n.paused <= s.now {
			n.paused = 0
			// Resumed: before it hears from anyone, it may serve a read
			// (what SIGCONT does to a node whose clients' requests wait).
			s.sessionReadAt(n, s.rng.IntN(simLPs))
		}
	}
	slices.SortFunc(s.queue, func(a, b inflight) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return int(a.seq - b.seq)
	})
	i := 0
	var held []inflight // for paused nodes: delivered when they resume
	for ; i < len(s.queue) && s.queue[i].at <= s.now; i++ {
		f := s.queue[i]
		n := s.nodes[f.to-1]
		if n.paused != 0 && !IsSnapshot(f.m) {
			f.at = n.paused
			held = append(held, f)
			continue
		}
		up := n.down == 0 && n.paused == 0 && s.cut[f.to] <= s.now
		if IsSnapshot(f.m) {
			// The stream runs now, from the sender's store as it is now;
			// a sender that crashed meanwhile sends nothing.
			if from := s.nodes[f.m.Raft.GetFrom()-1]; from.down == 0 {
				if up && from.paused == 0 && s.cut[from.id] <= s.now {
					if err := shipSnapshot(from.h, n.h, f.m); err == nil {
						s.stats.snapshots++
					}
				} else {
					from.h.ReportSnapshot(f.m.Group, f.to, false)
				}
			}
			continue
		}
		if up {
			n.h.Step(f.m)
		}
	}
	s.queue = append(s.queue[i:], held...)
	for _, f := range s.failedSnaps {
		if from := s.nodes[f.m.Raft.GetFrom()-1]; from.down == 0 {
			from.h.ReportSnapshot(f.m.Group, f.to, false)
		}
	}
	s.failedSnaps = s.failedSnaps[:0]
	for _, n := range s.nodes {
		if n.running() {
			n.h.Tick()
			if err := n.h.Process(); err != nil {
				return fmt.Errorf("node %d: %w", n.id, err)
			}
		}
	}
	s.outcomes()
	if err := s.advanceMove(faults); err != nil {
		return err
	}
	for _, n := range s.nodes {
		if n.running() && s.rng.IntN(10) == 0 {
			if err := s.observe(n); err != nil {
				return err
			}
		}
	}
	if ops {
		for range 2 {
			if s.rng.IntN(100) < 60 {
				if err := s.startOp(); err != nil {
					return err
				}
			}
		}
		s.proposeEvaluated()
		if s.rng.IntN(100) < 30 {
			s.sessionRead()
		}
		if s.rng.IntN(100) < 30 {
			s.feedRead()
		}
	}
	if faults {
		if err := s.fault(); err != nil {
			return err
		}
		s.transfer()
	}
	return nil
}

// transfer now and then asks a group's leader to hand its leadership to
// another node (leader balance's move), which it starts only when it can
// end cleanly (Host.TransferLeader); writes go on meanwhile.
func (s *sim) transfer() {
	if s.rng.IntN(1000) >= 30 {
		return
	}
	g := s.groups[s.rng.IntN(len(s.groups))]
	to := uint64(1 + s.rng.IntN(simNodes))
	for _, n := range s.nodes {
		if n.running() && n.h.TransferLeader(g, to) == nil {
			s.stats.transfers++
		}
	}
}

// simGiveUp is how many steps a write waits for its outcome before its
// Commit may give up (the engine's r.wait): it then answers indeterminate
// and its transaction ends (the logical partition's lock released), its
// proposal still in the log.
const simGiveUp = 5

// outcomes records the operations whose waiters answered, and gives up on
// some writes that waited long.
func (s *sim) outcomes() {
	keep := s.ops[:0]
	for _, op := range s.ops {
		select {
		case err := <-op.w.Done():
			if op.write {
				s.finishWrite(op, err)
			} else if err == nil {
				s.finishRead(op)
			}
		default:
			if op.write && s.now-op.call/2 > simGiveUp && s.rng.IntN(4) == 0 {
				s.stats.gaveUp++
				op.rep.gaveUp(op.first, op.w)
				s.finishWrite(op, ErrIndeterminate)
				continue
			}
			keep = append(keep, op)
		}
	}
	s.ops = keep
}

func (s *sim) finishWrite(op *simOp, err error) {
	if op.rep != nil {
		op.rep.ReleaseLSN(op.first)
	}
	switch {
	case err == nil:
		s.stats.writes++
		if last := s.lastAcked[op.lp]; last == nil || op.num > last.num {
			s.lastAcked[op.lp] = op
		}
		s.history = append(s.history, porcupine.Operation{ClientId: op.client, Input: op, Call: op.call, Output: nil, Return: s.now*2 + 1})
	case err == ErrIndeterminate:
		s.stats.indeterminate++
		s.history = append(s.history, porcupine.Operation{ClientId: op.client, Input: op, Call: op.call, Output: nil, Return: math.MaxInt64})
	}
	// ErrNotApplied: never applied, not part of the history.
}

func (s *sim) finishRead(op *simOp) {
	var got lpState
	g := op.group
	for k := range simKeys {
		v, err := op.node.st.Get(lpKey(g, op.lp, k))
		if err == nil {
			got[k] = string(v)
		}
	}
	// As the engine's readers do, the fence is checked after the read: a
	// read of a moved logical partition fails (and is not in the history).
	if fenced(op.node.st, g, op.lp) {
		s.stats.fenced++
		// The node syncs its catalog: it routes to the new group once it
		// has a replica of it (observe makes it).
		if _, err := op.node.h.Leader(s.route[op.lp]); err == nil {
			op.node.view[op.lp] = s.route[op.lp]
		}
		return
	}
	s.stats.reads++
	s.history = append(s.history, porcupine.Operation{ClientId: op.client, Input: op, Call: op.call, Output: got, Return: s.now*2 + 1})
}

func (s *sim) startOp() error {
	lp := s.rng.IntN(simLPs)
	op := &simOp{client: s.rng.IntN(8), lp: lp, call: s.now * 2}
	if s.rng.IntN(2) == 0 {
		// A read, at any replica, of the group the node believes holds lp.
		n := s.nodes[s.rng.IntN(simNodes)]
		if !n.running() {
			return nil
		}
		op.group = n.view[lp]
		w, err := n.h.ReadIndex(op.group)
		if err != nil {
			return err
		}
		op.node, op.w = n, w
		s.ops = append(s.ops, op)
		return nil
	}
	// A write, at a node that believes it leads the group it believes
	// holds lp (more than one may).
	var leaders []*simNode
	for _, n := range s.nodes {
		if !n.running() {
			continue
		}
		if l, err := n.h.Leader(n.view[lp]); err == nil && l.Settled {
			leaders = append(leaders, n)
		}
	}
	if len(leaders) == 0 {
		return nil
	}
	n := leaders[s.rng.IntN(len(leaders))]
	g := n.view[lp]
	for _, o := range append(s.ops, s.evaluated...) {
		if o.write && o.node == n && o.lp == lp {
			return nil // the logical partition's lock is held until it applies
		}
	}
	if s.holds(n, lp) {
		return nil // a move's cut-over holds the writers off
	}
	if fenced(n.st, g, lp) {
		// The engine's beginTxn: refused, nothing written; the node
		// syncs its catalog.
		s.stats.fenced++
		return s.observe(n)
	}
	op.group = g
	// As an engine transaction: a batch of the settled leader's term, an
	// LSN taken for the write, then the write's effects.
	r, err := n.rep(g)
	if err != nil {
		return err
	}
	b := r.NewBatch(false)
	lsn, err := r.NextLSN(b, &op.first)
	if err != nil {
		b.Close()
		return nil // no longer the settled leader
	}
	if s.rng.IntN(3) == 0 {
		old, err := n.st.Get(lpKey(g, lp, 0))
		if err != nil && err != store.ErrNotFound {
			b.Close()
			r.ReleaseLSN(op.first)
			return err
		}
		s.nextVal++
		op.appended = fmt.Sprintf("|a%d", s.nextVal)
		op.num = s.nextVal
		b.Set(relKey(lp, 0), append(old, op.appended...))
	} else {
		for k := range simKeys {
			if k == 0 || s.rng.IntN(2) == 0 {
				s.nextVal++
				op.vals[k] = fmt.Sprintf("v%d", s.nextVal)
				if k == 0 {
					op.num = s.nextVal
				}
				b.Set(relKey(lp, k), []byte(op.vals[k]))
			}
		}
	}
	b.Set(relFeed(lsn), feedValue(lp, op.num))
	op.node, op.write, op.rep, op.lsn, op.b = n, true, r, lsn, b
	s.evaluated = append(s.evaluated, op)
	return nil
}

// proposeEvaluated proposes the writes this step evaluated, in a random
// order: one that took a smaller LSN may propose after one that took a
// larger, as the engine's transactions on different logical partitions
// do.
func (s *sim) proposeEvaluated() {
	s.rng.Shuffle(len(s.evaluated), func(i, j int) { s.evaluated[i], s.evaluated[j] = s.evaluated[j], s.evaluated[i] })
	for _, op := range s.evaluated {
		w, err := op.rep.propose(op.b)
		op.b.Close()
		op.b = nil
		if err != nil {
			op.rep.ReleaseLSN(op.first) // refused: no effect
			continue
		}
		op.w = w
		s.ops = append(s.ops, op)
	}
	s.evaluated = s.evaluated[:0]
}

// sessionRead is a session read of a logical partition with the token of
// its last acknowledged write, at a random node: the node reads the group
// its copy of the catalog routes the partition to, as the engine resolves
// a token's range (which may be a group the partition moved to since the
// write: its LSNs continue the source's, advanceLSN), and if that group's
// Replica there answers that the token's LSN is visible
// (replica.Replica.Visible, which the API's session check asks), the node
// must hold the write, or a later one, in that group. A session read that
// is not yet visible would wait (or answer 404/1002), and one of a group
// the partition moved out of would be fenced and served again: nothing
// to check.
func (s *sim) sessionRead() {
	lp := s.rng.IntN(simLPs)
	if s.lastMoved >= 0 && s.rng.IntN(3) == 0 {
		lp = s.lastMoved
	}
	s.sessionReadAt(s.nodes[s.rng.IntN(simNodes)], lp)
}

// sessionReadAt is sessionRead of logical partition lp at node m.
func (s *sim) sessionReadAt(m *simNode, lp int) {
	w := s.lastAcked[lp]
	if w == nil || !m.running() || s.sessionErr != nil {
		return
	}
	g := m.view[lp]
	r, err := m.rep(g)
	if err != nil {
		return
	}
	if !r.Visible(w.lsn) {
		s.stats.sessionWaits++
		return
	}
	v, err := m.st.Get(lpKey(g, lp, 0))
	if err != nil && err != store.ErrNotFound {
		return
	}
	if fenced(m.st, g, lp) {
		return // moved away: fenced, served again once the node's catalog follows
	}
	s.stats.sessions++
	if g != w.group {
		s.stats.movedSessions++
	}
	if got := lastNum(string(v)); got < w.num {
		l, _ := m.h.Leader(g)
		s.sessionErr = fmt.Errorf("step %d: session read of lp %d at node %d (leader %d, term %d, settled %v): LSN %d of group %d visible in group %d, "+
			"but key 0 is %q (write %d), older than the write that took the LSN (%d)",
			s.now, lp, m.id, l.ID, l.Term, l.Settled, w.lsn, w.group, g, v, got, w.num)
	}
}

// fault injects, now and then, a crash (keeping only synced data) or a
// node cut off from the others; at most one node is down or cut at a time
// most of the time, and now and then two.
func (s *sim) fault() error {
	if s.rng.IntN(1000) >= 8 {
		return nil
	}
	down := 0
	for _, n := range s.nodes {
		if !n.running() || s.cut[n.id] > s.now {
			down++
		}
	}
	if down >= 2 || (down == 1 && s.rng.IntN(4) != 0) {
		return nil
	}
	n := s.nodes[s.rng.IntN(simNodes)]
	if !n.running() {
		return nil
	}
	switch s.rng.IntN(3) {
	case 0:
		s.stats.cuts++
		s.cut[n.id] = s.now + 20 + int64(s.rng.IntN(60))
		return nil
	case 1:
		s.stats.pauses++
		n.paused = s.now + 20 + int64(s.rng.IntN(60))
		return nil
	}
	s.stats.crashes++
	clone := n.fs.CrashClone(vfs.CrashCloneCfg{})
	n.st.Close()
	n.fs, n.st, n.h = clone, nil, nil
	n.down = s.now + 10 + int64(s.rng.IntN(50))
	keep := s.ops[:0]
	for _, op := range s.ops {
		switch {
		case op.node != n:
			keep = append(keep, op)
		case op.write:
			s.finishWrite(op, ErrIndeterminate)
		}
	}
	s.ops = keep
	return nil
}

// converged checks that every group's replicas hold the same keyspace:
// the same applied index and digest.
func (s *sim) converged() error {
	for _, g := range s.groups {
		var first Digest
		for i, n := range s.nodes {
			d, err := n.h.Digest(context.Background(), g)
			if err != nil {
				return err
			}
			if i == 0 {
				first = d
			} else if d != first {
				return fmt.Errorf("group %d: node %d's keyspace differs from node 1's (applied %d vs %d, %d keys vs %d)",
					g, n.id, d.Applied, first.Applied, d.Keys, first.Keys)
			}
		}
	}
	return nil
}

// linearizable checks the history with porcupine, per logical partition.
func (s *sim) linearizable() error {
	model := porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			parts := make([][]porcupine.Operation, simLPs)
			for _, op := range h {
				lp := op.Input.(*simOp).lp
				parts[lp] = append(parts[lp], op)
			}
			return parts
		},
		Init: func() any { return lpState{} },
		Step: func(state, input, output any) (bool, any) {
			st, op := state.(lpState), input.(*simOp)
			if op.appended != "" {
				st[0] += op.appended
				return true, st
			}
			if op.write {
				for k, v := range op.vals {
					if v != "" {
						st[k] = v
					}
				}
				return true, st
			}
			return output.(lpState) == st, st
		},
		DescribeOperation: func(input, output any) string {
			op := input.(*simOp)
			switch {
			case op.appended != "":
				return fmt.Sprintf("lp%d append %s", op.lp, op.appended)
			case op.write:
				return fmt.Sprintf("lp%d write %v", op.lp, op.vals)
			}
			return fmt.Sprintf("lp%d read → %v", op.lp, output)
		},
	}
	res, info := porcupine.CheckOperationsVerbose(model, s.history, time.Minute)
	switch res {
	case porcupine.Ok:
		return nil
	case porcupine.Unknown:
		return fmt.Errorf("porcupine timed out on %d operations", len(s.history))
	}
	path := fmt.Sprintf("%s/sim-%d.html", os.TempDir(), s.rng.Uint64())
	if f, err := os.Create(path); err == nil {
		_ = porcupine.Visualize(model, info, f)
		f.Close()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "history of %d operations is not linearizable (visualization: %s)", len(s.history), path)
	return fmt.Errorf("%s", b.String())
}
