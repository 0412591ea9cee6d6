package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/store"
)

// BenchmarkQueryComposite measures ORDER BY on two paths served by a
// composite index (plan=composite) against the same queries sorted
// (plan=sorted, Query.sorted: what every such query did before), in one
// run: "the latest ten events of a device" in its logical partition
// (ORDER BY c.pk, c.n DESC, and ORDER BY c.n DESC, under a composite led
// by the partition key),
// and across partitions "filter on cat, ORDER BY cat, n" and an unfiltered
// ORDER BY cat, n, drained in pages of 100. The data: 5,000 items of about
// 500 B in the partition "hot", written interleaved with 5,000 items of 100
// other partitions, in 10 categories, one physical partition, compacted.
// It reports the documents loaded and index entries read per query.
func BenchmarkQueryComposite(b *testing.B) {
	e := benchEngineOn(b, store.Options{CacheBytes: 256 << 20}, "q", 6000)
	ctx := context.Background()
	if _, err := e.ReplaceContainer("db", "q", []byte(`{"id":"q","partitionKey":{"paths":["/pk"]},"indexingPolicy":{"compositeIndexes":[`+
		`[{"path":"/pk"},{"path":"/n","order":"descending"}],[{"path":"/cat"},{"path":"/n"}]]}}`), ""); err != nil {
		b.Fatal(err)
	}
	pad := strings.Repeat("x", 440)
	for i := range 5000 {
		for j, pk := range []string{"hot", fmt.Sprintf("k%d", i%100)} {
			body := fmt.Appendf(nil, `{"id":"i%d","pk":%q,"n":%d,"cat":"c%d","pad":%q}`, i, pk, i, (i+j)%10, pad)
			if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "q", Kind: Create, PK: document.PartitionKey{{Kind: document.String, String: pk}}, Body: body}); err != nil {
				b.Fatal(err)
			}
		}
	}
	c, _ := e.container("db", "q")
	for _, ks := range c.Keyspaces() {
		if err := e.host.Compact(ctx, ks); err != nil {
			b.Fatal(err)
		}
	}
	hot := Scope{PK: document.PartitionKey{{Kind: document.String, String: "hot"}}}
	ranges, _, _, err := e.PKRanges("db", "q")
	if err != nil || len(ranges) != 1 {
		b.Fatalf("ranges %v, %v: want one", ranges, err)
	}
	// Across partitions as the SDKs query: the physical partition's range.
	all := Scope{RangeID: ranges[0].ID}
	run := func(b *testing.B, scope Scope, text string, pageSize int, sorted bool) {
		var loaded, entries, rows int
		b.ResetTimer()
		for range b.N {
			q := Query{Text: text, MaxItems: pageSize, EnableCrossPartition: true}
			q.sorted = sorted
			for {
				p, err := e.QueryItems(ctx, "db", "q", scope, q)
				if err != nil {
					b.Fatal(err)
				}
				loaded, entries, rows = loaded+p.Loaded, entries+p.Metrics.Entries, rows+len(p.Items)
				if q.Continuation = p.Continuation; q.Continuation == "" {
					break
				}
			}
		}
		b.ReportMetric(float64(loaded)/float64(b.N), "loaded/op")
		b.ReportMetric(float64(entries)/float64(b.N), "entries/op")
		b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
	}
	for _, q := range []struct {
		name  string
		scope Scope
		text  string
	}{
		{"q=device-top-10", hot, "SELECT TOP 10 * FROM c ORDER BY c.pk, c.n DESC"},
		{"q=device-top-10-one-path", hot, "SELECT TOP 10 * FROM c ORDER BY c.n DESC"},
		{"q=category-drain", all, "SELECT * FROM c WHERE c.cat = 'c3' ORDER BY c.cat, c.n"},
		{"q=all-drain", all, "SELECT * FROM c ORDER BY c.cat, c.n"},
	} {
		for _, sorted := range []bool{true, false} {
			name := q.name + "/plan=composite"
			if sorted {
				name = q.name + "/plan=sorted"
			}
			b.Run(name, func(b *testing.B) { run(b, q.scope, q.text, 100, sorted) })
		}
	}
}
