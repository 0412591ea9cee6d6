package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestMetadataIfMatch: a read with If-None-Match naming the etag answers
// 304; a replace or delete of a database, container,
// script, user, permission or offer with an If-Match naming another etag
// answers 412 and changes nothing; with the resource's etag (or "*") it
// proceeds. Before, only a container replace checked it, so a conditional
// delete of a database removed it whatever its etag.
func TestMetadataIfMatch(t *testing.T) {
	srv := newTestHandler(t, Config{})
	etagOf := func(method, path, body string) string {
		t.Helper()
		resp, b := do(t, srv, method, path, nil, body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		var r struct {
			ETag string `json:"_etag"`
		}
		if err := json.Unmarshal(b, &r); err != nil || r.ETag == "" {
			t.Fatalf("%s %s: no _etag in %s", method, path, b)
		}
		return r.ETag
	}
	dbTag := etagOf(http.MethodPost, "/dbs", `{"id":"db"}`)
	collTag := etagOf(http.MethodPost, "/dbs/db/colls", `{"id":"k","partitionKey":{"paths":["/pk"]}}`)
	spTag := etagOf(http.MethodPost, "/dbs/db/colls/k/sprocs", `{"id":"s","body":"function(){}"}`)
	userTag := etagOf(http.MethodPost, "/dbs/db/users", `{"id":"u"}`)
	permTag := etagOf(http.MethodPost, "/dbs/db/users/u/permissions", `{"id":"p","permissionMode":"Read","resource":"dbs/db/colls/k"}`)
	if resp, b := do(t, srv, http.MethodPost, "/dbs", map[string]string{"x-ms-offer-throughput": "400"}, `{"id":"db2"}`); resp.StatusCode != 201 {
		t.Fatalf("database with throughput: %d %s", resp.StatusCode, b)
	}
	const stale = `"00000000-0000-0000-0000-000000000000"`

	// If-None-Match on reads: 304 without a body for the current etag.
	for _, c := range []struct{ path, etag string }{
		{"/dbs/db", dbTag}, {"/dbs/db/colls/k", collTag}, {"/dbs/db/colls/k/sprocs/s", spTag},
		{"/dbs/db/users/u", userTag}, {"/dbs/db/users/u/permissions/p", permTag},
	} {
		if resp, b := do(t, srv, http.MethodGet, c.path, map[string]string{"If-None-Match": c.etag}, ""); resp.StatusCode != 304 || len(b) != 0 {
			t.Errorf("GET %s If-None-Match its etag: %d %s, want 304 without a body", c.path, resp.StatusCode, b)
		}
		if resp, b := do(t, srv, http.MethodGet, c.path, map[string]string{"If-None-Match": stale}, ""); resp.StatusCode != 200 {
			t.Errorf("GET %s If-None-Match another etag: %d %s, want 200", c.path, resp.StatusCode, b)
		}
	}

	type step struct {
		method, path, body, ifMatch string
		code                        int
	}
	for _, s := range []step{
		{http.MethodPut, "/dbs/db/colls/k/sprocs/s", `{"id":"s","body":"function(){ return 1; }"}`, stale, 412},
		{http.MethodPut, "/dbs/db/colls/k/sprocs/s", `{"id":"s","body":"function(){ return 1; }"}`, spTag, 200},
		{http.MethodDelete, "/dbs/db/colls/k/sprocs/s", "", spTag, 412}, // replaced: a new etag
		{http.MethodDelete, "/dbs/db/colls/k/sprocs/s", "", "*", 204},
		{http.MethodPut, "/dbs/db/users/u/permissions/p", `{"id":"p","permissionMode":"All","resource":"dbs/db/colls/k"}`, stale, 412},
		{http.MethodPut, "/dbs/db/users/u/permissions/p", `{"id":"p","permissionMode":"All","resource":"dbs/db/colls/k"}`, permTag, 200},
		{http.MethodDelete, "/dbs/db/users/u/permissions/p", "", permTag, 412},
		{http.MethodDelete, "/dbs/db/users/u/permissions/p", "", "", 204},
		{http.MethodPut, "/dbs/db/users/u", `{"id":"u2"}`, stale, 412},
		{http.MethodPut, "/dbs/db/users/u", `{"id":"u2"}`, userTag, 200},
		{http.MethodDelete, "/dbs/db/users/u2", "", userTag, 412},
		{http.MethodDelete, "/dbs/db/users/u2", "", "*", 204},
		{http.MethodDelete, "/dbs/db/colls/k", "", stale, 412},
		{http.MethodGet, "/dbs/db/colls/k", "", "", 200}, // still there
		{http.MethodDelete, "/dbs/db/colls/k", "", collTag, 204},
		{http.MethodDelete, "/dbs/db", "", stale, 412},
		{http.MethodGet, "/dbs/db", "", "", 200},
		{http.MethodDelete, "/dbs/db", "", dbTag, 204},
	} {
		var hdr map[string]string
		if s.ifMatch != "" {
			hdr = map[string]string{"If-Match": s.ifMatch}
		}
		if resp, b := do(t, srv, s.method, s.path, hdr, s.body); resp.StatusCode != s.code {
			t.Errorf("%s %s If-Match %s: %d %s, want %d", s.method, s.path, s.ifMatch, resp.StatusCode, b, s.code)
		}
	}

	// An offer: replaced only with its own etag.
	resp, b := do(t, srv, http.MethodGet, "/offers", nil, "")
	var offers struct {
		Offers []struct {
			ID   string `json:"id"`
			Self string `json:"_self"`
			ETag string `json:"_etag"`
			RID  string `json:"offerResourceId"`
			Res  string `json:"resource"`
		}
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &offers) != nil {
		t.Fatalf("offers: %d %s", resp.StatusCode, b)
	}
	for _, o := range offers.Offers {
		body := `{"id":"` + o.ID + `","offerVersion":"V2","offerType":"Invalid","resource":"` + o.Res + `","offerResourceId":"` + o.RID +
			`","content":{"offerThroughput":500}}`
		if resp, b := do(t, srv, http.MethodPut, "/offers/"+o.ID, map[string]string{"If-Match": stale}, body); resp.StatusCode != 412 {
			t.Errorf("offer replace with a stale etag: %d %s, want 412", resp.StatusCode, b)
		}
		if resp, b := do(t, srv, http.MethodPut, "/offers/"+o.ID, map[string]string{"If-Match": o.ETag}, body); resp.StatusCode != 200 {
			t.Errorf("offer replace with its etag: %d %s, want 200", resp.StatusCode, b)
		}
	}
	if len(offers.Offers) == 0 {
		t.Fatal("no offer to replace")
	}
}

// TestOfferMigration: a replace that changes an offer between manual and
// autoscale is Cosmos DB's migration, made only with its header
// (x-ms-cosmos-migrate-offer-to-autopilot, …-to-manual-throughput); without
// it, Cosmos DB's 400 (it switched silently; a bug hunt with azcosmos).
func TestOfferMigration(t *testing.T) {
	srv := newTestHandler(t, Config{})
	do(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`)
	if resp, b := do(t, srv, http.MethodPost, "/dbs/db/colls", map[string]string{"x-ms-offer-throughput": "400"}, `{"id":"c","partitionKey":{"paths":["/pk"]}}`); resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	resp, b := do(t, srv, http.MethodGet, "/offers", nil, "")
	var offers struct {
		Offers []struct {
			ID  string `json:"id"`
			RID string `json:"offerResourceId"`
			Res string `json:"resource"`
		}
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &offers) != nil || len(offers.Offers) != 1 {
		t.Fatalf("offers: %d %s", resp.StatusCode, b)
	}
	o := offers.Offers[0]
	put := func(content string, hdr map[string]string) (int, string) {
		body := `{"id":"` + o.ID + `","offerVersion":"V2","resource":"` + o.Res + `","offerResourceId":"` + o.RID + `","content":` + content + `}`
		resp, b := do(t, srv, http.MethodPut, "/offers/"+o.ID, hdr, body)
		return resp.StatusCode, string(b)
	}
	auto, manual := `{"offerAutopilotSettings":{"maxThroughput":4000}}`, `{"offerThroughput":1000}`
	for _, step := range []struct {
		content string
		hdr     map[string]string
		code    int
		want    string
	}{
		{auto, nil, 400, "x-ms-cosmos-migrate-offer-to-autopilot must be supplied"},
		{auto, map[string]string{"x-ms-cosmos-migrate-offer-to-manual-throughput": "true"}, 400, "migrate-offer-to-autopilot"},
		{auto, map[string]string{"x-ms-cosmos-migrate-offer-to-autopilot": "true"}, 200, `"maxThroughput":4000`},
		{`{"offerAutopilotSettings":{"maxThroughput":5000}}`, nil, 200, `"maxThroughput":5000`},
		{manual, nil, 400, "x-ms-cosmos-migrate-offer-to-manual-throughput must be supplied"},
		{manual, map[string]string{"x-ms-cosmos-migrate-offer-to-manual-throughput": "true"}, 200, `"offerThroughput":1000`},
		{`{"offerThroughput":1100}`, nil, 200, `"offerThroughput":1100`},
		// Data Explorer's and the .NET SDK's shapes (a throughput hunt:
		// each answered 200 and changed nothing): to autoscale, the manual
		// offer as it is, the maximum chosen (1,100 RU/s up to 2,000); to
		// manual, the throughput wanted beside the autoscale settings read,
		// or those settings alone (the manual throughput their maximum).
		{`{"offerThroughput":1100}`, map[string]string{"x-ms-cosmos-migrate-offer-to-autopilot": "true"}, 200, `"maxThroughput":2000`},
		{`{"offerThroughput":600,"offerAutopilotSettings":{"maxThroughput":2000}}`, map[string]string{"x-ms-cosmos-migrate-offer-to-manual-throughput": "true"}, 200, `"offerThroughput":600`},
		{`{"offerThroughput":600}`, map[string]string{"x-ms-cosmos-migrate-offer-to-autopilot": "true"}, 200, `"maxThroughput":1000`},
		{`{"offerAutopilotSettings":{"maxThroughput":1000}}`, map[string]string{"x-ms-cosmos-migrate-offer-to-manual-throughput": "true"}, 200, `"offerThroughput":1000`},
	} {
		if code, b := put(step.content, step.hdr); code != step.code || !strings.Contains(b, step.want) {
			t.Errorf("replace with %s %v: %d %s, want %d with %s", step.content, step.hdr, code, b, step.code, step.want)
		}
	}
}

// TestOfferBodyNamesItsOffer: an offer replaced with a body naming another
// offer (its id or its resource) is 400, as every other resource's replace
// is; it replaced the offer of the URL (a protocol hunt).
func TestOfferBodyNamesItsOffer(t *testing.T) {
	srv := newTestHandler(t, Config{})
	do(t, srv, http.MethodPost, "/dbs", nil, `{"id":"db"}`)
	for _, c := range []string{"c1", "c2"} {
		if resp, b := do(t, srv, http.MethodPost, "/dbs/db/colls", map[string]string{"x-ms-offer-throughput": "400"}, `{"id":"`+c+`","partitionKey":{"paths":["/pk"]}}`); resp.StatusCode != 201 {
			t.Fatalf("create %s: %d %s", c, resp.StatusCode, b)
		}
	}
	resp, b := do(t, srv, http.MethodGet, "/offers", nil, "")
	var offers struct {
		Offers []struct {
			ID  string `json:"id"`
			RID string `json:"offerResourceId"`
			Res string `json:"resource"`
		}
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &offers) != nil || len(offers.Offers) != 2 {
		t.Fatalf("offers: %d %s", resp.StatusCode, b)
	}
	a, o := offers.Offers[0], offers.Offers[1]
	body := func(id, rid string) string {
		return `{"id":"` + id + `","offerVersion":"V2","offerResourceId":"` + rid + `","content":{"offerThroughput":500}}`
	}
	for _, tc := range []struct {
		name, body string
		code       int
	}{
		{"the other offer's body", body(o.ID, o.RID), 400},
		{"the other offer's resource", body(a.ID, o.RID), 400},
		{"its own body", body(a.ID, a.RID), 200},
		{"no id", `{"content":{"offerThroughput":600}}`, 200},
	} {
		if resp, b := do(t, srv, http.MethodPut, "/offers/"+a.ID, nil, tc.body); resp.StatusCode != tc.code {
			t.Errorf("PUT /offers/%s with %s: %d %s, want %d", a.ID, tc.name, resp.StatusCode, b, tc.code)
		}
	}
	if _, b := do(t, srv, http.MethodGet, "/offers/"+o.ID, nil, ""); !strings.Contains(string(b), `"offerThroughput":400`) {
		t.Errorf("the other offer changed: %s", b)
	}
}
