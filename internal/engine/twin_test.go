package engine

import (
	"context"
	"testing"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/plan"
)

// twinEngine returns an engine with containers "ix" (the default indexing
// policy) and "noix" (indexing nothing) in database "db", and a function
// writing one item to both: a query of the indexed container is checked
// against the same query's scan of the other.
func twinEngine(t *testing.T) (*Engine, func(pk document.PartitionKey, body string)) {
	t.Helper()
	return twinEngineWith(t, Config{GatewayQueryFull: true})
}

// twinEngineWith is twinEngine with configuration cfg.
func twinEngineWith(t *testing.T, cfg Config) (*Engine, func(pk document.PartitionKey, body string)) {
	t.Helper()
	e := testEngineWith(t, cfg)
	for _, id := range []string{"ix", "noix"} {
		policy := ""
		if id == "noix" {
			policy = `,"indexingPolicy":{"indexingMode":"none","automatic":false}`
		}
		if _, err := e.CreateContainer("db", []byte(`{"id":"`+id+`","partitionKey":{"paths":["/pk"]}`+policy+`}`), Throughput{Manual: 24000}); err != nil {
			t.Fatal(err)
		}
	}
	return e, func(pk document.PartitionKey, body string) {
		t.Helper()
		for _, coll := range []string{"ix", "noix"} {
			if _, err := e.WriteItem(context.Background(), Write{DB: "db", Container: coll, Kind: Create, PK: pk, Body: []byte(body)}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// drainPlans drains q from container coll of database "db" across
// partitions, returning its rows, the documents it loaded and each page's
// plan.
func drainPlans(t *testing.T, e *Engine, coll string, q Query) (rows []string, loaded int, plans []plan.Physical) {
	t.Helper()
	for {
		p, err := e.QueryItems(context.Background(), "db", coll, Scope{}, q)
		if err != nil {
			t.Fatalf("%s: %v", q.Text, err)
		}
		for _, it := range p.Items {
			rows = append(rows, string(it))
		}
		loaded += p.Loaded
		plans = append(plans, p.Metrics.Plan)
		if q.Continuation = p.Continuation; q.Continuation == "" {
			return rows, loaded, plans
		}
	}
}
