package testserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/testserver"
)

// scriptEnv is a server with one container /pk and helpers for raw script
// requests (the Go SDK has no script API; the Node test covers the JS SDK's).
type scriptEnv struct {
	t *testing.T
	s *testserver.Server
	k *azcosmos.ContainerClient
}

func newScriptEnv(t *testing.T) *scriptEnv {
	s := testserver.Start(t, testserver.Options{})
	k := newContainer(t, s.Client(t), "db", azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil)
	return &scriptEnv{t: t, s: s, k: k}
}

func (e *scriptEnv) create(kind string, def map[string]any) {
	e.t.Helper()
	resp, body, err := e.s.Do(e.t.Context(), http.MethodPost, "/dbs/db/colls/k/"+kind, map[string]string{"Content-Type": "application/json"}, mustJSON(e.t, def))
	if err != nil || resp.StatusCode != http.StatusCreated {
		e.t.Fatalf("create %s %v: %v %s %v", kind, def["id"], resp.Status, body, err)
	}
}

func (e *scriptEnv) exec(id, pk string, args ...any) (*http.Response, []byte) {
	e.t.Helper()
	if args == nil {
		args = []any{}
	}
	resp, body, err := e.s.Do(e.t.Context(), http.MethodPost, "/dbs/db/colls/k/sprocs/"+id, map[string]string{
		"Content-Type": "application/json", "x-ms-documentdb-partitionkey": `["` + pk + `"]`}, mustJSON(e.t, args))
	if err != nil {
		e.t.Fatal(err)
	}
	return resp, body
}

func TestStoredProcedures(t *testing.T) {
	e := newScriptEnv(t)
	ctx := t.Context()
	e.create("sprocs", map[string]any{"id": "createTwo", "body": `function createTwo(prefix) {
		var coll = getContext().getCollection();
		var made = [];
		coll.createDocument(coll.getSelfLink(), {id: prefix + "1", pk: "p"}, function (err, doc) {
			if (err) throw err;
			made.push(doc.id);
			coll.createDocument(coll.getSelfLink(), {id: prefix + "2", pk: "p"}, function (err, doc) {
				if (err) throw err;
				made.push(doc.id);
				getContext().getResponse().setBody({made: made});
			});
		});
	}`})
	resp, body := e.exec("createTwo", "p", "a")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"made":["a1","a2"]`) {
		t.Fatalf("createTwo: %s %s", resp.Status, body)
	}
	for _, id := range []string{"a1", "a2"} {
		if _, err := e.k.ReadItem(ctx, azcosmos.NewPartitionKeyString("p"), id, nil); err != nil {
			t.Errorf("item %s written by the sproc: %v", id, err)
		}
	}
	// Run again: the first create conflicts and the script throws; nothing
	// of this run may remain.
	if _, err := e.k.DeleteItem(ctx, azcosmos.NewPartitionKeyString("p"), "a2", nil); err != nil {
		t.Fatal(err)
	}
	e.create("sprocs", map[string]any{"id": "writeThenThrow", "body": `function () {
		var coll = getContext().getCollection();
		coll.createDocument(coll.getSelfLink(), {id: "rolledback", pk: "p"}, function (err) {
			if (err) throw err;
			throw new Error("boom after a write");
		});
	}`})
	resp, body = e.exec("writeThenThrow", "p")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "boom after a write") {
		t.Errorf("throwing sproc: %s %s, want 400 naming the error", resp.Status, body)
	}
	_, err := e.k.ReadItem(ctx, azcosmos.NewPartitionKeyString("p"), "rolledback", nil)
	wantStatus(t, "write of a sproc that threw", err, http.StatusNotFound)

	// Writes outside the request's logical partition are refused.
	e.create("sprocs", map[string]any{"id": "crossPartition", "body": `function () {
		var coll = getContext().getCollection();
		coll.createDocument(coll.getSelfLink(), {id: "x", pk: "other"});
	}`})
	resp, body = e.exec("crossPartition", "p")
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("x-ms-substatus") == "1001" ||
		!strings.Contains(string(body), "cannot reference partition keys other than the one") {
		t.Errorf("sproc writing another partition: %s (substatus %q) %s; want 400, not 1001, in Cosmos DB's words",
			resp.Status, resp.Header.Get("x-ms-substatus"), body)
	}
	_, err = e.k.ReadItem(ctx, azcosmos.NewPartitionKeyString("other"), "x", nil)
	wantStatus(t, "cross-partition sproc write", err, http.StatusNotFound)

	// Query inside the transaction sees its own writes.
	e.create("sprocs", map[string]any{"id": "countAfterWrite", "body": `function () {
		var coll = getContext().getCollection();
		coll.createDocument(coll.getSelfLink(), {id: "q1", pk: "p"}, function (err) {
			if (err) throw err;
			coll.queryDocuments(coll.getSelfLink(), "SELECT VALUE COUNT(1) FROM c", function (err, rows) {
				if (err) throw err;
				getContext().getResponse().setBody(rows[0]);
			});
		});
	}`})
	resp, body = e.exec("countAfterWrite", "p")
	if resp.StatusCode != 200 || string(body) != "2" {
		t.Errorf("count inside the sproc = %s %s, want 2 (a1 and its own q1)", resp.Status, body)
	}
}

// TestSprocCounterIsExact: concurrent executions incrementing one counter
// item in one logical partition end with the exact count.
func TestSprocCounterIsExact(t *testing.T) {
	e := newScriptEnv(t)
	if _, err := e.k.CreateItem(t.Context(), azcosmos.NewPartitionKeyString("c"), []byte(`{"id":"counter","pk":"c","n":0}`), nil); err != nil {
		t.Fatal(err)
	}
	e.create("sprocs", map[string]any{"id": "inc", "body": `function () {
		var coll = getContext().getCollection();
		coll.readDocument(coll.getAltLink() + "/docs/counter", function (err, doc) {
			if (err) throw err;
			doc.n += 1;
			coll.replaceDocument(doc._self, doc, function (err, d) {
				if (err) throw err;
				getContext().getResponse().setBody(d.n);
			});
		});
	}`})
	const workers, each = 8, 25
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				if resp, body := e.exec("inc", "c"); resp.StatusCode != 200 {
					t.Errorf("inc: %s %s", resp.Status, body)
					return
				}
			}
		})
	}
	wg.Wait()
	r, err := e.k.ReadItem(t.Context(), azcosmos.NewPartitionKeyString("c"), "counter", nil)
	if err != nil || !jsonHas(t, r.Value, "n", float64(workers*each)) {
		t.Errorf("counter = %s, %v, want %d", r.Value, err, workers*each)
	}
}

// TestHostileScripts: each is stopped with a clear error, quickly, and
// leaves the data unchanged.
func TestHostileScripts(t *testing.T) {
	e := newScriptEnv(t)
	if _, err := e.k.CreateItem(t.Context(), azcosmos.NewPartitionKeyString("h"), []byte(`{"id":"keep","pk":"h","v":1}`), nil); err != nil {
		t.Fatal(err)
	}
	write := `var coll = getContext().getCollection(); coll.replaceDocument(coll.getAltLink() + "/docs/keep", {id: "keep", pk: "h", v: 2});`
	tests := []struct{ name, body string }{
		{"infinite loop", `function () { ` + write + ` while (true) {} }`},
		{"huge allocation", `function () { ` + write + ` var a = []; while (true) { a.push(new Array(1e6).fill(1)); } }`},
		{"deep recursion", `function () { ` + write + ` function f(n) { return f(n + 1) + 1; } f(0); }`},
		{"throw a number", `function () { ` + write + ` throw 42; }`},
		{"throw an object", `function () { ` + write + ` throw {a: 1}; }`},
		{"throw null", `function () { ` + write + ` throw null; }`},
		{"host access", `function () { ` + write + ` require("fs"); }`},
	}
	for i, tt := range tests {
		id := fmt.Sprintf("hostile%d", i)
		e.create("sprocs", map[string]any{"id": id, "body": tt.body})
		start := time.Now()
		resp, body := e.exec(id, "h")
		var msg struct{ Message string }
		_ = json.Unmarshal(body, &msg)
		if resp.StatusCode < 400 || msg.Message == "" {
			t.Errorf("%s: %s %s, want an error with a message", tt.name, resp.Status, body)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("%s took %v to stop", tt.name, d)
		}
		r, err := e.k.ReadItem(t.Context(), azcosmos.NewPartitionKeyString("h"), "keep", nil)
		if err != nil || !jsonHas(t, r.Value, "v", 1.0) {
			t.Errorf("%s changed data: %s %v", tt.name, r.Value, err)
		}
	}
}

func TestTriggersAndUDFs(t *testing.T) {
	e := newScriptEnv(t)
	ctx := t.Context()
	e.create("triggers", map[string]any{"id": "stamp", "triggerType": "Pre", "triggerOperation": "Create", "body": `function () {
		var req = getContext().getRequest();
		var doc = req.getBody();
		doc.stamped = true;
		req.setBody(doc);
	}`})
	e.create("triggers", map[string]any{"id": "audit", "triggerType": "Post", "triggerOperation": "All", "body": `function () {
		var doc = getContext().getResponse().getBody();
		if (doc.forbidden) throw new Error("forbidden documents are rolled back");
		var coll = getContext().getCollection();
		coll.upsertDocument(coll.getSelfLink(), {id: "audit-" + doc.id, pk: doc.pk});
	}`})
	pk := azcosmos.NewPartitionKeyString("t")
	opts := &azcosmos.ItemOptions{PreTriggers: []string{"stamp"}, PostTriggers: []string{"audit"}}
	if _, err := e.k.CreateItem(ctx, pk, []byte(`{"id":"1","pk":"t"}`), opts); err != nil {
		t.Fatal(err)
	}
	r, err := e.k.ReadItem(ctx, pk, "1", nil)
	if err != nil || !jsonHas(t, r.Value, "stamped", true) {
		t.Errorf("pre-trigger did not change the item: %s %v", r.Value, err)
	}
	if _, err := e.k.ReadItem(ctx, pk, "audit-1", nil); err != nil {
		t.Errorf("post-trigger's write missing: %v", err)
	}
	_, err = e.k.CreateItem(ctx, pk, []byte(`{"id":"2","pk":"t","forbidden":true}`), opts)
	if code, _ := statusOf(err); code < 400 {
		t.Errorf("create with a failing post-trigger: %v, want an error", err)
	}
	_, err = e.k.ReadItem(ctx, pk, "2", nil)
	wantStatus(t, "item whose post-trigger failed", err, http.StatusNotFound)
	_, err = e.k.ReplaceItem(ctx, pk, "1", []byte(`{"id":"1","pk":"t"}`), &azcosmos.ItemOptions{PreTriggers: []string{"stamp"}})
	wantStatus(t, "a Create trigger on a replace", err, http.StatusBadRequest)

	e.create("udfs", map[string]any{"id": "tax", "body": `function tax(x) { return x * 1.25; }`})
	for i, n := range []int{8, 80} {
		if _, err := e.k.CreateItem(ctx, pk, mustJSON(t, map[string]any{"id": fmt.Sprint("u", i), "pk": "t", "price": n}), nil); err != nil {
			t.Fatal(err)
		}
	}
	pager := e.k.NewQueryItemsPager("SELECT VALUE udf.tax(c.price) FROM c WHERE udf.tax(c.price) > 50", pk, nil)
	var got []string
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			got = append(got, string(it))
		}
	}
	if strings.Join(got, ",") != "100" {
		t.Errorf("UDF query = %v, want [100]", got)
	}
}

// TestTriggerCompiledWhenItRuns: a trigger's body is stored as it is and
// compiled when an operation includes the trigger, as in Cosmos DB (the
// JavaScript SDK's trigger test stores "serverScript() { var x = 10; }"):
// the operation fails with 400 and writes nothing; replaced by a function,
// the trigger runs.
func TestTriggerCompiledWhenItRuns(t *testing.T) {
	e := newScriptEnv(t)
	ctx := t.Context()
	e.create("triggers", map[string]any{"id": "raw", "triggerType": "Pre", "triggerOperation": "All", "body": "serverScript() { var x = 10; }"})
	pk := azcosmos.NewPartitionKeyString("t")
	opts := &azcosmos.ItemOptions{PreTriggers: []string{"raw"}}
	_, err := e.k.CreateItem(ctx, pk, []byte(`{"id":"1","pk":"t"}`), opts)
	wantStatus(t, "create with a trigger that does not compile", err, http.StatusBadRequest)
	_, err = e.k.ReadItem(ctx, pk, "1", nil)
	wantStatus(t, "item whose trigger did not compile", err, http.StatusNotFound)

	resp, body, err := e.s.Do(ctx, "PUT", "/dbs/db/colls/k/triggers/raw", map[string]string{"Content-Type": "application/json"},
		mustJSON(t, map[string]any{"id": "raw", "triggerType": "Pre", "triggerOperation": "All", "body": "function () { getContext().getRequest().getBody(); }"}))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("replace the trigger: %v %s %v", resp.Status, body, err)
	}
	if _, err := e.k.CreateItem(ctx, pk, []byte(`{"id":"1","pk":"t"}`), opts); err != nil {
		t.Errorf("create with the replaced trigger: %v", err)
	}
}

// TestScriptCollectionLinks: getSelfLink is the container's _self and
// getAltLink its name-based link, as in Cosmos DB's wrapper, and a document
// is reached through either: getSelfLink() + "docs/" + _rid (RID-routed, as
// Cosmos DB's samples join them) and getAltLink() + "/docs/" + id. Both
// returned the name-based link, so the RID-routed join found nothing.
func TestScriptCollectionLinks(t *testing.T) {
	e := newScriptEnv(t)
	e.create("sprocs", map[string]any{"id": "links", "body": `function links() {
		var c = getContext().getCollection(), out = {self: c.getSelfLink(), alt: c.getAltLink()};
		c.createDocument(c.getSelfLink(), {id: "doc1", pk: "p", n: 1}, function (err, doc) {
			if (err) throw err;
			c.readDocument(c.getSelfLink() + "docs/" + doc._rid, function (err, byRID) {
				if (err) throw err;
				out.byRID = byRID.id;
				c.readDocument(c.getAltLink() + "/docs/doc1", function (err, byName) {
					if (err) throw err;
					out.byName = byName.n;
					getContext().getResponse().setBody(out);
				});
			});
		});
	}`})
	resp, body := e.exec("links", "p")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("links: %s %s", resp.Status, body)
	}
	var out struct {
		Self, Alt, ByRID string
		ByName           int
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	props, err := e.k.Read(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Self != props.ContainerProperties.SelfLink || out.Alt != "dbs/db/colls/k" {
		t.Errorf("getSelfLink, getAltLink = %q, %q; want the container's _self %q and %q", out.Self, out.Alt, props.ContainerProperties.SelfLink, "dbs/db/colls/k")
	}
	if out.ByRID != "doc1" || out.ByName != 1 {
		t.Errorf("read by RID-routed link %q, by name %d; want doc1, 1", out.ByRID, out.ByName)
	}
}

// TestScriptPatchDocument: a stored procedure patches documents with
// __.patchDocument, as Cosmos DB's "partial document update" page shows
// (by _self, with a condition); a failed condition fails the run, and
// nothing of it stays.
func TestScriptPatchDocument(t *testing.T) {
	e := newScriptEnv(t)
	ctx := t.Context()
	e.create("sprocs", map[string]any{"id": "patcher", "body": `function patcher(id, cond) {
		var doc = {id: id, pk: "p", field1: {field2: 10, field3: 20}};
		var ok = __.createDocument(__.getSelfLink(), doc, function (err, made) {
			if (err) throw err;
			var spec = {condition: cond, operations: [{op: "add", path: "/field1/field2", value: 20}, {op: "remove", path: "/field1/field3"}]};
			ok = __.patchDocument(made._self, spec, function (err, patched) {
				if (err) throw err;
				getContext().getResponse().setBody(patched.field1);
			});
			if (!ok) throw new Error("patch was not accepted");
		});
		if (!ok) throw new Error("create was not accepted");
	}`})
	resp, body := e.exec("patcher", "p", "d1", "from c where c.field1.field2 = 10")
	if resp.StatusCode != http.StatusOK || string(body) != `{"field2":20}` {
		t.Fatalf("patcher: %s %s, want 200 {\"field2\":20}", resp.Status, body)
	}
	got, err := e.k.ReadItem(ctx, azcosmos.NewPartitionKeyString("p"), "d1", nil)
	if err != nil || !strings.Contains(string(got.Value), `"field1":{"field2":20}`) {
		t.Errorf("d1 after the patch: %s %v", got.Value, err)
	}
	resp, body = e.exec("patcher", "p", "d2", "from c where c.field1.field2 = 11")
	if resp.StatusCode != http.StatusPreconditionFailed {
		t.Errorf("patcher with a failing condition: %s %s, want 412", resp.Status, body)
	}
	if _, err := e.k.ReadItem(ctx, azcosmos.NewPartitionKeyString("p"), "d2", nil); err == nil {
		t.Errorf("d2 exists after its run failed: the create was not rolled back")
	}
}
