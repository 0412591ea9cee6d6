package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func openCatalog(t *testing.T, st *memBackend) (*Catalog, *memBackend) {
	t.Helper()
	c, err := Open(t.Context(), st, func() time.Time { return time.Unix(1700000000, 0) })
	if err != nil {
		t.Fatal(err)
	}
	return c, st
}

// TestInitialRanges: a container starts with as many physical partitions as
// Cosmos DB would give it.
func TestInitialRanges(t *testing.T) {
	c, st := openCatalog(t, newMemBackend())
	defer st.Close()
	if _, err := c.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateDatabase("shared", Throughput{AutoscaleMax: 30000}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		db, id string
		tp     Throughput
		want   int
	}{
		{"db", "default", Throughput{}, 1},
		{"db", "m400", Throughput{Manual: 400}, 1},
		{"db", "m6000", Throughput{Manual: 6000}, 1},
		{"db", "m6100", Throughput{Manual: 6100}, 2},
		{"db", "m40000", Throughput{Manual: 40000}, 7},
		{"db", "a4000", Throughput{AutoscaleMax: 4000}, 1},
		{"db", "a25000", Throughput{AutoscaleMax: 25000}, 3},
		{"shared", "inherits", Throughput{}, 3},
	}
	for _, tt := range tests {
		k, err := c.CreateContainer(tt.db, []byte(`{"id":"`+tt.id+`","partitionKey":{"paths":["/pk"]}}`), tt.tp)
		if err != nil {
			t.Fatalf("CreateContainer(%s): %v", tt.id, err)
		}
		if got := len(k.Map().Ranges()); got != tt.want {
			t.Errorf("CreateContainer(%s, %+v) has %d ranges, want %d", tt.id, tt.tp, got, tt.want)
		}
	}
}

func TestDefinitionNormalised(t *testing.T) {
	c, st := openCatalog(t, newMemBackend())
	defer st.Close()
	if _, err := c.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	k, err := c.CreateContainer("db", []byte(`{"id":"k","partitionKey":{"paths":["/a","/b"]},"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dimensions":3}]},"_rid":"forged"}`), Throughput{})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(k.JSON(), &got); err != nil {
		t.Fatalf("container JSON is invalid: %v: %s", err, k.JSON())
	}
	pk := got["partitionKey"].(map[string]any)
	if pk["kind"] != "MultiHash" || pk["version"] != float64(2) {
		t.Errorf("partitionKey = %v, want MultiHash version 2", pk)
	}
	if got["_rid"] == "forged" || got["vectorEmbeddingPolicy"] == nil || got["indexingPolicy"] == nil {
		t.Errorf("container JSON = %s", k.JSON())
	}
	// A null defaultTtl is time to live off, returned without the member
	// as Cosmos DB returns it (a bug hunt saw "defaultTtl": null echoed).
	off, err := c.CreateContainer("db", []byte(`{"id":"off","partitionKey":{"paths":["/a"]},"defaultTtl":null}`), Throughput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, on := off.DefaultTTL(); on || strings.Contains(string(off.JSON()), "defaultTtl") {
		t.Errorf("defaultTtl null: %s, want time to live off and no defaultTtl", off.JSON())
	}
	for _, bad := range []string{`{"id":"x"}`, `{"id":"x","partitionKey":{"paths":[]}}`, `{"id":"x","partitionKey":{"paths":["/a"],"version":3}}`, `[]`, `{"id":1}`, `{"id":"x","partitionKey":{"paths":["/a"]},"defaultTtl":0}`} {
		if _, err := c.CreateContainer("db", []byte(bad), Throughput{}); !errors.As(err, new(*InvalidError)) {
			t.Errorf("CreateContainer(%s) = %v, want *InvalidError", bad, err)
		}
	}
}

func TestPersistenceAndCascade(t *testing.T) {
	fs := newMemBackend()
	c, st := openCatalog(t, fs)
	if _, err := c.CreateDatabase("db", Throughput{Manual: 1000}); err != nil {
		t.Fatal(err)
	}
	k, err := c.CreateContainer("db", []byte(`{"id":"k","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 12000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReplaceOffer(k.OfferID, Throughput{Manual: 450}, "", NoMigration); err == nil {
		t.Errorf("ReplaceOffer(450) succeeded: not a multiple of 100")
	}
	if _, err := c.ReplaceOffer(k.OfferID, Throughput{Manual: 500}, "", NoMigration); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	c, st = openCatalog(t, fs)
	defer st.Close()
	k2, err := c.Container("db", "k")
	if err != nil || k2.RID != k.RID || len(k2.Map().Ranges()) != 2 {
		t.Fatalf("after reopen: %+v, %v", k2, err)
	}
	if o, err := c.Offer(k.OfferID); err != nil || o.Manual != 500 {
		t.Errorf("offer after reopen = %+v, %v", o, err)
	}
	if len(c.Offers()) != 2 {
		t.Errorf("%d offers, want 2 (database and container)", len(c.Offers()))
	}
	if _, err := c.DeleteDatabase("db", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Container("db", "k"); !errors.Is(err, ErrNotFound) {
		t.Errorf("container after database delete: %v", err)
	}
	if len(c.Offers()) != 0 {
		t.Errorf("%d offers left after delete", len(c.Offers()))
	}
	if _, err := c.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	k3, err := c.CreateContainer("db", []byte(`{"id":"k","partitionKey":{"paths":["/pk"]}}`), Throughput{})
	if err != nil || k3.Internal == k.Internal {
		t.Errorf("re-created container reuses internal id %d (%v)", k3.Internal, err)
	}
}

// TestDatabasesInCreationOrder: databases created within one second (the
// clock here never moves) list in creation order, the same every time, so
// that a client paging the feed by position gets each once (a bug hunt:
// ordered by _ts alone, they came in another order on each call, and paged
// reads returned some twice and skipped others).
func TestDatabasesInCreationOrder(t *testing.T) {
	c, st := openCatalog(t, newMemBackend())
	defer st.Close()
	want := []string{"z", "a", "m", "b", "y", "c", "x", "d"}
	for _, id := range want {
		if _, err := c.CreateDatabase(id, Throughput{}); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		var got []string
		for _, d := range c.Databases() {
			got = append(got, d.ID)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Databases() = %v, want the creation order %v", got, want)
		}
	}
}

// TestGeospatialConfig: a container's geospatialConfig is Geography (the
// default, also for null); Geometry is refused as not supported (it was
// stored and evaluated as geography: a container hunt), and any other
// type as invalid.
func TestGeospatialConfig(t *testing.T) {
	c, st := openCatalog(t, newMemBackend())
	defer st.Close()
	if _, err := c.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		config string
		ok     bool
	}{
		{`{"type":"Geography"}`, true},
		{`null`, true},
		{`{"type":"Geometry"}`, false},
		{`{"type":"Bogus"}`, false},
		{`{}`, false},
		{`"Geography"`, false},
	} {
		def := fmt.Sprintf(`{"id":"k%d","partitionKey":{"paths":["/pk"]},"geospatialConfig":%s}`, i, tc.config)
		k, err := c.CreateContainer("db", []byte(def), Throughput{})
		if _, invalid := errors.AsType[*InvalidError](err); tc.ok != (err == nil) || (!tc.ok && !invalid) {
			t.Errorf("geospatialConfig %s: %v; want ok %v", tc.config, err, tc.ok)
			continue
		}
		if tc.ok && !strings.Contains(string(k.JSON()), `"geospatialConfig":{"type":"Geography"}`) {
			t.Errorf("geospatialConfig %s: stored %s", tc.config, k.JSON())
		}
	}
}
