package script

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// FuzzCompile feeds arbitrary text to the compilers and runs whatever compiles, as a stored
// procedure, a trigger and a UDF, under a 100ms limit: nothing may panic the host, hang, or
// fail in any way but an *Error of an expected kind.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		"function f(a) { getContext().getResponse().setBody(a); }",
		"function () { __.createDocument({n: 1}, function (err, d) { if (err) throw err; }); }",
		"function () { while (true) {} }",
		"function f() { f(); }",
		"function () { throw {a: 1}; }",
		"function (x) { return x * 2; }",
		"function () { var r = getContext().getRequest(); r.setBody(r.getBody()); }",
		"function () { __.queryDocuments('SELECT * FROM c', function (e, d) { console.log(d.length); }); }",
		"var x = 1; function main() { return x; }",
		"function (",
		"})({",
		"function(){}) + (function(){}",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		lim := Limits{Timeout: 100 * time.Millisecond, MaxHeapGrowth: 32 << 20, MaxOperations: 20}
		// The fuzzer has no hang detection; a panic makes a hung input a reported crasher.
		// Five runs of at most 100ms each must be long done after 10s.
		hang := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("hang on %q", body)) })
		defer hang.Stop()
		ctx := context.Background()
		check := func(what string, err error) {
			if err == nil {
				return
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("%s(%q) = %v (%T), want *Error", what, body, err, err)
			}
			if se.Kind == KindInternal {
				t.Fatalf("%s(%q) = %v: internal failure (cause %v)", what, body, err, errors.Unwrap(err))
			}
			if se.Status < 400 || se.Status > 599 || se.Msg == "" {
				t.Fatalf("%s(%q) = %+v: want a 4xx/5xx status and a message", what, body, se)
			}
		}
		sp, err := CompileStoredProcedure(body)
		check("CompileStoredProcedure", err)
		if err == nil {
			_, err = sp.Execute(ctx, newFakeHost(`{"id":"a","n":1}`), []byte(`[1, "x", {"id": "b"}]`), lim, true)
			check("Execute", err)
		}
		tr, err := CompileTrigger(body)
		check("CompileTrigger", err)
		if err == nil {
			_, err = tr.RunPreTrigger(ctx, newFakeHost(), "Create", []byte(`{"id":"c"}`), lim)
			check("RunPreTrigger", err)
			_, err = tr.RunPostTrigger(ctx, newFakeHost(), "Create", []byte(`{"id":"c"}`), []byte(`{"id":"c","_etag":"e"}`), lim)
			check("RunPostTrigger", err)
		}
		udf, err := CompileUDF(body)
		check("CompileUDF", err)
		if err == nil {
			_, err = udf.Call(ctx, [][]byte{[]byte(`{"a":[1,2]}`), nil}, lim)
			check("Call", err)
		}
	})
}
