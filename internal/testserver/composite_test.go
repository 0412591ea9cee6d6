package testserver_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/testserver"
)

// TestCompositeOrderByThroughSDK: the Go SDK's query of one logical
// partition ordered by a composite index led by the partition key ("the
// latest events of a device", as Cosmos DB's documentation writes it:
// WHERE c.pk = @pk ORDER BY c.pk, c.n DESC) pages through the partition in
// the index's order, every page read in that order (the plan each page
// reports), and a filter narrowing the next path keeps the order; so does
// ORDER BY c.n DESC alone, the composite's first path pinned by the key.
func TestCompositeOrderByThroughSDK(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "k",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		IndexingPolicy: &azcosmos.IndexingPolicy{IndexingMode: azcosmos.IndexingModeConsistent, Automatic: true,
			IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}},
			CompositeIndexes: [][]azcosmos.CompositeIndex{{
				{Path: "/pk", Order: azcosmos.CompositeIndexAscending},
				{Path: "/n", Order: azcosmos.CompositeIndexDescending},
			}}}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: ptr(azcosmos.NewManualThroughputProperties(24000))})
	for i := range 60 {
		for _, pk := range []string{"dev", fmt.Sprint("other", i%5)} {
			if _, err := k.CreateItem(ctx, azcosmos.NewPartitionKeyString(pk), mustJSON(t, map[string]any{"id": fmt.Sprint("e", i), "pk": pk, "n": (i * 7) % 60}), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	drain := func(query string, want []int) {
		t.Helper()
		pager := k.NewQueryItemsPager(query, azcosmos.NewPartitionKeyString("dev"),
			&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@pk", Value: "dev"}}, PageSizeHint: 7})
		var got []int
		pages := 0
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				t.Fatalf("%s: page %d: %v", query, pages, err)
			}
			pages++
			raw, _ := url.PathUnescape(page.RawResponse.Header.Get("x-partita-query-plan"))
			if !strings.Contains(raw, `"access":"index-ordered"`) || !strings.Contains(raw, "composite index 0") {
				t.Errorf("%s: page %d ran %s, want an ordered read of the composite index", query, pages, raw)
			}
			for _, it := range page.Items {
				var row struct{ N int }
				if err := json.Unmarshal(it, &row); err != nil {
					t.Fatal(err)
				}
				got = append(got, row.N)
			}
		}
		if !slices.Equal(got, want) || pages < len(want)/7 {
			t.Errorf("%s: %v in %d pages, want %v in pages of 7", query, got, pages, want)
		}
	}
	var all, low []int
	for n := 59; n >= 0; n-- {
		all = append(all, n)
		if n < 20 {
			low = append(low, 19-n)
		}
	}
	drain("SELECT c.id, c.n FROM c WHERE c.pk = @pk ORDER BY c.pk, c.n DESC", all)
	drain("SELECT c.n FROM c WHERE c.pk = @pk AND c.n < 20 ORDER BY c.pk DESC, c.n", low)
	// One path, the composite's leading path pinned by the partition key.
	drain("SELECT c.n FROM c WHERE c.pk = @pk ORDER BY c.n DESC", all)
}
