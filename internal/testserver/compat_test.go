package testserver_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/testserver"
)

// wireLog records the bytes a connection reads: the response as sent.
type wireLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

type loggedConn struct {
	net.Conn
	log *wireLog
}

func (c loggedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.log.mu.Lock()
	c.log.buf.Write(p[:n])
	c.log.mu.Unlock()
	return n, err
}

// http1Do sends a request signed with the master key over HTTP/1.1 and TLS
// (HTTP/2 is not offered) and returns the status and the response's header
// block as it came over the wire.
func http1Do(t *testing.T, s *testserver.Server, method, path string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.CertPEM)
	wl := &wireLog{}
	tr := &http.Transport{
		ForceAttemptHTTP2: false,
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			d := tls.Dialer{Config: &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}}}
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return loggedConn{Conn: c, log: wl}, nil
		},
	}
	defer tr.CloseIdleConnections()
	u := strings.TrimSuffix(s.Endpoint, "/") + path
	req, err := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	parsed, _ := url.Parse(u)
	typ, link, err := auth.Resource(parsed.EscapedPath())
	if err != nil {
		t.Fatal(err)
	}
	key, _ := auth.DecodeKey(s.Key)
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-11-05")
	req.Header.Set("Authorization", auth.MasterToken(key, method, typ, link, date))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 1 {
		t.Fatalf("%s %s: protocol %s, want HTTP/1.1", method, path, resp.Proto)
	}
	wl.mu.Lock()
	defer wl.mu.Unlock()
	head, _, _ := strings.Cut(wl.buf.String(), "\r\n\r\n")
	return resp.StatusCode, head
}

// TestResponseHeaderNamesLowercaseOnHTTP1 reads the response bytes of
// HTTP/1.1 requests: Cosmos DB's headers go out in lowercase, as the
// service sends them (clients such as the Python SDK look them up
// case-sensitively), and the standard ones in their usual case.
func TestResponseHeaderNamesLowercaseOnHTTP1(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	must := func(method, path string, hdr map[string]string, body string, want int, names ...string) {
		t.Helper()
		code, head := http1Do(t, s, method, path, hdr, body)
		if code != want {
			t.Fatalf("%s %s: %d, want %d\n%s", method, path, code, want, head)
		}
		for _, name := range names {
			if !strings.Contains(head, "\r\n"+name+": ") {
				t.Errorf("%s %s: no header line %q in\n%s", method, path, name, head)
			}
		}
		for line := range strings.SplitSeq(head, "\r\n") {
			if strings.HasPrefix(strings.ToLower(line), "x-ms-") && !strings.HasPrefix(line, "x-ms-") {
				t.Errorf("%s %s: header line %q is not lowercase", method, path, line)
			}
		}
	}
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "Content-Type": "application/json"}
	must("POST", "/dbs", nil, `{"id":"db"}`, 201, "etag", "x-ms-request-charge", "x-ms-activity-id", "Content-Type")
	must("POST", "/dbs/db/colls", nil, `{"id":"k","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`, 201, "etag")
	for _, id := range []string{"a", "b", "c"} {
		must("POST", "/dbs/db/colls/k/docs", pk, `{"id":"`+id+`","pk":"p"}`, 201,
			"etag", "x-ms-session-token", "x-ms-request-charge", "x-ms-activity-id", "x-ms-content-path", "x-ms-alt-content-path")
	}
	must("GET", "/dbs/db/colls/k/docs", map[string]string{"x-ms-max-item-count": "2"}, "", 200,
		"x-ms-continuation", "x-ms-item-count", "x-ms-request-charge")
	must("POST", "/dbs/db/colls/k/docs", map[string]string{"x-ms-documentdb-partitionkey": `["q"]`}, `{"id":"x","pk":"p"}`, 400,
		"x-ms-substatus", "x-ms-request-charge", "x-ms-activity-id")
	must("GET", "/dbs/db/colls/k/docs", map[string]string{"A-IM": "Incremental Feed", "x-ms-documentdb-partitionkeyrangeid": "0"}, "", 200,
		"etag", "x-ms-documentdb-partitionkeyrangeid")
	// A batch's and a stored procedure's session token come with the
	// container they belong to, as a point write's do (@azure/cosmos drops
	// a token that names none: a conditional-request hunt).
	must("POST", "/dbs/db/colls/k/docs", map[string]string{"x-ms-documentdb-partitionkey": `["p"]`, "x-ms-cosmos-is-batch-request": "true",
		"x-ms-cosmos-batch-atomic": "true", "Content-Type": "application/json"}, `[{"operationType":"Upsert","resourceBody":{"id":"d","pk":"p"}}]`, 200,
		"x-ms-session-token", "x-ms-content-path", "x-ms-alt-content-path")
	must("POST", "/dbs/db/colls/k/sprocs", nil, `{"id":"sp","body":"function sp() { getContext().getResponse().setBody(1); }"}`, 201)
	must("POST", "/dbs/db/colls/k/sprocs/sp", pk, `[]`, 200, "x-ms-session-token", "x-ms-content-path", "x-ms-alt-content-path")
}

// TestPlainHTTPOnTLSPort: a client that speaks plain HTTP to the HTTPS port
// gets a 400 with a Cosmos DB error body naming the https endpoint, which
// the SDKs show, rather than net/http's text line.
func TestPlainHTTPOnTLSPort(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	addr := strings.TrimSuffix(strings.TrimPrefix(s.Endpoint, "https://"), "/")
	for _, req := range []string{
		"GET / HTTP/1.1\r\nHost: " + addr + "\r\n\r\n",
		"POST /dbs HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"id\":\"db\"}",
	} {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		body, _ := io.ReadAll(resp.Body)
		c.Close()
		var e struct{ Code, Message string }
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &e) != nil {
			t.Fatalf("%q: %s %v %s, want 400 with a JSON body", req, resp.Status, resp.Header, body)
		}
		if e.Code != "BadRequest" || !strings.Contains(e.Message, "https://"+addr+"/") {
			t.Errorf("%q: error %+v, want BadRequest naming https://%s/", req, e, addr)
		}
	}
	// TLS still works after those connections.
	if _, _, err := s.Do(t.Context(), "GET", "/", nil, nil); err != nil {
		t.Fatal(err)
	}
}

// TestExplorerPaths: the emulator's unauthenticated web paths. The
// certificate is the server's; index.html is the Data Explorer (package
// explorer; its browser test drives it); other paths under /_explorer/
// are 404 with a JSON error.
func TestExplorerPaths(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	get := func(path string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "GET", strings.TrimSuffix(s.Endpoint, "/")+path, nil)
		resp, err := s.HTTPClient().Do(req) // no Authorization header
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, b := get("/_explorer/emulator.pem")
	if resp.StatusCode != 200 || !bytes.Equal(b, s.CertPEM) {
		t.Errorf("emulator.pem: %s %q, want 200 and the server's certificate", resp.Status, b)
	}
	resp, b = get("/_explorer/index.html")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(b), "Partita Data Explorer") {
		t.Errorf("index.html: %s %s %q, want 200 and the Data Explorer's page", resp.Status, resp.Header.Get("Content-Type"), b)
	}
	resp, b = get("/_explorer/other.js")
	if resp.StatusCode != 404 || !strings.Contains(string(b), `"message"`) {
		t.Errorf("other.js: %s %q, want 404 with a JSON error", resp.Status, b)
	}
	if resp, _ := get("/dbs"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /dbs without a signature: %s, want 401 (only /_explorer/ is open)", resp.Status)
	}
}

// TestLongIDInURL: a read, replace or delete naming an id far longer than
// any id can be gets 400, as a create of such an id does, not 404 or a
// refusal of the URL, up to the 64 KiB a request's headers may take (its
// URL counted); past that the request is refused whole (431, or the
// client's own refusal under HTTP/2's advertised limit), as Cosmos DB's
// gateway refuses a URL past its own, smaller, limit.
func TestLongIDInURL(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	k := newContainer(t, s.Client(t), "db", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	ctx := t.Context()
	pk := azcosmos.NewPartitionKeyString("p")
	if _, err := k.ReadItem(ctx, pk, strings.Repeat("x", 100<<10), nil); err == nil {
		t.Error("a read naming a 100 KiB id succeeded")
	}
	for _, n := range []int{256, 60 << 10} {
		id := strings.Repeat("x", n)
		_, err := k.CreateItem(ctx, pk, mustJSON(t, map[string]string{"id": id, "pk": "p"}), nil)
		wantStatus(t, "create", err, http.StatusBadRequest)
		_, err = k.ReadItem(ctx, pk, id, nil)
		wantStatus(t, "read", err, http.StatusBadRequest)
		_, err = k.ReplaceItem(ctx, pk, id, mustJSON(t, map[string]string{"id": id, "pk": "p"}), nil)
		wantStatus(t, "replace", err, http.StatusBadRequest)
		_, err = k.DeleteItem(ctx, pk, id, nil)
		wantStatus(t, "delete", err, http.StatusBadRequest)
	}
	// 255 characters (of several bytes each) are fine: not found.
	_, err := k.ReadItem(ctx, pk, strings.Repeat("é", 255), nil)
	wantStatus(t, "read 255", err, http.StatusNotFound)
}

// TestDotIDs: "." and ".." are refused as ids (400), of items, containers
// and databases, and a URL naming one gets 400 rather than the router's
// redirect (307) to the resource above it, for ".." the container. (The
// Go SDK removes such a segment from its URL itself, so its read of "."
// reaches the feed of the container's items with the item's signature:
// 401.)
func TestDotIDs(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	ctx := t.Context()
	pk := azcosmos.NewPartitionKeyString("p")
	for _, id := range []string{".", ".."} {
		_, err := k.CreateItem(ctx, pk, mustJSON(t, map[string]string{"id": id, "pk": "p"}), nil)
		wantStatus(t, "create item "+id, err, http.StatusBadRequest)
		_, err = k.UpsertItem(ctx, pk, mustJSON(t, map[string]string{"id": id, "pk": "p"}), nil)
		wantStatus(t, "upsert item "+id, err, http.StatusBadRequest)
		for _, m := range []string{http.MethodGet, http.MethodDelete} {
			if code, head := http1Do(t, s, m, "/dbs/db/colls/k/docs/"+id, map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}, ""); code != http.StatusBadRequest {
				t.Errorf("%s of item %q: %d, want 400\n%s", m, id, code, head)
			}
		}
		if code, head := http1Do(t, s, http.MethodGet, "/dbs/"+id, nil, ""); code != http.StatusBadRequest {
			t.Errorf("GET /dbs/%s: %d, want 400\n%s", id, code, head)
		}
		_, err = c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: id}, nil)
		wantStatus(t, "create database "+id, err, http.StatusBadRequest)
		db, _ := c.NewDatabase("db")
		_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: id, PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
		wantStatus(t, "create container "+id, err, http.StatusBadRequest)
	}
	// The container the ".." delete would have been redirected to is
	// still there.
	if _, err := k.Read(ctx, nil); err != nil {
		t.Errorf("the container after the deletes of . and ..: %v", err)
	}
}

// TestEmulatorCompatAccountID: under --emulator-compat the database account
// has the emulator's id, "localhost"; otherwise "partita".
func TestEmulatorCompatAccountID(t *testing.T) {
	for _, compat := range []bool{false, true} {
		s := testserver.Start(t, testserver.Options{Configure: func(c *config.Config) { c.API.EmulatorCompat = compat }})
		resp, b, err := s.Do(t.Context(), "GET", "/", nil, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET /: %v %v", resp, err)
		}
		var acct struct {
			ID  string `json:"id"`
			RID string `json:"_rid"`
		}
		if err := json.Unmarshal(b, &acct); err != nil {
			t.Fatal(err)
		}
		want := "partita"
		if compat {
			want = "localhost"
		}
		if acct.ID != want || acct.RID != want {
			t.Errorf("emulator compat %v: account id %q, _rid %q, want %q", compat, acct.ID, acct.RID, want)
		}
	}
}

// TestCrossPartitionRefusalTellsGoUsers: the Go SDK, which cannot run a
// query plan, shows the gateway's 400/1004 message; it keeps the service's
// wording (which the Go SDK's own tests look for) and says how to run the
// query after all.
func TestCrossPartitionRefusalTellsGoUsers(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	k := newContainer(t, s.Client(t), "db", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	pager := k.NewQueryItemsPager("SELECT * FROM c ORDER BY c.n", azcosmos.NewPartitionKey(), nil)
	_, err := pager.NextPage(t.Context())
	code, sub := statusOf(err)
	if code != http.StatusBadRequest || sub != "1004" {
		t.Fatalf("cross-partition ORDER BY: %d/%s %v, want 400/1004", code, sub, err)
	}
	for _, want := range []string{"BadRequest", "cross partition query can not be directly served by the gateway", "ORDER BY", "--gateway-query=full", "partition key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}
