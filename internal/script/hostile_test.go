package script

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHostile runs scripts that try to exhaust the host. Each must stop with a clear *Error,
// quickly: well within twice its time limit.
func TestHostile(t *testing.T) {
	tests := []struct {
		name, body string
		kinds      []ErrorKind // any of these
		status     int
		msg        string // Msg contains it
	}{
		{"infinite loop", `function () { while (true) {} }`, []ErrorKind{KindTimeout}, http.StatusRequestTimeout, "time limit"},
		{"infinite loop in try/finally", `function () { for (;;) { try { while (true) {} } catch (e) {} finally { continue; } } }`,
			[]ErrorKind{KindTimeout}, http.StatusRequestTimeout, "time limit"},
		{"infinite loop in callback", `function () { __.readDocuments(function () { for (;;) {} }); }`,
			[]ErrorKind{KindTimeout}, http.StatusRequestTimeout, "time limit"},
		{"infinite loop in toJSON of the body", `function () { getContext().getResponse().setBody({toJSON: function () { for (;;) {} }}); }`,
			[]ErrorKind{KindTimeout}, http.StatusRequestTimeout, "time limit"},
		{"infinite loop in toString of a thrown value", `function () { throw {toString: function () { for (;;) {} }, toJSON: function () { for (;;) {} }}; }`,
			[]ErrorKind{KindTimeout}, http.StatusRequestTimeout, "time limit"},
		{"promise job loop", `function () { (function f() { Promise.resolve().then(f); })(); }`,
			[]ErrorKind{KindTimeout}, http.StatusRequestTimeout, "time limit"},
		{"sparse array allocation", `function () { var a = []; while (true) a.push(new Array(1e6)); }`,
			[]ErrorKind{KindMemory, KindTimeout}, 0, "limit"},
		{"dense array allocation", `function () { var a = []; while (true) a.push(new Array(1e5).fill(0)); }`,
			[]ErrorKind{KindMemory}, http.StatusBadRequest, "memory limit"},
		{"string doubling", `function () { var s = "x"; while (true) s = s + s + "y"; }`,
			[]ErrorKind{KindMemory, KindException}, http.StatusBadRequest, ""},
		{"object allocation", `function () { var a = []; for (var i = 0; ; i++) a.push({i: i, s: "item" + i}); }`,
			[]ErrorKind{KindMemory}, http.StatusBadRequest, "memory limit"},
		{"huge repeat", `function () { return "x".repeat(Math.pow(2, 40)); }`,
			[]ErrorKind{KindException}, http.StatusBadRequest, "Invalid string length"},
		{"huge padStart", `function () { return "x".padStart(Math.pow(2, 40)); }`,
			[]ErrorKind{KindException}, http.StatusBadRequest, "Invalid string length"},
		{"huge fill", `function () { var a = []; a.length = Math.pow(2, 32) - 1; a.fill(0); }`,
			[]ErrorKind{KindException}, http.StatusBadRequest, "Invalid array length"},
		{"huge indexOf", `function () { var a = []; a.length = Math.pow(2, 32) - 1; a.indexOf(1); }`,
			[]ErrorKind{KindException}, http.StatusBadRequest, "Invalid array length"},
		{"huge join on array-like", `function () { Array.prototype.join.call({length: 1e15}, "x"); }`,
			[]ErrorKind{KindException}, http.StatusBadRequest, "Invalid array length"},
		{"spread of a huge sparse array", `function () { var a = []; a.length = Math.pow(2, 32) - 1; return [...a]; }`,
			[]ErrorKind{KindException}, http.StatusBadRequest, "Invalid array length"},
		{"concat of a huge sparse array", `function () { var a = []; a.length = Math.pow(2, 32) - 1; [].concat(a); }`,
			[]ErrorKind{KindException}, http.StatusBadRequest, "Invalid array length"},
		{"forEach over a huge sparse array", `function () { var a = []; a.length = Math.pow(2, 32) - 1; a.forEach(function () {}); }`,
			[]ErrorKind{KindException}, http.StatusBadRequest, "Invalid array length"},
		{"stringify of a huge sparse array", `function () { var a = []; a.length = Math.pow(2, 32) - 1; JSON.stringify(a); }`,
			[]ErrorKind{KindException}, http.StatusBadRequest, "Invalid array length"},
		{"huge typed array", `function () { new Uint8Array(1e12); }`,
			[]ErrorKind{KindException}, http.StatusBadRequest, "Uint8Array is not defined"},
		{"huge Array.from", `function () { Array.from({length: 1e12}); }`,
			[]ErrorKind{KindException}, http.StatusBadRequest, "Invalid array length"},
		{"huge apply", `function () { Math.max.apply(null, {length: 1e12}); }`,
			[]ErrorKind{KindException}, http.StatusBadRequest, "Invalid array length"},
		{"deep recursion", `function () { function f() { f(); } f(); }`,
			[]ErrorKind{KindStackOverflow}, http.StatusBadRequest, "Maximum call stack size exceeded"},
		{"recursion caught", `function () { function f() { try { f(); } catch (e) { f(); } } f(); }`,
			[]ErrorKind{KindStackOverflow}, http.StatusBadRequest, "Maximum call stack size exceeded"},
		{"recursion through callbacks", `function () { function f() { __.readDocuments(f); } f(); }`,
			[]ErrorKind{KindStackOverflow, KindTimeout}, 0, ""},
		{"throw 42", `function () { throw 42; }`, []ErrorKind{KindException}, http.StatusBadRequest, "Exception = 42"},
		{"throw object", `function () { throw {a: 1}; }`, []ErrorKind{KindException}, http.StatusBadRequest, `Exception = {"a":1}`},
		{"throw null", `function () { throw null; }`, []ErrorKind{KindException}, http.StatusBadRequest, "Exception = null"},
		{"throw undefined", `function () { throw undefined; }`, []ErrorKind{KindException}, http.StatusBadRequest, "Exception = undefined"},
		{"throw string", `function () { throw "boom"; }`, []ErrorKind{KindException}, http.StatusBadRequest, `Exception = "boom"`},
		{"throw Error", `function () { throw new Error("boom"); }`, []ErrorKind{KindException}, http.StatusBadRequest, "Exception = Error: boom"},
		{"throw TypeError", `function () { null.x; }`, []ErrorKind{KindException}, http.StatusBadRequest, "Exception = TypeError"},
		{"throw cyclic", `function () { var o = {}; o.o = o; throw o; }`, []ErrorKind{KindException}, http.StatusBadRequest, "[object Object]"},
		{"throw huge message", `function () { throw new Error("x".repeat(1e6)); }`, []ErrorKind{KindException}, http.StatusBadRequest, "..."},
		{"cyclic body", `function () { var o = {}; o.o = o; getContext().getResponse().setBody(o); }`,
			[]ErrorKind{KindException}, http.StatusBadRequest, "TypeError"},
		{"redefined Error", `function () { Error = function () { for (;;) {} }; __.readDocument("nope"); }`,
			[]ErrorKind{KindHost}, http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := 500 * time.Millisecond
			if len(tt.kinds) == 1 && tt.kinds[0] == KindMemory {
				timeout = 5 * time.Second
			}
			// The memory cases allocate at goja's pace (tens of MB/s on a slow machine, less
			// under -race), so they get a small growth limit and a long timeout: memory, not
			// time, must stop them.
			lim := Limits{Timeout: timeout, MaxHeapGrowth: 8 << 20}
			start := time.Now()
			_, err := run(t, newFakeHost(), tt.body, ``, lim)
			elapsed := time.Since(start)
			se := asError(t, err)
			ok := false
			for _, k := range tt.kinds {
				ok = ok || se.Kind == k
			}
			if !ok {
				t.Errorf("Execute = %v (kind %v), want kind in %v", se, se.Kind, tt.kinds)
			}
			if tt.status != 0 && se.Status != tt.status {
				t.Errorf("Execute = %v: Status %d, want %d", se, se.Status, tt.status)
			}
			if !strings.Contains(se.Msg, tt.msg) {
				t.Errorf("Execute = %v: Msg %q does not contain %q", se, se.Msg, tt.msg)
			}
			if len(se.Msg) > maxMsgBytes+3 {
				t.Errorf("len(Msg) = %d, want <= %d", len(se.Msg), maxMsgBytes+3)
			}
			t.Logf("stopped after %v: %v", elapsed, se)
			if elapsed > 2*timeout {
				t.Errorf("Execute took %v, want < %v", elapsed, 2*timeout)
			}
		})
	}
}

// TestSyntaxErrorMessage checks a compile error says where and what.
func TestSyntaxErrorMessage(t *testing.T) {
	_, err := CompileStoredProcedure("function f() {\n  var x = ;\n}")
	se := asError(t, err)
	if se.Kind != KindCompile || se.Status != http.StatusBadRequest || !strings.Contains(se.Msg, "SyntaxError") || !strings.Contains(se.Msg, "2:") {
		t.Errorf("CompileStoredProcedure(bad) = %v, want KindCompile 400 with SyntaxError and line 2", err)
	}
}

// TestTimeoutBound checks the default-free path: a loop with a short timeout stops in time
// and a later run of the same Program is unaffected.
func TestTimeoutBound(t *testing.T) {
	p := mustSproc(t, `function (spin) { if (spin) while (true) {} getContext().getResponse().setBody("done"); }`)
	start := time.Now()
	_, err := p.Execute(context.Background(), newFakeHost(), []byte(`[true]`), Limits{Timeout: 100 * time.Millisecond}, false)
	if se := asError(t, err); se.Kind != KindTimeout || time.Since(start) > 200*time.Millisecond {
		t.Errorf("Execute(spin) = %v after %v, want KindTimeout within 200ms", err, time.Since(start))
	}
	res, err := p.Execute(context.Background(), newFakeHost(), []byte(`[false]`), Limits{Timeout: 100 * time.Millisecond}, false)
	if err != nil || string(res.Body) != `"done"` {
		t.Errorf("Execute(no spin) = %s, %v; want \"done\"", res.Body, err)
	}
}
