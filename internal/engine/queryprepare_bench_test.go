package engine

import (
	"context"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/exec"
	"github.com/partitadb/partita/internal/store"
)

// BenchmarkQueryPrepare measures what a query page costs before it reads a
// document (issue #15): compiling the query (parse, exec.Compile), routing
// it (plan.PartitionKey, plan.PartitionKeys, the scope), and preparing its
// page (the continuation, plan.Choose, the view), on an empty container of
// 4 physical partitions with the default indexing policy, for the queries
// of `partita bench`:
//
//   - pk-header: SELECT * FROM c WHERE c.pk = @pk with the partition key
//     in the request's scope (query-pk; the Go SDK sends both);
//
//   - pk-where: the same routed by its WHERE clause alone;
//
//   - filter: SELECT * FROM c WHERE c.half = @h across partitions
//     (query-filter).
//
//     go test -run=NONE -bench=BenchmarkQueryPrepare -count=6 ./internal/engine
func BenchmarkQueryPrepare(b *testing.B) {
	e := benchEngineOn(b, store.Options{}, "q", 24000)
	ctx := context.Background()
	pk := document.PartitionKey{{Kind: document.String, String: "key0000123"}}
	for _, tc := range []struct {
		name  string
		scope Scope
		q     Query
	}{
		{"pk-header", Scope{PK: pk}, Query{Text: "SELECT * FROM c WHERE c.pk = @pk", Params: exec.Params{"@pk": []byte(`"key0000123"`)}, EnableCrossPartition: true}},
		{"pk-where", Scope{}, Query{Text: "SELECT * FROM c WHERE c.pk = @pk", Params: exec.Params{"@pk": []byte(`"key0000123"`)}, EnableCrossPartition: true}},
		{"filter", Scope{}, Query{Text: "SELECT * FROM c WHERE c.half = @h", Params: exec.Params{"@h": []byte(`1`)}, EnableCrossPartition: true, MaxItems: 100}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, release, err := e.readContainer(b.Context(), "db", "q", "")
				if err != nil {
					b.Fatal(err)
				}
				scope := tc.scope
				scope.PK = scopeKey(c, scope.PK)
				ast, prog, err := compile(tc.q, exec.WithUDFs(e.udfLookup(c)))
				if err != nil {
					b.Fatal(err)
				}
				r, scope, err := routeQuery(c, ast, scope, tc.q)
				if err != nil {
					b.Fatal(err)
				}
				run, _, err := e.prepareQuery(ctx, c, ast, prog, r, scope, tc.q, time.Now())
				if err != nil {
					b.Fatal(err)
				}
				run.src.v.close()
				release()
			}
		})
	}
}
