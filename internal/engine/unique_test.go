package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/store"
)

// uniqueEngine is testEngine plus container "u" (pk /pk) with unique keys
// keys (each a list of paths).
func uniqueEngine(t testing.TB, keys ...[]string) *Engine {
	t.Helper()
	e := testEngine(t)
	createUnique(t, e, "u", keys...)
	return e
}

func createUnique(t testing.TB, e *Engine, id string, keys ...[]string) {
	t.Helper()
	var uks []map[string][]string
	for _, k := range keys {
		uks = append(uks, map[string][]string{"paths": k})
	}
	def, _ := json.Marshal(map[string]any{
		"id": id, "partitionKey": map[string]any{"paths": []string{"/pk"}},
		"uniqueKeyPolicy": map[string]any{"uniqueKeys": uks},
	})
	if _, err := e.CreateContainer("db", def, Throughput{Manual: 24000}); err != nil {
		t.Fatal(err)
	}
}

func lp(s string) document.PartitionKey {
	return document.PartitionKey{{Kind: document.String, String: s}}
}

// uniqueStep is one operation on container "u". body is the item without
// id and pk (for patch: the patch operations).
type uniqueStep struct {
	op, pk, id, body string
	want             int // HTTP status; 0 means success
}

func (s uniqueStep) run(ctx context.Context, e *Engine) error {
	item := func() []byte {
		body := strings.TrimSpace(s.body)
		if body == "" || body == "{}" {
			return []byte(fmt.Sprintf(`{"id":%q,"pk":%q}`, s.id, s.pk))
		}
		return []byte(fmt.Sprintf(`{"id":%q,"pk":%q,%s`, s.id, s.pk, body[1:]))
	}
	ref := ItemRef{DB: "db", Container: "u", ID: s.id}
	var err error
	switch s.op {
	case "create":
		_, err = e.WriteItem(ctx, Write{DB: "db", Container: "u", Kind: Create, PK: lp(s.pk), Body: item()})
	case "upsert":
		_, err = e.WriteItem(ctx, Write{DB: "db", Container: "u", Kind: Upsert, PK: lp(s.pk), Body: item()})
	case "replace":
		_, err = e.WriteItem(ctx, Write{DB: "db", Container: "u", Kind: Replace, ID: s.id, PK: lp(s.pk), Body: item()})
	case "patch":
		_, err = e.PatchItem(ctx, ref, lp(s.pk), []byte(`{"operations":`+s.body+`}`), "")
	case "delete":
		_, err = e.DeleteItem(ctx, ref, lp(s.pk), "", TriggerSet{})
	default:
		return fmt.Errorf("unknown op %q", s.op)
	}
	return err
}

// TestUniqueKeys runs sequences of item operations against unique key
// policies and checks each one's outcome.
func TestUniqueKeys(t *testing.T) {
	email := []string{"/email"}
	tests := []struct {
		name  string
		keys  [][]string
		steps []uniqueStep
	}{
		{"create", [][]string{email}, []uniqueStep{
			{"create", "p0", "1", `{"email":"a@x"}`, 0},
			{"create", "p0", "2", `{"email":"a@x"}`, http.StatusConflict},
			{"create", "p0", "2", `{"email":"A@x"}`, 0}, // case-sensitive
			{"create", "p0", "3", `{"email":"a@x "}`, 0},
			{"create", "p0", "4", `{"email":"a\u0040x"}`, http.StatusConflict}, // the same string, escaped
			{"create", "p1", "1", `{"email":"a@x"}`, 0},                        // another logical partition
			{"create", "p1", "2", `{"email":"a@x"}`, http.StatusConflict},
		}},
		{"missing counts as null", [][]string{email}, []uniqueStep{
			{"create", "p0", "1", `{}`, 0},
			{"create", "p0", "2", `{"other":1}`, http.StatusConflict},
			{"create", "p0", "2", `{"email":null}`, http.StatusConflict},
			{"create", "p0", "2", `{"email":"null"}`, 0},
			{"create", "p0", "3", `{"email":{}}`, 0},
			{"create", "p1", "1", `{"email":null}`, 0},
		}},
		{"numbers by value", [][]string{{"/n"}}, []uniqueStep{
			{"create", "p0", "1", `{"n":1}`, 0},
			{"create", "p0", "2", `{"n":1.0}`, http.StatusConflict},
			{"create", "p0", "2", `{"n":1e0}`, http.StatusConflict},
			{"create", "p0", "2", `{"n":10E-1}`, http.StatusConflict},
			{"create", "p0", "2", `{"n":"1"}`, 0},
			{"create", "p0", "3", `{"n":true}`, 0},
			{"create", "p0", "4", `{"n":-0}`, 0},
			{"create", "p0", "5", `{"n":0}`, http.StatusConflict},
			{"create", "p0", "5", `{"n":1.0000000001}`, 0},
		}},
		{"composite", [][]string{{"/a", "/b/c"}}, []uniqueStep{
			{"create", "p0", "1", `{"a":1,"b":{"c":2}}`, 0},
			{"create", "p0", "2", `{"a":1,"b":{"c":3}}`, 0},
			{"create", "p0", "3", `{"a":2,"b":{"c":2}}`, 0},
			{"create", "p0", "4", `{"a":1,"b":{"c":2,"d":0},"x":1}`, http.StatusConflict},
			{"create", "p0", "4", `{"a":1,"b":2}`, 0}, // /b/c missing: (1, null)
			{"create", "p0", "5", `{"a":1}`, http.StatusConflict},
			{"create", "p0", "5", `{"a":1,"b":{"c":null}}`, http.StatusConflict},
			{"create", "p0", "5", `{"a":1,"b":[{"c":2}]}`, http.StatusConflict}, // arrays are not descended: null
		}},
		{"objects and arrays", [][]string{{"/addr"}}, []uniqueStep{
			{"create", "p0", "1", `{"addr":{"x":1,"y":"s"}}`, 0},
			{"create", "p0", "2", `{"addr":{"y":"s","x":1.0}}`, http.StatusConflict}, // member order does not matter
			{"create", "p0", "2", `{"addr":{"x":1,"y":"s","z":null}}`, 0},
			{"create", "p0", "3", `{"addr":[1,2]}`, 0},
			{"create", "p0", "4", `{"addr":[2,1]}`, 0},
			{"create", "p0", "5", `{"addr":[1,2.0]}`, http.StatusConflict},
			{"create", "p0", "5", `{"addr":[[1,2]]}`, 0},
			{"create", "p0", "6", `{"addr":"[1,2]"}`, 0},
		}},
		{"upsert", [][]string{email}, []uniqueStep{
			{"create", "p0", "1", `{"email":"a"}`, 0},
			{"upsert", "p0", "2", `{"email":"a"}`, http.StatusConflict},
			{"upsert", "p0", "1", `{"email":"b"}`, 0}, // frees a
			{"upsert", "p0", "2", `{"email":"a"}`, 0},
			{"upsert", "p0", "2", `{"email":"a","x":1}`, 0}, // unchanged tuple
			{"upsert", "p0", "1", `{"email":"a"}`, http.StatusConflict},
			{"upsert", "p0", "3", `{"email":"b"}`, http.StatusConflict},
		}},
		{"replace", [][]string{email}, []uniqueStep{
			{"create", "p0", "1", `{"email":"a"}`, 0},
			{"create", "p0", "2", `{"email":"b"}`, 0},
			{"replace", "p0", "2", `{"email":"a"}`, http.StatusConflict},
			{"replace", "p0", "1", `{"email":"c"}`, 0},
			{"replace", "p0", "2", `{"email":"a"}`, 0},
			{"create", "p0", "3", `{"email":"b"}`, 0}, // b was freed by the replace
			{"create", "p0", "4", `{"email":"c"}`, http.StatusConflict},
		}},
		{"patch", [][]string{email}, []uniqueStep{
			{"create", "p0", "1", `{"email":"a"}`, 0},
			{"create", "p0", "2", `{"email":"b"}`, 0},
			{"patch", "p0", "2", `[{"op":"set","path":"/email","value":"a"}]`, http.StatusConflict},
			{"patch", "p0", "1", `[{"op":"set","path":"/email","value":"z"}]`, 0},
			{"patch", "p0", "2", `[{"op":"set","path":"/email","value":"a"}]`, 0},
			{"patch", "p0", "2", `[{"op":"remove","path":"/email"}]`, 0}, // now null
			{"create", "p0", "3", `{}`, http.StatusConflict},
			{"create", "p0", "3", `{"email":"a"}`, 0},
			{"patch", "p0", "1", `[{"op":"remove","path":"/email"}]`, http.StatusConflict},
		}},
		{"delete then reuse", [][]string{email}, []uniqueStep{
			{"create", "p0", "1", `{"email":"a"}`, 0},
			{"delete", "p0", "1", ``, 0},
			{"create", "p0", "2", `{"email":"a"}`, 0},
			{"delete", "p0", "2", ``, 0},
			{"create", "p0", "1", `{"email":"a"}`, 0},
			{"create", "p0", "3", `{"email":"a"}`, http.StatusConflict},
		}},
		{"several keys", [][]string{email, {"/phone"}}, []uniqueStep{
			{"create", "p0", "1", `{"email":"a","phone":1}`, 0},
			{"create", "p0", "2", `{"email":"b","phone":1}`, http.StatusConflict}, // the second key; nothing written for the first
			{"create", "p0", "3", `{"email":"b","phone":2}`, 0},
			{"upsert", "p0", "1", `{"email":"a","phone":2}`, http.StatusConflict},
			{"upsert", "p0", "1", `{"email":"c","phone":1}`, 0},
			{"create", "p0", "4", `{"email":"a","phone":4}`, 0},
		}},
		{"id in a key", [][]string{{"/id", "/v"}}, []uniqueStep{
			{"create", "p0", "1", `{"v":1}`, 0},
			{"create", "p0", "2", `{"v":1}`, 0},
			{"replace", "p0", "1", `{"v":1,"w":2}`, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := uniqueEngine(t, tt.keys...)
			for i, s := range tt.steps {
				err := s.run(t.Context(), e)
				if got := code(err); err != nil && got == 0 || got != s.want {
					t.Fatalf("step %d: %s %s/%s %s = %v, want status %d", i, s.op, s.pk, s.id, s.body, err, s.want)
				}
			}
		})
	}
}

// TestUniqueConflictMessage: the 409 names the unique key's paths.
func TestUniqueConflictMessage(t *testing.T) {
	e := uniqueEngine(t, []string{"/email"}, []string{"/first", "/last"})
	ctx := t.Context()
	w := Write{DB: "db", Container: "u", Kind: Create, PK: lp("p0"), Body: []byte(`{"id":"1","pk":"p0","email":"a","first":"x","last":"y"}`)}
	if _, err := e.WriteItem(ctx, w); err != nil {
		t.Fatal(err)
	}
	w.Body = []byte(`{"id":"2","pk":"p0","email":"b","first":"x","last":"y"}`)
	_, err := e.WriteItem(ctx, w)
	se, ok := errors.AsType[*status.Error](err)
	if !ok || se.Code != http.StatusConflict || !strings.Contains(se.Message, "/first, /last") {
		t.Errorf("WriteItem(duplicate /first, /last) = %v, want a 409 naming /first, /last", err)
	}
}

// TestUniqueFailedWriteStoresNothing: a refused replace leaves the item and
// its entries as they were.
func TestUniqueFailedWriteStoresNothing(t *testing.T) {
	e := uniqueEngine(t, []string{"/email"})
	ctx := t.Context()
	for _, s := range []uniqueStep{
		{"create", "p0", "1", `{"email":"a"}`, 0},
		{"create", "p0", "2", `{"email":"b"}`, 0},
	} {
		if err := s.run(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := (uniqueStep{"replace", "p0", "2", `{"email":"a","x":1}`, 0}).run(ctx, e); code(err) != http.StatusConflict {
		t.Fatalf("replace to a taken value = %v, want 409", err)
	}
	r, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "u", ID: "2"}, lp("p0"), "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.Body), `"email":"b"`) || strings.Contains(string(r.Body), `"x"`) {
		t.Errorf("item 2 after the refused replace = %s, want it unchanged", r.Body)
	}
	if err := (uniqueStep{"create", "p0", "3", `{"email":"b"}`, 0}).run(ctx, e); code(err) != http.StatusConflict {
		t.Errorf("create with item 2's value after the refused replace = %v, want 409", err)
	}
}

// TestUniqueBatch: a transactional batch sees its own writes: two creates
// with one value fail it whole; freeing a value and taking it succeeds.
func TestUniqueBatch(t *testing.T) {
	e := uniqueEngine(t, []string{"/email"})
	ctx := t.Context()
	pk := lp("p0")
	resp, err := e.ExecuteBatch(ctx, "db", "u", pk, []BatchOp{
		{Type: "Create", Body: []byte(`{"id":"1","pk":"p0","email":"a"}`)},
		{Type: "Create", Body: []byte(`{"id":"2","pk":"p0","email":"a"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.OK || resp.Results[1].Status != http.StatusConflict || resp.Results[0].Status != http.StatusFailedDependency {
		t.Errorf("batch of colliding creates = OK %v, statuses %d, %d; want failed with 424, 409", resp.OK, resp.Results[0].Status, resp.Results[1].Status)
	}
	if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "u", ID: "1"}, pk, ""); code(err) != http.StatusNotFound {
		t.Errorf("read of the failed batch's first item = %v, want 404", err)
	}
	if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "u", Kind: Create, PK: pk, Body: []byte(`{"id":"1","pk":"p0","email":"a"}`)}); err != nil {
		t.Fatalf("create after the failed batch: %v", err)
	}
	resp, err = e.ExecuteBatch(ctx, "db", "u", pk, []BatchOp{
		{Type: "Replace", ID: "1", Body: []byte(`{"id":"1","pk":"p0","email":"b"}`)},
		{Type: "Create", Body: []byte(`{"id":"2","pk":"p0","email":"a"}`)},
		{Type: "Delete", ID: "1"},
		{Type: "Create", Body: []byte(`{"id":"3","pk":"p0","email":"b"}`)},
	})
	if err != nil || !resp.OK {
		t.Fatalf("batch that frees and takes values = %v, %+v; want success", err, resp.Results)
	}
	for _, s := range []uniqueStep{
		{"create", "p0", "4", `{"email":"a"}`, http.StatusConflict},
		{"create", "p0", "4", `{"email":"b"}`, http.StatusConflict},
		{"create", "p0", "4", `{"email":"c"}`, 0},
	} {
		if err := s.run(ctx, e); code(err) != s.want {
			t.Errorf("after the batch: %s %s %s = %v, want status %d", s.op, s.id, s.body, err, s.want)
		}
	}
}

// TestUniqueStoredProcedure: a stored procedure that breaks a unique key and
// throws writes nothing; one that catches the 409 keeps its other writes,
// and the entries stay right.
func TestUniqueStoredProcedure(t *testing.T) {
	e := uniqueEngine(t, []string{"/email"})
	ctx := t.Context()
	pk := lp("p0")
	for id, body := range map[string]string{
		"throws": `function () {
			var c = getContext().getCollection();
			c.createDocument(c.getSelfLink(), {id: "s1", pk: "p0", email: "dup"});
			c.createDocument(c.getSelfLink(), {id: "s2", pk: "p0", email: "dup"});
		}`,
		"catches": `function () {
			var c = getContext().getCollection();
			c.createDocument(c.getSelfLink(), {id: "s1", pk: "p0", email: "dup"});
			var status = 0;
			try { c.createDocument(c.getSelfLink(), {id: "s2", pk: "p0", email: "dup"}); } catch (e) { status = e.number; }
			c.createDocument(c.getSelfLink(), {id: "s3", pk: "p0", email: "other"});
			getContext().getResponse().setBody(status);
		}`,
	} {
		def, _ := json.Marshal(map[string]string{"id": id, "body": body})
		if _, err := e.CreateScript("db", "u", StoredProcedures, def); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.ExecuteStoredProcedure(ctx, "db", "u", "throws", pk, []byte("[]"), false); code(err) != http.StatusConflict {
		t.Errorf("sproc that breaks a unique key = %v, want 409", err)
	}
	if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "u", ID: "s1"}, pk, ""); code(err) != http.StatusNotFound {
		t.Errorf("read of the rolled back sproc's first item = %v, want 404", err)
	}
	res, err := e.ExecuteStoredProcedure(ctx, "db", "u", "catches", pk, []byte("[]"), false)
	if err != nil || string(res.Body) != "409" {
		t.Fatalf("sproc that catches the 409 = %s, %v; want body 409", res.Body, err)
	}
	for _, s := range []uniqueStep{
		{"create", "p0", "x", `{"email":"dup"}`, http.StatusConflict},
		{"create", "p0", "x", `{"email":"other"}`, http.StatusConflict},
		{"delete", "p0", "s1", ``, 0},
		{"create", "p0", "x", `{"email":"dup"}`, 0},
	} {
		if err := s.run(ctx, e); code(err) != s.want {
			t.Errorf("after the sproc: %s %s %s = %v, want status %d", s.op, s.id, s.body, err, s.want)
		}
	}
}

// TestUniqueRefusedWriteInStoredProcedure: a write a stored procedure
// catches the refusal of — the logical partition full (403), after its
// unique key was checked — leaves no unique key entry behind, though the
// procedure commits. Before, the entry changes were staged before the
// size check: the old value's entry was gone, so another item could take
// the value (found by a bug hunt; partita check reported the duplicate).
func TestUniqueRefusedWriteInStoredProcedure(t *testing.T) {
	st, err := store.Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	e, err := openOn(t, t.Context(), st, Config{LogicalPartitionMaxBytes: 3000}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	createUnique(t, e, "u", []string{"/email"})
	ctx := t.Context()
	pk := lp("p0")
	if err := (uniqueStep{"create", "p0", "x", `{"email":"a"}`, 0}).run(ctx, e); err != nil {
		t.Fatal(err)
	}
	def, _ := json.Marshal(map[string]string{"id": "grow", "body": `function (pad) {
		var c = getContext().getCollection();
		try {
			var accepted = c.replaceDocument(c.getAltLink() + "/docs/x", {id: "x", pk: "p0", email: "b", pad: pad}, function (err) {
				getContext().getResponse().setBody(err ? err.number : "replaced");
			});
			if (!accepted) getContext().getResponse().setBody("not accepted");
		} catch (e) { getContext().getResponse().setBody("threw " + e.number); }
	}`})
	if _, err := e.CreateScript("db", "u", StoredProcedures, def); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal([]string{strings.Repeat("x", 3000)})
	res, err := e.ExecuteStoredProcedure(ctx, "db", "u", "grow", pk, args, false)
	if err != nil || string(res.Body) != "403" {
		t.Fatalf("sproc whose replace the full partition refuses = %s, %v; want body 403", res.Body, err)
	}
	for _, s := range []uniqueStep{
		{"create", "p0", "y", `{"email":"a"}`, http.StatusConflict}, // x still holds "a"
		{"create", "p0", "y", `{"email":"b"}`, 0},                   // "b" was never taken
	} {
		if err := s.run(ctx, e); code(err) != s.want {
			t.Errorf("after the sproc: %s %s %s = %v, want status %d", s.op, s.id, s.body, err, s.want)
		}
	}
	rep, err := e.Check(ctx)
	if err != nil || len(rep.Problems) > 0 {
		t.Errorf("check after the sproc: %v %+v", err, rep.Problems)
	}
}

// TestUniqueConcurrentWriters: of many racing creates of distinct items
// with one unique value in one logical partition, exactly one succeeds.
func TestUniqueConcurrentWriters(t *testing.T) {
	e := uniqueEngine(t, []string{"/email"})
	const racers = 32
	var wg sync.WaitGroup
	results := make([]error, racers)
	for i := range racers {
		wg.Go(func() {
			_, results[i] = e.WriteItem(context.Background(), Write{DB: "db", Container: "u", Kind: Create, PK: lp("p0"),
				Body: []byte(fmt.Sprintf(`{"id":"w%d","pk":"p0","email":"same"}`, i))})
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range results {
		switch {
		case err == nil:
			ok++
		case code(err) != http.StatusConflict:
			t.Errorf("racing create: %v, want success or 409", err)
		}
	}
	if ok != 1 {
		t.Errorf("%d racing creates succeeded, want exactly 1", ok)
	}
}

// TestUniqueEntriesDropped: deleting the container removes its unique key
// entries, and a container re-created with the same name starts afresh.
func TestUniqueEntriesDropped(t *testing.T) {
	e := uniqueEngine(t, []string{"/email"})
	ctx := t.Context()
	c, err := e.container("db", "u")
	if err != nil {
		t.Fatal(err)
	}
	if err := (uniqueStep{"create", "p0", "1", `{"email":"a"}`, 0}).run(ctx, e); err != nil {
		t.Fatal(err)
	}
	if n := countSpan(t, e, c, kindSpan(kindUnique)); n != 1 {
		t.Fatalf("unique entries after one create = %d, want 1", n)
	}
	if err := e.DeleteContainer("db", "u", ""); err != nil {
		t.Fatal(err)
	}
	if n := countSpan(t, e, c, kindSpan(kindUnique)); n != 0 {
		t.Errorf("unique entries after the container's delete = %d, want 0", n)
	}
	createUnique(t, e, "u", []string{"/email"})
	if err := (uniqueStep{"create", "p0", "2", `{"email":"a"}`, 0}).run(ctx, e); err != nil {
		t.Errorf("create in the re-created container: %v", err)
	}
}

// TestUniqueRebuild: a store written in an older entry format gets unique key
// entries for its items when the engine opens it.
func TestUniqueRebuild(t *testing.T) {
	dir := t.TempDir()
	open := func() (*Engine, func()) {
		st, err := store.Open(store.Options{Dir: dir, Sync: true})
		if err != nil {
			t.Fatal(err)
		}
		e, err := openOn(t, t.Context(), st, Config{}, nil, nil)
		if err != nil {
			st.Close()
			t.Fatal(err)
		}
		return e, func() { st.Close() }
	}
	e, closeStore := open()
	if _, err := e.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	createUnique(t, e, "u", []string{"/email"})
	c, err := e.container("db", "u")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []uniqueStep{
		{"create", "p0", "1", `{"email":"a"}`, 0},
		{"create", "p1", "1", `{"email":"a"}`, 0},
	} {
		if err := s.run(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	// Pretend the store predates unique key entries.
	rewrite(t, e, c, func(b replica.Batch) {
		b.DeleteSpan(kindSpan(kindUnique))
		b.Set(formatKey, []byte("5"))
	})
	closeStore()
	e, closeStore = open()
	defer closeStore()
	if n := countSpan(t, e, c, kindSpan(kindUnique)); n != 2 {
		t.Errorf("unique entries after the rebuild = %d, want 2", n)
	}
	if err := (uniqueStep{"create", "p0", "2", `{"email":"a"}`, 0}).run(t.Context(), e); code(err) != http.StatusConflict {
		t.Errorf("create of a taken value after the rebuild = %v, want 409", err)
	}
}

// TestUniqueStaleEntry: an entry naming an item that no longer has its
// values (or is gone) does not block a write; one naming an item that
// still has them does.
func TestUniqueStaleEntry(t *testing.T) {
	e := uniqueEngine(t, []string{"/email"})
	skipCheck(e, "drops an item without the engine, leaving its entries behind")
	ctx := t.Context()
	c, err := e.container("db", "u")
	if err != nil {
		t.Fatal(err)
	}
	if err := (uniqueStep{"create", "p0", "1", `{"email":"a"}`, 0}).run(ctx, e); err != nil {
		t.Fatal(err)
	}
	// Drop item 1 without the engine (as an expired item leaves it).
	rewrite(t, e, c, func(b replica.Batch) { b.DeleteSpan(itemsSpan()) })
	if err := (uniqueStep{"create", "p0", "2", `{"email":"a"}`, 0}).run(ctx, e); err != nil {
		t.Errorf("create over a stale entry: %v", err)
	}
	if err := (uniqueStep{"create", "p0", "3", `{"email":"a"}`, 0}).run(ctx, e); code(err) != http.StatusConflict {
		t.Errorf("create of a value item 2 took = %v, want 409", err)
	}
}

// BenchmarkUniqueWrite is a 1 KB item write in a container without unique
// keys and in one with one (/email): a create, an upsert that keeps the
// item's unique value and one that changes it. Compare keys=0 and keys=1
// for the cost of the check.
func BenchmarkUniqueWrite(b *testing.B) {
	for _, keys := range []int{0, 1} {
		for _, op := range []string{"create", "upsert-same", "upsert-changed"} {
			b.Run(fmt.Sprintf("keys=%d/%s", keys, op), func(b *testing.B) {
				e := benchEngine(b, false)
				var ks [][]string
				if keys == 1 {
					ks = append(ks, []string{"/email"})
				}
				createUnique(b, e, "u", ks...)
				ctx := context.Background()
				pad := strings.Repeat("x", 900)
				kind := Create
				if op != "create" {
					kind = Upsert
					for i := range 1000 {
						body := fmt.Appendf(nil, `{"id":"%d","pk":"p%d","email":"e%d@x","payload":"%s"}`, i, i%100, i, pad)
						if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "u", Kind: Create, PK: pkOf(i), Body: body}); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					id, email := i, fmt.Sprintf("v%d@x", i)
					switch op {
					case "upsert-same":
						id = i % 1000
						email = fmt.Sprintf("e%d@x", id)
					case "upsert-changed":
						id = i % 1000
					}
					body := fmt.Appendf(nil, `{"id":"%d","pk":"p%d","email":%q,"n":%d,"payload":"%s"}`, id, id%100, email, i, pad)
					if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "u", Kind: kind, PK: pkOf(id), Body: body}); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// FuzzUniqueTuple: two JSON values encode to the same unique key tuple
// exactly when they are equal as Cosmos DB compares them, which for the
// values both parsers accept is encoding/json's decoding compared with
// reflect.DeepEqual (numbers by value, objects regardless of member order,
// the last of a repeated key counting).
func FuzzUniqueTuple(f *testing.F) {
	for _, s := range [][2]string{
		{`1`, `1.0`}, {`-0`, `0`}, {`"a"`, `"A"`}, {`"\u0041"`, `"A"`}, {`null`, `false`},
		{`{"x":1,"y":2}`, `{"y":2,"x":1}`}, {`{"x":1,"x":2}`, `{"x":2}`}, {`[1,2]`, `[2,1]`},
		{`[[1],2]`, `[[1,2]]`}, {`{"a":{}}`, `{"a":[]}`}, {`"a\u0000b"`, `"a"`}, {`{"":null}`, `{}`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		norm := func(s string) (any, []byte, bool) {
			if strings.Contains(strings.ToLower(s), `\ud`) {
				return nil, nil, false // lone surrogates: the parsers replace them differently
			}
			var v any
			if err := json.Unmarshal([]byte(s), &v); err != nil {
				return nil, nil, false
			}
			var p fastjson.Parser
			fv, err := p.Parse(s)
			if err != nil {
				return nil, nil, false
			}
			return v, appendUniqueValue(nil, fv), true
		}
		va, ea, okA := norm(a)
		vb, eb, okB := norm(b)
		if !okA || !okB {
			return
		}
		if eq, same := reflect.DeepEqual(va, vb), bytes.Equal(ea, eb); eq != same {
			t.Errorf("values %s and %s: equal %v, but their tuples equal %v (%x, %x)", a, b, eq, same, ea, eb)
		}
	})
}
