package testserver_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/testserver"
)

// TestDuplicatePropertyNames sends documents with a property name twice
// through every way a document enters: each is refused with 400 naming the
// property, nothing is stored, and one id keeps one item.
func TestDuplicatePropertyNames(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	c := s.Client(t)
	ctx := t.Context()
	k := newContainer(t, c, "db", azcosmos.ContainerProperties{ID: "dup", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	pk := azcosmos.NewPartitionKeyString("k1")

	refused := func(what string, err error, name string) {
		t.Helper()
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusBadRequest || !strings.Contains(err.Error(), `duplicate property name \"`+name+`\"`) && !strings.Contains(err.Error(), `duplicate property name "`+name+`"`) {
			t.Errorf("%s: %v, want 400 naming %q", what, err, name)
		}
	}
	_, err := k.CreateItem(ctx, pk, []byte(`{"id":"dupA","pk":"k1","id":"dupB"}`), nil)
	refused("create with two ids", err, "id")
	_, err = k.UpsertItem(ctx, pk, []byte(`{"id":"dupA","pk":"k1","pk":"k2"}`), nil)
	refused("upsert with two partition keys", err, "pk")
	_, err = k.CreateItem(ctx, pk, []byte(`{"id":"dupA","pk":"k1","a":{"b":[{"c":1,"\u0063":2}]}}`), nil)
	refused("create with a nested, escaped duplicate", err, "c")

	if _, err := k.CreateItem(ctx, pk, []byte(`{"id":"dupA","pk":"k1","v":1}`), nil); err != nil {
		t.Fatal(err)
	}
	_, err = k.ReplaceItem(ctx, pk, "dupA", []byte(`{"id":"dupA","pk":"k1","id":"dupB"}`), nil)
	refused("replace with two ids", err, "id")

	patch := azcosmos.PatchOperations{}
	patch.AppendSet("/obj", json.RawMessage(`{"x":1,"x":2}`))
	_, err = k.PatchItem(ctx, pk, "dupA", patch, nil)
	refused("patch setting an object with a duplicate", err, "x")

	batch := k.NewTransactionalBatch(pk)
	batch.CreateItem([]byte(`{"id":"b1","pk":"k1"}`), nil)
	batch.CreateItem([]byte(`{"id":"b2","pk":"k1","id":"b3"}`), nil)
	res, err := k.ExecuteTransactionalBatch(ctx, batch, nil)
	if err == nil && res.Success {
		t.Errorf("batch with a duplicate name succeeded")
	} else if err == nil {
		var codes []int32
		for _, r := range res.OperationResults {
			codes = append(codes, r.StatusCode)
		}
		if len(codes) != 2 || codes[1] != http.StatusBadRequest {
			t.Errorf("batch with a duplicate name: operation statuses %v, want [424 400]", codes)
		}
	} else {
		refused("batch with a duplicate name", err, "id")
	}

	// Nothing but dupA was stored, and a query for it finds exactly one row.
	for _, id := range []string{"dupB", "b1", "b2", "b3"} {
		if _, err := k.ReadItem(ctx, pk, id, nil); err == nil {
			t.Errorf("item %s exists after refused writes", id)
		}
	}
	q := k.NewQueryItemsPager("SELECT * FROM c WHERE c.id = 'dupA'", pk, nil)
	rows := 0
	for q.More() {
		p, err := q.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows += len(p.Items)
	}
	if rows != 1 {
		t.Errorf("query for dupA: %d rows, want 1", rows)
	}
	item, err := k.ReadItem(ctx, pk, "dupA", nil)
	if err != nil || !strings.Contains(string(item.Value), `"v":1`) {
		t.Errorf("dupA after refused replace and patch: %s %v", item.Value, err)
	}
}

// TestInvalidUTF8InEnvelopes: a patch or batch body with invalid UTF-8 is
// refused whole, as an item's body is; a patch path's invalid bytes were
// read as U+FFFD and set a member "k\uFFFD" (a patch hunt).
func TestInvalidUTF8InEnvelopes(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	ctx := t.Context()
	k := newContainer(t, s.Client(t), "db", azcosmos.ContainerProperties{ID: "u8", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	pk := azcosmos.NewPartitionKeyString("p")
	if _, err := k.CreateItem(ctx, pk, []byte(`{"id":"a","pk":"p","v":1}`), nil); err != nil {
		t.Fatal(err)
	}
	hdr := map[string]string{"Content-Type": "application/json", "x-ms-documentdb-partitionkey": `["p"]`}
	for _, body := range []string{
		"[{\"op\":\"set\",\"path\":\"/k\xff\",\"value\":1}]",
		"{\"condition\":\"from c where c.v = 'x\xff'\",\"operations\":[{\"op\":\"set\",\"path\":\"/v\",\"value\":2}]}",
	} {
		resp, out, err := s.Do(ctx, http.MethodPatch, "/dbs/db/colls/u8/docs/a", hdr, []byte(body))
		if err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(out), "invalid UTF-8") {
			t.Errorf("patch %q: %v %s %v, want 400 naming invalid UTF-8", body, resp.Status, out, err)
		}
	}
	bhdr := map[string]string{"Content-Type": "application/json", "x-ms-documentdb-partitionkey": `["p"]`,
		"x-ms-cosmos-is-batch-request": "True", "x-ms-cosmos-batch-atomic": "True"}
	resp, out, err := s.Do(ctx, http.MethodPost, "/dbs/db/colls/u8/docs", bhdr, []byte("[{\"operationType\":\"Delete\",\"id\":\"a\xff\"}]"))
	if err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(out), "invalid UTF-8") {
		t.Errorf("batch with an invalid id: %v %s %v, want 400 naming invalid UTF-8", resp.Status, out, err)
	}
	got, err := k.ReadItem(ctx, pk, "a", nil)
	if err != nil || string(got.Value) == "" || strings.Contains(string(got.Value), "\uFFFD") || !strings.Contains(string(got.Value), `"v":1`) {
		t.Errorf("item after the refused requests: %s %v, want it unchanged", got.Value, err)
	}
}

// TestRefusalsCarrySessionTokens: a 404, 409 or 412 of an item operation
// carries the partition's session token, which @azure/cosmos keeps from
// exactly those refusals (captureSessionToken); they carried none.
func TestRefusalsCarrySessionTokens(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	ctx := t.Context()
	k := newContainer(t, s.Client(t), "db", azcosmos.ContainerProperties{ID: "st", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	created, err := k.CreateItem(ctx, azcosmos.NewPartitionKeyString("p"), []byte(`{"id":"a","pk":"p"}`), nil)
	if err != nil || created.SessionToken == nil {
		t.Fatal(err)
	}
	want := *created.SessionToken
	hdr := map[string]string{"Content-Type": "application/json", "x-ms-documentdb-partitionkey": `["p"]`}
	for _, tc := range []struct {
		name, method, path, body string
		extra                    map[string]string
		want                     int
	}{
		{"read of a missing item", http.MethodGet, "/dbs/db/colls/st/docs/missing", "", nil, http.StatusNotFound},
		{"create of an existing id", http.MethodPost, "/dbs/db/colls/st/docs", `{"id":"a","pk":"p"}`, nil, http.StatusConflict},
		{"replace with a stale etag", http.MethodPut, "/dbs/db/colls/st/docs/a", `{"id":"a","pk":"p"}`, map[string]string{"If-Match": `"stale"`}, http.StatusPreconditionFailed},
		{"delete of a missing item", http.MethodDelete, "/dbs/db/colls/st/docs/missing", "", nil, http.StatusNotFound},
	} {
		h := map[string]string{}
		for k, v := range hdr {
			h[k] = v
		}
		for k, v := range tc.extra {
			h[k] = v
		}
		resp, body, err := s.Do(ctx, tc.method, tc.path, h, []byte(tc.body))
		if err != nil || resp.StatusCode != tc.want {
			t.Errorf("%s: %v %s %v, want %d", tc.name, resp.Status, body, err, tc.want)
			continue
		}
		tok := resp.Header.Get("x-ms-session-token")
		if tok == "" || !strings.Contains(want, ":") || strings.Split(tok, ":")[0] != strings.Split(want, ":")[0] {
			t.Errorf("%s: session token %q, want one of the partition's (the create's was %q)", tc.name, tok, want)
		}
	}
}
