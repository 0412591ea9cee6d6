package testserver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/testserver"
)

// TestReadOnlyKeyCannotWrite sends every kind of write with the read-only
// key, with and without the headers that mark a request as a query: whether
// a request may write follows from the operation it performs, so each gets
// 403 and nothing changes. Queries and reads with the same key still work.
func TestReadOnlyKeyCannotWrite(t *testing.T) {
	const readOnly = "cmVhZC1vbmx5LWtleS1mb3ItdGVzdHMtb25seS0xMjM0NTY3ODkwYWJjZGVm"
	s := testserver.Start(t, testserver.Options{Configure: func(c *config.Config) { c.Auth.ReadOnlyKey = readOnly }})
	ctx := t.Context()
	must := func(method, path string, hdr map[string]string, body string, want int) {
		t.Helper()
		resp, b, err := s.Do(ctx, method, path, hdr, []byte(body))
		if err != nil || resp.StatusCode != want {
			t.Fatalf("%s %s: %v %s %v, want %d", method, path, resp.Status, b, err, want)
		}
	}
	json := map[string]string{"Content-Type": "application/json"}
	must("POST", "/dbs", json, `{"id":"db"}`, 201)
	must("POST", "/dbs/db/colls", json, `{"id":"k","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`, 201)
	must("POST", "/dbs/db/colls/k/sprocs", json, `{"id":"writer","body":"function writer(){ getContext().getCollection().createDocument(__.getSelfLink(), {id:'sneaky', pk:'p'}); getContext().getResponse().setBody('wrote'); }"}`, 201)
	pkHdr := func(h map[string]string) map[string]string {
		out := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
		for k, v := range h {
			out[k] = v
		}
		return out
	}
	must("POST", "/dbs/db/colls/k/docs", pkHdr(json), `{"id":"a","pk":"p"}`, 201)

	// The ways a client can dress a request up as a query.
	disguises := map[string]map[string]string{
		"plain":         {"Content-Type": "application/json"},
		"isquery":       {"Content-Type": "application/json", "x-ms-documentdb-isquery": "True"},
		"query+json":    {"Content-Type": "application/query+json"},
		"query-plan":    {"Content-Type": "application/json", "x-ms-cosmos-is-query-plan-request": "True"},
		"isquery+query": {"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "True", "x-ms-documentdb-query": "True"},
	}
	writes := []struct{ method, path, body string }{
		{"POST", "/dbs/db/colls/k/sprocs/writer", `[]`},
		{"POST", "/_partita/dbs/db/colls/k/pkranges/0/split", ``},
		{"PUT", "/dbs/db/colls/k/docs/a", `{"id":"a","pk":"p","v":2}`},
		{"PATCH", "/dbs/db/colls/k/docs/a", `{"operations":[{"op":"set","path":"/v","value":3}]}`},
		{"DELETE", "/dbs/db/colls/k/docs/a", ``},
		{"PUT", "/dbs/db/colls/k/sprocs/writer", `{"id":"writer","body":"function writer(){}"}`},
		{"DELETE", "/dbs/db/colls/k/sprocs/writer", ``},
		{"PUT", "/dbs/db/colls/k", `{"id":"k","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":1}`},
		{"DELETE", "/dbs/db/colls/k", ``},
		{"DELETE", "/dbs/db", ``},
	}
	for _, w := range writes {
		for name, hdr := range disguises {
			resp, body, err := s.DoWithKey(ctx, readOnly, w.method, w.path, pkHdr(hdr), []byte(w.body))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s %s (%s) with the read-only key: %s %s, want 403", w.method, w.path, name, resp.Status, body)
			}
		}
	}
	// POSTs that create are refused too when they are not queries; dressed
	// as queries they are queries (and their bodies are not valid ones).
	creates := []struct{ path, body string }{
		{"/dbs", `{"id":"db2"}`},
		{"/dbs/db/colls", `{"id":"k2","partitionKey":{"paths":["/pk"]}}`},
		{"/dbs/db/colls/k/docs", `{"id":"b","pk":"p"}`},
		{"/dbs/db/colls/k/sprocs", `{"id":"s2","body":"function s2(){}"}`},
	}
	for _, c := range creates {
		for name, hdr := range disguises {
			h := pkHdr(hdr)
			resp, body, err := s.DoWithKey(ctx, readOnly, "POST", c.path, h, []byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode/100 == 2 && !strings.Contains(name, "quer") {
				t.Errorf("POST %s (%s) with the read-only key: %s %s, want a refusal", c.path, name, resp.Status, body)
			}
		}
		// A batch dressed as a query is a (malformed) query, not a batch.
		resp, body, err := s.DoWithKey(ctx, readOnly, "POST", "/dbs/db/colls/k/docs", pkHdr(map[string]string{
			"Content-Type": "application/json", "x-ms-cosmos-is-batch-request": "True"}),
			[]byte(`[{"operationType":"Create","resourceBody":{"id":"c","pk":"p"}}]`))
		if err != nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("batch with the read-only key: %v %s %v, want 403", resp.Status, body, err)
		}
	}

	// Nothing changed: the item is as created, no sneaky item, still one range.
	must("GET", "/dbs/db/colls/k/docs/a", pkHdr(nil), "", 200)
	must("GET", "/dbs/db/colls/k/docs/sneaky", pkHdr(nil), "", 404)
	for _, id := range []string{"b", "c"} {
		must("GET", "/dbs/db/colls/k/docs/"+id, pkHdr(nil), "", 404)
	}
	resp, body, err := s.Do(ctx, "GET", "/dbs/db/colls/k/pkranges", nil, nil)
	if err != nil || resp.StatusCode != 200 || strings.Count(string(body), `"minInclusive"`) != 1 {
		t.Errorf("pkranges after refused split: %v %s %v, want one range", resp.Status, body, err)
	}
	resp, body, err = s.Do(ctx, "GET", "/dbs/db/colls/k/sprocs/writer", nil, nil)
	if err != nil || resp.StatusCode != 200 || !strings.Contains(string(body), "sneaky") {
		t.Errorf("sproc after refused replace: %v %s %v, want the original body", resp.Status, body, err)
	}

	// The read-only key still reads and queries.
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/dbs/db/colls/k/docs/a", ""},
		{"GET", "/dbs/db/colls/k/docs", ""},
		{"POST", "/dbs/db/colls/k/docs", `{"query":"SELECT * FROM c"}`},
		{"POST", "/dbs", `{"query":"SELECT * FROM r"}`},
		{"POST", "/dbs/db/colls", `{"query":"SELECT * FROM r"}`},
		{"POST", "/dbs/db/colls/k/sprocs", `{"query":"SELECT * FROM r"}`},
		{"POST", "/offers", `{"query":"SELECT * FROM r"}`},
		{"GET", "/_partita/dbs/db/colls/k/partitions", ""},
	} {
		hdr := pkHdr(map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "True"})
		resp, body, err := s.DoWithKey(ctx, readOnly, r.method, r.path, hdr, []byte(r.body))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s with the read-only key: %v %s %v, want 200", r.method, r.path, resp.Status, body, err)
		}
	}
}
