package script

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/dop251/goja"
	"github.com/valyala/fastjson"
)

type nativeFunc = func(goja.FunctionCall) goja.Value

// installConsole defines console.log (and, a leniency, the aliases info, warn, error and
// debug), which formats and appends to the log as Cosmos DB's script runtime does
// (DocDbWrapperScript.js, the wrapper it runs scripts in, published as
// Azure/azure-cosmosdb-js-server): a single argument is appended as JavaScript's "" + value
// makes it a string; with more, the first must be a string, in which each %s takes the next
// argument as a string and %% is a percent sign (no other placeholder is special: %d and %j
// stay as they are), and arguments beyond its placeholders are dropped. Calls append one after
// another with nothing between them. With logging off console.log does nothing; with it on, no
// argument, or several whose first is not a string, throw an Error (number 400), as Cosmos DB
// does. The log keeps at most MaxLogBytes.
func (x *execution) installConsole() {
	console := x.rt.NewObject()
	log := func(call goja.FunctionCall) goja.Value {
		if !x.logging {
			return goja.Undefined()
		}
		args := call.Arguments
		var s string
		switch {
		case len(args) == 0:
			panic(x.newStatusError(http.StatusBadRequest, `The function "log" requires at least 1 argument(s) but was called with 0 argument(s).`))
		case len(args) == 1:
			s = x.plus(x.rt.ToValue(""), args[0]).String()
		case !isString(args[0]):
			panic(x.newStatusError(http.StatusBadRequest, "First argument to console.log should be a string containing zero or more substitution strings."))
		default:
			s = x.sprintf(args[0].String(), args[1:])
		}
		if room := x.lim.MaxLogBytes - x.log.Len(); len(s) > room {
			s = strings.ToValidUTF8(s[:max(room, 0)], "")
		}
		x.log.WriteString(s)
		return goja.Undefined()
	}
	for _, name := range []string{"log", "info", "warn", "error", "debug"} {
		x.set(console, name, log)
	}
	x.rt.Set("console", console)
}

// sprintf is the wrapper's sprintf: format with each %s replaced by the next of args (as
// String(arg); "undefined" once they run out) and each %% by %, stopping early once the result
// is longer than the log can keep.
func (x *execution) sprintf(format string, args []goja.Value) string {
	var b strings.Builder
	next := 0
	for i := 0; i < len(format) && b.Len() <= x.lim.MaxLogBytes; i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) || (format[i+1] != '%' && format[i+1] != 's') {
			b.WriteByte(c)
			continue
		}
		i++
		if format[i] == '%' {
			b.WriteByte('%')
			continue
		}
		arg := goja.Undefined()
		if next < len(args) {
			arg = args[next]
		}
		next++
		s, err := x.toString(goja.Undefined(), arg)
		if err != nil {
			panic(err) // rethrow into the script: an interrupt, or a throwing toString
		}
		b.WriteString(s.String())
	}
	return b.String()
}

// plusProgram evaluates to a function returning a + b: JavaScript's + (string concatenation,
// numeric addition, ToPrimitive on objects), which the wrapper's appendValue and console.log
// rely on.
var plusProgram = goja.MustCompile("plus", "(function (a, b) { return a + b; })", false)

// plus returns a + b as JavaScript computes it, rethrowing into the script what a valueOf or
// toString of theirs throws.
func (x *execution) plus(a, b goja.Value) goja.Value {
	if x.plusFn == nil {
		v, err := x.rt.RunProgram(plusProgram)
		if err != nil {
			panic(err) // an interrupt
		}
		x.plusFn, _ = goja.AssertFunction(v)
	}
	return x.call(x.plusFn, goja.Undefined(), a, b)
}

// newStatusError makes the Error the wrapper throws with new Error(code, msg): message msg and
// number code.
func (x *execution) newStatusError(code int, msg string) *goja.Object {
	obj := x.newJSError(msg)
	obj.Set("number", code)
	return obj
}

// set defines a native method on obj.
func (x *execution) set(obj *goja.Object, name string, fn nativeFunc) {
	if err := obj.Set(name, fn); err != nil {
		panic(err) // a fresh object with no setters: cannot fail
	}
}

// installContext defines getContext(), __ and ErrorCodes for stored procedures and triggers.
func (x *execution) installContext() {
	rt := x.rt
	coll := x.newCollection()
	req := x.newRequest()
	resp := x.newResponse()
	ctxObj := rt.NewObject()
	x.set(ctxObj, "getCollection", func(goja.FunctionCall) goja.Value { return coll })
	x.set(ctxObj, "getRequest", func(goja.FunctionCall) goja.Value { return req })
	x.set(ctxObj, "getResponse", func(goja.FunctionCall) goja.Value { return resp })
	// abort(err) ends the script at once and fails it with err, as if err were thrown and
	// nothing caught it: every write is rolled back. Cosmos DB's wrapper documents it as the
	// only way to stop a transaction from committing in a promise callback, where a throw
	// only rejects the promise (a scripts hunt: without it, the documented
	// main().catch(err => getContext().abort(err)) threw a TypeError there, which nothing saw,
	// and the partial writes committed).
	x.set(ctxObj, "abort", func(call goja.FunctionCall) goja.Value {
		x.abort = x.thrown(call.Argument(0))
		x.rt.Interrupt(x.abort)
		_, err := x.rt.RunProgram(interruptProbe)
		if err == nil {
			err = x.abort
		}
		panic(err)
	})
	rt.Set("getContext", func(goja.FunctionCall) goja.Value { return ctxObj })
	// __ is the collection with the request and response beside it, as
	// Cosmos DB's wrapper makes it (an object whose prototype is the
	// collection, with request and response): __.response.setBody(x)
	// threw a TypeError here (a scripts hunt).
	under := rt.NewObject()
	if err := under.SetPrototype(coll); err != nil {
		panic(err) // a fresh object takes any prototype
	}
	under.Set("request", req)
	under.Set("response", resp)
	rt.Set("__", under)

	codes := rt.NewObject()
	for _, c := range []struct {
		name string
		code int
	}{
		{"BadRequest", http.StatusBadRequest},
		{"Forbidden", http.StatusForbidden},
		{"NotFound", http.StatusNotFound},
		{"Conflict", http.StatusConflict},
		{"PreconditionFailed", http.StatusPreconditionFailed},
		{"RequestEntityTooLarge", http.StatusRequestEntityTooLarge},
		{"RetryWith", 449},
		{"InternalServerError", http.StatusInternalServerError},
	} {
		codes.Set(c.name, c.code)
	}
	rt.Set("ErrorCodes", codes)
}

func (x *execution) newRequest() *goja.Object {
	req := x.rt.NewObject()
	x.installBody(req, 0, func() goja.Value { return x.reqBody }, func(v goja.Value) {
		x.reqBody, x.reqBodySet = v, true
	})
	x.set(req, "getOperationType", func(goja.FunctionCall) goja.Value {
		if x.op == "" {
			return goja.Undefined()
		}
		return x.rt.ToValue(x.op)
	})
	// Request headers are not passed to scripts.
	x.set(req, "getRequestHeader", func(goja.FunctionCall) goja.Value { return goja.Undefined() })
	x.set(req, "setRequestHeader", x.unsupported("request.setRequestHeader"))
	return req
}

func (x *execution) newResponse() *goja.Object {
	resp := x.rt.NewObject()
	x.installBody(resp, x.lim.MaxResponseBytes, func() goja.Value { return x.respBody }, func(v goja.Value) { x.respBody, x.respBodySet = v, true })
	// The response body's bound and its size so far, as JSON, in bytes (0 while no body is
	// set), so that a script can stop before its response grows past the bound.
	x.set(resp, "getMaxResponseBodySize", func(goja.FunctionCall) goja.Value {
		return x.rt.ToValue(x.lim.MaxResponseBytes)
	})
	x.set(resp, "getCurrentResponseBodySize", func(goja.FunctionCall) goja.Value {
		if x.respBody == nil {
			return x.rt.ToValue(0)
		}
		b, _ := x.marshalJSON(x.respBody, goja.Undefined(), goja.Undefined())
		return x.rt.ToValue(len(b))
	})
	return resp
}

// bodyName is the name of the body in the request and response maps of Cosmos DB's script
// runtime, which the generic accessors take (getValue("Body"), appendValue("Body", v)).
const bodyName = "Body"

// installBody defines the body accessors of a request or response map, as Cosmos DB's wrapper
// (DocDbWrapperScript.js, DocDbMap) defines them for each writable property: getBody,
// setBody, appendBody, and the generic getValue(name), setValue(name, value) and
// appendValue(name, value). The generic ones know only "Body" (headers are not passed to
// scripts): getValue of another name is undefined, and setValue or appendValue of one throws
// the wrapper's Error (number 400, "Cannot set new values: name"); an undefined name does
// nothing. get returns nil while the script has set no body. With a limit
// (the response's), a body that would pass it is refused where it is set,
// with the wrapper's catchable Error (number 413, telling the script to
// return what it has and continue in another call), and the body stays as
// it was: it was only measured once the script had ended, failing it whole
// with 413 (a scripts hunt; Cosmos DB's samples catch it and return a
// continuation).
func (x *execution) installBody(obj *goja.Object, limit int, get func() goja.Value, rawSet func(goja.Value)) {
	set := func(v goja.Value) {
		if limit > 0 && x.bodyPasses(v, limit) {
			// A host error: uncaught, the script fails with its 413.
			panic(x.hostErrorObject(&HostError{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("Cannot set/appendBody because the resulting "+
				"message would be too large (over %d bytes). Return from script with current message and use continuation token to call the script again.", limit)}))
		}
		rawSet(v)
	}
	getBody := func(goja.FunctionCall) goja.Value { return orUndefined(get()) }
	setBody := func(call goja.FunctionCall) goja.Value {
		set(call.Argument(0))
		return goja.Undefined()
	}
	appendBody := func(call goja.FunctionCall) goja.Value {
		set(x.appendTo(get(), call.Argument(0)))
		return goja.Undefined()
	}
	// named checks a generic accessor's name: false (do nothing) for undefined, true for Body.
	named := func(name goja.Value, write bool) bool {
		switch {
		case goja.IsUndefined(name):
			return false
		case isString(name) && name.String() == bodyName:
			return true
		case write:
			s, err := x.toString(goja.Undefined(), name)
			if err != nil {
				panic(err)
			}
			panic(x.newStatusError(http.StatusBadRequest, "Cannot set new values: "+s.String()))
		}
		return false
	}
	x.set(obj, "getBody", getBody)
	x.set(obj, "setBody", setBody)
	x.set(obj, "appendBody", appendBody)
	x.set(obj, "getValue", func(call goja.FunctionCall) goja.Value {
		if !named(call.Argument(0), false) {
			return goja.Undefined()
		}
		return orUndefined(get())
	})
	x.set(obj, "setValue", func(call goja.FunctionCall) goja.Value {
		if named(call.Argument(0), true) {
			set(call.Argument(1))
		}
		return goja.Undefined()
	})
	x.set(obj, "appendValue", func(call goja.FunctionCall) goja.Value {
		if named(call.Argument(0), true) {
			set(x.appendTo(get(), call.Argument(1)))
		}
		return goja.Undefined()
	})
}

// bodyPasses reports whether v, as a response body's JSON, is longer than
// limit bytes. A string is measured by bounds first (its JSON is at least
// its length plus quotes, at most six bytes a character of it), so that
// appending to a growing string body does not marshal it each time.
func (x *execution) bodyPasses(v goja.Value, limit int) bool {
	if isString(v) {
		n := len(v.String()) // UTF-8 bytes, as the JSON is measured
		switch {
		case n+2 > limit:
			return true
		case 6*n+2 <= limit:
			return false
		}
	}
	b, ok := x.marshalJSON(v, goja.Undefined(), goja.Undefined())
	return ok && len(b) > limit
}

// appendTo is the wrapper's appendValueInternal: the body cur with v appended by JavaScript's
// +, or v itself when cur is undefined or null. A body the script never set (nil) is the
// wrapper's initial empty string, so appends to it concatenate: the Python SDK's test appends
// 0 to 9 to a stored procedure's response and reads back "0123456789".
func (x *execution) appendTo(cur, v goja.Value) goja.Value {
	switch {
	case cur == nil:
		return x.plus(x.rt.ToValue(""), v)
	case goja.IsUndefined(cur) || goja.IsNull(cur):
		return v
	}
	return x.plus(cur, v)
}

func orUndefined(v goja.Value) goja.Value {
	if v == nil {
		return goja.Undefined()
	}
	return v
}

// unsupported returns a method that throws a clear Error.
func (x *execution) unsupported(name string) nativeFunc {
	return func(goja.FunctionCall) goja.Value {
		panic(x.newJSError(name + " is not supported by this server"))
	}
}

func (x *execution) newJSError(msg string) *goja.Object {
	obj, err := x.rt.New(x.errorCtor, x.rt.ToValue(msg))
	if err != nil {
		panic(err) // the captured Error constructor does not fail
	}
	return obj
}

// throwBadRequest throws what Cosmos DB's wrapper throws for a method's bad argument:
// new Error(ErrorCodes.BadRequest, msg), an Error whose number is 400.
func (x *execution) throwBadRequest(format string, args ...any) {
	panic(x.newStatusError(http.StatusBadRequest, fmt.Sprintf(format, args...)))
}

// typeOf is JavaScript's typeof of v, for messages.
func (x *execution) typeOf(v goja.Value) string {
	switch {
	case v == nil || goja.IsUndefined(v):
		return "undefined"
	case goja.IsNull(v):
		return "object"
	}
	if _, ok := goja.AssertFunction(v); ok {
		return "function"
	}
	switch v.(type) {
	case *goja.Object:
		return "object"
	case *goja.Symbol:
		return "symbol"
	}
	switch {
	case goja.IsString(v):
		return "string"
	case goja.IsNumber(v):
		return "number"
	case goja.IsBigInt(v):
		return "bigint"
	}
	return "boolean"
}

func (x *execution) throwTypeError(format string, args ...any) {
	panic(x.rt.NewTypeError("%s", fmt.Sprintf(format, args...)))
}

// newCollection builds the collection object, which is also __.
func (x *execution) newCollection() *goja.Object {
	c := x.rt.NewObject()
	// As Cosmos DB's wrapper: getSelfLink is the _self link ("dbs/{db rid}/colls/{rid}/",
	// RID-routed), getAltLink the name-based one. (Both returned the name-based link; a
	// script joining getSelfLink() and a _rid, as Cosmos DB's samples do, found nothing.)
	x.set(c, "getSelfLink", func(goja.FunctionCall) goja.Value { return x.rt.ToValue(x.host.CollectionSelf()) })
	x.set(c, "getAltLink", func(goja.FunctionCall) goja.Value { return x.rt.ToValue(x.host.CollectionLink()) })
	x.set(c, "createDocument", x.writeMethod("createDocument", false))
	x.set(c, "upsertDocument", x.writeMethod("upsertDocument", true))
	x.set(c, "replaceDocument", x.replaceDocument)
	x.set(c, "patchDocument", x.patchDocument)
	x.set(c, "readDocument", x.readDocument)
	x.set(c, "deleteDocument", x.deleteDocument)
	x.set(c, "queryDocuments", x.queryDocuments)
	x.set(c, "readDocuments", x.readDocuments)
	for _, name := range []string{"chain", "filter", "map", "pluck", "flatten", "sortBy", "sortByDescending", "unwind", "value"} {
		x.set(c, name, x.unsupported("the JavaScript query API (__."+name+")"))
	}
	return c
}

// opArgs splits the trailing [options], [callback] of a collection method.
type opArgs struct {
	options *goja.Object // nil when absent
	cb      goja.Callable
}

func (x *execution) trailing(method string, args []goja.Value) opArgs {
	var o opArgs
	if len(args) > 0 {
		if fn, ok := goja.AssertFunction(args[0]); ok {
			// options omitted: (…, callback)
			o.cb = fn
			return o
		}
		if !isNullish(args[0]) {
			obj, ok := args[0].(*goja.Object)
			if !ok {
				x.throwBadRequest("%s: the \"options\" parameter must be of type \"object\". Actual type is: \"%s\".", method, x.typeOf(args[0]))
			}
			o.options = obj
			for _, name := range []string{"preTriggerInclude", "postTriggerInclude"} {
				// Cosmos DB's server-side API takes them; Partita does not run
				// triggers for a script's own operations, and says so rather
				// than write without them (a scripts hunt found them ignored).
				if v := prop(obj, name); !isNullish(v) && v.String() != "" {
					panic(x.newStatusError(http.StatusBadRequest, fmt.Sprintf("%s: options.%s is not supported: Partita runs triggers for a client's requests, not for a script's own operations", method, name)))
				}
			}
		}
	}
	if len(args) > 1 && !isNullish(args[1]) {
		fn, ok := goja.AssertFunction(args[1])
		if !ok {
			x.throwBadRequest("%s: the \"callback\" parameter must be of type \"function\". Actual type is: \"%s\".", method, x.typeOf(args[1]))
		}
		o.cb = fn
	}
	return o
}

func isNullish(v goja.Value) bool {
	return v == nil || goja.IsUndefined(v) || goja.IsNull(v)
}

func (o opArgs) str(name string) string {
	if o.options == nil {
		return ""
	}
	v := prop(o.options, name)
	if isNullish(v) {
		return ""
	}
	return v.String()
}

func (o opArgs) flag(name string) bool {
	return o.options != nil && prop(o.options, name).ToBoolean()
}

// collectionArgs strips the optional collection link from a collection-level method's
// arguments (__ allows omitting it) and checks that it names this collection, by name
// ("dbs/{db}/colls/{coll}") or by its _self ("dbs/{db rid}/colls/{rid}/"); any other link is
// an error (it was passed over unchecked when written with resource ids or with "..": a
// security review).
func (x *execution) collectionArgs(method string, args []goja.Value, linkFirst func(goja.Value) bool) []goja.Value {
	if len(args) == 0 || !linkFirst(args[0]) {
		return args
	}
	s := strings.Trim(args[0].String(), "/")
	if s != strings.Trim(x.host.CollectionLink(), "/") && s != strings.Trim(x.host.CollectionSelf(), "/") {
		x.throwBadRequest("%s: function is not allowed to operate on resources outside current collection. Make sure that the link provided, %q, belongs to current collection (%q or %q).", method, args[0].String(), x.host.CollectionSelf(), x.host.CollectionLink())
	}
	return args[1:]
}

// isString reports whether v is a string primitive. (Not through Export, which copies a whole
// object graph into Go values: a document holding `new Array(1e8)` took 2 GiB there.)
func isString(v goja.Value) bool {
	_, ok := v.(goja.String)
	return ok
}

func isObject(v goja.Value) bool {
	_, ok := v.(*goja.Object)
	return ok
}

// looksLikeCollectionLink tells a link from a query string in queryDocuments' first argument.
func looksLikeCollectionLink(v goja.Value) bool {
	return isString(v) && strings.HasPrefix(strings.TrimLeft(v.String(), "/"), "dbs/")
}

// docLink returns a document-link argument.
func (x *execution) docLink(method string, v goja.Value) string {
	if !isString(v) || v.String() == "" {
		x.throwBadRequest("%s: invalid document link: %s (it must be a non-empty string).", method, x.render(v))
	}
	return v.String()
}

// docValue returns a document argument as an object: an object as it is, a string (the
// wrapper takes "a string representing a JSON-serialized object") parsed.
func (x *execution) docValue(method string, v goja.Value) goja.Value {
	if !isString(v) {
		return v
	}
	parsed, err := x.parser.Parse(v.String())
	if err != nil {
		x.throwBadRequest("%s: the document string is not valid JSON", method)
	}
	// A JavaScript object has each name once; a string can name one twice,
	// which a document may not wherever it enters (README): the object made
	// from it would keep the last silently (a scripts hunt).
	if name, dup := duplicateName(parsed); dup {
		panic(x.newStatusError(http.StatusBadRequest, fmt.Sprintf("%s: the document names the property %q twice in one object: property names must be unique within an object", method, name)))
	}
	return x.fromJSON(parsed)
}

// duplicateName returns a property name that an object within v names
// twice, if any.
func duplicateName(v *fastjson.Value) (string, bool) {
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		seen := make(map[string]bool, o.Len())
		var (
			name string
			dup  bool
		)
		o.Visit(func(k []byte, m *fastjson.Value) {
			if dup {
				return
			}
			if seen[string(k)] {
				name, dup = string(k), true
				return
			}
			seen[string(k)] = true
			name, dup = duplicateName(m)
		})
		return name, dup
	case fastjson.TypeArray:
		a, _ := v.Array()
		for _, m := range a {
			if name, dup := duplicateName(m); dup {
				return name, true
			}
		}
	}
	return "", false
}

// docBody returns the JSON of a document argument (see docValue).
func (x *execution) docBody(method string, v goja.Value) []byte {
	v = x.docValue(method, v)
	obj, ok := v.(*goja.Object)
	if !ok || obj.ClassName() == "Array" || obj.ClassName() == "Function" {
		x.throwBadRequest("%s: the document must be an object", method)
	}
	b, ok, err := x.stringify(v)
	if err != nil {
		panic(err)
	}
	if !ok {
		x.throwBadRequest("%s: the document must be an object", method)
	}
	return b
}

// perform runs one host operation under the operation budget and returns isAccepted. The
// operation runs now, in call order; its outcome is delivered later, as in Cosmos DB: cb, when
// given, is queued to be called with (err, result...) once the JavaScript stack has unwound
// (see drain). Without a callback, a failed operation throws its error into the script at the
// call, a leniency: Cosmos DB fails the execution with it (asynchronously, so a try/catch
// around the call does not see it there). The results wait in the queue with their callback, so
// a script that queues many large reads holds them all at once, within its memory limit.
func (x *execution) perform(cb goja.Callable, do func() ([]goja.Value, error)) goja.Value {
	if x.abort != nil {
		return goja.Undefined()
	}
	if x.ops >= x.lim.MaxOperations {
		return x.rt.ToValue(false)
	}
	x.ops++
	results, err := do()
	// A host call the watchdog ended (hostCtx) fails with whatever the cut left: the
	// script unwinds with the watchdog's verdict instead (408, or the memory limit).
	x.checkFired()
	if err != nil {
		he, ok := errors.AsType[*HostError](err)
		if !ok {
			x.abort = newError(KindInternal, "Encountered exception while executing function. Exception = internal error", err)
			x.rt.Interrupt(x.abort)
			return goja.Undefined()
		}
		errObj := x.hostErrorObject(he)
		if cb == nil {
			panic(errObj)
		}
		results = []goja.Value{errObj, goja.Undefined(), x.responseOptions()}
	} else {
		results = append([]goja.Value{goja.Undefined()}, results...)
	}
	if cb != nil {
		x.jobs = append(x.jobs, job{cb: cb, args: results})
	}
	return x.rt.ToValue(true)
}

// hostErrorObject makes the Error object a script sees for he.
func (x *execution) hostErrorObject(he *HostError) *goja.Object {
	obj := x.newJSError(he.Msg)
	obj.Set("number", he.Status)
	obj.Set("body", he.Msg)
	if x.hostErrs == nil {
		x.hostErrs = make(map[*goja.Object]*HostError)
	}
	x.hostErrs[obj] = he
	return obj
}

// responseOptions is a callback's responseOptions: {continuation}, undefined when there is
// none (every operation but a paged query or read has none).
func (x *execution) responseOptions(continuation ...string) *goja.Object {
	o := x.rt.NewObject()
	if len(continuation) > 0 && continuation[0] != "" {
		o.Set("continuation", continuation[0])
	} else {
		o.Set("continuation", goja.Undefined())
	}
	return o
}

// parseDoc parses a document the host returned.
func (x *execution) parseDoc(doc []byte) (goja.Value, error) {
	v, err := x.parser.ParseBytes(doc)
	if err != nil {
		return nil, fmt.Errorf("host returned a document that is not JSON: %w", err)
	}
	return x.fromJSON(v), nil
}

func (x *execution) parseDocs(docs [][]byte, continuation string) ([]goja.Value, error) {
	vals := make([]any, len(docs))
	for i, d := range docs {
		v, err := x.parseDoc(d)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return []goja.Value{x.rt.NewArray(vals...), x.responseOptions(continuation)}, nil
}

func (x *execution) oneDoc(doc []byte, err error) ([]goja.Value, error) {
	if err != nil {
		return nil, err
	}
	v, err := x.parseDoc(doc)
	if err != nil {
		return nil, err
	}
	return []goja.Value{v, x.responseOptions()}, nil
}

// writeMethod is createDocument or upsertDocument: ([collLink], doc, [options], [cb]).
func (x *execution) writeMethod(method string, upsert bool) nativeFunc {
	return func(call goja.FunctionCall) goja.Value {
		args := x.collectionArgs(method, call.Arguments, isString)
		if len(args) == 0 {
			x.throwBadRequest("the function %q requires at least 2 argument(s) but was called with %d argument(s): the document is required", method, len(call.Arguments))
		}
		docVal := x.docValue(method, args[0])
		o := x.trailing(method, args[1:])
		if obj, ok := docVal.(*goja.Object); ok && obj.ClassName() == "Object" && !o.flag("disableAutomaticIdGeneration") && !prop(obj, "id").ToBoolean() {
			// As Cosmos DB's wrapper: a document whose id is missing or falsy ("" too) gets a
			// GUID unless told not to, on a shallow copy (for-in), so that the caller's object
			// stays as it was. (An array, which the wrapper would copy into an object of its
			// indexes, is refused below as not a document.)
			cp := x.call(x.shallowCopy(), goja.Undefined(), obj).(*goja.Object)
			cp.Set("id", newGUID())
			docVal = cp
		}
		doc := x.docBody(method, docVal)
		ifMatch := o.str("etag")
		return x.perform(o.cb, func() ([]goja.Value, error) {
			if upsert {
				return x.oneDoc(x.host.Upsert(doc, ifMatch))
			}
			return x.oneDoc(x.host.Create(doc))
		})
	}
}

// shallowCopyProgram copies an object's enumerable properties, its own and inherited, into a
// new object, as the wrapper's for-in loop does.
var shallowCopyProgram = goja.MustCompile("shallowCopy", "(function (b) { var c = {}; for (var p in b) { c[p] = b[p]; } return c; })", false)

// shallowCopy returns the function of shallowCopyProgram, made on first use.
func (x *execution) shallowCopy() goja.Callable {
	if x.copyFn == nil {
		v, err := x.rt.RunProgram(shallowCopyProgram)
		if err != nil {
			panic(err) // an interrupt
		}
		x.copyFn, _ = goja.AssertFunction(v)
	}
	return x.copyFn
}

// replaceDocument(docLink, doc, [options], [cb]).
func (x *execution) replaceDocument(call goja.FunctionCall) goja.Value {
	link := x.docLink("replaceDocument", call.Argument(0))
	doc := x.docBody("replaceDocument", call.Argument(1))
	o := x.trailing("replaceDocument", tail(call.Arguments, 2))
	ifMatch := o.str("etag")
	return x.perform(o.cb, func() ([]goja.Value, error) {
		return x.oneDoc(x.host.Replace(link, doc, ifMatch))
	})
}

// patchDocument(docLink, patchSpec, [options], [cb]); cb(err, doc, respOptions). patchSpec is
// an array of operations or {condition, operations}, as a patch request's body (Cosmos DB's
// wrapper sends JSON.stringify(patchSpec)); options.etag is If-Match.
func (x *execution) patchDocument(call goja.FunctionCall) goja.Value {
	if len(call.Arguments) < 2 {
		x.throwBadRequest("the function \"patchDocument\" requires at least 2 argument(s) but was called with %d argument(s).", len(call.Arguments))
	}
	link := x.docLink("patchDocument", call.Argument(0))
	specVal := call.Argument(1)
	if _, ok := specVal.(*goja.Object); !ok {
		x.throwBadRequest("patchDocument: the patch specification must be an object or an array of operations")
	}
	spec, ok, err := x.stringify(specVal)
	if err != nil {
		panic(err)
	}
	if !ok {
		x.throwBadRequest("patchDocument: the patch specification must be an object or an array of operations")
	}
	o := x.trailing("patchDocument", tail(call.Arguments, 2))
	ifMatch := o.str("etag")
	return x.perform(o.cb, func() ([]goja.Value, error) {
		return x.oneDoc(x.host.Patch(link, spec, ifMatch))
	})
}

// readDocument(docLink, [options], [cb]).
//
// With options.ifNoneMatch naming the item's _etag (unchanged since the
// script last read it), cb gets no document and responseOptions.notModified
// true, as Cosmos DB's wrapper answers (it read the item whole every time:
// a scripts hunt).
func (x *execution) readDocument(call goja.FunctionCall) goja.Value {
	link := x.docLink("readDocument", call.Argument(0))
	o := x.trailing("readDocument", tail(call.Arguments, 1))
	ifNoneMatch := o.str("ifNoneMatch")
	return x.perform(o.cb, func() ([]goja.Value, error) {
		vals, err := x.oneDoc(x.host.Read(link))
		if err != nil || ifNoneMatch == "" {
			return vals, err
		}
		if doc, ok := vals[0].(*goja.Object); ok {
			if etag := prop(doc, "_etag"); isString(etag) && etag.String() == ifNoneMatch {
				opts := x.responseOptions()
				opts.Set("notModified", true)
				return []goja.Value{goja.Undefined(), opts}, nil
			}
		}
		return vals, nil
	})
}

// deleteDocument(docLink, [options], [cb]); cb(err, responseOptions).
func (x *execution) deleteDocument(call goja.FunctionCall) goja.Value {
	link := x.docLink("deleteDocument", call.Argument(0))
	o := x.trailing("deleteDocument", tail(call.Arguments, 1))
	ifMatch := o.str("etag")
	return x.perform(o.cb, func() ([]goja.Value, error) {
		if err := x.host.Delete(link, ifMatch); err != nil {
			return nil, err
		}
		return []goja.Value{x.responseOptions()}, nil
	})
}

// queryDocuments([collLink], query, [options], [cb]); cb(err, docs, responseOptions).
func (x *execution) queryDocuments(call goja.FunctionCall) goja.Value {
	args := x.collectionArgs("queryDocuments", call.Arguments, looksLikeCollectionLink)
	if len(args) == 0 {
		x.throwBadRequest("the function \"queryDocuments\" requires at least 2 argument(s) but was called with %d argument(s): the query is required", len(call.Arguments))
	}
	query, params := x.querySpec(args[0])
	o := x.trailing("queryDocuments", args[1:])
	page := x.page("queryDocuments", o)
	return x.perform(o.cb, func() ([]goja.Value, error) {
		docs, next, err := x.host.Query(x.hostCtx, query, params, page)
		if err != nil {
			return nil, err
		}
		return x.parseDocs(docs, next)
	})
}

// page reads the paging options of queryDocuments and readDocuments: pageSize (a positive
// number; -1 for a page as large as the host gives; none or 0 for defaultPageSize, as Cosmos DB's wrapper reads
// options.pageSize || 100) and continuation (a string a page returned).
func (x *execution) page(method string, o opArgs) Page {
	p := Page{Size: defaultPageSize}
	if o.options == nil {
		return p
	}
	if v := prop(o.options, "pageSize"); !isNullish(v) {
		n := v.ToFloat()
		if n != math.Trunc(n) || n < -1 || n > math.MaxInt32 {
			x.throwBadRequest("%s: pageSize must be a whole number, -1 for a page as large as the server gives", method)
		}
		switch {
		case n == -1:
			p.Size = 0 // every result
		case n > 0:
			p.Size = int(n)
		}
	}
	if v := prop(o.options, "continuation"); !isNullish(v) {
		if !isString(v) {
			x.throwBadRequest("%s: continuation must be a string", method)
		}
		p.Continuation = v.String()
	}
	return p
}

// defaultPageSize is the page of queryDocuments and readDocuments without options.pageSize
// (Cosmos DB's wrapper: options.pageSize || 100). A script that reads one page and no more
// gets no more than it would from Cosmos DB (a scripts hunt: it got every result).
const defaultPageSize = 100

// querySpec decodes a query argument: a string, or {query, parameters: [{name, value}]}.
func (x *execution) querySpec(v goja.Value) (string, map[string][]byte) {
	if isString(v) {
		return v.String(), nil
	}
	obj, ok := v.(*goja.Object)
	if !ok || !isString(prop(obj, "query")) {
		x.throwBadRequest("queryDocuments: the \"filterQuery\" parameter must be of type \"string\" or \"object\" ({query, parameters}). Actual type is: \"%s\".", x.typeOf(v))
	}
	query := prop(obj, "query").String()
	pv := prop(obj, "parameters")
	if isNullish(pv) {
		return query, nil
	}
	arr, ok := pv.(*goja.Object)
	if !ok || arr.ClassName() != "Array" {
		x.throwBadRequest("queryDocuments: parameters must be an array of {name, value}")
	}
	n := prop(arr, "length").ToInteger()
	params := make(map[string][]byte, n)
	for i := range n {
		p, ok := prop(arr, fmt.Sprint(i)).(*goja.Object)
		if !ok || !isString(prop(p, "name")) {
			x.throwBadRequest("queryDocuments: parameters must be an array of {name, value}")
		}
		b, ok, err := x.stringify(prop(p, "value"))
		if err != nil {
			panic(err)
		}
		if ok { // an undefined value leaves the parameter undefined
			params[prop(p, "name").String()] = b
		}
	}
	return query, params
}

// readDocuments([collLink], [options], [cb]); cb(err, docs, responseOptions).
func (x *execution) readDocuments(call goja.FunctionCall) goja.Value {
	args := x.collectionArgs("readDocuments", call.Arguments, isString)
	o := x.trailing("readDocuments", args)
	page := x.page("readDocuments", o)
	return x.perform(o.cb, func() ([]goja.Value, error) {
		docs, next, err := x.host.ReadAll(x.hostCtx, page)
		if err != nil {
			return nil, err
		}
		return x.parseDocs(docs, next)
	})
}

func tail(args []goja.Value, n int) []goja.Value {
	if len(args) <= n {
		return nil
	}
	return args[n:]
}

// newGUID returns a random (version 4) GUID in its canonical form.
func newGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// prop returns obj[name], undefined when absent (goja's Get returns nil then).
func prop(obj *goja.Object, name string) goja.Value {
	if v := obj.Get(name); v != nil {
		return v
	}
	return goja.Undefined()
}
