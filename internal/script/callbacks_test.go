package script

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// bulkImportSample is the bulkImport stored procedure of Microsoft's documentation (Azure
// Cosmos DB server-side programming), as published: each callback starts the next create.
const bulkImportSample = `function bulkImport(items) {
	var collection = getContext().getCollection();
	var collectionLink = collection.getSelfLink();
	var count = 0;
	if (!items) throw new Error("The array is undefined or null.");
	var numItems = items.length;
	if (numItems == 0) {
		getContext().getResponse().setBody(0);
		return;
	}
	tryCreate(items[count], callback);
	function tryCreate(item, callback) {
		var isAccepted = collection.createDocument(collectionLink, item, callback);
		if (!isAccepted) getContext().getResponse().setBody(count);
	}
	function callback(err, item, options) {
		if (err) throw err;
		count++;
		if (count >= numItems) {
			getContext().getResponse().setBody(count);
		} else {
			tryCreate(items[count], callback);
		}
	}
}`

// items returns the JSON of n documents with ids from..from+n-1.
func items(from, n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"id": "d" + strconv.Itoa(from+i), "pk": "p", "n": from + i}
	}
	return out
}

func bulkArgs(t *testing.T, docs []map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal([]any{docs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBulkImport runs the documentation's bulkImport over 450 documents. With callbacks run
// synchronously, each document nested the JavaScript stack deeper, and the sample failed with
// "Maximum call stack size exceeded" at about 400.
func TestBulkImport(t *testing.T) {
	p := mustSproc(t, bulkImportSample)
	h := newFakeHost()
	res, err := p.Execute(context.Background(), h, bulkArgs(t, items(0, 450)), Limits{}, false)
	if err != nil {
		t.Fatalf("Execute(bulkImport of 450) = %v", err)
	}
	if string(res.Body) != "450" || len(h.docs) != 450 {
		t.Errorf("Execute(bulkImport of 450) = %s with %d documents stored, want 450 and 450", res.Body, len(h.docs))
	}
	// No callback runs before the function returns: the stack never holds more than one.
	res, err = p.Execute(context.Background(), newFakeHost(), bulkArgs(t, items(0, 900)), Limits{MaxCallStack: 20}, false)
	if err != nil || string(res.Body) != "900" {
		t.Errorf("Execute(bulkImport of 900, call stack 20) = %s, %v; want 900", res.Body, err)
	}
}

// TestBulkImportResumes imports 5,000 documents as a Cosmos DB client does: each execution
// creates what its operation budget allows and reports the count (isAccepted turned false),
// and the client calls again with the rest.
func TestBulkImportResumes(t *testing.T) {
	p := mustSproc(t, bulkImportSample)
	h := newFakeHost()
	all := items(0, 5000)
	var counts []int
	for done := 0; done < len(all); {
		res, err := p.Execute(context.Background(), h, bulkArgs(t, all[done:]), Limits{}, false)
		if err != nil {
			t.Fatalf("Execute(bulkImport from %d) = %v", done, err)
		}
		n, err := strconv.Atoi(string(res.Body))
		if err != nil || n <= 0 {
			t.Fatalf("Execute(bulkImport from %d) = %q, want a positive count", done, res.Body)
		}
		counts = append(counts, n)
		done += n
		if len(counts) > 10 {
			t.Fatalf("no end after %d executions: %v", len(counts), counts)
		}
	}
	if want := []int{1000, 1000, 1000, 1000, 1000}; fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("counts per execution = %v, want %v (DefaultMaxOperations each)", counts, want)
	}
	if len(h.docs) != 5000 {
		t.Errorf("stored %d documents, want 5000", len(h.docs))
	}
}

// TestCallbackOrder checks the execution model: operations run in call order at the call,
// callbacks run after the function has returned, first queued first, each callback's own
// operations queued behind those already waiting.
func TestCallbackOrder(t *testing.T) {
	h := newFakeHost(`{"id":"a"}`, `{"id":"b"}`)
	res, err := run(t, h, `function () {
		var out = [];
		getContext().getResponse().setBody(out);
		__.readDocument("a", function (err, doc) {
			out.push("cb a");
			__.readDocument("b", function () { out.push("cb a→b"); });
		});
		out.push("after read a");
		__.readDocument("b", function () { out.push("cb b"); });
		out.push("returning");
	}`, ``, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "Body", res.Body, `["after read a", "returning", "cb a", "cb b", "cb a→b"]`)
	if want := "[read a read b read b]"; fmt.Sprint(h.calls) != want {
		t.Errorf("host calls = %v, want %s", h.calls, want)
	}
}

// TestCallbackChainStopsAtBudget runs a chain of callbacks, each starting the next operation,
// until the operation budget refuses one: the refused operation's callback is not called and
// the execution ends normally.
func TestCallbackChainStopsAtBudget(t *testing.T) {
	res, err := run(t, newFakeHost(), `function () {
		var n = 0;
		function next() {
			if (!__.readDocuments(function () { n++; next(); })) getContext().getResponse().setBody(n);
		}
		next();
	}`, ``, Limits{MaxOperations: 300})
	if err != nil || string(res.Body) != "300" {
		t.Errorf("Execute = %s, %v; want 300 callbacks", res.Body, err)
	}
}

// TestCallbackFailures checks that a failure in a callback fails the execution, as one in the
// function does: an exception, a Cosmos error rethrown (its status kept), and the limits.
func TestCallbackFailures(t *testing.T) {
	tests := []struct {
		name, body string
		lim        Limits
		kind       ErrorKind
		status     int
	}{
		{"exception", `function () { __.readDocuments(function () { throw new Error("in callback"); }); }`,
			Limits{}, KindException, http.StatusBadRequest},
		{"conflict in bulkImport", bulkImportSample, Limits{}, KindHost, http.StatusConflict},
		{"time limit", `function () {
			(function next() { __.readDocuments(function () { var t = Date.now(); while (Date.now() - t < 20) {} next(); }); })();
		}`, Limits{Timeout: 200 * time.Millisecond}, KindTimeout, http.StatusRequestTimeout},
		{"memory limit", `function () {
			var keep = [];
			(function next() { __.readDocuments(function () { keep.push(new Array(1e6).fill(keep.length)); next(); }); })();
		}`, Limits{MaxHeapGrowth: 16 << 20, MaxOperations: 1e6}, KindMemory, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs := append(items(0, 10), items(5, 1)...) // d5 twice: the second create conflicts
			_, err := mustSproc(t, tt.body).Execute(context.Background(), newFakeHost(), bulkArgs(t, docs), tt.lim, false)
			se := asError(t, err)
			if se.Kind != tt.kind || se.Status != tt.status {
				t.Errorf("Execute = %v (kind %v, status %d), want kind %v, status %d", se, se.Kind, se.Status, tt.kind, tt.status)
			}
		})
	}
}

// TestTriggerCallbacks checks that triggers drain their callbacks too: a pre-trigger that sets
// the request body in a callback changes the document.
func TestTriggerCallbacks(t *testing.T) {
	p, err := CompileTrigger(`function () {
		var req = getContext().getRequest();
		__.readDocument("defaults", function (err, d) {
			if (err) throw err;
			var doc = req.getBody();
			doc.color = doc.color || d.color;
			req.setBody(doc);
		});
	}`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.RunPreTrigger(context.Background(), newFakeHost(`{"id":"defaults","color":"blue"}`), "Create", []byte(`{"id":"x"}`), Limits{})
	if err != nil {
		t.Fatalf("RunPreTrigger = %v", err)
	}
	jsonEqual(t, "RunPreTrigger", out, `{"id":"x","color":"blue"}`)
}
