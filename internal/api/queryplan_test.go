package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestQueryPlanRequest: a plan request on …/docs answers 200 with the plan
// JSON (not a query result, not an item create) and the usual headers.
func TestQueryPlanRequest(t *testing.T) {
	srv := newTestHandler(t, Config{})
	do(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`)
	do(t, srv, http.MethodPost, "/dbs/db/colls", nil, `{"id":"k","partitionKey":{"paths":["/pk"]}}`)
	hdr := map[string]string{
		"x-ms-cosmos-is-query-plan-request": "True",
		"Content-Type":                      "application/query+json",
		"x-ms-cosmos-query-version":         "1.4",
	}
	tests := []struct {
		query         string
		wantRewritten string // substring of rewrittenQuery
		wantOrderBy   []string
		wantPoint     bool // queryRanges is one EPK point
	}{
		{`SELECT * FROM c ORDER BY c.n DESC`, "AS orderByItems", []string{"Descending"}, false},
		{`SELECT VALUE COUNT(1) FROM c`, `[{"item": COUNT(1)}]`, []string{}, false},
		{`SELECT * FROM c WHERE c.pk = 'a' ORDER BY c.n`, "", []string{}, true},
	}
	for _, tt := range tests {
		body, _ := json.Marshal(map[string]string{"query": tt.query})
		resp, b := do(t, srv, http.MethodPost, "/dbs/db/colls/k/docs", hdr, string(body))
		if resp.StatusCode != http.StatusOK {
			t.Errorf("plan(%q): %d %s, want 200", tt.query, resp.StatusCode, b)
			continue
		}
		if resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("x-ms-request-charge") == "" {
			t.Errorf("plan(%q): headers %v, want JSON content type and a charge", tt.query, resp.Header)
		}
		var got struct {
			Version   int `json:"partitionedQueryExecutionInfoVersion"`
			QueryInfo struct {
				OrderBy        []string `json:"orderBy"`
				RewrittenQuery string   `json:"rewrittenQuery"`
			} `json:"queryInfo"`
			QueryRanges []struct {
				Min, Max                       string
				IsMinInclusive, IsMaxInclusive bool
			} `json:"queryRanges"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("plan(%q) = %s: %v", tt.query, b, err)
		}
		if got.Version != 2 || len(got.QueryRanges) != 1 {
			t.Errorf("plan(%q) = %s, want version 2 and one query range", tt.query, b)
			continue
		}
		rg := got.QueryRanges[0]
		if point := rg.Min == rg.Max && rg.IsMaxInclusive && rg.Min != ""; point != tt.wantPoint {
			t.Errorf("plan(%q) range = %+v, want point %v", tt.query, rg, tt.wantPoint)
		}
		if !tt.wantPoint && (rg.Min != "" || rg.Max != "FF") {
			t.Errorf("plan(%q) range = %+v, want the full range", tt.query, rg)
		}
		if !strings.Contains(got.QueryInfo.RewrittenQuery, tt.wantRewritten) || (tt.wantRewritten == "" && got.QueryInfo.RewrittenQuery != "") {
			t.Errorf("plan(%q) rewrittenQuery = %q, want it to contain %q", tt.query, got.QueryInfo.RewrittenQuery, tt.wantRewritten)
		}
		if strings.Join(got.QueryInfo.OrderBy, ",") != strings.Join(tt.wantOrderBy, ",") {
			t.Errorf("plan(%q) orderBy = %v, want %v", tt.query, got.QueryInfo.OrderBy, tt.wantOrderBy)
		}
	}
	// A plan request for a missing container is a 404, like any other request.
	resp, b := do(t, srv, http.MethodPost, "/dbs/db/colls/nope/docs", hdr, `{"query":"SELECT * FROM c"}`)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("plan on a missing container: %d %s, want 404", resp.StatusCode, b)
	}
}
