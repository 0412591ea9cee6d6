package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/store"
)

// engineOnHost returns an engine over a store in a temporary directory,
// its keyspaces served by wrap(local), a test's replica.Host around the
// local one, with container db/k (partition key /pk) of throughput tp.
func engineOnHost(t *testing.T, wrap func(*replica.Local) replica.Host, tp Throughput) *Engine {
	t.Helper()
	return engineOnHostAt(t, wrap, tp, nil)
}

// engineOnHostAt is engineOnHost on clock now (nil: the real one).
func engineOnHostAt(t *testing.T, wrap func(*replica.Local) replica.Host, tp Throughput, now func() time.Time) *Engine {
	t.Helper()
	local := openLocalReplicas(t)
	e, err := New(t.Context(), wrap(local), local.Meta(), Config{}, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"k","partitionKey":{"paths":["/pk"]}}`), tp); err != nil {
		t.Fatal(err)
	}
	return e
}

// openLocalReplicas opens a synced store in a temporary directory and the
// local replica host on it, closed when t ends.
func openLocalReplicas(t *testing.T) *replica.Local {
	t.Helper()
	st, err := store.Open(store.Options{Dir: t.TempDir(), Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	local, err := replica.OpenLocal(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	return local
}

// followerHost is a replica.Host whose keyspaces in away another node
// leads (the value: that node, 0 when unknown), as a cluster node's
// followers: their Lead answers *replica.NotLeaderError.
type followerHost struct {
	*replica.Local
	away map[uint64]uint64
}

func (h *followerHost) Replica(id uint64) (replica.Replica, error) {
	r, err := h.Local.Replica(id)
	if leader, ok := h.away[id]; ok && err == nil {
		return followerReplica{r, leader}, nil
	}
	return r, err
}

type followerReplica struct {
	replica.Replica
	leader uint64
}

func (r followerReplica) Lead() error {
	return &replica.NotLeaderError{Keyspace: r.ID(), Leader: r.leader}
}

// TestBulkNotLeader: a bulk request none of whose operations this node
// leads, all in one keyspace or all led by one known node, fails whole with
// the NotLeaderError (the API forwards it to the leader: @azure/cosmos
// retries no operation's 503, found by the Node tests against a cluster);
// otherwise only the operations led elsewhere fail, with 503.
func TestBulkNotLeader(t *testing.T) {
	var host *followerHost
	e := engineOnHost(t, func(local *replica.Local) replica.Host {
		host = &followerHost{Local: local, away: map[uint64]uint64{}}
		return host
	}, Throughput{Manual: 24000})
	c, err := e.cat.Container("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Keyspaces()) < 3 {
		t.Fatalf("the container has keyspaces %v; the test needs 3", c.Keyspaces())
	}
	// Two partition key values in each of the container's keyspaces.
	byKS := map[uint64][]document.PartitionKey{}
	for i := 0; len(byKS) < len(c.Keyspaces()) || i < 200; i++ {
		pk := pkN(i)
		loc, err := locate(c, pk, "")
		if err != nil {
			t.Fatal(err)
		}
		ks, _ := c.Keyspace(loc.rng.ID)
		if len(byKS[ks]) < 2 {
			byKS[ks] = append(byKS[ks], pk)
		}
	}
	kss := c.Keyspaces()
	a, b, l := kss[0], kss[1], kss[2] // a and b led elsewhere, l here
	creates := func(kss ...uint64) []BatchOp {
		var ops []BatchOp
		for _, ks := range kss {
			for _, pk := range byKS[ks] {
				ops = append(ops, BatchOp{Type: "Create", PK: pk, Body: fmt.Appendf(nil, `{"id":"x","pk":%q}`, pk[0].String)})
			}
		}
		return ops
	}
	notStored := func(ops []BatchOp) {
		t.Helper()
		for _, op := range ops {
			if _, err := e.ReadItem(t.Context(), ItemRef{DB: "db", Container: "k", ID: "x"}, op.PK, ""); code(err) != http.StatusNotFound {
				t.Fatalf("item x of %v: %v, want 404", op.PK, err)
			}
		}
	}

	// One keyspace, its leader known or not: the whole request.
	for _, leader := range []uint64{7, 0} {
		host.away = map[uint64]uint64{a: leader, b: leader}
		ops := creates(a)
		resp, err := e.ExecuteBulk(t.Context(), "db", "k", ops)
		if ks, got, ok := NotLeader(err); !ok || ks != a || got != leader {
			t.Fatalf("leader %d: ExecuteBulk = %v, %v; want NotLeader(keyspace %d, leader %d)", leader, statuses(resp), err, a, leader)
		}
		notStored(ops)
	}
	// Two keyspaces with one known leader: the whole request.
	host.away = map[uint64]uint64{a: 7, b: 7}
	ops := creates(a, b)
	resp, err := e.ExecuteBulk(t.Context(), "db", "k", ops)
	if _, got, ok := NotLeader(err); !ok || got != 7 {
		t.Fatalf("ExecuteBulk = %v, %v; want NotLeader(leader 7)", statuses(resp), err)
	}
	notStored(ops)
	// Two keyspaces whose leaders differ or are unknown: each operation.
	for _, away := range []map[uint64]uint64{{a: 7, b: 8}, {a: 0, b: 0}} {
		host.away = away
		resp, err := e.ExecuteBulk(t.Context(), "db", "k", creates(a, b))
		if err != nil {
			t.Fatalf("%v: ExecuteBulk: %v", away, err)
		}
		for i, s := range statuses(resp) {
			if s != http.StatusServiceUnavailable {
				t.Fatalf("%v: results %v, want 503 each", away, statuses(resp))
			}
			if resp.Results[i].Message == "" {
				t.Fatalf("%v: result %d has no message", away, i)
			}
		}
	}
	// Some operations led here: those run, the others fail alone.
	host.away = map[uint64]uint64{a: 7}
	resp, err = e.ExecuteBulk(t.Context(), "db", "k", creates(a, l))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(statuses(resp)), fmt.Sprint([]int{503, 503, 201, 201}); got != want {
		t.Fatalf("results %s, want %s", got, want)
	}
	notStored(creates(a))
	host.away = map[uint64]uint64{}
	for _, op := range creates(l) {
		if _, err := e.ReadItem(t.Context(), ItemRef{DB: "db", Container: "k", ID: "x"}, op.PK, ""); err != nil {
			t.Fatalf("item x of %v: %v", op.PK, err)
		}
	}
	// The first operation led here: the others fail alone.
	host.away = map[uint64]uint64{a: 7}
	resp, err = e.ExecuteBulk(t.Context(), "db", "k", append(creates(l)[:1], creates(a)...))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(statuses(resp)), fmt.Sprint([]int{409, 503, 503}); got != want {
		t.Fatalf("results %s, want %s", got, want)
	}
}

// TestBatchResponseBounded: a batch or bulk response carries at most
// MaxBatchResponseBytes of items (and one more item past it): a
// transactional batch past it fails whole (413/3402 on the operation that
// passed it, 424 on the others, nothing written), and a bulk request's
// operations not yet run are answered 413/3402 without running. Before,
// 100 reads of a 2 MB item built a 200 MB response in memory (found by a
// bug hunt).
func TestBatchResponseBounded(t *testing.T) {
	e := testEngine(t)
	ctx := t.Context()
	big := fmt.Sprintf(`{"id":"big","pk":"p0","pad":%q}`, strings.Repeat("x", 1900<<10))
	if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pkOf(0), Body: []byte(big)}); err != nil {
		t.Fatal(err)
	}
	reads := func(n int, withPK bool) []BatchOp {
		ops := []BatchOp{{Type: "Create", Body: []byte(`{"id":"new","pk":"p0"}`)}}
		for range n {
			ops = append(ops, BatchOp{Type: "Read", ID: "big"})
		}
		if withPK {
			for i := range ops {
				ops[i].PK = pkOf(0)
			}
		}
		return ops
	}
	resp, err := e.ExecuteBatch(ctx, "db", "k", pkOf(0), reads(5, false))
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(resp); resp.OK || !slices.Equal(got, []int{424, 424, 424, 413, 424, 424}) || resp.Results[3].Sub != status.SubRequestEntityTooLargeBatch {
		t.Errorf("transactional batch of 5 reads of a 1.9 MB item: %v (sub %d), want the third read 413/3402 and the rest 424", got, resp.Results[3].Sub)
	}
	if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: "new"}, pkOf(0), ""); code(err) != http.StatusNotFound {
		t.Errorf("the failed batch's create: %v, want 404", err)
	}
	resp, err = e.ExecuteBulk(ctx, "db", "k", reads(5, true))
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(resp); resp.OK || !slices.Equal(got, []int{201, 200, 200, 200, 413, 413}) || resp.Results[5].Sub != status.SubRequestEntityTooLargeBatch {
		t.Errorf("bulk request of a create and 5 reads of a 1.9 MB item: %v, want 201, three 200s, then 413/3402", got)
	}
}

// statuses returns the status of each operation of resp.
func statuses(resp BatchResponse) []int {
	var out []int
	for _, r := range resp.Results {
		out = append(out, r.Status)
	}
	return out
}

// TestSprocResponseBounded: a stored procedure whose response body passes
// MaxBatchResponseBytes fails with 413 and keeps nothing it wrote (a bug
// hunt had a 5 MB body answered 200).
func TestSprocResponseBounded(t *testing.T) {
	e := testEngine(t)
	ctx := t.Context()
	def := []byte(`{"id":"big","body":"function () { var c = getContext().getCollection(); c.createDocument(c.getSelfLink(), {id: 'w', pk: 'p0'}); getContext().getResponse().setBody('x'.repeat(5 * 1024 * 1024)); }"}`)
	if _, err := e.CreateScript("db", "k", StoredProcedures, def); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ExecuteStoredProcedure(ctx, "db", "k", "big", pkOf(0), []byte("[]"), false); code(err) != http.StatusRequestEntityTooLarge {
		t.Fatalf("sproc with a 5 MB response: %v, want 413", err)
	}
	if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: "w"}, pkOf(0), ""); code(err) != http.StatusNotFound {
		t.Errorf("the failed sproc's write: %v, want 404", err)
	}
}

// lostHost is a replica.Host whose keyspaces in lost lose their leadership
// between a transaction's begin and its first write: Lead answers nil,
// NextLSN *replica.NotLeaderError.
type lostHost struct {
	*replica.Local
	lost map[uint64]bool
}

func (h *lostHost) Replica(id uint64) (replica.Replica, error) {
	r, err := h.Local.Replica(id)
	if h.lost[id] && err == nil {
		return lostReplica{r}, nil
	}
	return r, err
}

type lostReplica struct{ replica.Replica }

func (r lostReplica) NextLSN(replica.Batch, *uint64) (uint64, error) {
	return 0, &replica.NotLeaderError{Keyspace: r.ID(), Leader: 9}
}

// TestBatchLeadershipLost: a transactional batch whose partition's
// leadership moves while it runs fails whole with the NotLeaderError (the
// API forwards it to the new leader), not with a 207 whose first operation
// is a 503 that no SDK retries (a bug hunt: 12 in 42,000 batches at
// leadership changes).
func TestBatchLeadershipLost(t *testing.T) {
	var host *lostHost
	e := engineOnHost(t, func(local *replica.Local) replica.Host {
		host = &lostHost{Local: local, lost: map[uint64]bool{}}
		return host
	}, Throughput{})
	c, err := e.cat.Container("db", "k")
	if err != nil {
		t.Fatal(err)
	}
	for _, ks := range c.Keyspaces() {
		host.lost[ks] = true
	}
	pk := pkN(1)
	ops := []BatchOp{
		{Type: "Create", Body: []byte(`{"id":"a","pk":"p1"}`)},
		{Type: "Create", Body: []byte(`{"id":"b","pk":"p1"}`)},
	}
	resp, err := e.ExecuteBatch(t.Context(), "db", "k", pk, ops)
	if _, leader, ok := NotLeader(err); !ok || leader != 9 {
		t.Fatalf("ExecuteBatch = %+v, %v; want NotLeader naming node 9", resp, err)
	}
	clear(host.lost)
	if _, err := e.ReadItem(t.Context(), ItemRef{DB: "db", Container: "k", ID: "a"}, pk, ""); code(err) != http.StatusNotFound {
		t.Errorf("item a: %v, want 404", err)
	}
}

// TestBulkThrottledRetryAfter: a bulk request's operations refused for
// throughput (429) each carry how long to wait and cost nothing, as a 429
// answered whole does: without the wait @azure/cosmos retried them at once,
// spent its retries and reported the writes failed (a throughput hunt: 94
// of 400 creates lost), and each was charged 1 RU.
func TestBulkThrottledRetryAfter(t *testing.T) {
	e := loadEngine(t) // 400 RU/s, rate limiting on
	var ops []BatchOp
	pad := strings.Repeat("x", 1000)
	for i := range 100 {
		ops = append(ops, BatchOp{Type: "Create", PK: pkN(i % 7), Body: fmt.Appendf(nil, `{"id":"b%d","pk":"p%d","pad":%q}`, i, i%7, pad)})
	}
	resp, err := e.ExecuteBulk(t.Context(), "db", "k", ops)
	if err != nil {
		t.Fatal(err)
	}
	throttled, sum := 0, 0.0
	for i, r := range resp.Results {
		sum += r.RU
		if r.Status != http.StatusTooManyRequests {
			continue
		}
		throttled++
		if r.RetryAfter <= 0 || r.RU != 0 {
			t.Errorf("throttled operation %d: retry after %v, charge %v; want a wait and no charge", i, r.RetryAfter, r.RU)
		}
	}
	if throttled == 0 {
		t.Fatal("no operation of 100 1 KB creates was throttled at 400 RU/s")
	}
	if resp.RU != sum {
		t.Errorf("the request's charge %v is not its operations' %v", resp.RU, sum)
	}
}

// TestBatchContainerDeletedMeanwhile: a transactional batch whose container
// is deleted while it runs fails whole with 404/1003, as a point write does,
// and writes nothing; it answered 207 with its upsert's 404 "Entity … does
// not exist" (a concurrency hunt).
func TestBatchContainerDeletedMeanwhile(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	if _, err := e.CreateContainer("db", []byte(`{"id":"gone","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	pk := document.PartitionKey{{Kind: document.String, String: "p"}}
	testHookBatchOp = func(i int) {
		if i == 1 {
			if err := e.DeleteContainer("db", "gone", ""); err != nil {
				t.Errorf("delete: %v", err)
			}
		}
	}
	defer func() { testHookBatchOp = nil }()
	_, err := e.ExecuteBatch(ctx, "db", "gone", pk, []BatchOp{
		{Type: "Upsert", Body: []byte(`{"id":"a","pk":"p"}`)},
		{Type: "Upsert", Body: []byte(`{"id":"b","pk":"p"}`)},
	})
	se, ok := errors.AsType[*status.Error](err)
	if !ok || se.Code != http.StatusNotFound || se.Sub != status.SubNotFoundOwnerResource {
		t.Fatalf("batch: %v, want 404/1003", err)
	}
	testHookBatchOp = nil
	if _, err := e.CreateContainer("db", []byte(`{"id":"gone","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	p, err := e.QueryItems(ctx, "db", "gone", Scope{PK: pk}, Query{Text: "SELECT VALUE c.id FROM c", MaxItems: -1})
	if err != nil || len(p.Items) != 0 {
		t.Errorf("the recreated container holds %s, %v; want nothing", p.Items, err)
	}
}

// TestBatchOpWithoutID: a batch's Read, Replace, Delete or Patch naming no
// id is refused 400 saying so (it found nothing by the empty id: 404,
// "Entity with the specified id does not exist", a bug hunt), in a
// transactional batch (which fails whole, 424 for the others) and in bulk.
func TestBatchOpWithoutID(t *testing.T) {
	e := engineOnHost(t, func(l *replica.Local) replica.Host { return l }, Throughput{})
	pk := document.PartitionKey{{Kind: document.String, String: "p"}}
	for _, typ := range []string{"Read", "Delete", "Patch", "Replace"} {
		body := []byte(`{"operations":[{"op":"set","path":"/a","value":1}]}`)
		if typ == "Replace" {
			body = nil
		}
		ops := []BatchOp{{Type: "Create", Body: []byte(`{"id":"x","pk":"p"}`)}, {Type: typ, Body: body}}
		resp, err := e.ExecuteBatch(t.Context(), "db", "k", pk, ops)
		if err != nil {
			t.Fatal(err)
		}
		if r := resp.Results[1]; resp.OK || r.Status != http.StatusBadRequest || !strings.Contains(r.Message, "needs an id") || resp.Results[0].Status != http.StatusFailedDependency {
			t.Errorf("batch %s without an id: %+v / %+v, want 400 naming the missing id and 424", typ, r, resp.Results[0])
		}
		for i := range ops {
			ops[i].PK = pk
		}
		resp, err = e.ExecuteBulk(t.Context(), "db", "k", ops[1:])
		if err != nil {
			t.Fatal(err)
		}
		if r := resp.Results[0]; r.Status != http.StatusBadRequest || !strings.Contains(r.Message, "needs an id") {
			t.Errorf("bulk %s without an id: %+v, want 400 naming the missing id", typ, r)
		}
	}
}
