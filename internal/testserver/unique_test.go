package testserver_test

import (
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/google/go-cmp/cmp"

	"github.com/partitadb/partita/internal/testserver"
)

// TestUniqueKeysSDK: a unique key policy set through the Go SDK round-trips,
// is enforced per logical partition (409 through the SDK), and cannot be
// changed by a container replace (400).
func TestUniqueKeysSDK(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	policy := &azcosmos.UniqueKeyPolicy{UniqueKeys: []azcosmos.UniqueKey{{Paths: []string{"/email"}}, {Paths: []string{"/first", "/last"}}}}
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{
		ID: "users", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/tenant"}}, UniqueKeyPolicy: policy,
	}, nil)

	read, err := k.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(policy, read.ContainerProperties.UniqueKeyPolicy); d != "" {
		t.Errorf("read container's UniqueKeyPolicy (-want +got):\n%s", d)
	}

	t1, t2 := azcosmos.NewPartitionKeyString("t1"), azcosmos.NewPartitionKeyString("t2")
	if _, err := k.CreateItem(ctx, t1, []byte(`{"id":"1","tenant":"t1","email":"a@x","first":"A","last":"B"}`), nil); err != nil {
		t.Fatal(err)
	}
	_, err = k.CreateItem(ctx, t1, []byte(`{"id":"2","tenant":"t1","email":"a@x","first":"C","last":"D"}`), nil)
	wantStatus(t, "create with a taken email", err, http.StatusConflict)
	_, err = k.UpsertItem(ctx, t1, []byte(`{"id":"2","tenant":"t1","email":"b@x","first":"A","last":"B"}`), nil)
	wantStatus(t, "upsert with a taken (first, last)", err, http.StatusConflict)
	if _, err := k.CreateItem(ctx, t1, []byte(`{"id":"2","tenant":"t1","email":"b@x","first":"A","last":"C"}`), nil); err != nil {
		t.Errorf("create with free values: %v", err)
	}
	if _, err := k.CreateItem(ctx, t2, []byte(`{"id":"1","tenant":"t2","email":"a@x","first":"A","last":"B"}`), nil); err != nil {
		t.Errorf("create in another logical partition: %v", err)
	}
	if _, err := k.DeleteItem(ctx, t1, "1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := k.CreateItem(ctx, t1, []byte(`{"id":"3","tenant":"t1","email":"a@x","first":"A","last":"B"}`), nil); err != nil {
		t.Errorf("create with values a delete freed: %v", err)
	}

	props := *read.ContainerProperties
	props.UniqueKeyPolicy = &azcosmos.UniqueKeyPolicy{UniqueKeys: []azcosmos.UniqueKey{{Paths: []string{"/email"}}}}
	_, err = k.Replace(ctx, props, nil)
	wantStatus(t, "replace with a changed unique key policy", err, http.StatusBadRequest)
	props.UniqueKeyPolicy = policy
	if _, err := k.Replace(ctx, props, nil); err != nil {
		t.Errorf("replace with the same unique key policy: %v", err)
	}

	d, _ := c.NewDatabase("db")
	_, err = d.CreateContainer(ctx, azcosmos.ContainerProperties{
		ID: "bad", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/tenant"}},
		UniqueKeyPolicy: &azcosmos.UniqueKeyPolicy{UniqueKeys: []azcosmos.UniqueKey{{Paths: []string{"/a/*"}}}},
	}, nil)
	wantStatus(t, "create a container with a wildcard unique key path", err, http.StatusBadRequest)
}
