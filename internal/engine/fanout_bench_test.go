package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/partition"
)

// BenchmarkFanOut reads the same 20,000 items (500 B, 2,000 logical
// partitions) over 1, 4 and 16 physical partitions with a cross-partition
// query (SELECT * in pages of 1,000) and with a change-feed read of every
// range from the beginning (pages of 1,000), and reports the cost per item:
// ns/item, the entries read per item, and RU/item for the change feed.
// Each entry is read once whatever the partitioning, so the figures should
// stay flat (issue #13: within 1.3×).
//
// "created" partitions come from the container's throughput, each with its
// own keyspace; "split" ones from splitting one partition, the children
// sharing their parent's keyspace (docs/storage-seams.md); "separated" ones
// are split ones after each got a keyspace of its own (SeparateRange).
// Every layout's keyspaces are compacted before reading.
func BenchmarkFanOut(b *testing.B) {
	const items = 20000
	for _, layout := range []string{"created", "split", "separated"} {
		for _, n := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("%s/partitions=%d", layout, n), func(b *testing.B) {
				e := fanOutEngine(b, layout, n, items)
				b.Run("query", func(b *testing.B) {
					read, entries := 0, 0
					for b.Loop() {
						q := Query{Text: "SELECT * FROM c", EnableCrossPartition: true, MaxItems: 1000}
						for {
							p, err := e.QueryItems(context.Background(), "db", "f", Scope{}, q)
							if err != nil {
								b.Fatal(err)
							}
							read += len(p.Items)
							entries += p.Metrics.Entries
							if q.Continuation = p.Continuation; q.Continuation == "" {
								break
							}
						}
					}
					if read != items*b.N {
						b.Fatalf("read %d items, want %d", read, items*b.N)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(read), "ns/item")
					b.ReportMetric(float64(entries)/float64(read), "entries/item")
				})
				b.Run("changefeed", func(b *testing.B) {
					c, _ := e.container("db", "f")
					read, ru, entries := 0, 0.0, 0
					for b.Loop() {
						for _, r := range c.Map().Ranges() {
							req := ChangeFeed{Scope: Scope{RangeID: r.ID}, MaxItems: 1000}
							for {
								p, err := e.ReadChanges(context.Background(), "db", "f", req)
								if err != nil {
									b.Fatal(err)
								}
								read += len(p.Items)
								ru += p.RU
								entries += p.Entries
								if len(p.Items) == 0 {
									break
								}
								req.After, req.HasAfter = p.Position, true
							}
						}
					}
					if read != items*b.N {
						b.Fatalf("read %d items, want %d", read, items*b.N)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(read), "ns/item")
					b.ReportMetric(ru/float64(read), "RU/item")
					b.ReportMetric(float64(entries)/float64(read), "entries/item")
				})
			})
		}
	}
}

// fanOutEngine writes items into container "f" laid out over n physical
// partitions as layout says.
func fanOutEngine(b *testing.B, layout string, n, items int) *Engine {
	e := benchEngine(b, false)
	ctx := context.Background()
	tp := Throughput{Manual: 400}
	if layout == "created" {
		tp.Manual = n * 6000
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"f","partitionKey":{"paths":["/pk"]}}`), tp); err != nil {
		b.Fatal(err)
	}
	pad := strings.Repeat("x", 420)
	for i := range items {
		body := fmt.Appendf(nil, `{"id":"i%05d","pk":"k%04d","n":%d,"pad":%q}`, i, i%2000, i, pad)
		pk := document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("k%04d", i%2000)}}
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "f", Kind: Create, PK: pk, Body: body}); err != nil {
			b.Fatal(err)
		}
	}
	for layout != "created" {
		c, _ := e.container("db", "f")
		if c.Map().Len() >= n {
			break
		}
		// Split the largest range, so the children stay balanced.
		var widest partition.Range
		var most int64 = -1
		for _, r := range c.Map().Ranges() {
			rs, err := e.rangeStorage(ctx, c, r)
			if err != nil {
				b.Fatal(err)
			}
			if rs.total > most {
				widest, most = r, rs.total
			}
		}
		if _, err := e.SplitRange(ctx, "db", "f", widest.ID); err != nil {
			b.Fatal(err)
		}
	}
	for layout == "separated" {
		c, _ := e.container("db", "f")
		i := slices.IndexFunc(c.Map().Ranges(), func(r partition.Range) bool { return shared(c, r) })
		if i < 0 {
			break
		}
		if err := e.SeparateRange(ctx, "db", "f", c.Map().Ranges()[i].ID); err != nil {
			b.Fatal(err)
		}
	}
	c, _ := e.container("db", "f")
	if c.Map().Len() != n {
		b.Fatalf("%d partitions, want %d", c.Map().Len(), n)
	}
	// Every layout reads from compacted tables, not some from memtables.
	for _, ks := range c.Keyspaces() {
		if err := e.host.Compact(ctx, ks); err != nil {
			b.Fatal(err)
		}
	}
	return e
}
