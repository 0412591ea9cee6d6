package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/script"
	"github.com/partitadb/partita/internal/status"
)

// TestSprocQueryPages: a stored procedure's queryDocuments and
// readDocuments honour options.pageSize and resume from the continuation
// their callbacks get, as in Cosmos DB (they answered every result in one
// page, with no continuation: an SDK hunt). A page resumes after the item
// it stopped in, so items deleted between pages (Cosmos DB's bulk-delete
// sample) are not skipped over; rows of one item (a JOIN) are split
// across pages exactly; OFFSET, LIMIT and TOP hold across pages; a query
// whose rows depend on every item answers in one page; a continuation the
// engine did not make is refused with 400.
func TestSprocQueryPages(t *testing.T) {
	e := testEngine(t)
	ctx := t.Context()
	pk := pkOf(0)
	for i := range 10 {
		body := fmt.Sprintf(`{"id":"d%02d","pk":"p0","n":%d,"tags":["a","b"]}`, i, i)
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pk, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	// pages(query, size): the page sizes and the rows of a query read to
	// the end; a query of "" is readDocuments.
	const sproc = `function (query, size, del) {
		var c = getContext().getCollection(), sizes = [], rows = [];
		function next(cont) {
			var opts = {pageSize: size, continuation: cont};
			var cb = function (err, docs, resp) {
				if (err) throw err;
				sizes.push(docs.length);
				docs.forEach(function (d) {
					rows.push(typeof d === "object" && d.id ? d.id : d);
					if (del) c.deleteDocument(d._self);
				});
				if (resp.continuation) next(resp.continuation);
				else getContext().getResponse().setBody({sizes: sizes, rows: rows});
			};
			if (query) c.queryDocuments(c.getSelfLink(), query, opts, cb);
			else c.readDocuments(c.getSelfLink(), opts, cb);
		}
		next(undefined);
	}`
	def, _ := json.Marshal(map[string]string{"id": "pages", "body": sproc})
	if _, err := e.CreateScript("db", "k", StoredProcedures, def); err != nil {
		t.Fatal(err)
	}
	run := func(query string, size int, del bool) (string, error) {
		args, _ := json.Marshal([]any{query, size, del})
		res, err := e.ExecuteStoredProcedure(ctx, "db", "k", "pages", pk, args, false)
		return string(res.Body), err
	}
	ids := func(from, to int) string {
		s := ""
		for i := from; i < to; i++ {
			if s != "" {
				s += ","
			}
			s += strconv.Quote(fmt.Sprintf("d%02d", i))
		}
		return s
	}
	for _, tc := range []struct {
		query string
		size  int
		want  string
	}{
		{"", 3, `{"sizes":[3,3,3,1],"rows":[` + ids(0, 10) + `]}`},
		{"SELECT * FROM c", 4, `{"sizes":[4,4,2],"rows":[` + ids(0, 10) + `]}`},
		{"SELECT * FROM c", -1, `{"sizes":[10],"rows":[` + ids(0, 10) + `]}`},
		{"SELECT VALUE c.n FROM c WHERE c.n >= 5", 2, `{"sizes":[2,2,1],"rows":[5,6,7,8,9]}`},
		{"SELECT VALUE t FROM c JOIN t IN c.tags WHERE c.n < 2", 3, `{"sizes":[3,1],"rows":["a","b","a","b"]}`},
		{"SELECT VALUE c.n FROM c OFFSET 3 LIMIT 4", 3, `{"sizes":[3,1],"rows":[3,4,5,6]}`},
		{"SELECT TOP 4 VALUE c.n FROM c", 2, `{"sizes":[2,2],"rows":[0,1,2,3]}`},
		{"SELECT VALUE c.n FROM c ORDER BY c.n DESC", 3, `{"sizes":[10],"rows":[9,8,7,6,5,4,3,2,1,0]}`},
		{"SELECT VALUE COUNT(1) FROM c", 3, `{"sizes":[1],"rows":[10]}`},
	} {
		got, err := run(tc.query, tc.size, false)
		if err != nil || got != tc.want {
			t.Errorf("%q in pages of %d: %s %v, want %s", tc.query, tc.size, got, err, tc.want)
		}
	}
	// Deleting each page's items as it comes: every item is deleted once.
	got, err := run("SELECT * FROM c", 3, true)
	if want := `{"sizes":[3,3,3,1],"rows":[` + ids(0, 10) + `]}`; err != nil || got != want {
		t.Errorf("deleting as it pages: %s %v, want %s", got, err, want)
	}
	if got, err := run("", 0, false); err != nil || got != `{"sizes":[0],"rows":[]}` {
		t.Errorf("after the deletes: %s %v, want nothing left", got, err)
	}

	def, _ = json.Marshal(map[string]string{"id": "forged", "body": `function () {
		getContext().getCollection().readDocuments(getContext().getCollection().getSelfLink(), {pageSize: 2, continuation: "eyJpZCI6MX0"}, function (err) { if (err) throw err; });
	}`})
	if _, err := e.CreateScript("db", "k", StoredProcedures, def); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ExecuteStoredProcedure(ctx, "db", "k", "forged", pk, []byte(`[]`), false); code(err) != http.StatusBadRequest {
		t.Errorf("a continuation the engine did not make: %v, want 400", err)
	}
}

// TestSprocQueryBounds: a stored procedure's query or read with pageSize
// -1 answers pages of at most 4 MiB of rows with a continuation, as a
// query's pages through the API do (it gathered every result: a scripts
// hunt's procedure reading 720 MB took 1.8 GB of memory before its limit
// stopped it); and a query whose UDF calls outlast the procedure's time
// limit stops at it (the hunt's ran 40 s, the partition locked, and
// answered 408 only at its end).
func TestSprocQueryBounds(t *testing.T) {
	// Time enough for the pages: 11 MB through the script under the race
	// detector took more than 500 ms on a loaded machine (CI).
	e := testEngineWith(t, Config{ScriptLimits: script.Limits{Timeout: 30 * time.Second}})
	ctx := t.Context()
	pk := pkOf(0)
	big := strings.Repeat("x", 1_100_000)
	for i := range 10 {
		body := fmt.Sprintf(`{"id":"d%02d","pk":"p0","s":%q}`, i, big)
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pk, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	const sproc = `function (query) {
		var c = getContext().getCollection(), sizes = [];
		function next(cont) {
			var cb = function (err, docs, resp) {
				if (err) throw err;
				sizes.push(docs.length);
				if (resp.continuation) next(resp.continuation);
				else getContext().getResponse().setBody(sizes);
			};
			var opts = {pageSize: -1, continuation: cont};
			if (query) c.queryDocuments(c.getSelfLink(), query, opts, cb);
			else c.readDocuments(c.getSelfLink(), opts, cb);
		}
		next(undefined);
	}`
	def, _ := json.Marshal(map[string]string{"id": "all", "body": sproc})
	if _, err := e.CreateScript("db", "k", StoredProcedures, def); err != nil {
		t.Fatal(err)
	}
	for _, query := range []string{"", "SELECT * FROM c", "SELECT VALUE c.s FROM c"} {
		args, _ := json.Marshal([]any{query})
		res, err := e.ExecuteStoredProcedure(ctx, "db", "k", "all", pk, args, false)
		if err != nil {
			t.Fatalf("%q: %v", query, err)
		}
		if got := string(res.Body); got != "[4,4,2]" {
			t.Errorf("%q with pageSize -1: pages of %s, want [4,4,2] (4 MiB each at most)", query, got)
		}
	}

	// 40 calls of a UDF that takes 300 ms each: 12 s to the end, in an
	// engine with a 500 ms limit.
	e = testEngineWith(t, Config{ScriptLimits: script.Limits{Timeout: 500 * time.Millisecond}})
	if _, err := e.CreateScript("db", "k", StoredProcedures, def); err != nil {
		t.Fatal(err)
	}
	udf, _ := json.Marshal(map[string]string{"id": "slow", "body": `function (x) { var t = Date.now(); while (Date.now() - t < 300) {} return x; }`})
	if _, err := e.CreateScript("db", "k", UDFs, udf); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		body := fmt.Sprintf(`{"id":"d%02d","pk":"p0"}`, i)
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pk, Body: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	args, _ := json.Marshal([]any{"SELECT VALUE udf.slow(c.id) FROM c"})
	_, err := e.ExecuteStoredProcedure(ctx, "db", "k", "all", pk, args, false)
	took := time.Since(start)
	var se *status.Error
	if !errors.As(err, &se) || se.Code != http.StatusRequestTimeout {
		t.Fatalf("a query of slow UDFs past the procedure's time limit: %v, want 408", err)
	}
	if took > 6*time.Second {
		t.Errorf("the procedure answered 408 after %v: its query ran on past the limit (500 ms; to its end: 12 s)", took)
	}
}
