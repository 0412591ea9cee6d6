package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/status"
)

// TestResponseHeadersOneWriter: response headers are written only through
// setHeader (headers.go), which sends Cosmos DB's own in lowercase; a
// handler touching the header map directly would send them canonicalised
// on HTTP/1.1.
func TestResponseHeadersOneWriter(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "headers.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "Header()") {
				t.Errorf("%s:%d: %s: write response headers with setHeader", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}

func TestSetHeader(t *testing.T) {
	w := httptest.NewRecorder()
	w.Header().Set("X-Ms-Continuation", "stale") // as http.Header.Set would have stored it
	setHeader(w, "x-ms-continuation", "tok")
	setHeader(w, "ETag", `"1"`)
	setHeader(w, "content-type", "application/json")
	want := http.Header{"x-ms-continuation": {"tok"}, "etag": {`"1"`}, "Content-Type": {"application/json"}}
	if len(w.Header()) != len(want) {
		t.Fatalf("header map %v, want %v", w.Header(), want)
	}
	for k, v := range want {
		if got := w.Header()[k]; len(got) != 1 || got[0] != v[0] {
			t.Errorf("header %q = %q, want %q (map %v)", k, got, v, w.Header())
		}
	}
	if got := responseHeader(w, "X-MS-CONTINUATION"); got != "tok" {
		t.Errorf("responseHeader = %q, want tok", got)
	}
}

// TestFoldQuery: an id with '?' that an SDK put into the URL unencoded is
// read back whole, the same for signing and routing; a query string that
// would add path segments is refused.
func TestFoldQuery(t *testing.T) {
	tests := []struct {
		target  string // request-target as sent
		path    string // folded r.URL.Path
		link    string // the link auth.Resource derives
		refused bool
	}{
		{"/dbs/db/colls/k/docs/plain", "/dbs/db/colls/k/docs/plain", "dbs/db/colls/k/docs/plain", false},
		{"/dbs/db/colls/k/docs/a?b", "/dbs/db/colls/k/docs/a?b", "dbs/db/colls/k/docs/a?b", false},
		{"/dbs/db/colls/k/docs/a?", "/dbs/db/colls/k/docs/a?", "dbs/db/colls/k/docs/a?", false},
		{"/dbs/db/colls/k/docs/a?b?c=d&e", "/dbs/db/colls/k/docs/a?b?c=d&e", "dbs/db/colls/k/docs/a?b?c=d&e", false},
		{"/dbs/db/colls/k/docs/a%20b?c%20d", "/dbs/db/colls/k/docs/a b?c d", "dbs/db/colls/k/docs/a b?c d", false},
		{"/dbs/db/colls/k/docs/a?b%2Fc", "/dbs/db/colls/k/docs/a?b/c", "dbs/db/colls/k/docs/a?b/c", false}, // one segment, as %2F in a path
		{"/dbs/db/colls/k/docs/a?/../../k2/docs/b", "", "", true},
		{"/dbs/db/colls/k/docs/a?b/c", "", "", true},
		{"/dbs/db/colls/k/docs/a?b%zz", "", "", true},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, tt.target, nil)
		got, err := foldQuery(r)
		if tt.refused {
			if se, ok := err.(*status.Error); !ok || se.Code != http.StatusBadRequest {
				t.Errorf("foldQuery(%q) = %v, want a 400", tt.target, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("foldQuery(%q): %v", tt.target, err)
			continue
		}
		if got.URL.Path != tt.path || got.URL.RawQuery != "" {
			t.Errorf("foldQuery(%q): path %q query %q, want %q and none", tt.target, got.URL.Path, got.URL.RawQuery, tt.path)
		}
		_, link, err := auth.Resource(got.URL.EscapedPath())
		if err != nil || link != tt.link {
			t.Errorf("foldQuery(%q): link %q %v, want %q", tt.target, link, err, tt.link)
		}
	}
}

func TestCheckPathIDs(t *testing.T) {
	long := strings.Repeat("x", 256)
	tests := []struct {
		path string
		bad  bool
	}{
		{"/dbs/db/colls/k/docs/" + strings.Repeat("x", 255), false},
		{"/dbs/db/colls/k/docs/" + strings.Repeat("%C3%A9", 255), false}, // 255 characters, 510 bytes
		{"/dbs/db/colls/k/docs/" + long, true},
		{"/dbs/" + long, true},
		{"/dbs/db/colls/" + long + "/docs", true},
		{"/dbs/db/colls/k/docs/" + strings.Repeat("x", 100<<10), true},
		{"/offers/" + long, false},   // offers are addressed by _rid, checked where read
		{"/dbs/db//" + long, true},   // an empty type, then the long id
		{"/dbs/db//x/" + long, true}, // an empty segment
		{"/dbs/db/colls/k/docs/" + long + "/", true},
		{"//dbs/" + long, true},    // an empty segment
		{"/dbs/db//colls/k", true}, // an empty segment (Go's mux answered a redirect)
	}
	for _, tt := range tests {
		err := checkPathIDs(tt.path)
		if bad := err != nil; bad != tt.bad {
			t.Errorf("checkPathIDs(%.60q…) = %v, want refused %v", tt.path, err, tt.bad)
		}
	}
}

func TestURIComponentEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":"b c"}`, "%7B%22a%22%3A%22b%20c%22%7D"},
		{"/x/?", "%2Fx%2F%3F"},
		{"a-b_c.d~e", "a-b_c.d~e"},
		{"é+", "%C3%A9%2B"},
	}
	for _, tt := range tests {
		if got := uriComponentEscape(tt.in); got != tt.want {
			t.Errorf("uriComponentEscape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzURIComponentEscape checks uriComponentEscape against its definition:
// url.QueryEscape with spaces as %20.
func FuzzURIComponentEscape(f *testing.F) {
	for _, s := range []string{"", `{"a":"b c"}`, "/x/?", "a-b_c.d~e", "é+", "\x00\xff %"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
		if got := uriComponentEscape(s); got != want {
			t.Errorf("uriComponentEscape(%q) = %q, want %q", s, got, want)
		}
	})
}

// TestSignedQuestionMark: an id ending in '?' reaches the server without
// it (the JS SDK's HTTP client drops a URL's empty query) but signed with
// it; the request addresses that id, and only a signature naming it does.
func TestSignedQuestionMark(t *testing.T) {
	srv := newTestHandler(t, Config{})
	do(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`)
	do(t, srv, http.MethodPost, "/dbs/db/colls", nil, `{"id":"k","partitionKey":{"paths":["/pk"]}}`)
	do(t, srv, http.MethodPost, "/dbs/db/colls/k/docs", map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}, `{"id":"why","pk":"p"}`)
	key, _ := auth.DecodeKey(testKey)
	send := func(signed string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/dbs/db/colls/k/docs/why", nil)
		date := time.Now().UTC().Format(http.TimeFormat)
		req.Header.Set("x-ms-date", date)
		req.Header.Set("x-ms-documentdb-partitionkey", `["p"]`)
		req.Header.Set("Authorization", auth.MasterToken(key, http.MethodGet, "docs", signed, date))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := send("dbs/db/colls/k/docs/why"); code != http.StatusOK {
		t.Errorf("signed as sent: %d %s, want 200 (item why)", code, body)
	}
	if code, body := send("dbs/db/colls/k/docs/why?"); code != http.StatusNotFound {
		t.Errorf("signed with '?': %d %s, want 404 (no item why?)", code, body)
	}
	for _, other := range []string{"dbs/db/colls/k/docs/other?", "dbs/db/colls/k/docs/why??", "dbs/db/colls/k?"} {
		if code, body := send(other); code != http.StatusUnauthorized {
			t.Errorf("signed for %s: %d %s, want 401", other, code, body)
		}
	}
}

// TestLeadingSlashes: the Python SDK (v3) sends "//dbs/..." (the account's
// endpoint ends in '/'); it is served and signed as "/dbs/...".
func TestLeadingSlashes(t *testing.T) {
	srv := newTestHandler(t, Config{})
	do(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`)
	key, _ := auth.DecodeKey(testKey)
	for _, path := range []string{"//dbs/db", "///dbs/db", "/dbs/db"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		date := time.Now().UTC().Format(http.TimeFormat)
		req.Header.Set("x-ms-date", date)
		req.Header.Set("Authorization", auth.MasterToken(key, http.MethodGet, "dbs", "dbs/db", date))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"id":"db"`) {
			t.Errorf("GET %s: %s %s, want 200 with database db", path, resp.Status, b)
		}
	}
}

// TestCrossPartitionFeatures: the gateway's refusal of a cross-partition
// query carries the plan either way; it has substatus 1004 (run the plan)
// only when the client merges every feature the plan needs: the ones it
// declares in x-ms-cosmos-supported-query-features, or without the header
// ORDER BY, TOP and SELECT VALUE aggregates.
func TestCrossPartitionFeatures(t *testing.T) {
	srv := newTestHandler(t, Config{})
	do(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`)
	do(t, srv, http.MethodPost, "/dbs/db/colls", nil, `{"id":"k","partitionKey":{"paths":["/pk"]}}`)
	tests := []struct {
		query, features string
		sub             string
		msg             string
	}{
		{"SELECT * FROM c ORDER BY c.a", "", "1004", "can not be directly served by the gateway"},
		{"SELECT VALUE COUNT(1) FROM c", "", "1004", "can not be directly served by the gateway"},
		{"SELECT TOP 2 * FROM c ORDER BY c.a", "", "1004", "can not be directly served by the gateway"},
		{"SELECT DISTINCT VALUE c.a FROM c", "", "", "Query contained Distinct, which the calling client does not support"},
		{"SELECT c.g, COUNT(1) AS n FROM c GROUP BY c.g", "", "", "Query contained GroupBy, which the calling client does not support. Query contained NonValueAggregate"},
		{"SELECT * FROM c ORDER BY c.a OFFSET 1 LIMIT 1", "OrderBy", "", "Query contained OffsetAndLimit"},
		{"SELECT DISTINCT VALUE c.a FROM c", "Aggregate, Distinct,OrderBy", "1004", "can not be directly served by the gateway"},
		{"SELECT * FROM c ORDER BY c.a", "Distinct", "", "Query contained OrderBy"},
	}
	for _, tt := range tests {
		hdr := map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-query-enablecrosspartition": "true"}
		if tt.features != "" {
			hdr["x-ms-cosmos-supported-query-features"] = tt.features
		}
		body, _ := json.Marshal(map[string]string{"query": tt.query})
		resp, b := do(t, srv, http.MethodPost, "/dbs/db/colls/k/docs", hdr, string(body))
		var e struct{ Message, AdditionalErrorInfo string }
		if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &e) != nil {
			t.Errorf("%q (features %q): %d %s, want 400", tt.query, tt.features, resp.StatusCode, b)
			continue
		}
		if got := resp.Header.Get("x-ms-substatus"); got != tt.sub || !strings.Contains(e.Message, tt.msg) || !strings.Contains(e.AdditionalErrorInfo, `"queryInfo"`) {
			t.Errorf("%q (features %q): substatus %q, message %q, additionalErrorInfo %.40q; want substatus %q, a message with %q and the plan",
				tt.query, tt.features, got, e.Message, e.AdditionalErrorInfo, tt.sub, tt.msg)
		}
	}
}

// TestGatewayQueryHeader: a query sent with x-partita-gateway-query: full
// is run whole on the server, as --gateway-query=full runs every query:
// the Data Explorer, which merges nothing itself, ran no cross-partition
// ORDER BY, aggregate, DISTINCT or GROUP BY on a default server (400, a
// message written for SDKs: an explorer hunt). Another value is 400.
func TestGatewayQueryHeader(t *testing.T) {
	srv := newTestHandler(t, Config{})
	do(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`)
	do(t, srv, http.MethodPost, "/dbs/db/colls", nil, `{"id":"k","partitionKey":{"paths":["/pk"]}}`)
	for i := range 5 {
		do(t, srv, http.MethodPost, "/dbs/db/colls/k/docs", map[string]string{"x-ms-documentdb-partitionkey": fmt.Sprintf(`["p%d"]`, i)},
			fmt.Sprintf(`{"id":"i%d","pk":"p%d","n":%d}`, i, i, i))
	}
	query := func(q, mode string) (*http.Response, []byte) {
		hdr := map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-query-enablecrosspartition": "true"}
		if mode != "" {
			hdr["x-partita-gateway-query"] = mode
		}
		body, _ := json.Marshal(map[string]string{"query": q})
		return do(t, srv, http.MethodPost, "/dbs/db/colls/k/docs", hdr, string(body))
	}
	for q, want := range map[string]string{
		"SELECT VALUE COUNT(1) FROM c":                `[5]`,
		"SELECT VALUE c.n FROM c ORDER BY c.n DESC":   `[4,3,2,1,0]`,
		"SELECT DISTINCT VALUE c.n % 2 FROM c":        `[0,1]`,
		"SELECT TOP 2 VALUE c.id FROM c ORDER BY c.n": `["i0","i1"]`,
	} {
		if resp, _ := query(q, ""); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%q without the header: %d, want 400 (the gateway's refusal)", q, resp.StatusCode)
		}
		resp, b := query(q, "full")
		var page struct{ Documents json.RawMessage }
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &page) != nil || string(page.Documents) != want {
			t.Errorf("%q with x-partita-gateway-query: full: %d %s, want 200 with %s", q, resp.StatusCode, b, want)
		}
	}
	if resp, _ := query("SELECT * FROM c", "everything"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("x-partita-gateway-query: everything: %d, want 400", resp.StatusCode)
	}
}

// TestChargeRounded: charges are reported in hundredths of a request unit,
// as Cosmos DB's are, never with a sum's float noise (a stored procedure's
// 5201 RU read 5200.999999999903).
func TestChargeRounded(t *testing.T) {
	var sum float64
	for range 5201 * 10 {
		sum += 0.1
	}
	for _, tc := range []struct {
		ru   float64
		want string
	}{{sum, "5201"}, {1, "1"}, {2.8571428, "2.86"}, {0.1 + 0.2, "0.3"}, {0, "0"}} {
		rec := httptest.NewRecorder()
		setCharge(rec, tc.ru)
		if got := responseHeader(rec, "x-ms-request-charge"); got != tc.want {
			t.Errorf("setCharge(%v) = %q, want %q", tc.ru, got, tc.want)
		}
	}
}

// TestAltContentPath: the container link header carries ASCII names as
// they are and percent-encodes what a header should not carry.
func TestAltContentPath(t *testing.T) {
	for _, tc := range []struct{ db, coll, want string }{
		{"db", "c", "dbs/db/colls/c"},
		{"sp ace", "a%b+c", "dbs/sp ace/colls/a%b+c"},
		{"db", "c é", "dbs/db/colls/c %C3%A9"},
		{"db", "tab\tx", "dbs/db/colls/tab%09x"},
		{"db", "é%41", "dbs/db/colls/%C3%A9%2541"},
	} {
		if got := altContentPath(tc.db, tc.coll); got != tc.want {
			t.Errorf("altContentPath(%q, %q) = %q, want %q", tc.db, tc.coll, got, tc.want)
		}
	}
}

// TestQuotedKeyPaths: a partition key path's quoted segment names the
// property its text between the quotes names as written, escapes
// included, and single quotes quote too, as the SDKs' path parsers read
// them: @azure/cosmos sends the value of the property q\"x for the path
// /"q\"x", and every write it made to such a container was refused (a
// partition key hunt: the path was read as a JSON string, q"x).
func TestQuotedKeyPaths(t *testing.T) {
	srv := newTestHandler(t, Config{})
	do(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`)
	for i, tc := range []struct {
		path, item string
	}{
		{`/\"q\\\"x\"`, `{"id":"1","q\\\"x":"v","q\"x":"other"}`},
		{`/'my key'`, `{"id":"1","my key":"v"}`},
	} {
		coll := fmt.Sprintf("k%d", i)
		if resp, b := do(t, srv, http.MethodPost, "/dbs/db/colls", nil, `{"id":"`+coll+`","partitionKey":{"paths":["`+tc.path+`"],"kind":"Hash"}}`); resp.StatusCode != http.StatusCreated {
			t.Fatalf("container with key path %s: %d %s", tc.path, resp.StatusCode, b)
		}
		pk := map[string]string{"x-ms-documentdb-partitionkey": `["v"]`}
		if resp, b := do(t, srv, http.MethodPost, "/dbs/db/colls/"+coll+"/docs", pk, tc.item); resp.StatusCode != http.StatusCreated {
			t.Errorf("key path %s: create %s with key \"v\": %d %s", tc.path, tc.item, resp.StatusCode, b)
		}
		if resp, b := do(t, srv, http.MethodGet, "/dbs/db/colls/"+coll+"/docs/1", pk, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("key path %s: read: %d %s", tc.path, resp.StatusCode, b)
		}
	}
}
