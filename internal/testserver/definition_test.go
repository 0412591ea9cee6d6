package testserver_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/testserver"
)

// TestIndexingPolicyNormalised checks the indexing policy a container read
// returns, through azcosmos: the defaults filled in, and the system path
// /"_etag"/? after the client's excluded paths, as Cosmos DB does. The
// legacy form (per-path "indexes", the root path "/"), which azcosmos cannot
// express, goes over raw HTTP.
func TestIndexingPolicyNormalised(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	paths := func(p *azcosmos.IndexingPolicy) (inc, exc []string) {
		for _, x := range p.IncludedPaths {
			inc = append(inc, x.Path)
		}
		for _, x := range p.ExcludedPaths {
			exc = append(exc, x.Path)
		}
		return inc, exc
	}
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{
		ID: "custom", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		IndexingPolicy: &azcosmos.IndexingPolicy{
			Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
			IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}},
			ExcludedPaths: []azcosmos.ExcludedPath{{Path: `/"systemMetadata"/*`}},
		},
	}, nil)
	r, err := k.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	inc, exc := paths(r.ContainerProperties.IndexingPolicy)
	if !slices.Equal(inc, []string{"/*"}) || !slices.Equal(exc, []string{`/"systemMetadata"/*`, `/"_etag"/?`}) {
		t.Errorf("custom policy read back as included %q, excluded %q", inc, exc)
	}
	// Replacing with the policy as read adds no second _etag path.
	if _, err := k.Replace(ctx, *r.ContainerProperties, nil); err != nil {
		t.Fatal(err)
	}
	if r, err = k.Read(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, exc := paths(r.ContainerProperties.IndexingPolicy); len(exc) != 2 {
		t.Errorf("after a replace with the policy as read: excluded %q", exc)
	}

	// {} and the legacy form over raw HTTP, as old clients send them.
	for _, tt := range []struct{ id, policy string }{
		{"empty", `{}`},
		{"legacy", `{"indexingMode":"Consistent","automatic":true,"includedPaths":[{"path":"/","indexes":[{"kind":"Hash","dataType":"String","precision":3},{"kind":"Range","dataType":"Number","precision":-1},{"kind":"Spatial","dataType":"Point"}]}],"excludedPaths":[]}`},
	} {
		body := `{"id":"` + tt.id + `","partitionKey":{"paths":["/pk"]},"indexingPolicy":` + tt.policy + `}`
		resp, out, err := s.Do(ctx, http.MethodPost, "/dbs/db/colls", nil, []byte(body))
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %v %s %v", tt.id, resp.Status, out, err)
		}
		d, _ := c.NewDatabase("db")
		kk, _ := d.NewContainer(tt.id)
		r, err := kk.Read(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := r.ContainerProperties.IndexingPolicy
		inc, exc := paths(p)
		wantInc := []string{"/*"}
		if tt.id == "legacy" {
			wantInc = []string{"/"}
		}
		// Cosmos DB returns the mode in lower case, whatever the case sent
		// (azcosmos sends "Consistent").
		if p.IndexingMode != "consistent" || !p.Automatic || !slices.Equal(inc, wantInc) || !slices.Equal(exc, []string{`/"_etag"/?`}) {
			t.Errorf("%s policy read back as %+v", tt.id, p)
		}
		// The legacy policy indexes everything: a filter on a number is
		// served by the index.
		if _, err := kk.CreateItem(ctx, azcosmos.NewPartitionKeyString("a"), []byte(`{"id":"1","pk":"a","n":5}`), nil); err != nil {
			t.Fatal(err)
		}
		if got := queryIDs(t, kk, "SELECT * FROM c WHERE c.n > 3", azcosmos.NewPartitionKey()); !slices.Equal(got, []string{"1"}) {
			t.Errorf("%s: query = %v", tt.id, got)
		}
	}
	if _, raw, _ := s.Do(ctx, http.MethodGet, "/dbs/db/colls/legacy", nil, nil); !strings.Contains(string(raw), `"kind":"Hash","dataType":"String","precision":3`) {
		t.Errorf("the legacy indexes are not returned as sent: %s", raw)
	}
	// A legacy index that makes no sense is refused.
	resp, out, err := s.Do(ctx, http.MethodPost, "/dbs/db/colls", nil,
		[]byte(`{"id":"bad","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"includedPaths":[{"path":"/","indexes":[{"kind":"Spatial","dataType":"String"}]}]}}`))
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("create with a spatial string index: %v %s %v, want 400", resp.Status, out, err)
	}
}

// TestPartitionKeyPathValidation checks that bad partition key paths get
// Cosmos DB's 400, naming the path, through azcosmos.
func TestPartitionKeyPathValidation(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	d, _ := c.NewDatabase("db")
	for _, tt := range []struct {
		paths []string
		bad   string
		pos   string
	}{
		{[]string{"/id ds"}, "/id ds", "4"},
		{[]string{"id"}, "id", "0"},
		{[]string{"/pk/"}, "/pk/", "4"},
		{[]string{"/*"}, "/*", "1"},
		{[]string{"/a/*"}, "/a/*", "3"},
		{[]string{""}, "", "0"},
		{[]string{"/tenant", "user"}, "user", "0"},
	} {
		_, err := d.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: tt.paths}}, nil)
		wantStatus(t, "create with paths "+strings.Join(tt.paths, ","), err, http.StatusBadRequest)
		want := "The partition key component definition path '" + tt.bad + "' could not be accepted, failed near position '" + tt.pos +
			"'. Partition key paths must contain only valid characters and not contain a trailing slash or wildcard character."
		if !strings.Contains(err.Error(), want) {
			t.Errorf("create with paths %q: %v\nwant the message %q", tt.paths, err, want)
		}
	}
	// A hierarchical key naming one path twice (its levels would always
	// be equal): 400 naming the path.
	_, err := d.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{
		Paths: []string{"/tenant", "/user", "/tenant"}, Kind: azcosmos.PartitionKeyKindMultiHash, Version: 2}}, nil)
	wantStatus(t, "create with a path twice", err, http.StatusBadRequest)
	if err == nil || !strings.Contains(err.Error(), "path '/tenant' is given twice") {
		t.Errorf("create with a path twice: %v", err)
	}
	// Nothing was created, and a quoted name with special characters is fine.
	newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{`/"id ds"`}}}, nil)
}

// TestItemTTLValidation checks an item's ttl through azcosmos: while the
// container has a time to live, null, 0, negatives other than -1,
// fractions and strings get 400 with Cosmos DB's message; without one the
// ttl is not checked.
func TestItemTTLValidation(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	on := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "on", DefaultTimeToLive: ptr[int32](-1),
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	off := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "off", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	pk := azcosmos.NewPartitionKeyString("a")
	for _, ttl := range []string{`null`, `0`, `-5`, `1.5`, `"10"`} {
		body := []byte(`{"id":"x","pk":"a","ttl":` + ttl + `}`)
		_, err := on.CreateItem(ctx, pk, body, nil)
		wantStatus(t, "create with ttl "+ttl, err, http.StatusBadRequest)
		want := "The input ttl '" + ttl + "' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."
		if quoted, _ := json.Marshal(want); !strings.Contains(err.Error(), string(quoted)) {
			t.Errorf("create with ttl %s: %v\nwant the message %q", ttl, err, want)
		}
		if _, err := off.UpsertItem(ctx, pk, body, nil); err != nil {
			t.Errorf("upsert with ttl %s without a time to live: %v", ttl, err)
		}
	}
	for _, ttl := range []string{`-1`, `1`, `2147483647`} {
		if _, err := on.UpsertItem(ctx, pk, []byte(`{"id":"x","pk":"a","ttl":`+ttl+`}`), nil); err != nil {
			t.Errorf("upsert with ttl %s: %v", ttl, err)
		}
	}
	// A patch that sets a bad ttl is refused the same way.
	var ops azcosmos.PatchOperations
	ops.AppendSet("/ttl", nil)
	_, err := on.PatchItem(ctx, pk, "x", ops, nil)
	wantStatus(t, "patch setting ttl to null", err, http.StatusBadRequest)
}

// TestUndefinedLowerLevelsSDK checks hierarchical keys whose lower levels
// are missing or {}: created over raw HTTP with the header @azure/cosmos
// sends (["acme",{}]; azcosmos has no way to write an undefined component),
// then found by azcosmos with a prefix key and by a filter on the first
// level, and read by the full key over raw HTTP.
func TestUndefinedLowerLevelsSDK(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "hier", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{
		Paths: []string{"/tenant", "/user"}, Kind: azcosmos.PartitionKeyKindMultiHash, Version: 2}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(24000))})
	for _, it := range []struct{ body, header string }{
		{`{"id":"missing","tenant":"acme"}`, `["acme",{}]`},
		{`{"id":"empty","tenant":"acme","user":{}}`, `["acme",{}]`},
		{`{"id":"other","tenant":"zeta"}`, `["zeta",{}]`},
	} {
		resp, out, err := s.Do(ctx, http.MethodPost, "/dbs/db/colls/hier/docs", map[string]string{"x-ms-documentdb-partitionkey": it.header}, []byte(it.body))
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %s: %v %s %v", it.body, resp.Status, out, err)
		}
	}
	if _, err := k.CreateItem(ctx, azcosmos.NewPartitionKeyString("acme").AppendString("u1"), []byte(`{"id":"full","tenant":"acme","user":"u1"}`), nil); err != nil {
		t.Fatal(err)
	}
	acme := azcosmos.NewPartitionKeyString("acme")
	if got := queryIDs(t, k, "SELECT * FROM c", acme); !slices.Equal(got, []string{"empty", "full", "missing"}) {
		t.Errorf("prefix query = %v", got)
	}
	if got := queryIDs(t, k, "SELECT * FROM c WHERE c.tenant = 'acme'", azcosmos.NewPartitionKey()); !slices.Equal(got, []string{"empty", "full", "missing"}) {
		t.Errorf("query by tenant = %v", got)
	}
	resp, out, err := s.Do(ctx, http.MethodGet, "/dbs/db/colls/hier/docs/empty", map[string]string{"x-ms-documentdb-partitionkey": `["acme",{}]`}, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("read by [\"acme\",{}]: %v %s %v", resp.Status, out, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(out, &doc); err != nil || doc["user"] == nil {
		t.Errorf("read returned %s, want the item with its {} user", out)
	}
	// A prefix is not a point key.
	_, err = k.ReadItem(ctx, acme, "missing", nil)
	wantStatus(t, "read by a prefix", err, http.StatusBadRequest)
}
