package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/script"
	"github.com/partitadb/partita/internal/status"
)

// Differences from Cosmos DB's server-side programming model that a
// scripts hunt found (Cosmos DB's wrapper, DocDbWrapperScript.js, is the
// reference): getContext().abort, queryDocuments' default page, and a
// post-trigger's response body.

// TestScriptAbort: getContext().abort(err) fails the stored procedure with
// err and rolls back its writes, also from a promise callback, where a throw
// only rejects the promise (the documented main().catch(abort) pattern
// committed the partial writes: abort did not exist).
func TestScriptAbort(t *testing.T) {
	e := testEngine(t)
	ctx := t.Context()
	pk := pkOf(0)
	for id, body := range map[string]string{
		"promise": `function () {
			var c = getContext().getCollection();
			function create(doc) {
				return new Promise(function (resolve, reject) {
					var ok = c.createDocument(c.getSelfLink(), doc, function (err, d) { if (err) reject(err); else resolve(d); });
					if (!ok) reject(new Error("not accepted"));
				});
			}
			create({id: "first", pk: "p0"})
				.then(function () { return create({id: "dup", pk: "p0"}); })
				.catch(function (err) { getContext().abort(err); });
		}`,
		"direct": `function () {
			var c = getContext().getCollection();
			c.createDocument(c.getSelfLink(), {id: "first", pk: "p0"});
			try { getContext().abort(new Error("stop here")); } catch (e) { getContext().getResponse().setBody("caught"); }
		}`,
	} {
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Upsert, PK: pk, Body: []byte(`{"id":"dup","pk":"p0"}`)}); err != nil {
			t.Fatal(err)
		}
		def, _ := json.Marshal(map[string]string{"id": id, "body": body})
		if _, err := e.CreateScript("db", "k", StoredProcedures, def); err != nil {
			t.Fatal(err)
		}
		_, err := e.ExecuteStoredProcedure(ctx, "db", "k", id, pk, nil, false)
		se, ok := errors.AsType[*status.Error](err)
		switch {
		case !ok:
			t.Errorf("%s: %v, want the abort's error", id, err)
		case id == "promise" && se.Code != http.StatusConflict:
			t.Errorf("%s: %d %s, want the 409 passed to abort", id, se.Code, se.Message)
		case id == "direct" && (se.Code != http.StatusBadRequest || !strings.Contains(se.Message, "stop here")):
			t.Errorf("%s: %d %s, want 400 naming the abort's error", id, se.Code, se.Message)
		}
		if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: "first"}, pk, ""); err == nil {
			t.Errorf("%s: the aborted procedure's write was kept", id)
		}
	}
}

// TestSprocDefaultPageSize: queryDocuments and readDocuments without
// options.pageSize (or with 0) answer pages of 100, as Cosmos DB's wrapper
// (options.pageSize || 100); -1 still answers every result.
func TestSprocDefaultPageSize(t *testing.T) {
	e := testEngine(t)
	ctx := t.Context()
	pk := pkOf(0)
	for i := range 150 {
		body := fmt.Sprintf(`{"id":"d%03d","pk":"p0"}`, i)
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pk, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	const sproc = `function (query, opts) {
		var c = getContext().getCollection();
		var cb = function (err, docs, resp) { if (err) throw err; getContext().getResponse().setBody([docs.length, !!resp.continuation]); };
		if (query) c.queryDocuments(c.getSelfLink(), query, opts, cb); else c.readDocuments(c.getSelfLink(), opts, cb);
	}`
	def, _ := json.Marshal(map[string]string{"id": "first", "body": sproc})
	if _, err := e.CreateScript("db", "k", StoredProcedures, def); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query, opts, want string
	}{
		{"SELECT * FROM c", `{}`, `[100,true]`},
		{"SELECT * FROM c", `{"pageSize":0}`, `[100,true]`},
		{"", `{}`, `[100,true]`},
		{"SELECT * FROM c", `{"pageSize":-1}`, `[150,false]`},
		{"SELECT * FROM c", `{"pageSize":7}`, `[7,true]`},
	} {
		args := fmt.Sprintf(`[%q,%s]`, tc.query, tc.opts)
		res, err := e.ExecuteStoredProcedure(ctx, "db", "k", "first", pk, []byte(args), false)
		if err != nil || string(res.Body) != tc.want {
			t.Errorf("%q %s: %s, %v; want %s", tc.query, tc.opts, res.Body, err, tc.want)
		}
	}
}

// TestSprocQueryOrderByChecked: a stored procedure's queryDocuments
// refuses the ORDER BY a query through the API refuses (a review found
// ORDER BY 1, ORDER BY LENGTH(c.id) and an ORDER BY of two keys without a
// composite index served here), and sorts by a parameter's property.
func TestSprocQueryOrderByChecked(t *testing.T) {
	e := testEngine(t)
	ctx := t.Context()
	pk := pkOf(0)
	for i := range 3 {
		body := fmt.Sprintf(`{"id":"d%d","pk":"p0","n":%d}`, i, 2-i)
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pk, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	const sproc = `function (query) {
		var c = getContext().getCollection();
		c.queryDocuments(c.getSelfLink(), {query: query, parameters: [{name: "@p", value: "n"}]}, {}, function (err, docs) {
			if (err) throw err;
			getContext().getResponse().setBody(docs.map(function (d) { return d.id; }));
		});
	}`
	def, _ := json.Marshal(map[string]string{"id": "q", "body": sproc})
	if _, err := e.CreateScript("db", "k", StoredProcedures, def); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SELECT * FROM c ORDER BY 1", "SELECT * FROM c ORDER BY LENGTH(c.id)", "SELECT * FROM c ORDER BY c.n, c.id"} {
		_, err := e.ExecuteStoredProcedure(ctx, "db", "k", "q", pk, fmt.Appendf(nil, `[%q]`, q), false)
		if code(err) != http.StatusBadRequest {
			t.Errorf("%s in a stored procedure: %v, want 400", q, err)
		}
	}
	res, err := e.ExecuteStoredProcedure(ctx, "db", "k", "q", pk, []byte(`["SELECT * FROM c ORDER BY c[@p]"]`), false)
	if err != nil || string(res.Body) != `["d2","d1","d0"]` {
		t.Errorf("ORDER BY c[@p] in a stored procedure: %s, %v; want the items by n", res.Body, err)
	}
}

// TestPostTriggerResponseBody: a post-trigger's getResponse().setBody is
// the body the client gets (Cosmos DB: "the response body ... will be
// overwritten with this call"); the stored item is what the operation
// wrote.
func TestPostTriggerResponseBody(t *testing.T) {
	e := testEngine(t)
	ctx := t.Context()
	pk := pkOf(0)
	def, _ := json.Marshal(map[string]string{"id": "enrich", "triggerType": "Post", "triggerOperation": "All", "body": `function () {
		var r = getContext().getResponse(), b = r.getBody();
		if (!b) return;
		b.enriched = true;
		r.setBody(b);
	}`})
	if _, err := e.CreateScript("db", "k", Triggers, def); err != nil {
		t.Fatal(err)
	}
	res, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pk, Body: []byte(`{"id":"a","pk":"p0"}`), Triggers: TriggerSet{Post: []string{"enrich"}}})
	if err != nil || !strings.Contains(string(res.Body), `"enriched":true`) {
		t.Fatalf("create with the trigger: %s, %v; want the trigger's body", res.Body, err)
	}
	stored, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: "a"}, pk, "")
	if err != nil || strings.Contains(string(stored.Body), "enriched") {
		t.Fatalf("stored item %s, %v: want it as written", stored.Body, err)
	}
	if _, err := e.DeleteItem(ctx, ItemRef{DB: "db", Container: "k", ID: "a"}, pk, "", TriggerSet{Post: []string{"enrich"}}); err != nil {
		t.Fatalf("delete with the trigger: %v", err)
	}
}

// TestTriggersShareTimeLimit: the triggers named on one operation run
// within one script time limit together, not one each: a header naming a
// trigger many times held the logical partition for as many limits (a
// review: 100 names of a 20 ms trigger, 2 s).
func TestTriggersShareTimeLimit(t *testing.T) {
	e := testEngineWith(t, Config{ScriptLimits: script.Limits{Timeout: 300 * time.Millisecond}})
	ctx := t.Context()
	pk := pkOf(0)
	def, _ := json.Marshal(map[string]string{"id": "slow", "triggerType": "Pre", "triggerOperation": "All", "body": `function () {
		var end = Date.now() + 60;
		while (Date.now() < end) {}
	}`})
	if _, err := e.CreateScript("db", "k", Triggers, def); err != nil {
		t.Fatal(err)
	}
	if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pk, Body: []byte(`{"id":"one","pk":"p0"}`), Triggers: TriggerSet{Pre: []string{"slow", "slow"}}}); err != nil {
		t.Fatalf("two 60 ms triggers within 300 ms: %v", err)
	}
	names := make([]string, 20) // 1.2 s of triggers
	for i := range names {
		names[i] = "slow"
	}
	_, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pk, Body: []byte(`{"id":"many","pk":"p0"}`), Triggers: TriggerSet{Pre: names}})
	if status.From(err).Code != http.StatusRequestTimeout {
		t.Fatalf("twenty 60 ms triggers under a 300 ms limit: %v, want 408", err)
	}
	if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: "many"}, pk, ""); status.From(err).Code != http.StatusNotFound {
		t.Fatalf("the item of the refused write: %v, want 404", err)
	}
}

// TestUpsertTrigger: a trigger of operation Upsert (the .NET SDK's
// TriggerOperation.Upsert) is created and runs on upserts only.
func TestUpsertTrigger(t *testing.T) {
	e := testEngine(t)
	ctx := t.Context()
	pk := pkOf(0)
	def, _ := json.Marshal(map[string]string{"id": "stamp", "triggerType": "Pre", "triggerOperation": "Upsert", "body": `function () {
		var r = getContext().getRequest(), b = r.getBody();
		b.stamped = true;
		r.setBody(b);
	}`})
	if _, err := e.CreateScript("db", "k", Triggers, def); err != nil {
		t.Fatalf("create an Upsert trigger: %v", err)
	}
	res, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Upsert, PK: pk, Body: []byte(`{"id":"a","pk":"p0"}`), Triggers: TriggerSet{Pre: []string{"stamp"}}})
	if err != nil || !strings.Contains(string(res.Body), `"stamped":true`) {
		t.Fatalf("upsert with the trigger: %s, %v", res.Body, err)
	}
	if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pk, Body: []byte(`{"id":"b","pk":"p0"}`), Triggers: TriggerSet{Pre: []string{"stamp"}}}); status.From(err).Code != http.StatusBadRequest {
		t.Fatalf("create with an Upsert trigger: %v, want 400", err)
	}
}

// TestCreateDocumentArguments: createDocument and upsertDocument take a
// document as an object or as a JSON string, give a GUID to one whose id is
// missing or falsy ("" too), and leave the caller's object as it was (the
// wrapper copies it first); replaceDocument takes a string too.
func TestCreateDocumentArguments(t *testing.T) {
	e := testEngine(t)
	ctx := t.Context()
	pk := pkOf(0)
	def, _ := json.Marshal(map[string]string{"id": "args", "body": `function () {
		var c = getContext().getCollection(), out = {};
		var mine = {pk: "p0", n: 1};
		c.createDocument(c.getSelfLink(), mine, function (err, d) {
			if (err) throw err;
			out.generated = typeof d.id === "string" && d.id.length > 0;
			out.callerUntouched = !("id" in mine);
			c.createDocument(c.getSelfLink(), JSON.stringify({id: "fromString", pk: "p0"}), function (err, d) {
				if (err) throw err;
				out.fromString = d.id;
				c.upsertDocument(c.getSelfLink(), {id: "", pk: "p0"}, function (err, d) {
					if (err) throw err;
					out.emptyIDGenerated = d.id !== "";
					c.replaceDocument("dbs/db/colls/k/docs/fromString", '{"id":"fromString","pk":"p0","v":2}', function (err, d) {
						if (err) throw err;
						out.replacedFromString = d.v;
						getContext().getResponse().setBody(out);
					});
				});
			});
		});
	}`})
	if _, err := e.CreateScript("db", "k", StoredProcedures, def); err != nil {
		t.Fatal(err)
	}
	res, err := e.ExecuteStoredProcedure(ctx, "db", "k", "args", pk, nil, false)
	const want = `{"generated":true,"callerUntouched":true,"fromString":"fromString","emptyIDGenerated":true,"replacedFromString":2}`
	if err != nil || string(res.Body) != want {
		t.Fatalf("%s, %v; want %s", res.Body, err, want)
	}
}

// TestUDFStatus: a UDF past its time limit fails the query with 408, as a
// stored procedure or trigger past it does (it answered 400); one that
// throws still answers 400.
func TestUDFStatus(t *testing.T) {
	e := testEngineWith(t, Config{ScriptLimits: script.Limits{Timeout: 100 * time.Millisecond}})
	ctx := t.Context()
	if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pkOf(0), Body: []byte(`{"id":"a","pk":"p0"}`)}); err != nil {
		t.Fatal(err)
	}
	for id, body := range map[string]string{
		"spin":  `function () { while (true) {} }`,
		"throw": `function () { throw new Error("no"); }`,
	} {
		def, _ := json.Marshal(map[string]string{"id": id, "body": body})
		if _, err := e.CreateScript("db", "k", UDFs, def); err != nil {
			t.Fatal(err)
		}
	}
	for udf, want := range map[string]int{"spin": http.StatusRequestTimeout, "throw": http.StatusBadRequest} {
		_, err := e.QueryItems(ctx, "db", "k", Scope{PK: pkOf(0)}, Query{Text: "SELECT VALUE udf." + udf + "(c.id) FROM c", MaxItems: -1})
		if se := status.From(err); se.Code != want || !strings.Contains(se.Message, "udf."+udf) {
			t.Errorf("udf.%s: %v, want %d naming it", udf, err, want)
		}
	}
}
