package testserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/testserver"
)

// statusOf returns the HTTP status (and substatus) of an SDK error, or 0.
func statusOf(err error) (code int, sub string) {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode, re.RawResponse.Header.Get("x-ms-substatus")
	}
	return 0, ""
}

func wantStatus(t *testing.T, what string, err error, code int) {
	t.Helper()
	if got, _ := statusOf(err); got != code {
		t.Fatalf("%s: status = %d (err %v), want %d", what, got, err, code)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newContainer(t *testing.T, c *azcosmos.Client, db string, props azcosmos.ContainerProperties, o *azcosmos.CreateContainerOptions) *azcosmos.ContainerClient {
	t.Helper()
	ctx := t.Context()
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: db}, nil); err != nil {
		if code, _ := statusOf(err); code != http.StatusConflict {
			t.Fatalf("create database %s: %v", db, err)
		}
	}
	d, _ := c.NewDatabase(db)
	if _, err := d.CreateContainer(ctx, props, o); err != nil {
		t.Fatalf("create container %s: %v", props.ID, err)
	}
	k, _ := d.NewContainer(props.ID)
	return k
}

func TestDatabaseLifecycle(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()

	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db1"}, nil); err != nil {
		t.Fatal(err)
	}
	_, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db1"}, nil)
	wantStatus(t, "duplicate create", err, http.StatusConflict)
	_, err = c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "bad/id"}, nil)
	wantStatus(t, "create with '/' in id", err, http.StatusBadRequest)

	db, _ := c.NewDatabase("db1")
	resp, err := db.Read(ctx, nil)
	if err != nil || resp.DatabaseProperties.ID != "db1" || resp.DatabaseProperties.ResourceID == "" || resp.ETag == "" {
		t.Fatalf("read db1 = %+v, %v", resp.DatabaseProperties, err)
	}
	missing, _ := c.NewDatabase("nope")
	_, err = missing.Read(ctx, nil)
	wantStatus(t, "read missing database", err, http.StatusNotFound)

	tp := azcosmos.NewManualThroughputProperties(1000)
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db2"}, &azcosmos.CreateDatabaseOptions{ThroughputProperties: &tp}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	pager := c.NewQueryDatabasesPager("SELECT * FROM root r WHERE STARTSWITH(r.id, 'db') ORDER BY r.id", nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page.Databases {
			ids = append(ids, d.ID)
		}
	}
	if strings.Join(ids, ",") != "db1,db2" {
		t.Errorf("query databases = %v, want [db1 db2]", ids)
	}

	// Deleting a database removes its containers and their items.
	k := newContainer(t, c, "db1", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	if _, err := k.CreateItem(ctx, azcosmos.NewPartitionKeyString("a"), []byte(`{"id":"1","pk":"a"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err = db.Read(ctx, nil)
	wantStatus(t, "read deleted database", err, http.StatusNotFound)
	_, err = k.ReadItem(ctx, azcosmos.NewPartitionKeyString("a"), "1", nil)
	wantStatus(t, "read item of deleted database", err, http.StatusNotFound)
	// A database re-created under the same name starts empty.
	k = newContainer(t, c, "db1", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	_, err = k.ReadItem(ctx, azcosmos.NewPartitionKeyString("a"), "1", nil)
	wantStatus(t, "read item of re-created container", err, http.StatusNotFound)
}

func TestContainerLifecycle(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	db, _ := c.NewDatabase("db")
	props := azcosmos.ContainerProperties{
		ID:                     "people",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/city"}},
		IndexingPolicy: &azcosmos.IndexingPolicy{
			Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent,
			IncludedPaths: []azcosmos.IncludedPath{{Path: "/name/?"}},
			ExcludedPaths: []azcosmos.ExcludedPath{{Path: "/*"}},
		},
	}
	resp, err := db.CreateContainer(ctx, props, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := resp.ContainerProperties
	if got.PartitionKeyDefinition.Kind != azcosmos.PartitionKeyKindHash || got.PartitionKeyDefinition.Version != 2 {
		t.Errorf("created pk definition = %+v, want Hash version 2", got.PartitionKeyDefinition)
	}
	if got.IndexingPolicy == nil || len(got.IndexingPolicy.IncludedPaths) != 1 || got.IndexingPolicy.IncludedPaths[0].Path != "/name/?" {
		t.Errorf("indexing policy did not round-trip: %+v", got.IndexingPolicy)
	}
	_, err = db.CreateContainer(ctx, props, nil)
	wantStatus(t, "duplicate container", err, http.StatusConflict)
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "nopk"}, nil)
	wantStatus(t, "container without partition key", err, http.StatusBadRequest)
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "deep", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{
		Paths: []string{"/a", "/b", "/c", "/d"}, Kind: azcosmos.PartitionKeyKindMultiHash, Version: 2}}, nil)
	wantStatus(t, "four-level hierarchical key", err, http.StatusBadRequest)

	k, _ := db.NewContainer("people")
	ttl := int32(3600)
	got.DefaultTimeToLive = &ttl
	rep, err := k.Replace(ctx, *got, nil)
	if err != nil || rep.ContainerProperties.DefaultTimeToLive == nil || *rep.ContainerProperties.DefaultTimeToLive != 3600 {
		t.Fatalf("replace container = %+v, %v", rep.ContainerProperties, err)
	}
	changed := *rep.ContainerProperties
	changed.PartitionKeyDefinition = azcosmos.PartitionKeyDefinition{Paths: []string{"/other"}}
	_, err = k.Replace(ctx, changed, nil)
	wantStatus(t, "replace changing the partition key", err, http.StatusBadRequest)

	var ids []string
	pager := db.NewQueryContainersPager("SELECT * FROM root r", nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page.Containers {
			ids = append(ids, p.ID)
		}
	}
	if strings.Join(ids, ",") != "people" {
		t.Errorf("containers = %v, want [people]", ids)
	}
	if _, err := k.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	_, err = k.Read(ctx, nil)
	wantStatus(t, "read deleted container", err, http.StatusNotFound)
}

func TestItemCRUD(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "items", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	pk := azcosmos.NewPartitionKeyString("p1")

	created, err := k.CreateItem(ctx, pk, []byte(`{"id":"a","pk":"p1","n":1,"big":12345678901234567890}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if created.RawResponse.StatusCode != http.StatusCreated || created.ETag == "" || created.SessionToken == nil || created.RequestCharge <= 0 {
		t.Errorf("create: status %d etag %q session %v charge %v", created.RawResponse.StatusCode, created.ETag, created.SessionToken, created.RequestCharge)
	}
	if len(created.Value) != 0 {
		t.Errorf("create with the Go SDK's default Prefer: return=minimal returned a body: %s", created.Value)
	}

	read, err := k.ReadItem(ctx, pk, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(read.Value, &doc); err != nil {
		t.Fatal(err)
	}
	for _, prop := range []string{"_rid", "_self", "_etag", "_ts", "_attachments"} {
		if _, ok := doc[prop]; !ok {
			t.Errorf("read item lacks %s: %s", prop, read.Value)
		}
	}
	if !strings.Contains(string(read.Value), `"big":12345678901234567890`) {
		t.Errorf("a large integer was not kept verbatim: %s", read.Value)
	}
	if doc["_etag"] != string(read.ETag) || read.ETag != created.ETag {
		t.Errorf("etags disagree: body %v, header %q, create %q", doc["_etag"], read.ETag, created.ETag)
	}

	_, err = k.CreateItem(ctx, pk, []byte(`{"id":"a","pk":"p1"}`), nil)
	wantStatus(t, "duplicate create", err, http.StatusConflict)
	// The same id in another logical partition is another item.
	if _, err := k.CreateItem(ctx, azcosmos.NewPartitionKeyString("p2"), []byte(`{"id":"a","pk":"p2"}`), nil); err != nil {
		t.Fatalf("same id, other partition key: %v", err)
	}

	// Optimistic concurrency.
	rep, err := k.ReplaceItem(ctx, pk, "a", []byte(`{"id":"a","pk":"p1","n":2}`), &azcosmos.ItemOptions{IfMatchEtag: &created.ETag})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ETag == created.ETag {
		t.Errorf("replace kept the etag %q", rep.ETag)
	}
	_, err = k.ReplaceItem(ctx, pk, "a", []byte(`{"id":"a","pk":"p1","n":3}`), &azcosmos.ItemOptions{IfMatchEtag: &created.ETag})
	wantStatus(t, "replace with a stale etag", err, http.StatusPreconditionFailed)
	_, err = k.DeleteItem(ctx, pk, "a", &azcosmos.ItemOptions{IfMatchEtag: &created.ETag})
	wantStatus(t, "delete with a stale etag", err, http.StatusPreconditionFailed)
	_, err = k.ReplaceItem(ctx, pk, "missing", []byte(`{"id":"missing","pk":"p1"}`), nil)
	wantStatus(t, "replace missing", err, http.StatusNotFound)

	up, err := k.UpsertItem(ctx, pk, []byte(`{"id":"b","pk":"p1"}`), nil)
	if err != nil || up.RawResponse.StatusCode != http.StatusCreated {
		t.Fatalf("upsert new = %v, %v", up.RawResponse, err)
	}
	up, err = k.UpsertItem(ctx, pk, []byte(`{"id":"b","pk":"p1","v":2}`), &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
	if err != nil || up.RawResponse.StatusCode != http.StatusOK || !strings.Contains(string(up.Value), `"v":2`) {
		t.Fatalf("upsert existing = %v %s, %v", up.RawResponse, up.Value, err)
	}

	// Bad input: each gets its status and nothing is stored.
	bad := []struct {
		name string
		body string
		pk   azcosmos.PartitionKey
		code int
		sub  string
	}{
		{"malformed JSON", `{"id":"x","pk":"p1"`, pk, http.StatusBadRequest, ""},
		{"array body", `[1,2]`, pk, http.StatusBadRequest, ""},
		{"no id", `{"pk":"p1"}`, pk, http.StatusBadRequest, ""},
		{"numeric id", `{"id":7,"pk":"p1"}`, pk, http.StatusBadRequest, ""},
		{"id with slash", `{"id":"x/y","pk":"p1"}`, pk, http.StatusBadRequest, ""},
		{"id with hash", `{"id":"x#y","pk":"p1"}`, pk, http.StatusBadRequest, ""},
		{"pk mismatch", `{"id":"x","pk":"other"}`, pk, http.StatusBadRequest, "1001"},
		{"pk missing from body", `{"id":"x"}`, pk, http.StatusBadRequest, "1001"},
		{"oversize", `{"id":"x","pk":"p1","pad":"` + strings.Repeat("x", 2<<20) + `"}`, pk, http.StatusRequestEntityTooLarge, ""},
	}
	for _, tt := range bad {
		_, err := k.CreateItem(ctx, tt.pk, []byte(tt.body), nil)
		code, sub := statusOf(err)
		if code != tt.code || sub != tt.sub {
			t.Errorf("%s: status %d/%s (%v), want %d/%s", tt.name, code, sub, err, tt.code, tt.sub)
		}
	}
	_, err = k.ReadItem(ctx, pk, "x", nil)
	wantStatus(t, "read after refused creates", err, http.StatusNotFound)

	if _, err := k.DeleteItem(ctx, pk, "a", nil); err != nil {
		t.Fatal(err)
	}
	_, err = k.ReadItem(ctx, pk, "a", nil)
	wantStatus(t, "read deleted", err, http.StatusNotFound)
	_, err = k.DeleteItem(ctx, pk, "a", nil)
	wantStatus(t, "delete deleted", err, http.StatusNotFound)
	if _, err := k.ReadItem(ctx, azcosmos.NewPartitionKeyString("p2"), "a", nil); err != nil {
		t.Errorf("deleting (p1, a) touched (p2, a): %v", err)
	}
}

func TestNullAndNonePartitionKeys(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	null := azcosmos.NullPartitionKey
	if _, err := k.CreateItem(ctx, null, []byte(`{"id":"n","pk":null}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := k.ReadItem(ctx, null, "n", nil); err != nil {
		t.Fatalf("read with null key: %v", err)
	}
	// An item without the property is in the "none" partition, not null's.
	_, err := k.CreateItem(ctx, null, []byte(`{"id":"m"}`), nil)
	wantStatus(t, "null header, absent property", err, http.StatusBadRequest)
	resp, body, err := s.Do(ctx, http.MethodPost, "/dbs/db/colls/k/docs", map[string]string{
		"x-ms-documentdb-partitionkey": "[{}]", "Content-Type": "application/json"}, []byte(`{"id":"m"}`))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create in the none partition: %v %s %v", resp.Status, body, err)
	}
	resp, _, _ = s.Do(ctx, http.MethodGet, "/dbs/db/colls/k/docs/m", map[string]string{"x-ms-documentdb-partitionkey": "[null]"}, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("none-partition item read with null key: %s, want 404", resp.Status)
	}
}

func TestHierarchicalPartitionKeys(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "h", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{
		Paths: []string{"/tenant", "/user"}, Kind: azcosmos.PartitionKeyKindMultiHash, Version: 2}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(24000))})
	for i := range 20 {
		tenant := fmt.Sprintf("t%d", i%2)
		user := fmt.Sprintf("u%d", i)
		pk := azcosmos.NewPartitionKeyString(tenant).AppendString(user)
		if _, err := k.CreateItem(ctx, pk, mustJSON(t, map[string]any{"id": "x", "tenant": tenant, "user": user, "i": i}), nil); err != nil {
			t.Fatal(err)
		}
	}
	read, err := k.ReadItem(ctx, azcosmos.NewPartitionKeyString("t1").AppendString("u3"), "x", nil)
	if err != nil || !strings.Contains(string(read.Value), `"i":3`) {
		t.Fatalf("read (t1, u3) = %s, %v", read.Value, err)
	}
	_, err = k.ReadItem(ctx, azcosmos.NewPartitionKeyString("t1"), "x", nil)
	wantStatus(t, "point read with a key prefix", err, http.StatusBadRequest)

	// A query scoped by a prefix sees exactly that tenant's items.
	pager := k.NewQueryItemsPager("SELECT VALUE c.i FROM c", azcosmos.NewPartitionKeyString("t0"), nil)
	n := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			var i int
			if err := json.Unmarshal(it, &i); err != nil || i%2 != 0 {
				t.Errorf("prefix query for t0 returned %s", it)
			}
			n++
		}
	}
	if n != 10 {
		t.Errorf("prefix query for t0 returned %d items, want 10", n)
	}
}

func ptr[T any](v T) *T { return &v }

func TestThroughput(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(600))})
	tp, err := k.ReadThroughput(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := tp.ThroughputProperties.ManualThroughput(); !ok || v != 600 {
		t.Errorf("container throughput = %d (manual %v), want 600", v, ok)
	}
	// Manual to autoscale and back are migrations, which the SDKs cannot
	// ask for: Cosmos DB's 400 (they succeeded here, silently; a bug hunt).
	_, err = k.ReplaceThroughput(ctx, azcosmos.NewAutoscaleThroughputProperties(4000), nil)
	wantStatus(t, "manual to autoscale", err, http.StatusBadRequest)
	if !strings.Contains(err.Error(), "x-ms-cosmos-migrate-offer-to-autopilot must be supplied") {
		t.Errorf("manual to autoscale: %v, want Cosmos DB's message", err)
	}
	a := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "a", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewAutoscaleThroughputProperties(4000))})
	tp, err = a.ReplaceThroughput(ctx, azcosmos.NewAutoscaleThroughputProperties(5000), nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := tp.ThroughputProperties.AutoscaleMaxThroughput(); !ok || v != 5000 {
		t.Errorf("autoscale max = %d (%v), want 5000", v, ok)
	}
	_, err = a.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(1000), nil)
	wantStatus(t, "autoscale to manual", err, http.StatusBadRequest)
	if !strings.Contains(err.Error(), "x-ms-cosmos-migrate-offer-to-manual-throughput must be supplied") {
		t.Errorf("autoscale to manual: %v, want Cosmos DB's message", err)
	}
	_, err = a.ReplaceThroughput(ctx, azcosmos.NewAutoscaleThroughputProperties(1_001_000), nil)
	wantStatus(t, "replaced autoscale throughput above the maximum", err, http.StatusBadRequest)
	_, err = k.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(450), nil)
	wantStatus(t, "throughput not a multiple of 100", err, http.StatusBadRequest)
	// Above the maximum: refused before any partition is made or split
	// (an unbounded value made one request allocate or split without end).
	_, err = k.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(1_000_100), nil)
	wantStatus(t, "replaced throughput above the maximum", err, http.StatusBadRequest)
	_, err = c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "huge"}, &azcosmos.CreateDatabaseOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(2_000_000_000))})
	wantStatus(t, "database throughput above the maximum", err, http.StatusBadRequest)
	hugeDB, _ := c.NewDatabase("db")
	_, err = hugeDB.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "huge", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewAutoscaleThroughputProperties(2_000_000_000))})
	wantStatus(t, "container autoscale throughput above the maximum", err, http.StatusBadRequest)
	for _, x := range []struct {
		c      *azcosmos.ContainerClient
		auto   bool
		want   int32
		before string
	}{{k, false, 600, "manual 600"}, {a, true, 5000, "autoscale 5000"}} {
		tp, err := x.c.ReadThroughput(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		v, ok := tp.ThroughputProperties.ManualThroughput()
		if x.auto {
			v, ok = tp.ThroughputProperties.AutoscaleMaxThroughput()
		}
		if !ok || v != x.want {
			t.Errorf("after the refused replaces, %d (%v), want %s still", v, ok, x.before)
		}
	}
	db, _ := c.NewDatabase("db")
	_, err = db.ReadThroughput(ctx, nil)
	if err == nil {
		t.Errorf("database without shared throughput has an offer")
	}
}

// TestMinThroughput: an offer's reads carry the least throughput it can be
// set to (x-ms-cosmos-min-throughput, azcosmos's MinThroughput, which was
// nil), Cosmos DB's formula of the most ever provisioned and the
// containers a database shares with; and a replace below it is Cosmos DB's
// 400 (it was taken). Autoscale's auto-upgrade increment is refused too.
func TestMinThroughput(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	minOf := func(name string, read func(context.Context, *azcosmos.ThroughputOptions) (azcosmos.ThroughputResponse, error)) int32 {
		t.Helper()
		tp, err := read(ctx, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tp.MinThroughput == nil {
			t.Fatalf("%s: no MinThroughput (x-ms-cosmos-min-throughput)", name)
		}
		return *tp.MinThroughput
	}
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(600))})
	if got := minOf("a new container of 600 RU/s", k.ReadThroughput); got != 400 {
		t.Errorf("a new container of 600 RU/s: min %d, want 400", got)
	}
	// Raised to 70,000 RU/s once, it can go down to a hundredth of that.
	if _, err := k.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(70_000), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := k.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(800), nil); err != nil {
		t.Fatal(err)
	}
	if got := minOf("after 70,000 RU/s", k.ReadThroughput); got != 700 {
		t.Errorf("after 70,000 RU/s: min %d, want 700", got)
	}
	_, err := k.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(600), nil)
	wantStatus(t, "below the minimum", err, http.StatusBadRequest)
	if err != nil && !strings.Contains(err.Error(), "minimum, 700 RU/s") {
		t.Errorf("below the minimum: %v, want the minimum named", err)
	}
	if _, err := k.ReplaceThroughput(ctx, azcosmos.NewManualThroughputProperties(700), nil); err != nil {
		t.Errorf("at the minimum: %v", err)
	}

	// An autoscale maximum goes down to a tenth of the most it was.
	a := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "a", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewAutoscaleThroughputProperties(30_000))})
	_, err = a.ReplaceThroughput(ctx, azcosmos.NewAutoscaleThroughputProperties(2000), nil)
	wantStatus(t, "autoscale below the minimum", err, http.StatusBadRequest)
	if _, err := a.ReplaceThroughput(ctx, azcosmos.NewAutoscaleThroughputProperties(3000), nil); err != nil {
		t.Errorf("autoscale at the minimum: %v", err)
	}
	if got := minOf("autoscale after 30,000 RU/s", a.ReadThroughput); got != 400 {
		t.Errorf("autoscale after 30,000 RU/s: min %d, want 400", got)
	}

	// The auto-upgrade increment, which Partita does not apply: 400, on a
	// create and on a replace (it was dropped silently).
	_, err = c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "inc"}, &azcosmos.CreateDatabaseOptions{ThroughputProperties: ptr(azcosmos.NewAutoscaleThroughputPropertiesWithIncrement(2000, 10))})
	wantStatus(t, "autoscale with an increment", err, http.StatusBadRequest)
	_, err = a.ReplaceThroughput(ctx, azcosmos.NewAutoscaleThroughputPropertiesWithIncrement(4000, 10), nil)
	wantStatus(t, "autoscale replaced with an increment", err, http.StatusBadRequest)
	if err != nil && !strings.Contains(err.Error(), "autoUpgradePolicy") {
		t.Errorf("autoscale replaced with an increment: %v, want the policy named", err)
	}

	// A shared database: at most 25 containers share it (Cosmos DB's limit
	// since February 2020); a 26th needs throughput of its own. Its
	// minimum counts the 25 as Cosmos DB does (100 RU/s more for each
	// past 25: none).
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "shared"}, &azcosmos.CreateDatabaseOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(400))}); err != nil {
		t.Fatal(err)
	}
	db, _ := c.NewDatabase("shared")
	pkDef := azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}
	for i := range 25 {
		if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: fmt.Sprintf("c%d", i), PartitionKeyDefinition: pkDef}, nil); err != nil {
			t.Fatal(err)
		}
	}
	_, err = db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c25", PartitionKeyDefinition: pkDef}, nil)
	wantStatus(t, "a 26th container sharing a database's throughput", err, http.StatusBadRequest)
	if err != nil && !strings.Contains(err.Error(), "25 containers sharing its throughput") {
		t.Errorf("a 26th sharing container: %v, want the limit named", err)
	}
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "own", PartitionKeyDefinition: pkDef},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(400))}); err != nil {
		t.Errorf("a 26th container with throughput of its own: %v", err)
	}
	if got := minOf("a database shared by 25 containers", db.ReadThroughput); got != 400 {
		t.Errorf("a database shared by 25 containers: min %d, want 400", got)
	}
}

// TestIndexingDirective: an item written with IndexingDirective Include
// (or Default) is indexed as every item is; Exclude, an item queries do not
// find, is refused with a 400 naming it (it was taken and the item indexed:
// a bug hunt).
func TestIndexingDirective(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	ctx := t.Context()
	k := newContainer(t, s.Client(t), "db", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	pk := azcosmos.NewPartitionKeyString("a")
	for _, d := range []azcosmos.IndexingDirective{azcosmos.IndexingDirectiveInclude, azcosmos.IndexingDirectiveDefault} {
		if _, err := k.UpsertItem(ctx, pk, []byte(`{"id":"in","pk":"a","x":1}`), &azcosmos.ItemOptions{IndexingDirective: &d}); err != nil {
			t.Errorf("upsert with IndexingDirective %s: %v", d, err)
		}
	}
	ex := azcosmos.IndexingDirectiveExclude
	_, err := k.CreateItem(ctx, pk, []byte(`{"id":"ex","pk":"a","x":1}`), &azcosmos.ItemOptions{IndexingDirective: &ex})
	wantStatus(t, "create with IndexingDirective Exclude", err, http.StatusBadRequest)
	if err != nil && !strings.Contains(err.Error(), "Exclude is not supported") {
		t.Errorf("create with IndexingDirective Exclude: %v, want the directive named", err)
	}
	_, err = k.ReplaceItem(ctx, pk, "in", []byte(`{"id":"in","pk":"a","x":2}`), &azcosmos.ItemOptions{IndexingDirective: &ex})
	wantStatus(t, "replace with IndexingDirective Exclude", err, http.StatusBadRequest)
	if _, err := k.ReadItem(ctx, pk, "ex", nil); err == nil {
		t.Errorf("the refused create wrote its item")
	}
}

// TestVectorPolicy: a container's vector embedding policy and vector
// indexes are checked as Cosmos DB checks them, and kept as given (a bug
// hunt: an unknown data type, dimensions of -3 and an index on a path no
// embedding names were all stored).
func TestVectorPolicy(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	db, _ := c.NewDatabase("db")
	props := func(id string, emb azcosmos.VectorEmbedding, idx ...azcosmos.VectorIndex) azcosmos.ContainerProperties {
		return azcosmos.ContainerProperties{ID: id, PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
			VectorEmbeddingPolicy: &azcosmos.VectorEmbeddingPolicy{VectorEmbeddings: []azcosmos.VectorEmbedding{emb}},
			IndexingPolicy:        &azcosmos.IndexingPolicy{Automatic: true, IndexingMode: azcosmos.IndexingModeConsistent, IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}}, VectorIndexes: idx}}
	}
	good := azcosmos.VectorEmbedding{Path: "/v", DataType: azcosmos.VectorDataTypeFloat32, DistanceFunction: azcosmos.VectorDistanceFunctionCosine, Dimensions: 8}
	res, err := db.CreateContainer(ctx, props("ok", good, azcosmos.VectorIndex{Path: "/v", Type: azcosmos.VectorIndexTypeQuantizedFlat}), nil)
	if err != nil {
		t.Fatalf("a valid vector policy: %v", err)
	}
	if p := res.ContainerProperties.VectorEmbeddingPolicy; p == nil || len(p.VectorEmbeddings) != 1 || p.VectorEmbeddings[0].Dimensions != 8 {
		t.Errorf("vector policy read back: %+v", p)
	}
	bad := func(name string, emb azcosmos.VectorEmbedding, want string, idx ...azcosmos.VectorIndex) {
		t.Helper()
		_, err := db.CreateContainer(ctx, props("bad", emb, idx...), nil)
		wantStatus(t, name, err, http.StatusBadRequest)
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q in the message", name, err, want)
		}
	}
	e := good
	e.DataType = "bogus"
	bad("an unknown data type", e, "dataType")
	e = good
	e.DistanceFunction = "manhattan"
	bad("an unknown distance function", e, "distanceFunction")
	e = good
	e.Dimensions = -3
	bad("negative dimensions", e, "dimensions")
	bad("an index on a path no embedding names", good, "not a path of the vectorEmbeddingPolicy", azcosmos.VectorIndex{Path: "/w", Type: azcosmos.VectorIndexTypeFlat})
	e = good
	e.Dimensions = 1000
	bad("a flat index past 505 dimensions", e, "at most 505", azcosmos.VectorIndex{Path: "/v", Type: azcosmos.VectorIndexTypeFlat})
}

func TestAuthentication(t *testing.T) {
	const readOnly = "cmVhZC1vbmx5LWtleS1mb3ItdGVzdHMtb25seS0xMjM0NTY3ODkwYWJjZGVm"
	s := testserver.Start(t, testserver.Options{Configure: func(c *config.Config) { c.Auth.ReadOnlyKey = readOnly }})
	ctx := t.Context()
	if _, err := s.Client(t).CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	wrong := s.ClientWithKey(t, "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmcta2V5LXdyb25nLWtleQ==")
	db, _ := wrong.NewDatabase("db")
	_, err := db.Read(ctx, nil)
	wantStatus(t, "read with a wrong key", err, http.StatusUnauthorized)

	roc := s.ClientWithKey(t, readOnly)
	db, _ = roc.NewDatabase("db")
	if _, err := db.Read(ctx, nil); err != nil {
		t.Errorf("read with the read-only key: %v", err)
	}
	_, err = roc.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db2"}, nil)
	wantStatus(t, "create with the read-only key", err, http.StatusForbidden)

	for _, tt := range []struct {
		name, auth, date string
	}{
		{"no authorization", "", "now"},
		{"malformed authorization", "type=master&ver=1.0", "now"},
		{"wrong signature", "type%3Dmaster%26ver%3D1.0%26sig%3DAAAA", "now"},
		{"stale date", "sign", "Mon, 01 Jan 2024 00:00:00 GMT"},
	} {
		resp, body, err := s.Do(ctx, http.MethodGet, "/dbs/db", nil, nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("signed control request: %v %s %v", resp, body, err)
		}
		hdr := map[string]string{}
		if tt.auth != "sign" {
			hdr["Authorization"] = tt.auth
		}
		if tt.date != "now" {
			hdr["x-ms-date"] = tt.date
		}
		resp, body, err = s.Do(ctx, http.MethodGet, "/dbs/db", hdr, nil)
		if err != nil || resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"message"`) {
			t.Errorf("%s: %v %s %v, want 401 with a message", tt.name, resp.Status, body, err)
		}
	}
}

func TestPatchItem(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	pk := azcosmos.NewPartitionKeyString("1")
	created, err := k.CreateItem(ctx, pk, []byte(`{"id":"1","pk":"1","value":"4","description":"d","count":3,"tags":["a"]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	ops := azcosmos.PatchOperations{}
	ops.AppendReplace("/value", "5")
	ops.AppendSet("/hello", "world")
	ops.AppendAdd("/tags/-", "b")
	ops.AppendRemove("/description")
	ops.AppendIncrement("/count", 1)
	resp, err := k.PatchItem(ctx, pk, "1", ops, &azcosmos.ItemOptions{EnableContentResponseOnWrite: true})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(resp.Value, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["value"] != "5" || doc["hello"] != "world" || doc["count"] != float64(4) || doc["description"] != nil || len(doc["tags"].([]any)) != 2 {
		t.Errorf("patched item = %s", resp.Value)
	}
	if resp.ETag == created.ETag {
		t.Errorf("patch kept the etag")
	}

	cond := azcosmos.PatchOperations{}
	cond.SetCondition("FROM c WHERE c.count > 10")
	cond.AppendSet("/x", 1)
	_, err = k.PatchItem(ctx, pk, "1", cond, nil)
	wantStatus(t, "patch with a false condition", err, http.StatusPreconditionFailed)

	bad := azcosmos.PatchOperations{}
	bad.AppendRemove("/nothing")
	_, err = k.PatchItem(ctx, pk, "1", bad, nil)
	wantStatus(t, "removing a missing path", err, http.StatusBadRequest)

	movePK := azcosmos.PatchOperations{}
	movePK.AppendSet("/pk", "2")
	_, err = k.PatchItem(ctx, pk, "1", movePK, nil)
	wantStatus(t, "patch changing the partition key", err, http.StatusBadRequest)

	_, err = k.PatchItem(ctx, pk, "1", ops, &azcosmos.ItemOptions{IfMatchEtag: &created.ETag})
	wantStatus(t, "patch with a stale etag", err, http.StatusPreconditionFailed)
	_, err = k.PatchItem(ctx, pk, "missing", ops, nil)
	wantStatus(t, "patch of a missing item", err, http.StatusNotFound)

	// None of the refused patches changed the item.
	read, err := k.ReadItem(ctx, pk, "1", nil)
	if err != nil || read.ETag != resp.ETag {
		t.Errorf("refused patches changed the item: etag %q, want %q (%v)", read.ETag, resp.ETag, err)
	}
}

// TestQueryRoutedByFilter: a query that names its partition key in WHERE is
// served as a single-partition query (ORDER BY allowed) without the header.
func TestQueryRoutedByFilter(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(24000))})
	for i := range 20 {
		pk := fmt.Sprint("p", i%2)
		if _, err := k.CreateItem(ctx, azcosmos.NewPartitionKeyString(pk), mustJSON(t, map[string]any{"id": fmt.Sprintf("%02d", 19-i), "pk": pk}), nil); err != nil {
			t.Fatal(err)
		}
	}
	pager := k.NewQueryItemsPager("SELECT VALUE c.id FROM c WHERE c.pk = @pk ORDER BY c.id", azcosmos.NewPartitionKey(),
		&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@pk", Value: "p0"}}, PageSizeHint: 4})
	var ids []string
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatalf("query pinned by its filter: %v", err)
		}
		for _, it := range page.Items {
			var id string
			_ = json.Unmarshal(it, &id)
			ids = append(ids, id)
		}
	}
	if strings.Join(ids, ",") != "01,03,05,07,09,11,13,15,17,19" {
		t.Errorf("ids = %v", ids)
	}
	// Without the filter the same query needs cross-partition merging: refused.
	pager = k.NewQueryItemsPager("SELECT VALUE c.id FROM c ORDER BY c.id", azcosmos.NewPartitionKey(), nil)
	_, err := pager.NextPage(ctx)
	if code, sub := statusOf(err); code != http.StatusBadRequest || sub != "1004" {
		t.Errorf("cross-partition ORDER BY: %d/%s, want 400/1004", code, sub)
	}
}

// TestQueriesCosmosRefuses: what Cosmos DB refuses with 400 is refused
// through the SDK (a bug hunt found each accepted): an ORDER BY item that
// is not a document path (ORDER BY @p and ORDER BY 1 sorted by a constant:
// rows in no order), a GROUP BY with no property reference or with a
// subquery; and a partition key value past 2 KB.
func TestQueriesCosmosRefuses(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	pk := azcosmos.NewPartitionKeyString("p")
	for i := range 5 {
		if _, err := k.CreateItem(ctx, pk, mustJSON(t, map[string]any{"id": fmt.Sprint(i), "pk": "p", "n": i}), nil); err != nil {
			t.Fatal(err)
		}
	}
	param := []azcosmos.QueryParameter{{Name: "@p", Value: "c.n"}}
	for _, q := range []struct {
		text string
		want string
	}{
		{"SELECT * FROM c ORDER BY LENGTH(c.id) DESC", "could not be mapped to a document path"},
		{"SELECT * FROM c ORDER BY -c.n", "could not be mapped to a document path"},
		{"SELECT * FROM c ORDER BY 1", "could not be mapped to a document path"},
		{"SELECT * FROM c ORDER BY @p", "could not be mapped to a document path"},
		{"SELECT VALUE COUNT(1) FROM c GROUP BY 1", "at least one property reference"},
		{"SELECT VALUE COUNT(1) FROM c GROUP BY @p", "at least one property reference"},
		{"SELECT VALUE COUNT(1) FROM c GROUP BY (SELECT VALUE 1)", "subquery"},
	} {
		pager := k.NewQueryItemsPager(q.text, pk, &azcosmos.QueryOptions{QueryParameters: param})
		_, err := pager.NextPage(ctx)
		if code, _ := statusOf(err); code != http.StatusBadRequest || err == nil || !strings.Contains(err.Error(), q.want) {
			t.Errorf("%s: %v, want 400 saying %q", q.text, err, q.want)
		}
	}
	// Still served: paths, of the FROM alias and of a JOIN's (named rank,
	// which is no ORDER BY RANK), a property named by a parameter (c[@p],
	// as applications sort by a property the user picks); a GROUP BY of
	// an expression of a property.
	for _, text := range []string{"SELECT * FROM c ORDER BY c.n DESC", `SELECT * FROM c ORDER BY c["n"]`,
		"SELECT c.id, t FROM c JOIN t IN c.tags ORDER BY t", "SELECT VALUE rank FROM c JOIN rank IN c.tags ORDER BY rank DESC",
		"SELECT VALUE COUNT(1) FROM c GROUP BY c.n % 2"} {
		pager := k.NewQueryItemsPager(text, pk, nil)
		if _, err := pager.NextPage(ctx); err != nil {
			t.Errorf("%s: %v", text, err)
		}
	}
	pager := k.NewQueryItemsPager("SELECT VALUE c.id FROM c ORDER BY c[@p] DESC", pk,
		&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@p", Value: "n"}}})
	page, err := pager.NextPage(ctx)
	if err != nil || len(page.Items) != 5 || string(page.Items[0]) != `"4"` {
		t.Errorf("ORDER BY c[@p] DESC with @p = n: %v, want the ids by n, 4 first", err)
	}

	long := strings.Repeat("k", 2049)
	_, err = k.CreateItem(ctx, azcosmos.NewPartitionKeyString(long), mustJSON(t, map[string]any{"id": "x", "pk": long}), nil)
	if code, _ := statusOf(err); code != http.StatusBadRequest || !strings.Contains(err.Error(), "2048 bytes") {
		t.Errorf("a partition key value of 2,049 bytes: %v, want 400 naming the limit", err)
	}
	ok := strings.Repeat("é", 1024) // 2,048 bytes
	if _, err := k.CreateItem(ctx, azcosmos.NewPartitionKeyString(ok), mustJSON(t, map[string]any{"id": "x", "pk": ok}), nil); err != nil {
		t.Errorf("a partition key value of 2,048 bytes: %v", err)
	}
}
