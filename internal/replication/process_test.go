package replication

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/store"
)

// The order of Host.Process (its doc): what goes out before the Ready is
// durable, and what is applied before it. Three hosts in one goroutine,
// driven by hand, on crash-simulating filesystems; a message's durability
// is checked by opening a crash clone of its sender's filesystem taken as
// it is sent (the clone keeps only what was synced).

const (
	procGroup   = 1
	procLogKeep = 4 // small, so that a follower cut off for a few writes needs a snapshot
)

// procNode is a host of the hand-driven cluster.
type procNode struct {
	id  uint64
	mem *vfs.MemFS
	st  *store.Store
	h   *Host
}

// procNet queues the hosts' messages until deliver; check, if set, sees
// each message as it is sent, on the sender's goroutine.
type procNet struct {
	queue []struct {
		to uint64
		m  Message
	}
	check func(from *procNode, m *pb.Message)
	// drop, if set, drops the messages to the nodes it names.
	drop func(to uint64) bool
}

type procTransport struct {
	net  *procNet
	from *procNode
}

func (tr procTransport) Send(to uint64, m Message) {
	if tr.net.check != nil {
		tr.net.check(tr.from, m.Raft)
	}
	if tr.net.drop != nil && tr.net.drop(to) {
		return
	}
	tr.net.queue = append(tr.net.queue, struct {
		to uint64
		m  Message
	}{to, Message{Group: m.Group, Raft: proto.Clone(m.Raft).(*pb.Message)}})
}

// newProcCluster starts three hosts of group procGroup; fsOf, if set, wraps
// a node's filesystem.
func newProcCluster(t *testing.T, net *procNet, fsOf func(id uint64, mem *vfs.MemFS) vfs.FS) []*procNode {
	t.Helper()
	voters := []uint64{1, 2, 3}
	var nodes []*procNode
	for _, id := range voters {
		n := &procNode{id: id, mem: vfs.NewCrashableMem()}
		var fs vfs.FS = n.mem
		if fsOf != nil {
			fs = fsOf(id, n.mem)
		}
		st, err := store.Open(store.Options{Dir: "data", FS: fs, Sync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		h, err := Open(st, id, procTransport{net, n}, Config{LogKeep: procLogKeep})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Create(procGroup, voters); err != nil {
			t.Fatal(err)
		}
		n.st, n.h = st, h
		nodes = append(nodes, n)
	}
	return nodes
}

// deliver steps every queued message at its node.
func deliver(net *procNet, nodes []*procNode) {
	q := net.queue
	net.queue = nil
	for _, e := range q {
		if IsSnapshot(e.m) {
			_ = shipSnapshot(nodes[e.m.Raft.GetFrom()-1].h, nodes[e.to-1].h, e.m)
			continue
		}
		nodes[e.to-1].h.Step(e.m)
	}
}

// settle delivers and processes until no message is left.
func settle(t *testing.T, net *procNet, nodes []*procNode) {
	t.Helper()
	for range 100 {
		for _, n := range nodes {
			if err := n.h.Process(); err != nil {
				t.Fatal(err)
			}
		}
		if len(net.queue) == 0 {
			return
		}
		deliver(net, nodes)
	}
	t.Fatal("the hosts did not settle")
}

// elect makes node 1 the settled leader of procGroup and returns its term.
func elect(t *testing.T, net *procNet, nodes []*procNode) uint64 {
	t.Helper()
	if err := nodes[0].h.Campaign(procGroup); err != nil {
		t.Fatal(err)
	}
	settle(t, net, nodes)
	l, err := nodes[0].h.Leader(procGroup)
	if err != nil || !l.Settled {
		t.Fatalf("node 1 did not settle as leader: %+v, %v", l, err)
	}
	return l.Term
}

// durableLog returns the log state node n's store would have after a crash
// now: only what was synced.
func durableLog(t *testing.T, n *procNode) *logStore {
	t.Helper()
	st, err := store.Open(store.Options{Dir: "data", FS: n.mem.CrashClone(vfs.CrashCloneCfg{}), Sync: true})
	if err != nil {
		t.Fatalf("node %d: open a crash clone: %v", n.id, err)
	}
	defer st.Close()
	ls, ok, err := loadLog(st, procGroup)
	if err != nil || !ok {
		t.Fatalf("node %d: crash clone's log: %v, %v", n.id, ok, err)
	}
	return ls
}

// proposeOne proposes a write of key at node n as leader of term.
func proposeOne(t *testing.T, n *procNode, term uint64, key string) *Waiter {
	t.Helper()
	b := n.st.NewBatch()
	defer b.Close()
	b.Set(lpKey(procGroup, 0, 0), []byte(key))
	repr, err := b.Repr()
	if err != nil {
		t.Fatal(err)
	}
	w, err := n.h.Propose(procGroup, Proposal{Kind: KindBatch, Term: term, Repr: repr})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestSendOrder checks which messages leave before their Ready is durable.
// Every acknowledgement of entries (MsgAppResp) and every vote granted is
// sent only once what it vouches for is durable at its sender: the entries
// up to its index, its term, the vote. And the leader's appends go out
// before its own log holds their entries durably (Raft thesis §10.2.1),
// but no message goes before the term it carries is durable.
func TestSendOrder(t *testing.T) {
	net := &procNet{}
	var acks, votes, early int
	net.check = func(from *procNode, m *pb.Message) {
		switch m.GetType() {
		case pb.MsgPreVote, pb.MsgPreVoteResp: // they carry the term a pre-candidate would campaign in
		default:
			if ls := durableLog(t, from); ls.hard.GetTerm() < m.GetTerm() {
				t.Errorf("node %d sent %s of term %d with term %d durable", from.id, m.GetType(), m.GetTerm(), ls.hard.GetTerm())
			}
		}
		switch m.GetType() {
		case pb.MsgAppResp:
			if m.GetReject() {
				return
			}
			acks++
			if ls := durableLog(t, from); ls.last < m.GetIndex() || ls.hard.GetTerm() < m.GetTerm() {
				t.Errorf("node %d acknowledged index %d of term %d with only index %d of term %d durable",
					from.id, m.GetIndex(), m.GetTerm(), ls.last, ls.hard.GetTerm())
			}
		case pb.MsgVoteResp, pb.MsgPreVoteResp:
			if m.GetReject() || m.GetType() == pb.MsgPreVoteResp {
				return
			}
			votes++
			if ls := durableLog(t, from); ls.hard.GetTerm() != m.GetTerm() || ls.hard.GetVote() != m.GetTo() {
				t.Errorf("node %d granted its vote to %d in term %d with term %d, vote %d durable",
					from.id, m.GetTo(), m.GetTerm(), ls.hard.GetTerm(), ls.hard.GetVote())
			}
		case pb.MsgApp:
			ents := m.GetEntries()
			if len(ents) == 0 {
				return
			}
			if ls := durableLog(t, from); ls.last < ents[len(ents)-1].GetIndex() {
				early++
			}
		}
	}
	nodes := newProcCluster(t, net, nil)
	term := elect(t, net, nodes)
	var ws []*Waiter
	for i := range 5 {
		ws = append(ws, proposeOne(t, nodes[0], term, string(rune('a'+i))))
		settle(t, net, nodes)
	}
	for i, w := range ws {
		select {
		case err := <-w.Done():
			if err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		default:
			t.Fatalf("write %d did not apply", i)
		}
	}
	if votes < 2 || acks < 10 {
		t.Fatalf("checked %d votes and %d acknowledgements, want at least 2 and 10", votes, acks)
	}
	if early < 5 {
		t.Errorf("the leader sent %d appends before their entries were durable, want every one of the 5 writes'", early)
	}
}

// TestApplyBeforeSync checks that a leader applies an entry the majority
// acknowledged while it was busy, and answers its proposer, before it
// syncs the entries proposed since: the proposer does not wait for
// another sync.
func TestApplyBeforeSync(t *testing.T) {
	net := &procNet{}
	var (
		armed   atomic.Bool
		first   *Waiter
		syncs   atomic.Int64
		applied atomic.Bool // first had applied at the leader's first sync once armed
	)
	fsOf := func(id uint64, mem *vfs.MemFS) vfs.FS {
		if id != 1 {
			return mem
		}
		return errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
			switch op.Kind {
			case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			default:
				return nil
			}
			if !armed.Load() || !strings.HasSuffix(op.Path, ".log") {
				return nil
			}
			if syncs.Add(1) == 1 {
				applied.Store(len(first.done) == 1)
			}
			return nil
		}))
	}
	nodes := newProcCluster(t, net, fsOf)
	term := elect(t, net, nodes)
	leader := nodes[0]

	// The first write reaches the followers, and their acknowledgements
	// reach the leader, which has not processed them yet.
	first = proposeOne(t, leader, term, "first")
	if err := leader.h.Process(); err != nil {
		t.Fatal(err)
	}
	deliver(net, nodes)
	for _, n := range nodes[1:] {
		if err := n.h.Process(); err != nil {
			t.Fatal(err)
		}
	}
	deliver(net, nodes)
	// A second write comes in meanwhile: the leader's next Ready both
	// commits the first and appends the second.
	second := proposeOne(t, leader, term, "second")
	armed.Store(true)
	if err := leader.h.Process(); err != nil {
		t.Fatal(err)
	}
	if syncs.Load() == 0 {
		t.Fatal("the leader did not sync the second write's entry")
	}
	if !applied.Load() {
		t.Error("the leader synced the second write's entry before it applied the first, committed, write")
	}
	select {
	case err := <-first.Done():
		if err != nil {
			t.Fatalf("first write: %v", err)
		}
	default:
		t.Fatal("first write not applied")
	}
	settle(t, net, nodes)
	if err := <-second.Done(); err != nil {
		t.Fatalf("second write: %v", err)
	}
	for _, n := range nodes {
		if v, err := n.st.Get(lpKey(procGroup, 0, 0)); err != nil || string(v) != "second" {
			t.Errorf("node %d holds %q, %v; want second", n.id, v, err)
		}
	}
}

// TestAdvanced checks Host.Advanced, which session reads wait on: its
// channel closes when a follower applies an entry or installs a snapshot,
// and when a leader's transaction releases its LSN (the stable LSN may
// move), and not while nothing changes.
func TestAdvanced(t *testing.T) {
	net := &procNet{}
	nodes := newProcCluster(t, net, nil)
	term := elect(t, net, nodes)
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	follower := nodes[2].h
	ch := follower.Advanced()
	settle(t, net, nodes)
	if closed(ch) {
		t.Fatal("Advanced closed with nothing applied or changed")
	}
	before, _ := follower.Leader(procGroup)
	w := proposeOne(t, nodes[0], term, "x")
	settle(t, net, nodes)
	if err := <-w.Done(); err != nil {
		t.Fatal(err)
	}
	if after, _ := follower.Leader(procGroup); after.Applied <= before.Applied {
		t.Fatalf("the follower applied nothing: %d then %d", before.Applied, after.Applied)
	}
	if !closed(ch) {
		t.Error("Advanced not closed once the follower applied an entry")
	}

	// A snapshot: node 3 misses enough entries that the leader, which
	// keeps LogKeep of them, sends it its state instead.
	ch = follower.Advanced()
	if closed(ch) {
		t.Fatal("a new Advanced channel is closed already")
	}
	net.drop = func(to uint64) bool { return to == 3 }
	for i := range 3 * procLogKeep {
		w := proposeOne(t, nodes[0], term, fmt.Sprint(i))
		settle(t, net, nodes)
		if err := <-w.Done(); err != nil {
			t.Fatal(err)
		}
	}
	if closed(ch) {
		t.Fatal("Advanced closed while node 3 was cut off")
	}
	net.drop = nil
	for range 3 {
		for _, n := range nodes {
			n.h.Tick() // a heartbeat finds node 3 behind
		}
		settle(t, net, nodes)
	}
	if l, _ := follower.Leader(procGroup); l.Applied != nodes[0].h.groups[procGroup].applied.Index {
		t.Fatalf("node 3 applied %d, the leader %d", l.Applied, nodes[0].h.groups[procGroup].applied.Index)
	}
	if trunc := follower.groups[procGroup].ls.trunc.index; trunc == 0 {
		t.Fatal("node 3 caught up without a snapshot")
	}
	if !closed(ch) {
		t.Error("Advanced not closed once the follower installed a snapshot")
	}
	local, err := replica.OpenLocal(t.Context(), nodes[0].st, nil)
	if err != nil {
		t.Fatal(err)
	}
	lr, err := local.Replica(procGroup)
	if err != nil {
		t.Fatal(err)
	}
	r := NewReplica(nodes[0].h, procGroup, lr, time.Second)
	var first uint64
	if _, err := r.NextLSN(nil, &first); err != nil {
		t.Fatal(err)
	}
	ch = nodes[0].h.Advanced()
	r.ReleaseLSN(first)
	if !closed(ch) {
		t.Error("Advanced not closed once the leader released an LSN")
	}
}

// TestLSNAppliedOutOfOrder: proposals apply in log order, not in the order
// of their LSNs, so a follower that applied LSN 12 has not necessarily
// applied LSN 10: LSNApplied tells, where the largest LSN applied cannot
// (a session read through a follower saw a write's previous value in the
// kill loop: TestClusterKillLoop's session check).
func TestLSNAppliedOutOfOrder(t *testing.T) {
	net := &procNet{}
	nodes := newProcCluster(t, net, nil)
	term := elect(t, net, nodes)
	propose := func(lsn, stable uint64) {
		t.Helper()
		b := nodes[0].st.NewBatch()
		defer b.Close()
		b.Set(lpKey(procGroup, 0, 0), fmt.Append(nil, lsn))
		repr, err := b.Repr()
		if err != nil {
			t.Fatal(err)
		}
		w, err := nodes[0].h.Propose(procGroup, Proposal{Kind: KindBatch, Term: term, LSN: lsn, Stable: stable, LSNs: []uint64{lsn}, Repr: repr})
		if err != nil {
			t.Fatal(err)
		}
		settle(t, net, nodes)
		if err := <-w.Done(); err != nil {
			t.Fatal(err)
		}
	}
	follower := nodes[2].h
	propose(12, 9) // LSNs 10 and 11 are issued, not yet proposed
	for _, c := range []struct {
		lsn  uint64
		want bool
	}{{9, true}, {10, false}, {11, false}, {12, true}, {13, false}} {
		if got := follower.LSNApplied(procGroup, c.lsn); got != c.want {
			t.Errorf("after 12: LSNApplied(%d) = %v, want %v", c.lsn, got, c.want)
		}
	}
	if l, _ := follower.Leader(procGroup); l.LSN != 12 {
		t.Fatalf("the follower's largest LSN applied: %d, want 12", l.LSN)
	}
	propose(10, 9)
	if !follower.LSNApplied(procGroup, 10) || follower.LSNApplied(procGroup, 11) {
		t.Error("after 10: want 10 applied and 11 not")
	}
	propose(14, 13) // 11 abandoned: the stable mark passes it
	for lsn := uint64(9); lsn <= 14; lsn++ {
		if !follower.LSNApplied(procGroup, lsn) {
			t.Errorf("after the stable mark 13 and 14: LSNApplied(%d) = false", lsn)
		}
	}
	if g := follower.groups[procGroup]; len(g.above) != 1 || g.above[0] != 14 {
		t.Errorf("LSNs kept above the stable mark: %v, want [14]", g.above)
	}
}

// TestSettledCallback: Config.Settled is told once when this node becomes
// a group's settled leader, not at every entry it applies after, and again
// on the node that leadership is handed to.
func TestSettledCallback(t *testing.T) {
	net := &procNet{}
	nodes := newProcCluster(t, net, nil)
	told := map[uint64]int{}
	for _, n := range nodes {
		n.h.cfg.Settled = func(g uint64) {
			if g == procGroup {
				told[n.id]++
			}
		}
	}
	elect(t, net, nodes)
	settle(t, net, nodes)
	if told[1] != 1 || told[2]+told[3] != 0 {
		t.Fatalf("after node 1's election: told %v, want node 1 once", told)
	}
	if err := nodes[0].h.TransferLeader(procGroup, 2); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		settle(t, net, nodes)
		for _, n := range nodes {
			n.h.Tick()
		}
	}
	if l, _ := nodes[1].h.Leader(procGroup); !l.Settled {
		t.Fatalf("node 2 did not settle after the transfer: %+v", l)
	}
	if told[1] != 1 || told[2] != 1 || told[3] != 0 {
		t.Errorf("after the transfer to node 2: told %v, want nodes 1 and 2 once each", told)
	}
}
