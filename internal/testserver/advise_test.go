package testserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/testserver"
)

// TestAdviseEndpoint: GET /_partita/dbs/{db}/colls/{coll}/advise runs the
// advisor on a sample of the container, with the master or the read-only
// key (it writes nothing), and names the container's current key among
// the ranked candidates; bad sample sizes, empty and unknown containers
// get 400 and 404.
func TestAdviseEndpoint(t *testing.T) {
	const readOnly = "cmVhZC1vbmx5LWtleS1mb3ItdGVzdHMtb25seS0xMjM0NTY3ODkwYWJjZGVm"
	s := testserver.Start(t, testserver.Options{Configure: func(c *config.Config) { c.Auth.ReadOnlyKey = readOnly }})
	ctx := t.Context()
	must := func(method, path, body string, want int) {
		t.Helper()
		resp, b, err := s.Do(ctx, method, path, map[string]string{"Content-Type": "application/json"}, []byte(body))
		if err != nil || resp.StatusCode != want {
			t.Fatalf("%s %s: %v %v %s, want %d", method, path, err, resp, b, want)
		}
	}
	must("POST", "/dbs", `{"id":"db"}`, 201)
	must("POST", "/dbs/db/colls", `{"id":"k","partitionKey":{"paths":["/country"],"kind":"Hash","version":2}}`, 201)
	must("POST", "/dbs/db/colls", `{"id":"empty","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`, 201)
	for i := range 300 {
		country := "NO" // one value holds most items: a poor key
		if i%4 == 0 {
			country = "SE"
		}
		doc := fmt.Sprintf(`{"id":"%d","country":%q,"userId":"u%d"}`, i, country, i)
		resp, b, err := s.Do(ctx, "POST", "/dbs/db/colls/k/docs", map[string]string{"Content-Type": "application/json",
			"x-ms-documentdb-partitionkey": fmt.Sprintf("[%q]", country)}, []byte(doc))
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("create: %v %v %s", err, resp, b)
		}
	}
	for _, key := range []string{s.Key, readOnly} {
		resp, b, err := s.DoWithKey(ctx, key, "GET", "/_partita/dbs/db/colls/k/advise", map[string]string{"x-partita-advise-sample": "200"}, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("advise: %v %v %s", err, resp, b)
		}
		var out struct {
			Report struct {
				Items          int      `json:"items"`
				CurrentKey     []string `json:"currentKey"`
				Recommendation string   `json:"recommendation"`
				Candidates     []struct {
					Key     string `json:"key"`
					Current bool   `json:"current"`
				} `json:"candidates"`
			} `json:"report"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		r := out.Report
		if r.Items != 200 || len(r.CurrentKey) != 1 || r.CurrentKey[0] != "/country" || r.Recommendation == "" || r.Recommendation == "/country" {
			t.Errorf("advise report: items %d, current %v, recommendation %q; want 200 items, current [/country], another key recommended", r.Items, r.CurrentKey, r.Recommendation)
		}
		if !strings.Contains(out.Text, "Sample: 200 items") {
			t.Errorf("advise text = %q, want the advisor's table", out.Text)
		}
	}
	for _, c := range []struct {
		path, sample string
		want         int
	}{
		{"/_partita/dbs/db/colls/k/advise", "0", http.StatusBadRequest},
		{"/_partita/dbs/db/colls/k/advise", "many", http.StatusBadRequest},
		{"/_partita/dbs/db/colls/k/advise", "10001", http.StatusBadRequest},
		{"/_partita/dbs/db/colls/empty/advise", "", http.StatusBadRequest},
		{"/_partita/dbs/db/colls/nope/advise", "", http.StatusNotFound},
	} {
		hdr := map[string]string{}
		if c.sample != "" {
			hdr["x-partita-advise-sample"] = c.sample
		}
		resp, b, err := s.Do(ctx, "GET", c.path, hdr, nil)
		if err != nil || resp.StatusCode != c.want || !strings.Contains(string(b), `"message"`) {
			t.Errorf("GET %s (sample %q): %v %v %s, want %d with a message", c.path, c.sample, err, resp, b, c.want)
		}
	}
}
