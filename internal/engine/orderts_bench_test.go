package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/store"
)

// BenchmarkQueryLatestInPartition measures the "latest events of a device"
// query of one logical partition, SELECT TOP 10 * … ORDER BY c._ts DESC,
// and a drain of the partition in that order in pages of 100: the
// partition ("hot") holds 5,000 items of about 500 B, written interleaved
// with 5,000 items of 100 other partitions, in one physical partition
// (compacted). It reports the documents loaded and index entries read per
// query.
func BenchmarkQueryLatestInPartition(b *testing.B) {
	e := benchEngineOn(b, store.Options{CacheBytes: 256 << 20}, "q", 6000)
	ctx := context.Background()
	pad := strings.Repeat("x", 440)
	for i := range 5000 {
		for _, pk := range []string{"hot", fmt.Sprintf("k%d", i%100)} {
			body := fmt.Appendf(nil, `{"id":"i%d","pk":%q,"n":%d,"pad":%q}`, i, pk, i, pad)
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
	run := func(b *testing.B, text string, pageSize int) {
		var loaded, entries, rows int
		b.ResetTimer()
		for range b.N {
			q := Query{Text: text, MaxItems: pageSize}
			for {
				p, err := e.QueryItems(ctx, "db", "q", hot, q)
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
	b.Run("q=top-10", func(b *testing.B) { run(b, "SELECT TOP 10 * FROM c ORDER BY c._ts DESC", 100) })
	b.Run("q=drain/page=100", func(b *testing.B) { run(b, "SELECT * FROM c ORDER BY c._ts DESC", 100) })
}
