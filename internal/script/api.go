package script

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/dop251/goja"
)

type nativeFunc = func(goja.FunctionCall) goja.Value

// installConsole defines console.log (and its usual aliases), which appends one line per call
// to the log while logging is on and the log is under MaxLogBytes.
func (x *execution) installConsole() {
	console := x.rt.NewObject()
	log := func(call goja.FunctionCall) goja.Value {
		if !x.logging || x.log.Len() >= x.lim.MaxLogBytes {
			return goja.Undefined()
		}
		var b strings.Builder
		for i, a := range call.Arguments {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(x.logString(a))
			if b.Len() >= x.lim.MaxLogBytes {
				break
			}
		}
		b.WriteByte('\n')
		line := b.String()
		if room := x.lim.MaxLogBytes - x.log.Len(); len(line) > room {
			line = strings.ToValidUTF8(line[:room], "")
		}
		x.log.WriteString(line)
		return goja.Undefined()
	}
	for _, name := range []string{"log", "info", "warn", "error", "debug"} {
		x.set(console, name, log)
	}
	x.rt.Set("console", console)
}

// logString renders one console.log argument: strings as they are, objects as JSON where they
// have it, anything else with String(v).
func (x *execution) logString(v goja.Value) string {
	if s, ok := v.(goja.String); ok {
		return s.String()
	}
	if obj, ok := v.(*goja.Object); ok && obj.ClassName() != "Function" && obj.ClassName() != "Error" && obj.ClassName() != "String" {
		if b, ok, err := x.stringify(v); err == nil && ok {
			return string(b)
		}
	}
	s, err := x.toString(goja.Undefined(), v)
	if err != nil {
		panic(err) // rethrow into the script: an interrupt, or a throwing toString
	}
	return s.String()
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
	rt.Set("getContext", func(goja.FunctionCall) goja.Value { return ctxObj })
	rt.Set("__", coll)

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
	get := func(goja.FunctionCall) goja.Value { return orUndefined(x.reqBody) }
	set := func(call goja.FunctionCall) goja.Value {
		x.reqBody, x.reqBodySet = call.Argument(0), true
		return goja.Undefined()
	}
	x.set(req, "getBody", get)
	x.set(req, "getValue", get)
	x.set(req, "setBody", set)
	x.set(req, "setValue", set)
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
	get := func(goja.FunctionCall) goja.Value { return orUndefined(x.respBody) }
	set := func(call goja.FunctionCall) goja.Value {
		x.respBody = call.Argument(0)
		return goja.Undefined()
	}
	x.set(resp, "getBody", get)
	x.set(resp, "getValue", get)
	x.set(resp, "setBody", set)
	x.set(resp, "setValue", set)
	return resp
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

func (x *execution) throwTypeError(format string, args ...any) {
	panic(x.rt.NewTypeError("%s", fmt.Sprintf(format, args...)))
}

// newCollection builds the collection object, which is also __.
func (x *execution) newCollection() *goja.Object {
	c := x.rt.NewObject()
	link := func(goja.FunctionCall) goja.Value { return x.rt.ToValue(x.host.CollectionLink()) }
	x.set(c, "getSelfLink", link)
	x.set(c, "getAltLink", link)
	x.set(c, "createDocument", x.writeMethod("createDocument", false))
	x.set(c, "upsertDocument", x.writeMethod("upsertDocument", true))
	x.set(c, "replaceDocument", x.replaceDocument)
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
				x.throwTypeError("%s: options must be an object", method)
			}
			o.options = obj
		}
	}
	if len(args) > 1 && !isNullish(args[1]) {
		fn, ok := goja.AssertFunction(args[1])
		if !ok {
			x.throwTypeError("%s: callback must be a function", method)
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
// arguments (__ allows omitting it) and checks a name-based link names this collection.
func (x *execution) collectionArgs(method string, args []goja.Value, linkFirst func(goja.Value) bool) []goja.Value {
	if len(args) == 0 || !linkFirst(args[0]) {
		return args
	}
	s := args[0].String()
	if isNameLink(s) && strings.Trim(s, "/") != strings.Trim(x.host.CollectionLink(), "/") {
		panic(x.newJSError(fmt.Sprintf("%s: %q is not this script's collection %q", method, s, x.host.CollectionLink())))
	}
	return args[1:]
}

// isNameLink reports whether s is a name-based collection link ("dbs/{db}/colls/{coll}").
// Resource-id-based self links ("dbs/AbC=/colls/AbCd=/") are accepted as they are.
func isNameLink(s string) bool {
	parts := strings.Split(strings.Trim(s, "/"), "/")
	return len(parts) == 4 && parts[0] == "dbs" && parts[2] == "colls" && !strings.HasSuffix(parts[3], "=")
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
		x.throwTypeError("%s: the document link must be a non-empty string", method)
	}
	return v.String()
}

// docBody returns the JSON of a document argument.
func (x *execution) docBody(method string, v goja.Value) []byte {
	obj, ok := v.(*goja.Object)
	if !ok || obj.ClassName() == "Array" || obj.ClassName() == "Function" {
		x.throwTypeError("%s: the document must be an object", method)
	}
	b, ok, err := x.stringify(v)
	if err != nil {
		panic(err)
	}
	if !ok {
		x.throwTypeError("%s: the document must be an object", method)
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

func (x *execution) responseOptions() *goja.Object {
	o := x.rt.NewObject()
	o.Set("continuation", goja.Undefined())
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

func (x *execution) parseDocs(docs [][]byte) ([]goja.Value, error) {
	vals := make([]any, len(docs))
	for i, d := range docs {
		v, err := x.parseDoc(d)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return []goja.Value{x.rt.NewArray(vals...), x.responseOptions()}, nil
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
			x.throwTypeError("%s: the document is required", method)
		}
		docVal := args[0]
		o := x.trailing(method, args[1:])
		if obj, ok := docVal.(*goja.Object); ok && !o.flag("disableAutomaticIdGeneration") && isNullish(prop(obj, "id")) {
			// Cosmos DB's SDKs assign a GUID to a document without an id unless told not to.
			obj.Set("id", newGUID())
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

// readDocument(docLink, [options], [cb]).
func (x *execution) readDocument(call goja.FunctionCall) goja.Value {
	link := x.docLink("readDocument", call.Argument(0))
	o := x.trailing("readDocument", tail(call.Arguments, 1))
	return x.perform(o.cb, func() ([]goja.Value, error) {
		return x.oneDoc(x.host.Read(link))
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
		x.throwTypeError("queryDocuments: the query is required")
	}
	query, params := x.querySpec(args[0])
	o := x.trailing("queryDocuments", args[1:])
	return x.perform(o.cb, func() ([]goja.Value, error) {
		docs, err := x.host.Query(query, params)
		if err != nil {
			return nil, err
		}
		return x.parseDocs(docs)
	})
}

// querySpec decodes a query argument: a string, or {query, parameters: [{name, value}]}.
func (x *execution) querySpec(v goja.Value) (string, map[string][]byte) {
	if isString(v) {
		return v.String(), nil
	}
	obj, ok := v.(*goja.Object)
	if !ok || !isString(prop(obj, "query")) {
		x.throwTypeError("queryDocuments: the query must be a string or {query, parameters}")
	}
	query := prop(obj, "query").String()
	pv := prop(obj, "parameters")
	if isNullish(pv) {
		return query, nil
	}
	arr, ok := pv.(*goja.Object)
	if !ok || arr.ClassName() != "Array" {
		x.throwTypeError("queryDocuments: parameters must be an array of {name, value}")
	}
	n := prop(arr, "length").ToInteger()
	params := make(map[string][]byte, n)
	for i := range n {
		p, ok := prop(arr, fmt.Sprint(i)).(*goja.Object)
		if !ok || !isString(prop(p, "name")) {
			x.throwTypeError("queryDocuments: parameters must be an array of {name, value}")
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
	return x.perform(o.cb, func() ([]goja.Value, error) {
		docs, err := x.host.ReadAll()
		if err != nil {
			return nil, err
		}
		return x.parseDocs(docs)
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
