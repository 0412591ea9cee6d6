package testserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestScriptLimitsThroughNativeCalls runs, through the real server and its default script
// limits (5 s, 256 MiB of heap growth), the stored procedures of the hardening issue whose work
// happened inside one native call and escaped the limits (20 to 70 s at 2 GiB, or a crash of
// the process): each must fail with 400 or 408 in bounded time, write nothing, and leave the
// server serving. (azcosmos v1.5.0 has no script API, so the scripts go through the server's
// REST API, signed as the SDK signs requests.)
func TestScriptLimitsThroughNativeCalls(t *testing.T) {
	e := newScriptEnv(t)
	ctx := t.Context()
	pk := azcosmos.NewPartitionKeyString("h")
	if _, err := e.k.CreateItem(ctx, pk, []byte(`{"id":"keep","pk":"h","v":1}`), nil); err != nil {
		t.Fatal(err)
	}
	// Each writes first, so that a failure must roll the write back.
	write := `__.replaceDocument("keep", {id: "keep", pk: "h", v: 2});`
	tests := []struct{ name, body string }{
		{"string doubling", `x = "ab"; while (true) x = x + x;`},
		{"stringify of a nested huge array", `JSON.stringify({a: new Array(1e8)});`},
		{"stringify of an array inside an array", `var a = []; a.length = 1e8; JSON.stringify([a]);`},
		{"stringify of repeated references", `var a = new Array(1e5).fill("x".repeat(100)), b = [];
			for (var i = 0; i < 100; i++) b.push(a); JSON.stringify(b);`},
		{"body of a huge array", `getContext().getResponse().setBody([new Array(1e8)]);`},
		{"backtracking regular expression", `/^(?=a)(a+)+$/.test("a".repeat(40) + "b");`},
		{"join of repeated references", `new Array(3000).fill("x".repeat(1e6)).join("");`},
		{"replace with a long replacement", `"a".repeat(1e5).replace(/a/g, "x".repeat(1e4));`},
		{"toString of a deep nesting", `var a = []; for (var i = 0; i < 5e5; i++) a = [a]; String(a);`},
		{"parse of a deep nesting", `JSON.parse("[".repeat(1e7) + "]".repeat(1e7));`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprintf("limits%d", i)
			e.create("sprocs", map[string]any{"id": id, "body": "function () { " + write + " " + tt.body + " }"})
			start := time.Now()
			resp, body := e.exec(id, "h")
			elapsed := time.Since(start)
			var msg struct{ Message string }
			_ = json.Unmarshal(body, &msg)
			t.Logf("%s after %v: %s", resp.Status, elapsed, msg.Message)
			if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusRequestTimeout {
				t.Errorf("%s: %s %s, want 400 or 408", tt.name, resp.Status, body)
			}
			if elapsed > 45*time.Second {
				t.Errorf("%s took %v to stop, want < 45s", tt.name, elapsed)
			}
			r, err := e.k.ReadItem(ctx, pk, "keep", nil)
			if err != nil || !jsonHas(t, r.Value, "v", 1.0) {
				t.Errorf("%s: after it, read = %s, %v; want the unchanged item", tt.name, r.Value, err)
			}
			if _, err := e.k.UpsertItem(ctx, pk, []byte(fmt.Sprintf(`{"id":"after%d","pk":"h"}`, i)), nil); err != nil {
				t.Errorf("%s: after it, upsert = %v", tt.name, err)
			}
		})
	}
}
