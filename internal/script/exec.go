package script

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"
	"github.com/valyala/fastjson"
)

// Execute runs a stored procedure with args, a JSON array whose elements are the arguments
// (nil or empty means none; a JSON value that is not an array is passed as the only argument).
// Writes go to host (non-nil), which the caller commits when Execute returns a nil error and
// rolls back otherwise. logging turns on console.log capture into Result.Log, which a
// failed run returns too (what the script logged before it failed).
//
// It returns an *Error on failure: KindArgs for malformed args, KindException, KindHost,
// KindStackOverflow, KindTimeout, KindMemory, KindCanceled or KindInternal (see ErrorKind).
// Execute is safe for concurrent use; it starts one watchdog goroutine and stops it before
// returning.
func (p *Program) Execute(ctx context.Context, host Host, args []byte, lim Limits, logging bool) (Result, error) {
	x := newExecution(p, host, lim, logging)
	var res Result
	err := x.run(ctx, func() error {
		argv, err := x.decodeArgs(args)
		if err != nil {
			return err
		}
		x.reqBody = x.rt.NewArray(toAny(argv)...)
		if err := x.callEntry(argv); err != nil {
			return err
		}
		res.Body, err = x.stringifyBody(x.respBody)
		return err
	})
	res.Log = x.log.String()
	if err != nil {
		x = nil
		releaseAfterMemoryLimit(err)
		return Result{Log: res.Log}, err
	}
	return res, nil
}

// releaseAfterMemoryLimit returns the memory of a script stopped by its
// memory limit to the operating system at once, its execution dropped by
// the caller: what it built (hundreds of megabytes, the limit overshot by a
// native call the watchdog cannot interrupt) is garbage that the collector
// would otherwise free only later, so the next script's watchdog measured
// its growth from a heap still holding it, and the overshoot compounded run
// after run (a robustness review: three runs of a doubling string peaked
// at 0.6, 2.9 and 4.7 GB of RSS). A memory stop is rare and already costly;
// a forced collection is not.
func releaseAfterMemoryLimit(err error) {
	if se, ok := errors.AsType[*Error](err); ok && se.Kind == KindMemory {
		debug.FreeOSMemory()
	}
}

// RunPreTrigger runs a pre-trigger for operation op ("Create", "Replace", "Delete", "Upsert")
// on the request's document body (JSON; nil when the operation has none, e.g. Delete) and
// returns the request body as the trigger left it: body itself when the trigger did not call
// setBody, else the JSON of what it set (nil for undefined). Errors as for Execute; any error
// aborts the operation.
func (p *Program) RunPreTrigger(ctx context.Context, host Host, op string, body []byte, lim Limits) ([]byte, error) {
	x := newExecution(p, host, lim, false)
	x.op = op
	var out []byte
	err := x.run(ctx, func() error {
		v, err := x.parseJSON(body)
		if err != nil {
			return err
		}
		x.reqBody = v
		if err := x.callEntry(nil); err != nil {
			return err
		}
		if !x.reqBodySet {
			out = body
			return nil
		}
		out, err = x.stringifyBody(x.reqBody)
		return err
	})
	if err != nil {
		x = nil
		releaseAfterMemoryLimit(err)
		return nil, err
	}
	return out, nil
}

// RunPostTrigger runs a post-trigger for operation op; request is the request's document body
// (what getRequest().getBody() returns) and response the stored document (what
// getResponse().getBody() returns). It returns the response body as the trigger left it:
// response itself unless the trigger set it (getResponse().setBody, appendBody), else the JSON
// of what it set — as Cosmos DB documents, a post-trigger's setBody overwrites the response the
// client gets (the stored document is unchanged) — or response when that has no JSON form.
// Changes to the request body are discarded. Errors as for Execute; any error means the caller
// must roll the operation back.
func (p *Program) RunPostTrigger(ctx context.Context, host Host, op string, request, response []byte, lim Limits) ([]byte, error) {
	x := newExecution(p, host, lim, false)
	x.op = op
	out := response
	err := x.run(ctx, func() error {
		var err error
		if x.reqBody, err = x.parseJSON(request); err != nil {
			return err
		}
		if x.respBody, err = x.parseJSON(response); err != nil {
			return err
		}
		if err := x.callEntry(nil); err != nil {
			return err
		}
		if x.respBodySet {
			b, err := x.stringifyBody(x.respBody)
			if err != nil {
				return err
			}
			if b != nil {
				out = b
			}
		}
		return nil
	})
	if err != nil {
		x = nil
		releaseAfterMemoryLimit(err)
		return nil, err
	}
	return out, nil
}

// Call runs a UDF with args, each the JSON of one argument (nil for undefined), and returns the
// JSON of its result, nil when it returns undefined (or a function). UDFs get no Host and no
// getContext. Errors as for Execute (KindArgs when an argument is not valid JSON). Call sets up
// a fresh VM each time (a few hundred microseconds); to call a UDF for many rows, use a Caller.
func (p *Program) Call(ctx context.Context, args [][]byte, lim Limits) ([]byte, error) {
	return p.NewCaller(lim).Call(ctx, args)
}

// Caller calls one UDF repeatedly in one VM, as a query does for its rows: the VM is set up on
// the first call and reused, so calls of one Caller share global state (a UDF that writes a
// global sees it in the next call) — create one Caller per query, never share one between
// queries. After a call stopped by a limit (timeout, memory, stack overflow) the VM is
// discarded and the next call starts afresh. A Caller is not safe for concurrent use; its zero
// value is not usable (use Program.NewCaller). It holds no goroutine between calls and needs
// no Close.
type Caller struct {
	p   *Program
	lim Limits
	x   *execution
	fn  goja.Callable
}

// NewCaller returns a Caller of p, a UDF, whose every call is bounded by lim.
func (p *Program) NewCaller(lim Limits) *Caller {
	return &Caller{p: p, lim: lim}
}

// Call is Program.Call in c's VM.
func (c *Caller) Call(ctx context.Context, args [][]byte) ([]byte, error) {
	if c.x == nil {
		c.x = newExecution(c.p, nil, c.lim, false)
		c.fn = nil
	}
	x := c.x
	var out []byte
	err := x.run(ctx, func() error {
		argv := make([]goja.Value, len(args))
		for i, a := range args {
			v, err := x.parseJSON(a)
			if err != nil {
				return err
			}
			argv[i] = v
		}
		if c.fn == nil {
			fn, err := x.entryFunc()
			if err != nil {
				return err
			}
			c.fn = fn
		}
		ret, err := c.fn(goja.Undefined(), argv...)
		if err != nil {
			return x.scriptError(err)
		}
		out, err = x.stringifyBody(ret)
		return err
	})
	if err != nil {
		if se, ok := errors.AsType[*Error](err); !ok || se.Kind != KindException && se.Kind != KindArgs {
			c.x, c.fn, x = nil, nil, nil // the VM may be mid-way through anything: start afresh
			releaseAfterMemoryLimit(err)
		}
		return nil, err
	}
	return out, nil
}

// execution is the state of one run of a Program in its own Runtime. It is confined to the
// goroutine that runs the script, except rt.Interrupt, which the watchdog calls.
type execution struct {
	p       *Program
	rt      *goja.Runtime
	host    Host // nil for UDFs
	lim     Limits
	logging bool
	log     strings.Builder
	ops     int
	op      string // trigger operation type

	reqBody     goja.Value // request body: sproc args, trigger document
	reqBodySet  bool       // reports whether the script called request.setBody
	respBody    goja.Value // response body; nil until set
	respBodySet bool       // reports whether the script set the response body

	// hostErrs remembers the error objects made from *HostError, so that one thrown out of the
	// script is reported with its own status (409 for a conflict) rather than 400.
	hostErrs map[*goja.Object]*HostError
	// abort is set when a host call failed with a non-HostError error; the VM is interrupted.
	abort *Error

	parser fastjson.Parser // reused: its values die with each conversion

	// Built-ins captured before the script runs, which may replace them: String(v) (failing
	// once the watchdog has fired), Array.isArray (for proxies), Object.keys, Reflect.get and
	// Reflect.has (for keys that are not exact in Go, and proxies), Error and RangeError.
	toString, isArrayFn                      goja.Callable
	objectKeysFn, reflectGetFn, reflectHasFn goja.Callable
	errorCtor, rangeCtor                     goja.Value

	// plusFn is JavaScript's + (see plus), made on first use.
	plusFn goja.Callable
	// copyFn copies an object shallowly (see shallowCopy), made on first use.
	copyFn goja.Callable

	// protectFn runs protected, a Go function, as a native function (see protect).
	protectFn goja.Callable
	protected func()

	// jobs are the callbacks of performed operations, waiting for the script's call stack to
	// unwind (see drain).
	jobs []job
	// joining are the arrays whose join or toLocaleString is in progress, innermost last.
	joining []*goja.Object

	// hostCtx is the context of the host calls of the current run: it ends with the run's
	// context and when the watchdog fires, so that a host call that runs Go code for long (a
	// query) stops with the script.
	hostCtx context.Context

	// fired is the watchdog's verdict once it has interrupted the VM. goja clears the interrupt
	// when the interrupted call returns to Go, so the Go→JavaScript calls made after the
	// script (rendering results and errors, which may run user toJSON/toString) check it
	// first: nothing of the script may run past its limit.
	fired atomic.Pointer[Error]
}

func newExecution(p *Program, host Host, lim Limits, logging bool) *execution {
	setRegexpTimeout()
	lim = lim.withDefaults()
	rt := goja.New()
	rt.SetMaxCallStackSize(lim.MaxCallStack)
	x := &execution{p: p, rt: rt, host: host, lim: lim, logging: logging}
	// Capture the built-ins the host itself relies on before the script can replace them.
	toString, _ := goja.AssertFunction(rt.Get("String"))
	x.toString = x.unlessFired(toString)
	x.isArrayFn, _ = goja.AssertFunction(rt.Get("Array").ToObject(rt).Get("isArray"))
	x.objectKeysFn, _ = goja.AssertFunction(rt.Get("Object").ToObject(rt).Get("keys"))
	reflect := rt.Get("Reflect").ToObject(rt)
	x.reflectGetFn, _ = goja.AssertFunction(reflect.Get("get"))
	x.reflectHasFn, _ = goja.AssertFunction(reflect.Get("has"))
	x.errorCtor, x.rangeCtor = rt.Get("Error"), rt.Get("RangeError")
	x.protectFn, _ = goja.AssertFunction(rt.ToValue(func(goja.FunctionCall) goja.Value {
		f := x.protected
		x.protected = nil
		f()
		return goja.Undefined()
	}))
	x.guardBuiltins()
	if _, err := rt.RunProgram(errorCodeForm); err != nil {
		panic("script: the Error prelude failed: " + err.Error()) // fixed code on a fresh runtime
	}
	x.installConsole()
	if p.kind != kindUDF {
		x.installContext()
	}
	return x
}

// errorCodeForm gives Error the two-argument form of the JScript engine Cosmos DB's scripts
// ran on, which its wrapper and samples use: new Error(code, message) makes an Error whose
// message is message and whose number is code (standard JavaScript takes the code as the
// message: a scripts hunt found "Exception = Error: 400" where Cosmos DB says the message).
// Any other call is the standard one. The prototype is shared, so instanceof, subclasses
// (class X extends Error) and the built-in errors work as before.
var errorCodeForm = goja.MustCompile("errorCodeForm", `(function () {
	var E = Error;
	var W = function Error(a, b) {
		if (typeof a === "number" && typeof b === "string") {
			var e = new.target ? Reflect.construct(E, [b], new.target) : new E(b);
			e.number = a;
			return e;
		}
		return new.target ? Reflect.construct(E, arguments, new.target) : E.apply(undefined, arguments);
	};
	W.prototype = E.prototype;
	Object.defineProperty(E.prototype, "constructor", {value: W, writable: true, configurable: true});
	Object.defineProperty(globalThis, "Error", {value: W, writable: true, configurable: true});
})();`, false)

// unlessFired wraps fn, which may run user code, to fail once the watchdog has fired.
func (x *execution) unlessFired(fn goja.Callable) goja.Callable {
	return func(this goja.Value, args ...goja.Value) (goja.Value, error) {
		if e := x.fired.Load(); e != nil {
			return nil, e
		}
		return fn(this, args...)
	}
}

// protect runs f, Go code that may throw JavaScript exceptions or call JavaScript, as a native
// function called from Go: an exception or interrupt raised in it comes back as the error.
func (x *execution) protect(f func()) error {
	if e := x.fired.Load(); e != nil {
		return e
	}
	x.protected = f
	_, err := x.protectFn(goja.Undefined())
	return err
}

// call calls fn from a native function, rethrowing into the script the exception or interrupt
// it raises.
func (x *execution) call(fn goja.Callable, this goja.Value, args ...goja.Value) goja.Value {
	v, err := fn(this, args...)
	if err != nil {
		panic(err)
	}
	return v
}

// interruptProbe is an empty program: running it in an interrupted runtime raises goja's
// uncatchable *goja.InterruptedError at the point where it runs (see checkFired).
var interruptProbe = goja.MustCompile("interrupt", "", false)

// checkFired stops the script from inside a native function once the watchdog has reached a
// verdict. goja checks for interrupts only between JavaScript instructions, so a built-in
// that loops natively (JSON.stringify over a huge array, an iterator driven by spread) would
// otherwise run on to its end; the built-ins this package installs or wraps call checkFired
// as they go. The probe makes goja raise its own interrupt error here, so the script unwinds
// exactly as if it had been interrupted between instructions (finally blocks do not run, and
// nothing can catch it).
func (x *execution) checkFired() {
	e := x.fired.Load()
	if e == nil {
		return
	}
	x.rt.Interrupt(e) // goja clears its flag when an interrupted call returns to Go
	_, err := x.rt.RunProgram(interruptProbe)
	if err == nil {
		err = e
	}
	panic(err)
}

// run runs body under the watchdog and converts every failure into an *Error. All JavaScript
// (including the rendering of results and errors, which may call user code through toJSON or
// toString) runs inside body, so the limits bound all of it.
func (x *execution) run(ctx context.Context, body func() error) (err error) {
	if err := ctx.Err(); err != nil {
		return newError(KindCanceled, "the request was canceled", err)
	}
	// A Caller reuses the execution: forget the previous call's watchdog, including an
	// interrupt it raised after that call's script had finished. No watchdog runs now.
	x.fired.Store(nil)
	x.rt.ClearInterrupt()
	start := time.Now()
	hostCtx, endHost := context.WithCancel(ctx)
	defer endHost()
	x.hostCtx = hostCtx
	w := startWatchdog(ctx, x.lim, func(e *Error) {
		x.fired.Store(e)
		endHost()
		x.rt.Interrupt(e)
	})
	defer w.stop()
	defer func() {
		// NB: goja turns JavaScript exceptions into errors, but a Go runtime panic inside a
		// built-in (e.g. an allocation size out of range) would crash the server on input a
		// script chose; report it as a failed script instead.
		if r := recover(); r != nil {
			if e, ok := r.(*Error); ok {
				err = e // a verdict that escaped goja's own unwinding (see checkFired)
				return
			}
			err = newError(KindInternal, "Encountered exception while executing function. Exception = internal error", fmt.Errorf("script panic: %v\n%s", r, debug.Stack()))
		}
	}()
	err = body()
	if err == nil {
		// A run that outlasted its time limit fails even if it ended before the watchdog
		// could interrupt it: a built-in may have given up past the limit (a regular
		// expression reports "no match", see regexpMatchTimeout), and its made-up result
		// must not reach the caller.
		if time.Since(start) >= x.lim.Timeout {
			return timeoutError(x.lim)
		}
		return nil
	}
	if se, ok := errors.AsType[*Error](err); ok {
		return se
	}
	return x.scriptError(err)
}

// entryFunc returns the script's function.
func (x *execution) entryFunc() (goja.Callable, error) {
	v, err := x.rt.RunProgram(x.p.prg)
	if err != nil {
		return nil, x.scriptError(err)
	}
	if x.p.entry != "" {
		v = x.rt.Get(x.p.entry)
	}
	fn, ok := goja.AssertFunction(v)
	if !ok {
		return nil, newError(KindException, "Encountered exception while executing function. Exception = TypeError: the script body is not a function", nil)
	}
	return fn, nil
}

// callEntry calls the script's function with argv, then runs the callbacks it queued (drain).
func (x *execution) callEntry(argv []goja.Value) error {
	fn, err := x.entryFunc()
	if err != nil {
		return err
	}
	if _, err := fn(goja.Undefined(), argv...); err != nil {
		return x.scriptError(err)
	}
	return x.drain()
}

// job is a queued callback and the arguments it is to be called with.
type job struct {
	cb   goja.Callable
	args []goja.Value
}

// drain is the script's event loop: it calls the queued callbacks in the order their
// operations were performed, each on an empty JavaScript stack, including the callbacks they
// queue, until none is left. As in Cosmos DB, a callback runs after the call that queued it
// has returned, so the usual recursive pattern (each callback starts the next operation) does
// not nest, however many operations it performs. An exception escaping a callback fails the
// execution; the watchdog bounds the loop as it bounds the entry function.
func (x *execution) drain() error {
	for len(x.jobs) > 0 {
		j := x.jobs[0]
		x.jobs[0] = job{} // release the arguments
		x.jobs = x.jobs[1:]
		if _, err := j.cb(goja.Undefined(), j.args...); err != nil {
			return x.scriptError(err)
		}
	}
	return nil
}

// decodeArgs turns a sproc's JSON argument array into argument values.
func (x *execution) decodeArgs(args []byte) ([]goja.Value, error) {
	v, err := x.parseJSON(args)
	if err != nil || v == nil || goja.IsUndefined(v) {
		return nil, err
	}
	obj, ok := v.(*goja.Object)
	if !ok || obj.ClassName() != "Array" {
		return []goja.Value{v}, nil
	}
	n := int(prop(obj, "length").ToInteger())
	argv := make([]goja.Value, n)
	for i := range argv {
		argv[i] = prop(obj, fmt.Sprint(i))
	}
	return argv, nil
}

// parseJSON decodes data as JSON.parse would; nil or empty data is undefined. Invalid JSON is
// a KindArgs error.
func (x *execution) parseJSON(data []byte) (goja.Value, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return goja.Undefined(), nil
	}
	v, err := x.parser.ParseBytes(data)
	if err != nil {
		return nil, newError(KindArgs, "the arguments are not valid JSON: "+err.Error(), nil)
	}
	return x.fromJSON(v), nil
}

// stringify encodes v as JSON.stringify would (see jsonWriter); ok is false when v has no
// JSON form (undefined, a function, a symbol). Errors (a cycle, a BigInt, a throwing toJSON, a
// result over the string budget) are JavaScript exceptions, or the watchdog's verdict.
func (x *execution) stringify(v goja.Value) (b []byte, ok bool, err error) {
	if v == nil {
		return nil, false, nil
	}
	err = x.protect(func() {
		b, ok = x.marshalJSON(v, goja.Undefined(), goja.Undefined())
	})
	if err != nil {
		return nil, false, err
	}
	return b, ok, nil
}

// stringifyBody is stringify for a result body: nil when v has no JSON form.
func (x *execution) stringifyBody(v goja.Value) ([]byte, error) {
	b, ok, err := x.stringify(v)
	if err != nil {
		return nil, x.scriptError(err)
	}
	if !ok {
		return nil, nil
	}
	return b, nil
}

// scriptError converts an error out of goja into an *Error.
func (x *execution) scriptError(err error) *Error {
	if x.abort != nil {
		return x.abort
	}
	if e := x.fired.Load(); e != nil {
		return e
	}
	if ie, ok := errors.AsType[*goja.InterruptedError](err); ok {
		if e, ok := ie.Value().(*Error); ok {
			return e
		}
		return newError(KindInternal, "Encountered exception while executing function. Exception = internal error", err)
	}
	if _, ok := errors.AsType[*goja.StackOverflowError](err); ok {
		return newError(KindStackOverflow, "Encountered exception while executing function. Exception = RangeError: Maximum call stack size exceeded", nil)
	}
	ex, ok := errors.AsType[*goja.Exception](err)
	if !ok {
		if se, ok := errors.AsType[*Error](err); ok {
			return se
		}
		return newError(KindInternal, "Encountered exception while executing function. Exception = internal error", err)
	}
	return x.thrown(ex.Value())
}

// thrown is the failure of a script that threw val and did not catch it (or passed it to
// getContext().abort): a host operation's error keeps its status, anything else is a 400
// rendering val.
func (x *execution) thrown(val goja.Value) *Error {
	if obj, ok := val.(*goja.Object); ok {
		if he := x.hostErrs[obj]; he != nil {
			return &Error{Kind: KindHost, Status: he.Status, Sub: he.Sub, Msg: truncate(he.Msg, maxMsgBytes), cause: he}
		}
	}
	msg := x.render(val)
	if e := x.fired.Load(); e != nil {
		return e // rendering was cut short
	}
	return newError(KindException, "Encountered exception while executing function. Exception = "+msg, nil)
}

// render is a client-facing rendering of a thrown value: "Error: msg" for Error objects,
// JSON for other values where it has one ("42", `{"a":1}`, "null", `"str"`), else String(v).
func (x *execution) render(v goja.Value) string {
	if v == nil || goja.IsUndefined(v) {
		return "undefined"
	}
	if obj, ok := v.(*goja.Object); ok {
		// ClassName is the internal [[Class]]: "Error" for every Error and subclass instance,
		// without running user code (instanceof would consult Symbol.hasInstance).
		if obj.ClassName() == "Error" {
			if s, err := x.toString(goja.Undefined(), v); err == nil {
				return s.String()
			}
			return "Error"
		}
	}
	if b, ok, err := x.stringify(v); err == nil && ok {
		return string(b)
	}
	if s, err := x.toString(goja.Undefined(), v); err == nil {
		return s.String()
	}
	return "(unprintable value)"
}

func toAny(vs []goja.Value) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}

// heapSampleInterval is how often the watchdog samples the Go heap: short enough that a
// script allocating at full speed overshoots MaxHeapGrowth by little, long enough to cost
// nothing measurable (one runtime/metrics read, no stop-the-world).
const heapSampleInterval = 2 * time.Millisecond

// gcConfirmInterval rate-limits the garbage collections that confirm an over-limit sample.
const gcConfirmInterval = 50 * time.Millisecond

const (
	heapMetric = "/memory/classes/heap/objects:bytes"
	liveMetric = "/gc/heap/live:bytes"
)

// watchdog interrupts a Runtime when its execution exceeds the time or memory limit or its ctx
// is done. Its goroutines (the sampler and at most one confirming collection) are owned by the
// execution: stop waits for them.
type watchdog struct {
	done chan struct{}
	wg   sync.WaitGroup
}

// readMetric returns the value of a uint64 runtime metric, 0 if the runtime lacks it.
func readMetric(name string) int64 {
	s := [...]metrics.Sample{{Name: name}}
	metrics.Read(s[:])
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

func timeoutError(lim Limits) *Error {
	return newError(KindTimeout, fmt.Sprintf("the script exceeded its time limit of %v", lim.Timeout), nil)
}

// startWatchdog starts a watchdog that calls interrupt at most once.
//
// Memory is judged from heap samples: growth is the heap less the lowest sample of the run. A
// sample counts garbage and other goroutines' allocations too, so growth over MaxHeapGrowth is
// confirmed by a garbage collection before the script is blamed. The collection runs on its
// own goroutine and sampling goes on meanwhile: a collection cannot finish its stop-the-world
// phases while the script is inside one long native call (a concatenation copying hundreds of
// megabytes cannot be preempted), and a sampler blocked in runtime.GC let the hardening
// issue's doubling string (`x = x + x`) grow from 256 MiB to over 2 GiB before the verdict.
//
// Growth the collector's pacing cannot explain as garbage is not waited for: the heap gathers
// about one live heap of garbage (GOGC=100) before a collection starts, so growth beyond
// MaxHeapGrowth plus twice the live heap at the start (and at least twice MaxHeapGrowth) is
// allocation, and the next doubling would come before any confirmation. A server running
// with a larger GOGC, or whose live heap grows fast during the script for other reasons, may
// see a script stopped wrongly; MaxHeapGrowth is the knob.
func startWatchdog(ctx context.Context, lim Limits, interrupt func(*Error)) *watchdog {
	w := &watchdog{done: make(chan struct{})}
	base := readMetric(heapMetric)
	hardGrowth := lim.MaxHeapGrowth + max(lim.MaxHeapGrowth, 2*readMetric(liveMetric))
	memErr := func() *Error {
		return newError(KindMemory, fmt.Sprintf("the script exceeded its memory limit of %d bytes", lim.MaxHeapGrowth), nil)
	}
	w.wg.Go(func() {
		timer := time.NewTimer(lim.Timeout)
		defer timer.Stop()
		tick := time.NewTicker(heapSampleInterval)
		defer tick.Stop()
		var (
			lastGC     time.Time
			confirming chan int64 // the heap after the confirming collection; nil when none runs
		)
		for {
			select {
			case <-w.done:
				return
			case <-ctx.Done():
				interrupt(newError(KindCanceled, "the request was canceled", ctx.Err()))
				return
			case <-timer.C:
				interrupt(timeoutError(lim))
				return
			case h := <-confirming:
				confirming, lastGC = nil, time.Now()
				if h-base > lim.MaxHeapGrowth {
					interrupt(memErr())
					return
				}
			case <-tick.C:
				// The baseline is the lowest heap seen: the first sample may hold garbage
				// that a collection during the run frees, which would hide real growth.
				h := readMetric(heapMetric)
				base = min(base, h)
				growth := h - base
				if growth <= lim.MaxHeapGrowth {
					continue
				}
				if growth > hardGrowth {
					interrupt(memErr())
					return
				}
				if confirming != nil || time.Since(lastGC) < gcConfirmInterval {
					continue
				}
				// Buffered so that the collector's send never waits for the sampler.
				c := make(chan int64, 1)
				confirming = c
				w.wg.Go(func() {
					runtime.GC()
					c <- readMetric(heapMetric)
				})
			}
		}
	})
	return w
}

// stop stops the watchdog and waits for its goroutines, including a confirming collection in
// progress.
func (w *watchdog) stop() {
	close(w.done)
	w.wg.Wait()
}
