package engine

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/status"
)

// TestPatchConditionBounded: a patch condition is evaluated under the
// request's context and at most QueryMaxTime, as a query page is, since
// its transaction holds the logical partition meanwhile: one whose
// subquery's JOIN makes 400 million rows (tens of seconds to evaluate)
// answers 408 within a fraction of that and patches nothing,
// and the partition takes writes again at once (a robustness review found
// such a condition holding the partition for minutes, past the client's
// disconnect and the server's shutdown). In a batch too.
func TestPatchConditionBounded(t *testing.T) {
	e := testEngineWith(t, Config{QueryMaxTime: 200 * time.Millisecond})
	ctx := t.Context()
	if _, err := e.CreateContainer("db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 10000}); err != nil {
		t.Fatal(err)
	}
	nums := make([]string, 20000)
	for i := range nums {
		nums[i] = fmt.Sprint(i)
	}
	pk := lp("a")
	body := `{"id":"big","pk":"a","v":0,"a":[` + strings.Join(nums, ",") + `]}`
	if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "c", Kind: Create, PK: pk, Body: []byte(body)}); err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"condition":"FROM c WHERE (SELECT VALUE COUNT(1) FROM x IN c.a JOIN y IN c.a) > 0","operations":[{"op":"set","path":"/v","value":1}]}`)
	is408 := func(what string, err error) {
		t.Helper()
		var se *status.Error
		if !errors.As(err, &se) || se.Code != http.StatusRequestTimeout || !strings.Contains(se.Message, "patch condition") {
			t.Fatalf("%s: %v, want 408 naming the patch condition", what, err)
		}
	}
	start := time.Now()
	_, err := e.PatchItem(ctx, ItemRef{DB: "db", Container: "c", ID: "big"}, pk, patch, "")
	is408("patch", err)
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("the condition ran %v, past its 200 ms bound", took)
	}
	resp, err := e.ExecuteBatch(ctx, "db", "c", pk, []BatchOp{{Type: "patch", ID: "big", Body: patch}})
	if err == nil && resp.OK {
		t.Fatal("batch: the patch passed its condition")
	}
	if err == nil {
		if r := resp.Results[0]; r.Status != http.StatusRequestTimeout {
			t.Fatalf("batch: operation status %d %s, want 408", r.Status, r.Message)
		}
	} else {
		is408("batch", err)
	}
	// The partition takes writes, and the item was not patched.
	if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "c", Kind: Create, PK: pk, Body: []byte(`{"id":"next","pk":"a"}`)}); err != nil {
		t.Fatal(err)
	}
	got, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "c", ID: "big"}, pk, "")
	if err != nil || !strings.Contains(string(got.Body), `"v":0`) {
		t.Fatalf("read: %v %.60s, want v still 0", err, got.Body)
	}
}

// TestPatchConditionMessageBounded: a 412 (or 400) naming a patch
// condition quotes its first 200 bytes, not the whole of a condition that
// may be 256 KB (a security review found every 412 as large as it).
func TestPatchConditionMessageBounded(t *testing.T) {
	e := testEngine(t)
	ctx := t.Context()
	if _, err := e.CreateContainer("db", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]}}`), Throughput{}); err != nil {
		t.Fatal(err)
	}
	pk := lp("a")
	if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "c", Kind: Create, PK: pk, Body: []byte(`{"id":"x","pk":"a"}`)}); err != nil {
		t.Fatal(err)
	}
	long := "FROM c WHERE c.v = 1" + strings.Repeat(" OR c.v = 1", 20000)
	for _, tc := range []struct {
		cond string
		code int
	}{{long, http.StatusPreconditionFailed}, {long + " AND", http.StatusBadRequest}} {
		patch := fmt.Appendf(nil, `{"condition":%q,"operations":[{"op":"set","path":"/v","value":1}]}`, tc.cond)
		_, err := e.PatchItem(ctx, ItemRef{DB: "db", Container: "c", ID: "x"}, pk, patch, "")
		se, ok := errors.AsType[*status.Error](err)
		if !ok {
			t.Fatalf("a %d-byte condition: %v, want a status", len(tc.cond), err)
		}
		if se.Code != tc.code || !strings.Contains(se.Message, "patch condition") || len(se.Message) > 1000 {
			t.Errorf("a %d-byte condition: %d %.300s (%d bytes); want %d naming the condition in under 1,000 bytes", len(tc.cond), se.Code, se.Message, len(se.Message), tc.code)
		}
	}
}
