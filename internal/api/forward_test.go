package api

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
)

// TestCosmosCaseWriter: a forwarded response's headers, which Go's HTTP
// client hands over canonicalised, go out with Cosmos DB's lowercase names
// as setHeader writes them (the Python SDK looks some up case-sensitively).
func TestCosmosCaseWriter(t *testing.T) {
	rec := httptest.NewRecorder()
	w := cosmosCaseWriter{rec}
	h := w.Header()
	h.Set("X-Ms-Session-Token", "0:-1#5")
	h.Set("Etag", `"1"`)
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	want := http.Header{"x-ms-session-token": {"0:-1#5"}, "etag": {`"1"`}, "Content-Type": {"application/json"}}
	got := rec.Result().Header
	if len(got) != len(want) {
		t.Fatalf("headers %v, want %v", got, want)
	}
	for k, v := range want {
		if len(got[k]) != 1 || got[k][0] != v[0] {
			t.Fatalf("headers %v, want %v", got, want)
		}
	}
	if rec.Code != http.StatusCreated {
		t.Fatalf("status %d", rec.Code)
	}
}

// elsewhereHost is a replica.Host that, while away is set, holds no
// replica of any keyspace, whose leader is node leader (as cluster.Keyspaces
// with --replicas below the number of members does for the keyspaces
// placed on other nodes); its replicas still read locally, as a remote
// one reads through a member.
type elsewhereHost struct {
	*replica.Local
	away   atomic.Bool
	leader atomic.Uint64 // 0: not known
}

func (h *elsewhereHost) Holds(id uint64) bool { return !h.away.Load() && h.Local.Holds(id) }

func (h *elsewhereHost) ReadsHere(id uint64) bool { return h.Holds(id) }

func (h *elsewhereHost) Replica(id uint64) (replica.Replica, error) {
	r, err := h.Local.Replica(id)
	if err != nil {
		return nil, err
	}
	return elsewhereReplica{r, h}, nil
}

type elsewhereReplica struct {
	replica.Replica
	h *elsewhereHost
}

func (r elsewhereReplica) Lead() error {
	if r.h.away.Load() {
		return &replica.NotLeaderError{Keyspace: r.ID(), Leader: r.h.leader.Load()}
	}
	return r.Replica.Lead()
}

// TestForwardRead: a read of a single keyspace that this node holds no
// replica of (a point read, a query or read feed scoped to a partition key
// or a range) is handed whole to the keyspace's leader, carrying this
// node's own session in its token; one that the leader does not answer,
// or that another node forwarded here, or whose keyspace's leader is not
// known, is served here; a query plan is not forwarded, nor is anything
// while this node holds the keyspace.
func TestForwardRead(t *testing.T) {
	var (
		host      *elsewhereHost
		forwarded []*http.Request
		answer    atomic.Bool // whether the forwarder answers
	)
	readFwd := func(w http.ResponseWriter, r *http.Request, body []byte, _, node uint64) bool {
		if node == 0 {
			return false // as cluster.Node.ForwardRead, knowing no other voter to ask
		}
		if node != host.leader.Load() {
			t.Errorf("read forwarded to node %d, want %d", node, host.leader.Load())
		}
		forwarded = append(forwarded, r)
		if !answer.Load() {
			return false
		}
		w.Header().Set("x-ms-session-token", "0:-1#999")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"from":"leader","body":` + strconv.Quote(string(body)) + `}`))
		return true
	}
	writeFwd := func(http.ResponseWriter, *http.Request, []byte, uint64, uint64) ForwardResult {
		t.Error("a write was forwarded")
		return ForwardFailed
	}
	h := newTestAPI(t, Config{Forward: writeFwd, ForwardRead: readFwd, Replicated: true}, func(l *replica.Local) replica.Host {
		host = &elsewhereHost{Local: l}
		return host
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	// The same node's cluster listener: requests other nodes forward.
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, MarkForwarded(r)) }))
	t.Cleanup(peer.Close)
	mustDo(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`, http.StatusCreated)
	mustDo(t, srv, http.MethodPost, "/dbs/db/colls", nil, `{"id":"c","partitionKey":{"paths":["/pk"]}}`, http.StatusCreated)
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}
	resp, _ := do(t, srv, http.MethodPost, "/dbs/db/colls/c/docs", pk, `{"id":"x","pk":"a","v":1}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	written := resp.Header.Get("x-ms-session-token") // this node's session now holds it

	query := map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "True"}
	with := func(a, b map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range a {
			m[k] = v
		}
		for k, v := range b {
			m[k] = v
		}
		return m
	}
	// A container of two physical partitions, each its own keyspace: a
	// query of both reads two keyspaces, and is not forwarded.
	mustDo(t, srv, http.MethodPost, "/dbs/db/colls", map[string]string{"x-ms-offer-throughput": "12000"}, `{"id":"two","partitionKey":{"paths":["/pk"]}}`, http.StatusCreated)
	cross := map[string]string{"x-ms-documentdb-query-enablecrosspartition": "True"}
	reads := []struct {
		name, method, path string
		hdr                map[string]string
		body               string
		forward            bool
	}{
		{"point read", http.MethodGet, "/dbs/db/colls/c/docs/x", pk, "", true},
		{"point read with a token", http.MethodGet, "/dbs/db/colls/c/docs/x", with(pk, map[string]string{"x-ms-session-token": "0:-1#1"}), "", true},
		{"query by key", http.MethodPost, "/dbs/db/colls/c/docs", with(query, pk), `{"query":"SELECT * FROM c"}`, true},
		{"query of a range", http.MethodPost, "/dbs/db/colls/c/docs", with(query, map[string]string{"x-ms-documentdb-partitionkeyrangeid": "0"}), `{"query":"SELECT * FROM c"}`, true},
		{"read feed of a range", http.MethodGet, "/dbs/db/colls/c/docs", map[string]string{"x-ms-documentdb-partitionkeyrangeid": "0"}, "", true},
		{"change feed of a range", http.MethodGet, "/dbs/db/colls/c/docs", map[string]string{"x-ms-documentdb-partitionkeyrangeid": "0", "A-IM": "Incremental Feed"}, "", true},
		{"change feed of two keyspaces", http.MethodGet, "/dbs/db/colls/two/docs", map[string]string{"A-IM": "Incremental Feed"}, "", false},
		{"query of two keyspaces", http.MethodPost, "/dbs/db/colls/two/docs", with(query, cross), `{"query":"SELECT * FROM c"}`, false},
		{"query of one of them", http.MethodPost, "/dbs/db/colls/two/docs", with(query, map[string]string{"x-ms-documentdb-partitionkeyrangeid": "1"}), `{"query":"SELECT * FROM c"}`, true},
		{"query plan", http.MethodPost, "/dbs/db/colls/c/docs", with(query, map[string]string{"x-ms-cosmos-is-query-plan-request": "True"}), `{"query":"SELECT * FROM c"}`, false},
	}
	run := func(wantForward, wantLeader bool) {
		t.Helper()
		for _, rd := range reads {
			forwarded = nil
			resp, body := do(t, srv, rd.method, rd.path, rd.hdr, rd.body)
			fwd := wantForward && rd.forward
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotModified { // 304: a change feed without changes
				t.Errorf("%s: %d %s", rd.name, resp.StatusCode, body)
				continue
			}
			if got := len(forwarded) > 0; got != fwd {
				t.Errorf("%s: forwarded %v, want %v", rd.name, got, fwd)
				continue
			}
			fromLeader := strings.Contains(string(body), `"from":"leader"`)
			if fromLeader != (fwd && wantLeader) {
				t.Errorf("%s: answered by the leader %v, want %v: %s", rd.name, fromLeader, fwd && wantLeader, body)
			}
			if !fwd {
				continue
			}
			tok := forwarded[0].Header.Get("x-ms-session-token")
			mine := written // this node's session of the container read
			if !strings.HasPrefix(rd.path, "/dbs/db/colls/c/") {
				mine = "" // none: nothing written to it here
			}
			if !strings.Contains(tok, mine) || (rd.hdr["x-ms-session-token"] != "" && !strings.HasPrefix(tok, rd.hdr["x-ms-session-token"]+",")) {
				t.Errorf("%s: forwarded with session token %q, want the client's %q and this node's %q", rd.name, tok, rd.hdr["x-ms-session-token"], mine)
			}
			if wantLeader && rd.body != "" && !strings.Contains(string(body), strconv.Quote(rd.body)[1:len(strconv.Quote(rd.body))-1]) {
				t.Errorf("%s: the body forwarded is not the request's: %s", rd.name, body)
			}
		}
	}

	t.Run("held here", func(t *testing.T) { run(false, false) })
	host.away.Store(true)
	host.leader.Store(7)
	answer.Store(true)
	t.Run("held elsewhere", func(t *testing.T) { run(true, true) })
	answer.Store(false)
	t.Run("the leader does not answer", func(t *testing.T) { run(true, false) })

	// Forwarded here by another node: served here.
	answer.Store(true)
	forwarded = nil
	resp, body := do(t, peer, http.MethodGet, "/dbs/db/colls/c/docs/x", pk, "")
	if resp.StatusCode != http.StatusOK || len(forwarded) != 0 || !strings.Contains(string(body), `"v":1`) {
		t.Errorf("a read forwarded here: %d %s, forwarded again: %v", resp.StatusCode, body, len(forwarded) != 0)
	}
	// The keyspace's leader not known (and the forwarder knows no other
	// voter to ask): served here.
	host.leader.Store(0)
	resp, body = do(t, srv, http.MethodGet, "/dbs/db/colls/c/docs/x", pk, "")
	if resp.StatusCode != http.StatusOK || len(forwarded) != 0 || !strings.Contains(string(body), `"v":1`) {
		t.Errorf("leader unknown: %d %s, forwarded: %v", resp.StatusCode, body, len(forwarded) != 0)
	}
}

// countingBody is a request body that counts the bytes read from it.
type countingBody struct {
	n    atomic.Int64
	left int
}

func (b *countingBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), b.left)
	for i := range n {
		p[i] = ' '
	}
	b.left -= n
	b.n.Add(int64(n))
	return n, nil
}

func (b *countingBody) Close() error { return nil }

// TestForwardingReadsBodyAfterAuth: a node that may forward requests keeps
// their bodies in memory to send them on, but only once they are
// authenticated: a request without valid credentials is answered 401
// without its body being read (a security review: a cluster node read up
// to 16 MiB of each unauthenticated request first, and held it while the
// client trickled it in), and an authenticated one still reaches the
// forwarder with its whole body.
func TestForwardingReadsBodyAfterAuth(t *testing.T) {
	var got []byte
	writeFwd := func(w http.ResponseWriter, r *http.Request, body []byte, _, _ uint64) ForwardResult {
		got = body
		w.WriteHeader(http.StatusCreated)
		return Forwarded
	}
	var host *elsewhereHost
	h := newTestAPI(t, Config{Forward: writeFwd}, func(l *replica.Local) replica.Host {
		host = &elsewhereHost{Local: l}
		return host
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	mustDo(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`, http.StatusCreated)
	mustDo(t, srv, http.MethodPost, "/dbs/db/colls", nil, `{"id":"c","partitionKey":{"paths":["/pk"]}}`, http.StatusCreated)

	body := &countingBody{left: 8 << 20}
	r := httptest.NewRequest(http.MethodPost, "/dbs/db/colls/c/docs", body)
	r.Header.Set("x-ms-documentdb-partitionkey", `["a"]`)
	r.Header.Set("x-ms-date", time.Now().UTC().Format(http.TimeFormat))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("unsigned create: %d %s, want 401", rec.Code, rec.Body)
	}
	if n := body.n.Load(); n != 0 {
		t.Fatalf("unsigned create: %d bytes of its body read before it was refused", n)
	}

	host.away.Store(true) // the keyspace's leader is elsewhere: writes are forwarded
	host.leader.Store(2)
	item := `{"id":"x","pk":"a","v":1}`
	mustDo(t, srv, http.MethodPost, "/dbs/db/colls/c/docs", map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}, item, http.StatusCreated)
	if string(got) != item {
		t.Fatalf("forwarded body %q, want %q", got, item)
	}
}

// TestForwardedErrorNamesItsNode: a 5xx that a node answers to a request
// another node forwarded says so, since the client reads it through the
// node it asked, where "this node" would name the wrong one (a partition
// hunt: the catalog's "this node could not confirm …" reached clients of
// healthy nodes from a leader cut off from etcd); the shared error value
// is not changed, and requests not forwarded keep their message.
func TestForwardedErrorNamesItsNode(t *testing.T) {
	h := &Handler{log: slog.New(slog.DiscardHandler)}
	shared := status.Unavailable("this node could not do it; retry")
	msg := func(r *http.Request, err error) string {
		rec := httptest.NewRecorder()
		h.writeError(rec, r, err)
		var body struct{ Message string }
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		return body.Message
	}
	plain := httptest.NewRequest(http.MethodPost, "/dbs/d/colls/c/docs", nil)
	fwd := MarkForwarded(plain)
	for range 2 {
		if got := msg(fwd, shared); !strings.HasPrefix(got, "Answered by the node the request was forwarded to") ||
			!strings.HasSuffix(got, ": this node could not do it; retry") {
			t.Errorf("forwarded: %q", got)
		}
	}
	if got := msg(plain, shared); got != "this node could not do it; retry" {
		t.Errorf("not forwarded: %q", got)
	}
	if got := msg(fwd, status.New(http.StatusNotFound, "no such item")); got != "no such item" {
		t.Errorf("forwarded 404: %q", got)
	}
}

// TestForwardFailedUnfit: a write that found no leader through a node that
// cannot take part in replication now (its disk full: its Raft view is
// stalled) is told why, rather than that a majority may be down.
func TestForwardFailedUnfit(t *testing.T) {
	var host *elsewhereHost
	failed := func(http.ResponseWriter, *http.Request, []byte, uint64, uint64) ForwardResult { return ForwardFailed }
	var why atomic.Value
	why.Store("")
	unfit := func() string { return why.Load().(string) }
	srv := newTestHandlerOn(t, Config{Forward: failed, Replicated: true, Unfit: unfit}, func(l *replica.Local) replica.Host {
		host = &elsewhereHost{Local: l}
		return host
	})
	mustDo(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`, http.StatusCreated)
	mustDo(t, srv, http.MethodPost, "/dbs/db/colls", nil, `{"id":"c","partitionKey":{"paths":["/pk"]}}`, http.StatusCreated)
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}
	host.away.Store(true)
	resp, body := do(t, srv, http.MethodPost, "/dbs/db/colls/c/docs", pk, `{"id":"x","pk":"a"}`)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "majority") {
		t.Fatalf("no leader: %d %s, want 503 naming a majority", resp.StatusCode, body)
	}
	why.Store("this node's disk is full")
	resp, body = do(t, srv, http.MethodPost, "/dbs/db/colls/c/docs", pk, `{"id":"x","pk":"a"}`)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "this node's disk is full") {
		t.Fatalf("no leader through an unfit node: %d %s, want 503 saying why", resp.StatusCode, body)
	}
}

// TestForwardLocalAgain: a write this node refused as not led here, though
// its Forwarder finds it leading (handing its leadership over: the
// transfer completes or is abandoned within about a second), is served
// here again, a pause apart, until it is taken; it used to be answered 503
// after three immediate tries.
func TestForwardLocalAgain(t *testing.T) {
	var host *elsewhereHost
	var calls atomic.Int32
	local := func(http.ResponseWriter, *http.Request, []byte, uint64, uint64) ForwardResult {
		if calls.Add(1) == 6 {
			host.away.Store(false) // the transfer abandoned: this node takes writes again
		}
		return ForwardLocal
	}
	srv := newTestHandlerOn(t, Config{Forward: local, Replicated: true}, func(l *replica.Local) replica.Host {
		host = &elsewhereHost{Local: l}
		return host
	})
	mustDo(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`, http.StatusCreated)
	mustDo(t, srv, http.MethodPost, "/dbs/db/colls", nil, `{"id":"c","partitionKey":{"paths":["/pk"]}}`, http.StatusCreated)
	host.away.Store(true)
	mustDo(t, srv, http.MethodPost, "/dbs/db/colls/c/docs", map[string]string{"x-ms-documentdb-partitionkey": `["a"]`}, `{"id":"x","pk":"a"}`, http.StatusCreated)
	if n := calls.Load(); n != 6 {
		t.Errorf("the forwarder was asked %d times, want 6", n)
	}
}
