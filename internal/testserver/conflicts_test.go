package testserver_test

import (
	"encoding/json"
	"testing"

	"github.com/partitadb/partita/internal/testserver"
)

// TestConflictsFeed: a single-region account has no conflicts, so the
// conflicts feed, listed or queried, is empty ({"_rid", "Conflicts": [],
// "_count": 0}); a conflict read or deleted by id is 404, and so is the feed
// of a container that does not exist. The Go SDK has no conflicts API: raw
// requests, signed as the SDKs sign them.
func TestConflictsFeed(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	ctx := t.Context()
	do := func(method, path string, hdr map[string]string, body string) (int, []byte) {
		t.Helper()
		resp, b, err := s.Do(ctx, method, path, hdr, []byte(body))
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return resp.StatusCode, b
	}
	js := map[string]string{"Content-Type": "application/json"}
	if code, b := do("POST", "/dbs", js, `{"id":"db"}`); code != 201 {
		t.Fatalf("create database: %d %s", code, b)
	}
	code, b := do("POST", "/dbs/db/colls", js, `{"id":"k","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`)
	if code != 201 {
		t.Fatalf("create container: %d %s", code, b)
	}
	var coll struct {
		RID string `json:"_rid"`
	}
	if err := json.Unmarshal(b, &coll); err != nil || coll.RID == "" {
		t.Fatalf("container %s: %v", b, err)
	}

	query := map[string]string{"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "True"}
	for _, req := range []struct{ method, body string }{
		{"GET", ""},
		{"POST", `{"query":"SELECT * FROM root r WHERE r.id = @id","parameters":[{"name":"@id","value":"x"}]}`},
	} {
		hdr := map[string]string(nil)
		if req.method == "POST" {
			hdr = query
		}
		code, b := do(req.method, "/dbs/db/colls/k/conflicts", hdr, req.body)
		var feed struct {
			RID       string            `json:"_rid"`
			Conflicts []json.RawMessage `json:"Conflicts"`
			Count     *int              `json:"_count"`
		}
		if code != 200 || json.Unmarshal(b, &feed) != nil || feed.RID != coll.RID || feed.Conflicts == nil || len(feed.Conflicts) != 0 || feed.Count == nil || *feed.Count != 0 {
			t.Errorf("%s conflicts = %d %s; want 200 {\"_rid\":%q,\"Conflicts\":[],\"_count\":0}", req.method, code, b, coll.RID)
		}
	}
	for _, method := range []string{"GET", "DELETE"} {
		if code, b := do(method, "/dbs/db/colls/k/conflicts/c1", nil, ""); code != 404 {
			t.Errorf("%s a conflict by id = %d %s, want 404", method, code, b)
		}
	}
	if code, b := do("GET", "/dbs/db/colls/missing/conflicts", nil, ""); code != 404 {
		t.Errorf("conflicts of a missing container = %d %s, want 404", code, b)
	}
	if code, b := do("POST", "/dbs/db/colls/k/conflicts", js, `{"id":"c1"}`); code != 405 {
		t.Errorf("create a conflict = %d %s, want 405", code, b)
	}
}
