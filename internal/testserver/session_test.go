package testserver_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/testserver"
)

// TestSessionTokens: a write's session token is honoured on a read; a token
// from the future (another server, an older data directory) gets
// 404/1002; a malformed one 400; and a read may relax the account's
// consistency level but not strengthen it.
func TestSessionTokens(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "s", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	ctx := t.Context()
	pk := azcosmos.NewPartitionKeyString("a")
	w, err := k.CreateItem(ctx, pk, []byte(`{"id":"x","pk":"a"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.SessionToken == nil || *w.SessionToken == "" {
		t.Fatal("a create returned no session token")
	}
	if _, err := k.ReadItem(ctx, pk, "x", &azcosmos.ItemOptions{SessionToken: w.SessionToken}); err != nil {
		t.Errorf("read with the write's session token %s: %v", *w.SessionToken, err)
	}
	for _, tc := range []struct {
		token, consistency string
		code               int
		sub                string
	}{
		{"0:-1#999999999999", "", http.StatusNotFound, "1002"},
		{"0:-1#1,1:-1#999999999999", "", http.StatusNotFound, "1002"},
		{"garbage", "", http.StatusBadRequest, ""},
		{"", "Eventual", http.StatusOK, ""},
		{"", "Session", http.StatusOK, ""},
		{"", "Strong", http.StatusBadRequest, ""},
		{"", "Sometimes", http.StatusBadRequest, ""},
	} {
		o := &azcosmos.ItemOptions{}
		if tc.token != "" {
			o.SessionToken = &tc.token
		}
		if tc.consistency != "" {
			cl := azcosmos.ConsistencyLevel(tc.consistency)
			o.ConsistencyLevel = &cl
		}
		_, err := k.ReadItem(ctx, pk, "x", o)
		code, sub := statusOf(err)
		if err == nil {
			code = http.StatusOK
		}
		if code != tc.code || (tc.sub != "" && sub != tc.sub) {
			t.Errorf("read with session token %q, consistency %q: %d/%s (%v), want %d/%s", tc.token, tc.consistency, code, sub, err, tc.code, tc.sub)
		}
	}
	// Queries honour it too.
	future := "0:-1#999999999999"
	pager := k.NewQueryItemsPager("SELECT * FROM c", pk, &azcosmos.QueryOptions{SessionToken: &future})
	if _, err := pager.NextPage(ctx); err == nil {
		t.Error("a query with a future session token succeeded")
	} else if code, sub := statusOf(err); code != http.StatusNotFound || sub != "1002" {
		t.Errorf("query with a future session token: %d/%s, want 404/1002", code, sub)
	}
}

// TestTimeToLiveThroughSDK: a container created with DefaultTimeToLive
// through the SDK expires its items on the real clock; an item's own ttl
// of -1 keeps it.
func TestTimeToLiveThroughSDK(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ttl := int32(1)
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "t", DefaultTimeToLive: &ttl, PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	ctx := t.Context()
	pk := azcosmos.NewPartitionKeyString("a")
	for _, body := range []string{`{"id":"gone","pk":"a"}`, `{"id":"kept","pk":"a","ttl":-1}`} {
		if _, err := k.CreateItem(ctx, pk, []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := k.CreateItem(ctx, pk, []byte(`{"id":"bad","pk":"a","ttl":0}`), nil); err == nil {
		t.Error("an item with ttl 0 was accepted")
	}
	props, err := k.Read(ctx, nil)
	if err != nil || props.ContainerProperties.DefaultTimeToLive == nil || *props.ContainerProperties.DefaultTimeToLive != 1 {
		t.Fatalf("container read back: %v %+v", err, props.ContainerProperties)
	}
	time.Sleep(2100 * time.Millisecond) // _ts has one-second resolution
	wantStatus(t, "read of an expired item", func() error { _, err := k.ReadItem(ctx, pk, "gone", nil); return err }(), http.StatusNotFound)
	if _, err := k.ReadItem(ctx, pk, "kept", nil); err != nil {
		t.Errorf("read of an item with ttl -1: %v", err)
	}
	pager := k.NewQueryItemsPager("SELECT VALUE c.id FROM c", pk, nil)
	page, err := pager.NextPage(ctx)
	if err != nil || len(page.Items) != 1 || string(page.Items[0]) != `"kept"` {
		t.Errorf("query after expiry: %v %q, want only kept", err, page.Items)
	}
	// The id is free again.
	if _, err := k.CreateItem(ctx, pk, []byte(`{"id":"gone","pk":"a"}`), nil); err != nil {
		t.Errorf("create over an expired item: %v", err)
	}
}
