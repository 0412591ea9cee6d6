package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/status"
)

// TestNodeSessionWithClientToken: in a cluster, a session read that
// carries a token older than a write this node answered waits for that
// write too. The Python SDK v3 takes no session token from a delete's
// answer, so the read after a delete forwarded to its leader names the
// position before the delete; through a follower that had not applied it
// yet, the read found the deleted item (found by the Python tests against
// a cluster).
func TestNodeSessionWithClientToken(t *testing.T) {
	srv := newTestHandler(t, Config{Replicated: true})
	h := srv.Config.Handler.(*Handler)
	do(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`)
	do(t, srv, http.MethodPost, "/dbs/db/colls", nil, `{"id":"k","partitionKey":{"paths":["/pk"]}}`)
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
	resp, body := do(t, srv, http.MethodPost, "/dbs/db/colls/k/docs", pk, `{"id":"a","pk":"p"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	token := resp.Header.Get("x-ms-session-token") // the client's: "0:-1#<lsn>"
	toks, err := sessionTokens(token)
	if err != nil || len(toks) != 1 {
		t.Fatalf("create's session token %q: %v", token, err)
	}

	// This node answers the delete, forwarded to the partition's leader,
	// which applied it at the next LSN; this node has not yet.
	tok := toks[0]
	tok.LSN++
	deleted := httptest.NewRecorder()
	setHeader(deleted, "x-ms-session-token", tok.RangeID+":-1#"+strconv.FormatUint(tok.LSN, 10))
	del := httptest.NewRequest(http.MethodDelete, "/dbs/db/colls/k/docs/a", nil)
	del.SetPathValue("db", "db")
	del.SetPathValue("coll", "k")
	h.noteSession(deleted, del)

	// read serves a read of item a carrying the client's token; the wait
	// for this node's session is 100 ms instead of sessionWait, for the
	// test's speed: the outcome does not depend on it.
	h.waitSession = 100 * time.Millisecond
	read := func() (code int, sub string) {
		t.Helper()
		r := signedRequest(t, t.Context(), http.MethodGet, "/dbs/db/colls/k/docs/a")
		r.Header.Set("x-ms-documentdb-partitionkey", `["p"]`)
		r.Header.Set("x-ms-session-token", token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, responseHeader(w, "x-ms-substatus")
	}
	if code, sub := read(); code != http.StatusNotFound || sub != strconv.Itoa(status.SubNotFoundReadSessionNotAvailable) {
		t.Errorf("read with a token behind the node's session = %d/%s, want 404/1002 (the SDKs retry it), not the deleted item", code, sub)
	}

	// Once the delete is applied here (it is run here, at that LSN), the
	// same read is served: the item is gone.
	resp, body = do(t, srv, http.MethodDelete, "/dbs/db/colls/k/docs/a", pk, "")
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, body)
	}
	if got := resp.Header.Get("x-ms-session-token"); !strings.HasSuffix(got, "#"+strconv.FormatUint(tok.LSN, 10)) {
		t.Fatalf("delete's session token %q, want LSN %d", got, tok.LSN)
	}
	if code, sub := read(); code != http.StatusNotFound || sub != "" {
		t.Errorf("read once the node reached its session = %d/%s, want 404 without substatus", code, sub)
	}
}

// signedRequest returns a request for path signed with the master key,
// with ctx, to be served by a Handler directly.
func signedRequest(t *testing.T, ctx context.Context, method, path string) *http.Request {
	t.Helper()
	r := httptest.NewRequestWithContext(ctx, method, path, nil)
	typ, link, err := auth.Resource(r.URL.EscapedPath())
	if err != nil {
		t.Fatal(err)
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	key, _ := auth.DecodeKey(testKey)
	r.Header.Set("x-ms-date", date)
	r.Header.Set("Authorization", auth.MasterToken(key, method, typ, link, date))
	return r
}

// TestNodeSessionsPruned: the node's session keeps no entry of a container
// that no longer exists for long: 200 containers, each written through the
// node and deleted, leave fewer than minPruneAt entries. Each stayed for
// good before (a soak hunt of container churn).
func TestNodeSessionsPruned(t *testing.T) {
	srv := newTestHandler(t, Config{Replicated: true})
	h := srv.Config.Handler.(*Handler)
	do(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`)
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
	for i := range 200 {
		c := "c" + strconv.Itoa(i)
		do(t, srv, http.MethodPost, "/dbs/db/colls", nil, `{"id":"`+c+`","partitionKey":{"paths":["/pk"]}}`)
		if resp, body := do(t, srv, http.MethodPost, "/dbs/db/colls/"+c+"/docs", pk, `{"id":"a","pk":"p"}`); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create in %s: %d %s", c, resp.StatusCode, body)
		}
		if resp, body := do(t, srv, http.MethodDelete, "/dbs/db/colls/"+c, nil, ""); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("delete %s: %d %s", c, resp.StatusCode, body)
		}
	}
	h.sessions.mu.Lock()
	n := len(h.sessions.m)
	h.sessions.mu.Unlock()
	if n >= 64 {
		t.Errorf("the node's session holds %d containers' entries after 200 were written and deleted, want fewer than %d", n, 64)
	}
}
