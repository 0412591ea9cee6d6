// Package script runs Azure Cosmos DB server-side JavaScript — stored procedures, pre- and
// post-triggers and user-defined functions — in an embedded goja VM, against a Host that the
// engine implements inside one logical-partition transaction. It knows nothing of storage or
// HTTP; it imports goja (and regexp2, goja's regular-expression engine, only to bound its
// matches), the standard library, and no internal package.
//
// # Programs and executions
//
// CompileStoredProcedure, CompileTrigger and CompileUDF turn a script body into a *Program. A
// body is a JavaScript function, as Cosmos DB stores it: `function name(a, b) {...}` or the
// anonymous `function (a, b) {...}` the JavaScript SDK sends. As a leniency, a body made of
// several top-level statements is accepted too; its first top-level function declaration is
// the entry point and the other statements run first (helpers declared beside it). A Program is
// immutable and safe for concurrent use; every execution gets a fresh goja.Runtime, so
// executions never share state.
//
// # The JavaScript surface
//
// Stored procedures and triggers see the Cosmos DB server-side API:
//
//	getContext()                    {getCollection(), getRequest(), getResponse(), abort(err)}
//	getContext().abort(err)         ends the script at once, failing it with err as if thrown
//	                                and not caught (writes rolled back), also from a promise
//	                                callback, where a throw only rejects the promise
//	collection.getSelfLink()        the container's _self link, "dbs/{db rid}/colls/{rid}/"
//	                                (Host.CollectionSelf)
//	collection.getAltLink()         its name-based link, "dbs/{db}/colls/{coll}"
//	                                (Host.CollectionLink); a document link is either joined
//	                                with "docs/{_rid}" (or the document's _self) or with
//	                                "/docs/{id}"
//	collection.createDocument(collLink, doc, [options], [cb])          cb(err, doc, respOptions)
//	collection.upsertDocument(collLink, doc, [options], [cb])          cb(err, doc, respOptions)
//	collection.replaceDocument(docLink, doc, [options], [cb])          cb(err, doc, respOptions)
//	                                doc: an object, or a string of its JSON; a missing or
//	                                falsy id gets a GUID on a copy, the caller's object unchanged
//	collection.patchDocument(docLink, patchSpec, [options], [cb])     cb(err, doc, respOptions)
//	                                patchSpec: an array of operations or {condition,
//	                                operations}, as a PATCH request's body
//	collection.readDocument(docLink, [options], [cb])                  cb(err, doc, respOptions)
//	                                options.ifNoneMatch the item's _etag: cb(undefined,
//	                                undefined, {notModified: true})
//	collection.deleteDocument(docLink, [options], [cb])                cb(err, respOptions)
//	collection.queryDocuments(collLink, query, [options], [cb])        cb(err, docs, respOptions)
//	collection.readDocuments(collLink, [options], [cb])                cb(err, docs, respOptions)
//	request.getBody(), setBody(x), appendBody(x), getOperationType()
//	response.getBody(), setBody(x), appendBody(x)   in a post-trigger, what the client gets
//	response.getMaxResponseBodySize()  Limits.MaxResponseBytes (the host enforces it)
//	response.getCurrentResponseBodySize()  the body's size as JSON, 0 before one is set
//	request/response.getValue("Body"), setValue("Body", x), appendValue("Body", x)
//	                                the generic forms; appending uses JavaScript's + (to a
//	                                response body not yet set, the empty string)
//	__                              an object whose prototype is getContext().getCollection(),
//	                                with the collection-link argument optional
//	                                (__.createDocument(doc, options, cb)), and __.request and
//	                                __.response, the request's and response's objects
//	response.setBody(x) and the others past the response limit
//	                                throw Error(413, "Cannot set/appendBody because the
//	                                resulting message would be too large …"), catchable, the
//	                                body unchanged; uncaught, the run fails with 413
//	console.log(s, ...)             appended to the log when logging is on: %s takes the
//	                                next argument, %% is %, calls are concatenated
//	ErrorCodes                      {BadRequest: 400, Forbidden: 403, NotFound: 404, ...}
//	new Error(code, message)        JScript's form, as the wrapper and Cosmos DB's samples use
//	                                it: message, and number code (errorCodeForm)
//	a method's bad argument         throws Error(400, message), as the wrapper does: options
//	                                not an object, a callback not a function, a missing
//	                                document or query, a link outside the collection
//
// The request and response maps and console.log behave as in Cosmos DB's own wrapper script,
// DocDbWrapperScript.js (published in Azure/azure-cosmosdb-js-server): see installBody and
// installConsole. Triggers are compiled when they run, not when they are stored (the engine
// stores any body, as Cosmos DB does).
//
// Every collection operation returns isAccepted: true, or false once Limits.MaxOperations
// operations have been performed, in which case the operation is not performed and its callback
// is not called (Cosmos DB's signal to stop and report progress; the client calls again with
// the rest, as with Cosmos DB's bulkImport sample). An accepted operation is performed at once,
// so operations take effect in call order, but its callback runs later, as in Cosmos DB: it is
// queued, and the queue is drained after the script's function returns, one callback at a time
// on an empty JavaScript stack, each callback's own operations queuing theirs behind. So the
// usual recursive pattern, where each callback starts the next operation, does not nest, however
// many documents it imports; and a value the function computes from a callback's result is not
// there before the function returns (set the response body in the callback, or set an object the
// callbacks fill: the body is serialized after the last callback). An exception escaping a
// callback fails the execution (all its writes are rolled back), as does one escaping the
// function. A failed operation passes its callback an Error whose number is the Cosmos DB status
// (404, 409, 412, ...) and whose body and message are the status message; with no callback, the
// error is thrown into the script at the call (a leniency: in Cosmos DB it fails the execution
// later, where no try/catch around the call sees it). Options: etag (If-Match for replace,
// upsert and delete) and disableAutomaticIdGeneration (create and upsert assign a random GUID
// id to a document without one unless it is set). queryDocuments and readDocuments take
// options.pageSize (100 without it or with 0, as Cosmos DB's wrapper reads it; every result with -1) and options.continuation (what an
// earlier page's respOptions.continuation held; undefined after the last page): Host.Query and
// Host.ReadAll page. The fluent query API (__.filter, __.map,
// __.chain, ...) throws a "not supported" Error.
//
// UDFs get none of this: no getContext, no __, no Host; console.log exists and is discarded.
//
// Nothing else of the host is reachable: goja exposes only ECMAScript built-ins, and this
// package adds no require, process, setTimeout, network or file access.
//
// # Limits
//
// Each execution is bounded by Limits: wall time and ctx (the VM is interrupted), call depth,
// host operations, log size, and Go heap growth; the callbacks drained after the function are
// part of the execution and bounded with it. Heap growth is the process-wide Go heap
// (runtime/metrics) sampled every 2ms, less the lowest sample of the run, so it is approximate:
// allocations by concurrent executions or other goroutines count too, which is why an
// over-limit sample is confirmed after a garbage collection (at most every 50ms), run beside the
// sampler, before the script is stopped; growth beyond what garbage could explain (the limit
// plus twice the live heap, and at least twice the limit) stops it without waiting.
//
// goja checks for interrupts only between JavaScript instructions, and a built-in runs
// natively to its end, so a limit can only hold if no single built-in call does unbounded work.
// This package replaces the built-ins that would (JSON.stringify, Array.prototype.join,
// toLocaleString and flat) with bounded ones that check the watchdog as they go, checks the
// others' arguments first (a RangeError "Invalid string length" or "Invalid array length"
// for a result or a loop too big for the memory limit, "Maximum call stack size exceeded" for
// nesting deeper than MaxCallStack), puts interrupt checks into the iterators that native loops
// drive, bounds regular-expression matches (to MaxTimeout each) and removes the binary-data
// constructors (ArrayBuffer, typed arrays). guard.go lists them, and the known gaps: a
// catastrophically backtracking regular expression may outlast the time limit by up to
// MaxTimeout; and a few built-ins (global regular-expression matching, sort, case
// conversion) can briefly take a few times the memory the script already holds or several
// seconds. One native call the watchdog cannot interrupt (a concatenation doubling a string)
// overshoots the memory limit by that call's allocation (a 256 MiB limit: about 0.65–1.2 GB of
// RSS at the peak); what a script stopped by the limit built is returned to the operating
// system as the call returns (releaseAfterMemoryLimit), so the overshoot does not compound from
// one run to the next. goja folds constant expressions while it compiles, on a VM of its own
// that these limits do not reach, so every source it compiles is looked at first (fold.go):
// BigInt literals are refused (the BigInt global is removed), and so is a source whose
// constant string concatenations would build more than 16 MiB. JavaScript source is parsed only up to 100,000 tokens (a script body, text given to
// eval or a Function constructor), so that goja's recursive parser cannot overflow the Go
// stack, which would end the process; eval is therefore always an indirect eval (source.go).
//
// Setting up a VM costs a few hundred microseconds. A query calling a UDF for many rows should
// use a Caller, which keeps one VM for its calls.
//
// # Errors
//
// Failures are *Error, whose Kind says what happened and whose Status is the HTTP status the API
// should answer: 400 for compile errors, exceptions, stack overflow and memory exhaustion
// (memory is the script's fault and not about payload size, so not 413), 408 for timeouts and
// cancellation, the host error's status when a Cosmos-level failure (*HostError) escapes the
// script unhandled, and 500 when the Host fails with an error that is not a *HostError.
package script
