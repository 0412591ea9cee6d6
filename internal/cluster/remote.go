package cluster

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/partitadb/partita/internal/replica"
)

// Remote is a keyspace this node holds no replica of, read from the
// members that do (docs/cluster.md, "Placement on a subset"): the engine's
// reads run over it unchanged; its writes answer *replica.NotLeaderError
// naming the group's leader, so that they are forwarded as from a
// follower.
//
// Every answer carries the serving member's applied index of the group,
// and every request the largest this node has seen (the fence), which the
// member must have applied before it serves: reads through a Remote never
// see older state than an earlier one saw, whichever member serves them,
// so Sync, and a session check, hold for the reads after them.
type Remote struct {
	id     uint64
	voters []uint64
	net    *remoteNet

	mu       sync.Mutex
	fence    uint64    // the largest applied index an answer carried
	last     uint64    // the largest LastLSN an answer carried
	stable   uint64    // the largest StableLSN an answer carried
	leader   uint64    // the leader the last answer named
	leaderAt time.Time // when it was asked
	target   uint64    // the member that last answered
	visible  []uint64  // LSNs a member said it applied, newest last (at most maxVisible)
}

// maxVisible bounds the LSNs a Remote remembers as applied: a session read
// asks twice about the same LSNs, once waiting for them and once as it
// reads (engine.WithSession), and the second needs no round trip.
const maxVisible = 16

var (
	_ replica.Replica     = (*Remote)(nil)
	_ replica.BatchReader = (*Remote)(nil)
	_ replica.BatchReader = (*remoteSnap)(nil)
)

// remoteNet is how a node's Remotes reach the members.
type remoteNet struct {
	self    uint64
	client  *http.Client
	addr    func(node uint64) (string, bool)
	wait    time.Duration // bounds a read without a context of its own
	attempt time.Duration // bounds one member's answer; 0: kvAttempt
	slow    slowMembers
}

// slowFor is how long a member that failed to answer a read (a remote
// read's attempt, or a forwarded read) is asked last, and not forwarded
// reads, unless it answers again first: a stopped or cut-off member
// would otherwise cost every read through this node its whole attempt
// before another member is asked.
const slowFor = 5 * time.Second

// slowMembers remembers the members that recently failed to answer.
type slowMembers struct {
	mu    sync.Mutex
	until map[uint64]time.Time
}

// failed notes that m did not answer.
func (s *slowMembers) failed(m uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.until == nil {
		s.until = map[uint64]time.Time{}
	}
	s.until[m] = time.Now().Add(slowFor)
}

// answered notes that m answered.
func (s *slowMembers) answered(m uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.until, m)
}

// is reports whether m failed to answer within the last slowFor.
func (s *slowMembers) is(m uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.until[m]
	if ok && time.Now().After(t) {
		delete(s.until, m)
		return false
	}
	return ok
}

// leaderFresh is how long a Remote trusts the leader an answer named
// before asking again.
const leaderFresh = 100 * time.Millisecond

// kvAttempt bounds one member's answer to a read, so that a member that
// does not answer (a dead host: the dial hangs; a paused process) leaves
// time to ask the others; a sync, which may wait for an election at the
// member, gets two thirds more (5 s). Before syncs were bounded, one sent
// to a paused leader took the read's whole bound (10 s), and the read
// failed with 503 (the kill loop with four nodes).
const kvAttempt = 3 * time.Second

// maxKVAnswer bounds an answer's body (a page is at most 1 MiB and one
// entry beyond it; a value is at most the largest item).
const maxKVAnswer = 64 << 20

// kvAnswer is a member's answer to a remote read.
type kvAnswer struct {
	member   uint64
	body     []byte
	notFound bool
	snap     uint64
	more     bool
}

// call sends req to a member: to pin only when set, else to the leader
// this node knows, then the member that answered last, then the others
// in order (those that failed to answer lately last: slowMembers), until
// one answers. A member that cannot be reached, or
// refuses (it has not applied the fence in time, or has no group), is
// passed over.
func (r *Remote) call(ctx context.Context, req kvRequest, pin uint64) (*kvAnswer, error) {
	r.mu.Lock()
	if req.Snap == 0 { // a snapshot's state is the one it opened
		req.Fence = r.fence
	}
	order := []uint64{pin}
	if pin == 0 {
		order = append(order[:0], r.leader, r.target)
		order = append(order, r.voters...)
		// Members that failed to answer lately last.
		slices.SortStableFunc(order, func(a, b uint64) int {
			return cmp.Compare(boolInt(r.net.slow.is(a)), boolInt(r.net.slow.is(b)))
		})
	}
	r.mu.Unlock()
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var errs []error
	tried := make([]uint64, 0, len(order))
	for _, m := range order {
		if m == 0 || m == r.net.self || slices.Contains(tried, m) || !slices.Contains(r.voters, m) {
			continue
		}
		tried = append(tried, m)
		attempt := r.net.attempt
		if attempt == 0 {
			attempt = kvAttempt
		}
		if req.Op == kvSync {
			attempt += attempt * 2 / 3 // a sync may wait for an election
		}
		actx, cancel := context.WithTimeout(ctx, attempt)
		a, err := r.send(actx, m, body)
		cancel()
		if err == nil {
			r.net.slow.answered(m)
			return a, nil
		}
		if ctx.Err() == nil {
			r.net.slow.failed(m) // not the read's own deadline: the member's
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("cluster: keyspace %d: no member answered a remote read (%s): %w: %w", r.id, req.Op, replica.ErrUnavailable, errors.Join(errs...))
}

// send sends one request to member m and takes in what its answer says of
// the group.
func (r *Remote) send(ctx context.Context, m uint64, body []byte) (*kvAnswer, error) {
	addr, ok := r.net.addr(m)
	if !ok {
		return nil, fmt.Errorf("node %016x is not a member", m)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+KVPath+"/"+strconv.FormatUint(r.id, 10), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h, data, err := peerCall(r.net.client, hreq, maxKVAnswer)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	applied, _ := strconv.ParseUint(h.Get(kvApplied), 10, 64)
	last, _ := strconv.ParseUint(h.Get(kvLastLSN), 10, 64)
	leader, _ := strconv.ParseUint(h.Get(kvLeader), 16, 64)
	snap, _ := strconv.ParseUint(h.Get(kvSnap), 10, 64)
	r.mu.Lock()
	r.fence = max(r.fence, applied)
	r.last = max(r.last, last)
	r.leader, r.leaderAt, r.target = leader, time.Now(), m
	r.mu.Unlock()
	return &kvAnswer{member: m, body: data, notFound: h.Get(kvNotFound) != "", snap: snap, more: h.Get(kvMore) != ""}, nil
}

// bounded returns a context bounded by the node's read wait.
func (r *Remote) bounded() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), r.net.wait)
}

// ID returns the keyspace's id.
func (r *Remote) ID() uint64 { return r.id }

// Get reads key from a member.
func (r *Remote) Get(key []byte) ([]byte, error) {
	ctx, cancel := r.bounded()
	defer cancel()
	return r.get(ctx, key, 0, 0)
}

func (r *Remote) get(ctx context.Context, key []byte, snap, pin uint64) ([]byte, error) {
	a, err := r.call(ctx, kvRequest{Op: kvGet, Key: key, Snap: snap}, pin)
	if err != nil {
		return nil, err
	}
	if a.notFound {
		return nil, replica.ErrNotFound
	}
	return a.body, nil
}

// GetMany reads keys from a member, as many per request as fit its page
// (replica.BatchReader).
func (r *Remote) GetMany(keys [][]byte) ([][]byte, error) {
	ctx, cancel := r.bounded()
	defer cancel()
	return r.getMany(ctx, keys, 0, 0)
}

func (r *Remote) getMany(ctx context.Context, keys [][]byte, snap, pin uint64) ([][]byte, error) {
	out := make([][]byte, 0, len(keys))
	for len(out) < len(keys) {
		a, err := r.call(ctx, kvRequest{Op: kvGetMany, Keys: keys[len(out):], Snap: snap}, pin)
		if err != nil {
			return nil, err
		}
		before := len(out)
		for b := a.body; len(b) > 0 && len(out) < len(keys); {
			found := b[0]
			b = b[1:]
			if found == 0 {
				out = append(out, nil)
				continue
			}
			var v []byte
			if v, b, err = frame(b); err != nil {
				return nil, fmt.Errorf("cluster: keyspace %d: a malformed answer to a remote read: %w", r.id, err)
			}
			out = append(out, v)
		}
		if len(out) == before {
			return nil, fmt.Errorf("cluster: keyspace %d: member %016x answered none of %d keys: %w", r.id, a.member, len(keys)-before, replica.ErrUnavailable)
		}
	}
	return out, nil
}

// NewIter iterates span of a member's applied state, in pages; the
// member keeps the snapshot of the first page for the rest.
func (r *Remote) NewIter(span replica.Span, reverse bool) replica.Iter {
	return &remoteIter{r: r, span: span, reverse: reverse}
}

// Snapshot opens a snapshot on a member; its reads go to that member.
func (r *Remote) Snapshot() (replica.Snapshot, error) {
	ctx, cancel := r.bounded()
	defer cancel()
	a, err := r.call(ctx, kvRequest{Op: kvOpen}, 0)
	if err != nil {
		return nil, err
	}
	if a.snap == 0 {
		return nil, fmt.Errorf("cluster: keyspace %d: member %016x opened no snapshot: %w", r.id, a.member, replica.ErrUnavailable)
	}
	return &remoteSnap{r: r, member: a.member, id: a.snap}, nil
}

// NewBatch returns a batch that no Commit here takes: this node is not a
// voter of the group.
func (r *Remote) NewBatch(bool) replica.Batch { return &remoteBatch{r: r} }

// Commit refuses: writes belong on the group's leader.
func (r *Remote) Commit(replica.Batch) error { return r.Lead() }

// NextLSN refuses: LSNs are the leader's.
func (r *Remote) NextLSN(replica.Batch, *uint64) (uint64, error) { return 0, r.Lead() }

// ReleaseLSN does nothing: no LSN is issued here.
func (r *Remote) ReleaseLSN(uint64) {}

// AdvanceLSN refuses: LSNs are the leader's.
func (r *Remote) AdvanceLSN(uint64) error { return r.Lead() }

// AwaitDoubts returns at once: nothing is committed through a remote
// keyspace.
func (r *Remote) AwaitDoubts(context.Context) error { return nil }

// StableLSN asks a member; when none answers, the largest an answer
// carried (a stable mark only grows).
func (r *Remote) StableLSN() uint64 {
	ctx, cancel := r.bounded()
	defer cancel()
	a, err := r.call(ctx, kvRequest{Op: kvStable}, 0)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		if v, perr := strconv.ParseUint(string(a.body), 10, 64); perr == nil {
			r.stable = max(r.stable, v)
		}
	}
	return r.stable
}

// LastLSN is the largest last LSN the members' answers carried, so at
// least that of the state every read so far saw; before any answer, a
// member is asked.
func (r *Remote) LastLSN() uint64 {
	r.mu.Lock()
	last := r.last
	r.mu.Unlock()
	if last == 0 {
		ctx, cancel := r.bounded()
		defer cancel()
		_, _ = r.call(ctx, kvRequest{Op: kvLead}, 0)
		r.mu.Lock()
		last = r.last
		r.mu.Unlock()
	}
	return last
}

// Visible asks a member whether it has applied the write that took lsn,
// unless a member said so before: every read after that answer goes to a
// member that has applied as much as that member had (the fence), so the
// answer stands.
func (r *Remote) Visible(lsn uint64) bool {
	r.mu.Lock()
	known := slices.Contains(r.visible, lsn)
	r.mu.Unlock()
	if known {
		return true
	}
	ctx, cancel := r.bounded()
	defer cancel()
	a, err := r.call(ctx, kvRequest{Op: kvVisible, LSN: lsn}, 0)
	if err != nil || string(a.body) != "1" {
		return false
	}
	r.mu.Lock()
	if len(r.visible) == maxVisible {
		r.visible = slices.Delete(r.visible, 0, 1)
	}
	r.visible = append(r.visible, lsn)
	r.mu.Unlock()
	return true
}

// Lead returns *replica.NotLeaderError: this node is not a voter. The
// leader it names is the one the last answer named, however old (0: none
// yet), without asking: a forwarded write whose hint is stale is sent on
// by the node it reaches (or Node.Forward asks, through Leader), and a
// read forwarded to a voter that no longer leads is served there all the
// same — so that forwarding a read costs no round trip besides its own.
func (r *Remote) Lead() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &replica.NotLeaderError{Keyspace: r.id, Leader: r.leader}
}

// Leader returns the group's leader as a member last named it, asking a
// member when that was more than leaderFresh ago (0: none known).
func (r *Remote) Leader() uint64 {
	r.mu.Lock()
	leader, fresh := r.leader, time.Since(r.leaderAt) < leaderFresh
	r.mu.Unlock()
	if fresh {
		return leader
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := r.call(ctx, kvRequest{Op: kvLead}, 0); err != nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leader
}

// Campaign refuses: this node is not a voter.
func (r *Remote) Campaign() error {
	return fmt.Errorf("cluster: keyspace %d: this node holds no replica of it and cannot lead it", r.id)
}

// Sync has a member sync with its group's leader (ReadIndex): reads after
// it, through any member, see every write acknowledged before it.
func (r *Remote) Sync(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.net.wait)
	defer cancel()
	_, err := r.call(ctx, kvRequest{Op: kvSync}, 0)
	return err
}

// remoteSnap is a snapshot open on one member.
type remoteSnap struct {
	r      *Remote
	member uint64
	id     uint64
	once   sync.Once
}

func (s *remoteSnap) Get(key []byte) ([]byte, error) {
	ctx, cancel := s.r.bounded()
	defer cancel()
	return s.r.get(ctx, key, s.id, s.member)
}

func (s *remoteSnap) GetMany(keys [][]byte) ([][]byte, error) {
	ctx, cancel := s.r.bounded()
	defer cancel()
	return s.r.getMany(ctx, keys, s.id, s.member)
}

func (s *remoteSnap) NewIter(span replica.Span, reverse bool) replica.Iter {
	return &remoteIter{r: s.r, span: span, reverse: reverse, snap: s.id, member: s.member, keep: true}
}

// Version is unknown: the state is another member's, which a later
// snapshot may take from another member still.
func (s *remoteSnap) Version() (replica.Version, bool) { return replica.Version{}, false }

// Close releases the snapshot on its member (which also releases it after
// kvSnapIdle unused).
func (s *remoteSnap) Close() {
	s.once.Do(func() { s.r.release(s.member, s.id) })
}

// release closes snapshot id on member, best effort.
func (r *Remote) release(member, id uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = r.call(ctx, kvRequest{Op: kvClose, Snap: id}, member)
}

// remoteIter walks a span page by page. Its first page opens a snapshot
// on the member that serves it, unless it reads in one already (keep:
// the Snapshot's, which it leaves open).
type remoteIter struct {
	r       *Remote
	span    replica.Span
	reverse bool
	snap    uint64 // the snapshot read in; 0 before the first page of a new one
	member  uint64 // the member holding snap
	keep    bool   // snap is a Snapshot's, not this iterator's

	page       []byte // the rest of the current page
	key, value []byte
	last       []byte // the last key read: the next page starts after it
	more       bool   // a page ended before the span
	started    bool
	err        error
	closed     bool
}

func (it *remoteIter) Next() bool {
	if it.err != nil || it.closed {
		return false
	}
	for len(it.page) == 0 {
		if it.started && !it.more {
			return false
		}
		if err := it.fetch(); err != nil {
			it.err = err
			return false
		}
	}
	k, rest, err := frame(it.page)
	if err == nil {
		it.value, rest, err = frame(rest)
	}
	if err != nil {
		it.err = fmt.Errorf("cluster: keyspace %d: a malformed page of a remote scan: %w", it.r.id, err)
		return false
	}
	it.key, it.page, it.last = k, rest, k
	return true
}

// fetch reads the next page.
func (it *remoteIter) fetch() error {
	ctx, cancel := it.r.bounded()
	defer cancel()
	req := kvRequest{Op: kvScan, Span: it.span, Reverse: it.reverse, Snap: it.snap, Keep: it.keep}
	if it.started {
		req.After = it.last
	}
	a, err := it.r.call(ctx, req, it.member)
	if err != nil {
		return err
	}
	it.started, it.more, it.page = true, a.more, a.body
	if it.snap == 0 && a.snap != 0 {
		it.snap, it.member = a.snap, a.member
	}
	return nil
}

// frame splits a uvarint-length-prefixed frame off b.
func frame(b []byte) (f, rest []byte, err error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return nil, nil, errors.New("truncated frame")
	}
	return b[w : w+int(n)], b[w+int(n):], nil
}

func (it *remoteIter) Key() []byte   { return it.key }
func (it *remoteIter) Value() []byte { return it.value }
func (it *remoteIter) Err() error    { return it.err }

// Close releases the iterator's own snapshot if a page left it open.
func (it *remoteIter) Close() error {
	if it.closed {
		return nil
	}
	it.closed = true
	if !it.keep && it.snap != 0 && it.more {
		it.r.release(it.member, it.snap)
	}
	return nil
}

// remoteBatch is a batch of a keyspace this node holds no replica of:
// nothing may be written through it, so its reads refuse too.
type remoteBatch struct{ r *Remote }

func (b *remoteBatch) Get([]byte) ([]byte, error) { return nil, b.r.Lead() }
func (b *remoteBatch) NewIter(replica.Span, bool) replica.Iter {
	return &remoteIter{r: b.r, err: b.r.Lead()}
}
func (b *remoteBatch) Set(_, _ []byte)         {}
func (b *remoteBatch) Delete([]byte)           {}
func (b *remoteBatch) DeleteSpan(replica.Span) {}
func (b *remoteBatch) Empty() bool             { return true }
func (b *remoteBatch) Close()                  {}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
