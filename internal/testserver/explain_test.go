package testserver_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/testserver"
)

// TestExplainQuery: the explain endpoint prints the physical plan of a
// query (docs/query-plan.md) and needs the master key; a query asked for
// metrics carries the plan it ran in x-partita-query-plan.
func TestExplainQuery(t *testing.T) {
	const readOnly = "cmVhZC1vbmx5LWtleS1mb3ItdGVzdHMtb25seS0xMjM0NTY3ODkwYWJjZGVm"
	s := testserver.Start(t, testserver.Options{Configure: func(c *config.Config) { c.Auth.ReadOnlyKey = readOnly }})
	ctx := t.Context()
	must := func(method, path string, hdr map[string]string, body string, want int) []byte {
		t.Helper()
		resp, b, err := s.Do(ctx, method, path, hdr, []byte(body))
		if err != nil || resp.StatusCode != want {
			t.Fatalf("%s %s: %v %s %v, want %d", method, path, resp.Status, b, err, want)
		}
		return b
	}
	js := map[string]string{"Content-Type": "application/json"}
	must("POST", "/dbs", js, `{"id":"db"}`, 201)
	must("POST", "/dbs/db/colls", js, `{"id":"k","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`, 201)
	must("POST", "/dbs/db/colls/k/docs", map[string]string{"Content-Type": "application/json", "x-ms-documentdb-partitionkey": `["p"]`}, `{"id":"a","pk":"p","n":3}`, 201)

	query := `{"query":"SELECT * FROM c WHERE c.n IN (3, 4)"}`
	hdr := map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-query-enablecrosspartition": "True"}
	body := must("POST", "/_partita/dbs/db/colls/k/explain", hdr, query, 200)
	var out struct {
		Plan struct{ Access, Path, Executor, Token string }
		Text string
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("explain: %s: %v", body, err)
	}
	if out.Plan.Access != "index-merge" || out.Plan.Path != "/n" || out.Plan.Executor != "streamed" || out.Plan.Token != "seq" ||
		!strings.HasPrefix(out.Text, "access: index-merge on /n\n") {
		t.Errorf("explain = %s, want an index-merge on /n, streamed", body)
	}
	if resp, b, err := s.DoWithKey(ctx, readOnly, "POST", "/_partita/dbs/db/colls/k/explain", hdr, []byte(query)); err != nil || resp.StatusCode != 403 {
		t.Errorf("explain with the read-only key: %v %s %v, want 403", resp.Status, b, err)
	}

	hdr["x-ms-documentdb-isquery"] = "True"
	hdr["x-ms-documentdb-populatequerymetrics"] = "True"
	resp, b, err := s.Do(ctx, "POST", "/dbs/db/colls/k/docs", hdr, []byte(query))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("query: %v %s %v", resp.Status, b, err)
	}
	raw, err := url.PathUnescape(resp.Header.Get("x-partita-query-plan"))
	if err != nil || !strings.Contains(raw, `"access":"index-merge"`) {
		t.Errorf("x-partita-query-plan = %q (%v), want the plan's JSON", resp.Header.Get("x-partita-query-plan"), err)
	}
}
