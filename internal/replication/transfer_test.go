package replication

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partitadb/partita/internal/replica"
)

// TestTransferLeader hands a group's leadership from node to node while a
// writer commits through whichever node leads: every transfer ends with
// the target leading, no write's outcome is left unknown (a transfer
// starts only when no proposal of the leader waits, and the leader takes
// none while it hands over), and every acknowledged write is on every
// replica. Transfers that cannot end cleanly are refused.
func TestTransferLeader(t *testing.T) {
	net := &chanNet{inboxes: map[uint64]chan Message{}}
	voters := []uint64{1, 2, 3}
	nodes := map[uint64]*liveNode{}
	for _, id := range voters {
		n := &liveNode{id: id, fs: vfs.NewCrashableMem()}
		n.start(t, net, voters)
		nodes[id] = n
	}
	var mu sync.Mutex // guards nodes' fields swapped by crash
	leader := func() *liveNode {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range voters {
			n := nodes[id]
			if n.h != nil && n.r.Lead() == nil {
				return n
			}
		}
		return nil
	}
	deadline := time.Now().Add(60 * time.Second)
	waitLeader := func(want uint64) *liveNode {
		t.Helper()
		for {
			if n := leader(); n != nil && (want == 0 || n.id == want) {
				return n
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d did not become leader", want)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}

	var (
		acked, unknown, written atomic.Int64
		stop                    = make(chan struct{})
		keys                    sync.Map
		wg                      sync.WaitGroup
	)
	wg.Go(func() {
		for i := 0; ; {
			select {
			case <-stop:
				return
			default:
			}
			n := leader()
			if n == nil {
				time.Sleep(time.Millisecond)
				continue
			}
			var first uint64
			key := fmt.Sprintf("\x02k%d", i)
			b := n.r.NewBatch(false)
			_, err := n.r.NextLSN(b, &first)
			if err == nil {
				b.Set([]byte(key), []byte("v"))
				err = n.r.Commit(b)
				if err == nil {
					keys.Store(key, true)
					acked.Add(1)
				}
			}
			b.Close()
			n.r.ReleaseLSN(first)
			written.Add(1)
			switch {
			case err == nil:
				i++
			case errors.Is(err, replica.ErrIndeterminate):
				unknown.Add(1)
				i++
			default:
				time.Sleep(time.Millisecond) // not (or no longer) the leader
			}
		}
	})

	// Move the leadership round the nodes, twice.
	lead := waitLeader(0)
	for round := range 2 * len(voters) {
		for base := acked.Load(); acked.Load() < base+20; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("writes stopped")
			}
		}
		to := voters[(round+int(lead.id))%len(voters)]
		if to == lead.id {
			continue
		}
		for {
			err := lead.h.TransferLeader(1, to)
			if err == nil {
				break
			}
			if !errors.Is(err, ErrTransferRefused) {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("transfer %d → %d: %v", lead.id, to, err)
			}
			time.Sleep(time.Millisecond) // a proposal waits, or the target is catching up
		}
		lead = waitLeader(to)
	}
	if err := lead.h.TransferLeader(1, lead.id); !errors.Is(err, ErrTransferRefused) {
		t.Errorf("transfer to itself: %v, want ErrTransferRefused", err)
	}
	follower := nodes[voters[(int(lead.id))%len(voters)]]
	if err := follower.h.TransferLeader(1, lead.id); !errors.Is(err, ErrTransferRefused) {
		t.Errorf("transfer asked of a follower: %v, want ErrTransferRefused", err)
	}
	close(stop)
	wg.Wait()
	// A crashed node stops being recently active after an election
	// timeout (CheckQuorum: 10 ticks of 5 ms); a transfer to it is refused.
	mu.Lock()
	follower.crash(t, net)
	follower.h = nil
	mu.Unlock()
	time.Sleep(500 * time.Millisecond)
	if err := lead.h.TransferLeader(1, follower.id); !errors.Is(err, ErrTransferRefused) {
		t.Errorf("transfer to crashed node %d: %v, want ErrTransferRefused", follower.id, err)
	}
	if unknown.Load() != 0 {
		t.Errorf("%d writes of unknown outcome across clean transfers", unknown.Load())
	}
	if acked.Load() == 0 {
		t.Fatal("no write acknowledged")
	}
	for _, id := range voters {
		n := nodes[id]
		if n.h == nil {
			continue
		}
		want, _ := lead.h.Leader(1)
		for l, _ := n.h.Leader(1); l.Applied < want.Applied; l, _ = n.h.Leader(1) {
			if time.Now().After(deadline) {
				t.Fatalf("node %d applied %d, leader %d", id, l.Applied, want.Applied)
			}
			time.Sleep(2 * time.Millisecond)
		}
		missing := 0
		keys.Range(func(k, _ any) bool {
			if _, err := n.st.Get(append(replica.KeyspacePrefix(1), k.(string)...)); err != nil {
				missing++
			}
			return true
		})
		if missing > 0 {
			t.Errorf("node %d lacks %d of %d acknowledged writes", id, missing, acked.Load())
		}
		n.stop(t)
	}
	t.Logf("%d writes, %d acknowledged", written.Load(), acked.Load())
}
