package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/replica"
)

// fakeSource is a member's groups for kvServer: one keyspace of a local
// store, whose applied index and leader the test sets.
type fakeSource struct {
	rep replica.Replica

	mu      sync.Mutex
	applied uint64
	leader  uint64
	adv     chan struct{}
}

func (f *fakeSource) held(ks uint64) (replica.Replica, bool) {
	return f.rep, ks == f.rep.ID()
}

func (f *fakeSource) position(uint64) (uint64, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied, f.leader
}

func (f *fakeSource) advanced() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.adv
}

// set moves the member to applied index applied and wakes those waiting.
func (f *fakeSource) set(applied uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = applied
	close(f.adv)
	f.adv = make(chan struct{})
}

func (s *kvSnaps) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// TestRemoteReplica reads a keyspace through Remote from a member's
// kvServer: gets, paged scans both ways that see one snapshot throughout,
// snapshots, the release of what a reader leaves open, a member that is
// down passed over, the fence (a member behind what the reader has seen
// is refused until it catches up), and the refusals of writes.
func TestRemoteReplica(t *testing.T) {
	_, local := openLocal(t, t.TempDir())
	rep, err := local.Replica(7)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(fn func(b replica.Batch)) {
		t.Helper()
		b := rep.NewBatch(false)
		defer b.Close()
		fn(b)
		if err := rep.Commit(b); err != nil {
			t.Fatal(err)
		}
	}
	const n = 600 // more than two pages
	key := func(i int) []byte { return fmt.Appendf(nil, "k%04d", i) }
	commit(func(b replica.Batch) {
		for i := range n {
			b.Set(key(i), fmt.Appendf(nil, "v%d", i))
		}
	})
	src := &fakeSource{rep: rep, applied: 5, leader: 3, adv: make(chan struct{})}
	kv := &kvServer{self: 3, src: src, fenceWait: 200 * time.Millisecond, pageBytes: 1000}
	mux := http.NewServeMux()
	kv.register(mux)
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	down := httptest.NewServer(nil)
	downAddr := down.Listener.Addr().String()
	down.Close() // refuses connections
	addrs := map[uint64]string{2: downAddr, 3: strings.TrimPrefix(srv.URL, "https://")}
	r := &Remote{id: 7, voters: []uint64{1, 2, 3}, net: &remoteNet{self: 1, client: srv.Client(), wait: 5 * time.Second,
		addr: func(id uint64) (string, bool) { a, ok := addrs[id]; return a, ok }}}

	// A get: member 2 is down, member 3 answers; its headers tell the
	// leader and the fence.
	if v, err := r.Get(key(42)); err != nil || string(v) != "v42" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if _, err := r.Get([]byte("absent")); !errors.Is(err, replica.ErrNotFound) {
		t.Fatalf("Get of an absent key: %v, want ErrNotFound", err)
	}
	vs, err := r.GetMany([][]byte{key(3), []byte("absent"), key(599)})
	if err != nil || len(vs) != 3 || string(vs[0]) != "v3" || vs[1] != nil || string(vs[2]) != "v599" {
		t.Fatalf("GetMany = %q, %v; want v3, nil, v599", vs, err)
	}
	if r.fence != 5 || r.target != 3 {
		t.Fatalf("after a read: fence %d, target %d; want 5, 3", r.fence, r.target)
	}
	var nl *replica.NotLeaderError
	if err := r.Lead(); !errors.As(err, &nl) || nl.Leader != 3 || nl.Keyspace != 7 {
		t.Fatalf("Lead = %v, want NotLeaderError naming node 3", err)
	}
	for _, err := range []error{r.Commit(r.NewBatch(true)), r.AdvanceLSN(9), r.Campaign()} {
		if err == nil {
			t.Fatal("a write through a Remote: want a refusal")
		}
	}

	// A scan in pages sees the state of its first page throughout.
	it := r.NewIter(replica.Span{}, false)
	for i := range 10 {
		if !it.Next() || string(it.Key()) != string(key(i)) {
			t.Fatalf("scan key %d: %q, %v", i, it.Key(), it.Err())
		}
	}
	commit(func(b replica.Batch) {
		b.Delete(key(500))
		b.Set([]byte("k9999"), []byte("new"))
	})
	got := 10
	for it.Next() {
		if want := key(got); string(it.Key()) != string(want) || string(it.Value()) != fmt.Sprintf("v%d", got) {
			t.Fatalf("scan: %q=%q, want %q", it.Key(), it.Value(), want)
		}
		got++
	}
	if err := it.Close(); it.Err() != nil || err != nil || got != n {
		t.Fatalf("scan: %d keys, %v %v; want %d", got, it.Err(), err, n)
	}
	if c := kv.snaps.count(); c != 0 {
		t.Fatalf("%d snapshots open after a scan to its end", c)
	}

	// Reverse, over a span, now with the writes above.
	it = r.NewIter(replica.Span{Lower: key(100), Upper: key(550)}, true)
	var rev []string
	for it.Next() {
		rev = append(rev, string(it.Key()))
	}
	it.Close()
	if len(rev) != 449 || rev[0] != "k0549" || rev[len(rev)-1] != "k0100" {
		t.Fatalf("reverse scan: %d keys, %q … %q; want 449, k0549 … k0100 (k0500 deleted)", len(rev), rev[0], rev[len(rev)-1])
	}
	// An iterator closed before its end releases its snapshot.
	it = r.NewIter(replica.Span{}, false)
	for range 300 {
		it.Next()
	}
	if kv.snaps.count() != 1 {
		t.Fatalf("%d snapshots open during a scan, want 1", kv.snaps.count())
	}
	it.Close()
	if c := kv.snaps.count(); c != 0 {
		t.Fatalf("%d snapshots open after an iterator's Close", c)
	}

	// A Snapshot: its reads, pages included, see its state.
	snap, err := r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	commit(func(b replica.Batch) { b.Set(key(1), []byte("changed")) })
	if v, err := snap.Get(key(1)); err != nil || string(v) != "v1" {
		t.Fatalf("snapshot Get = %q, %v; want the value when it was taken", v, err)
	}
	// A batch larger than a member's page (1000 bytes here) comes in
	// several answers.
	many := make([][]byte, 0, n)
	for i := range n {
		many = append(many, key(i))
	}
	vs, err = snap.(replica.BatchReader).GetMany(many)
	if err != nil || len(vs) != n || string(vs[1]) != "v1" || vs[500] != nil || string(vs[n-1]) != fmt.Sprintf("v%d", n-1) {
		t.Fatalf("snapshot GetMany: %d values, %v; want %d, the snapshot's", len(vs), err, n)
	}
	cnt := 0
	sit := snap.NewIter(replica.Span{}, false)
	for sit.Next() {
		cnt++
	}
	sit.Close()
	if cnt != n { // k0500 deleted, k9999 added
		t.Fatalf("snapshot scan: %d keys, want %d", cnt, n)
	}
	if kv.snaps.count() != 1 {
		t.Fatalf("%d snapshots open with a Snapshot open, want 1", kv.snaps.count())
	}
	snap.Close()
	if c := kv.snaps.count(); c != 0 {
		t.Fatalf("%d snapshots open after the Snapshot's Close", c)
	}
	// An expired snapshot fails its reads with ErrUnavailable.
	snap, err = r.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	kv.snaps.expire(true)
	if _, err := snap.Get(key(1)); !errors.Is(err, replica.ErrUnavailable) {
		t.Fatalf("a read in an expired snapshot: %v, want ErrUnavailable", err)
	}
	snap.Close()

	// The fence: a member behind what the reader has seen refuses to
	// serve it until it has caught up.
	src.set(3)
	if _, err := r.Get(key(2)); !errors.Is(err, replica.ErrUnavailable) || !strings.Contains(err.Error(), "has applied index 3, the reader has seen 5") {
		t.Fatalf("a read from a member behind the fence: %v, want ErrUnavailable naming the indexes", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := r.Get(key(2))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	src.set(6)
	if err := <-done; err != nil {
		t.Fatalf("a read that waited for the member to catch up: %v", err)
	}
	if r.fence != 6 {
		t.Fatalf("fence %d after an answer at 6", r.fence)
	}

	// What the member tells of its keyspace.
	if r.LastLSN() != rep.LastLSN() {
		t.Fatalf("LastLSN %d, the member's %d", r.LastLSN(), rep.LastLSN())
	}
	if r.StableLSN() != rep.StableLSN() || !r.Visible(rep.LastLSN()) {
		t.Fatalf("StableLSN %d (the member's %d), Visible(%d) %v", r.StableLSN(), rep.StableLSN(), rep.LastLSN(), r.Visible(rep.LastLSN()))
	}
	if err := r.Sync(context.Background()); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	// An LSN a member said it applied is remembered (every later read
	// goes to a member at least as far along): asked again, no member is
	// asked. Another LSN is.
	srv.Close()
	r.net.wait = 200 * time.Millisecond
	if !r.Visible(rep.LastLSN()) {
		t.Fatal("Visible of an LSN a member said it applied asked again, with no member up")
	}
	if r.Visible(rep.LastLSN() + 1) {
		t.Fatal("Visible of an LSN no member was asked about: true with no member up")
	}
}

// TestRemoteSlowMember: a member that does not answer in time (paused,
// cut off) is asked last by the next reads, here and through the node's
// other Remotes, rather than costing each read its whole attempt; once it
// answers again it is asked in its turn.
func TestRemoteSlowMember(t *testing.T) {
	_, local := openLocal(t, t.TempDir())
	rep, err := local.Replica(7)
	if err != nil {
		t.Fatal(err)
	}
	b := rep.NewBatch(false)
	b.Set([]byte("k"), []byte("v"))
	if err := rep.Commit(b); err != nil {
		t.Fatal(err)
	}
	b.Close()
	// Member 3 answers, naming member 2 its leader; member 2 hangs while
	// stalled is set.
	src := &fakeSource{rep: rep, applied: 5, leader: 2, adv: make(chan struct{})}
	kv := &kvServer{self: 3, src: src, fenceWait: 200 * time.Millisecond}
	mux := http.NewServeMux()
	kv.register(mux)
	good := httptest.NewTLSServer(mux)
	t.Cleanup(good.Close)
	var (
		mu      sync.Mutex
		stalled = true
		asked   int // requests that reached member 2
	)
	release := make(chan struct{})
	hang := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked++
		st := stalled
		mu.Unlock()
		if st {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		mux.ServeHTTP(w, r)
	}))
	hang.TLS = good.TLS
	hang.StartTLS()
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })
	addrs := map[uint64]string{2: strings.TrimPrefix(hang.URL, "https://"), 3: strings.TrimPrefix(good.URL, "https://")}
	net := &remoteNet{self: 1, client: good.Client(), wait: 5 * time.Second, attempt: 300 * time.Millisecond,
		addr: func(id uint64) (string, bool) { a, ok := addrs[id]; return a, ok }}
	r := &Remote{id: 7, voters: []uint64{2, 3}, net: net}
	other := &Remote{id: 7, voters: []uint64{2, 3}, net: net} // another keyspace's, on the same node

	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return asked
	}
	// The first read asks member 2 first (the voters' order), which does
	// not answer within the attempt; member 3 does.
	if v, err := r.Get([]byte("k")); err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if n := count(); n != 1 {
		t.Fatalf("member 2 asked %d times by the first read, want 1", n)
	}
	// Member 3 names member 2 the leader, but the next reads, through
	// either Remote, ask member 3 first.
	for i := range 5 {
		for _, rr := range []*Remote{r, other} {
			if v, err := rr.Get([]byte("k")); err != nil || string(v) != "v" {
				t.Fatalf("read %d: Get = %q, %v", i, v, err)
			}
		}
	}
	if n := count(); n != 1 {
		t.Errorf("member 2 asked %d times in all, want 1: a member that did not answer is asked last", n)
	}
	// A sync (which has no context of its own but the read's whole
	// bound) is bounded per member too: a stalled member first in line
	// leaves the rest of the bound to the others.
	fresh := &Remote{id: 7, voters: []uint64{2, 3}, net: &remoteNet{self: 1, client: good.Client(), wait: 5 * time.Second,
		attempt: 300 * time.Millisecond, addr: net.addr}}
	if err := fresh.Sync(context.Background()); err != nil {
		t.Fatalf("Sync with member 2 stalled: %v", err)
	}
	if n := count(); n != 2 {
		t.Fatalf("member 2 asked %d times in all, want 2", n)
	}
	// Once it answers again (here: asked directly), it is asked in its
	// turn.
	mu.Lock()
	stalled = false
	mu.Unlock()
	if _, err := r.call(context.Background(), kvRequest{Op: kvGet, Key: []byte("k")}, 2); err != nil {
		t.Fatalf("member 2 asked directly: %v", err)
	}
	if _, err := other.Get([]byte("k")); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 4 {
		t.Errorf("member 2 asked %d times in all, want 4: it answered, so it is the leader asked first again", n)
	}
}
