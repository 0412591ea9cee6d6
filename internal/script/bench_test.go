package script

import (
	"context"
	"testing"
)

// BenchmarkExecuteSproc10Writes runs a stored procedure that creates ten documents through
// callbacks against the in-memory fake host: VM setup, the API objects, ten host round trips
// with JSON both ways, and the watchdog.
func BenchmarkExecuteSproc10Writes(b *testing.B) {
	p := mustSproc(b, `function bulk(docs) {
		var c = getContext().getCollection(), link = c.getSelfLink(), n = 0;
		docs.forEach(function (d) {
			c.createDocument(link, d, {}, function (err) {
				if (err) throw err;
				if (++n === docs.length) getContext().getResponse().setBody(n);
			});
		});
	}`)
	args := []byte(`[[{"id":"0","v":0,"tags":["a","b"]},{"id":"1","v":1},{"id":"2","v":2},{"id":"3","v":3},` +
		`{"id":"4","v":4},{"id":"5","v":5},{"id":"6","v":6},{"id":"7","v":7},{"id":"8","v":8},{"id":"9","v":9}]]`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := p.Execute(ctx, newFakeHost(), args, Limits{}, false)
		if err != nil || string(res.Body) != "10" {
			b.Fatalf("Execute = %s, %v", res.Body, err)
		}
	}
}

// BenchmarkUDFCall calls a small UDF, as a query does per row.
func BenchmarkUDFCall(b *testing.B) {
	p, err := CompileUDF(`function tax(doc) { return doc.income * 0.2; }`)
	if err != nil {
		b.Fatal(err)
	}
	args := [][]byte{[]byte(`{"id":"x","income":1000}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := p.Call(ctx, args, Limits{})
		if err != nil || string(out) != "200" {
			b.Fatalf("Call = %s, %v", out, err)
		}
	}
}

// BenchmarkCompile compiles a typical stored procedure body (done once per script version).
func BenchmarkCompile(b *testing.B) {
	body := `function bulk(docs) {
		var c = getContext().getCollection(), link = c.getSelfLink(), n = 0;
		docs.forEach(function (d) { c.createDocument(link, d, {}, function (err) { if (err) throw err; n++; }); });
		getContext().getResponse().setBody(n);
	}`
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CompileStoredProcedure(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallerCall calls a small UDF through a Caller, as a query does for each row after
// the first: the VM is set up once.
func BenchmarkCallerCall(b *testing.B) {
	p, err := CompileUDF(`function tax(doc) { return doc.income * 0.2; }`)
	if err != nil {
		b.Fatal(err)
	}
	c := p.NewCaller(Limits{})
	args := [][]byte{[]byte(`{"id":"x","income":1000}`)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out, err := c.Call(ctx, args)
		if err != nil || string(out) != "200" {
			b.Fatalf("Call = %s, %v", out, err)
		}
	}
}
