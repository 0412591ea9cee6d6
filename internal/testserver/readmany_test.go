package testserver_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/testserver"
)

// TestReadManyItems: the Go SDK's ReadManyItems over a container of
// several physical partitions returns exactly the requested items that
// exist, once each, whatever the order and duplicates of the request, and
// costs about as much as point reads of them, not a scan (its per-range
// queries are answered from the id index).
func TestReadManyItems(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	tp := azcosmos.NewManualThroughputProperties(30000)
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "many", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, &azcosmos.CreateContainerOptions{ThroughputProperties: &tp})
	ctx := t.Context()
	for i := range 400 {
		pk := fmt.Sprintf("k%d", i%37)
		if _, err := k.CreateItem(ctx, azcosmos.NewPartitionKeyString(pk), fmt.Appendf(nil, `{"id":"i%03d","pk":%q}`, i, pk), nil); err != nil {
			t.Fatal(err)
		}
	}
	var ids []azcosmos.ItemIdentity
	var want []string
	for i := 399; i >= 0; i -= 7 {
		ids = append(ids, azcosmos.ItemIdentity{ID: fmt.Sprintf("i%03d", i), PartitionKey: azcosmos.NewPartitionKeyString(fmt.Sprintf("k%d", i%37))})
		want = append(want, fmt.Sprintf("i%03d", i))
	}
	ids = append(ids,
		azcosmos.ItemIdentity{ID: "i001", PartitionKey: azcosmos.NewPartitionKeyString("k2")}, // wrong partition key
		azcosmos.ItemIdentity{ID: "nope", PartitionKey: azcosmos.NewPartitionKeyString("k1")},
	)
	resp, err := k.ReadManyItems(ctx, ids, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range resp.Items {
		var x struct{ ID string }
		if err := json.Unmarshal(it, &x); err != nil {
			t.Fatal(err)
		}
		got = append(got, x.ID)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ReadManyItems returned %d items %v, want %d %v", len(got), got, len(want), want)
	}
	// Reading the whole container costs several times more: the SDK's
	// per-range queries are answered from the id index, not by scanning.
	var scan float32
	pager := k.NewQueryItemsPager("SELECT * FROM c WHERE c.pk != 'none'", azcosmos.NewPartitionKey(), nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		scan += page.RequestCharge
	}
	t.Logf("ReadManyItems: %d items, %.1f RU; a scan of all 400: %.1f RU", len(got), resp.RequestCharge, scan)
	if resp.RequestCharge*3 > scan {
		t.Errorf("ReadManyItems of %d items cost %.1f RU, a scan of the container %.1f RU: want well under a third", len(ids), resp.RequestCharge, scan)
	}
}
