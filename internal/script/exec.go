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
// rolls back otherwise. logging turns on console.log capture into Result.Log.
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
	if err != nil {
		return Result{}, err
	}
	res.Log = x.log.String()
	return res, nil
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
		return nil, err
	}
	return out, nil
}

// RunPostTrigger runs a post-trigger for operation op; request is the request's document body
// (what getRequest().getBody() returns) and response the stored document (what
// getResponse().getBody() returns). Changes the trigger makes to either body are discarded.
// Errors as for Execute; any error means the caller must roll the operation back.
func (p *Program) RunPostTrigger(ctx context.Context, host Host, op string, request, response []byte, lim Limits) error {
	x := newExecution(p, host, lim, false)
	x.op = op
	return x.run(ctx, func() error {
		var err error
		if x.reqBody, err = x.parseJSON(request); err != nil {
			return err
		}
		if x.respBody, err = x.parseJSON(response); err != nil {
			return err
		}
		return x.callEntry(nil)
	})
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
			c.x = nil // the VM may be mid-way through anything: start afresh
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

	reqBody    goja.Value // request body: sproc args, trigger document
	reqBodySet bool       // reports whether the script called request.setBody
	respBody   goja.Value // response body; nil until set

	// hostErrs remembers the error objects made from *HostError, so that one thrown out of the
	// script is reported with its own status (409 for a conflict) rather than 400.
	hostErrs map[*goja.Object]*HostError
	// abort is set when a host call failed with a non-HostError error; the VM is interrupted.
	abort *Error

	parser                  fastjson.Parser // reused: its values die with each conversion
	jsonStringify, toString goja.Callable
	errorCtor               goja.Value

	// fired is the watchdog's verdict once it has interrupted the VM. goja clears the interrupt
	// when the interrupted call returns to Go, so the Go→JavaScript calls made after the
	// script (rendering results and errors, which may run user toJSON/toString) check it
	// first: nothing of the script may run past its limit.
	fired atomic.Pointer[Error]
}

func newExecution(p *Program, host Host, lim Limits, logging bool) *execution {
	lim = lim.withDefaults()
	rt := goja.New()
	rt.SetMaxCallStackSize(lim.MaxCallStack)
	x := &execution{p: p, rt: rt, host: host, lim: lim, logging: logging}
	// Capture the built-ins the host itself relies on before the script can replace them.
	json := rt.Get("JSON").ToObject(rt)
	stringify, _ := goja.AssertFunction(json.Get("stringify"))
	toString, _ := goja.AssertFunction(rt.Get("String"))
	x.jsonStringify, x.toString = x.unlessFired(stringify), x.unlessFired(toString)
	x.errorCtor = rt.Get("Error")
	x.guardBuiltins()
	x.installConsole()
	if p.kind != kindUDF {
		x.installContext()
	}
	return x
}

// run runs body under the watchdog and converts every failure into an *Error. All JavaScript
// (including the rendering of results and errors, which may call user code through toJSON or
// toString) runs inside body, so the limits bound all of it.
// unlessFired wraps fn, which may run user code, to fail once the watchdog has fired.
func (x *execution) unlessFired(fn goja.Callable) goja.Callable {
	return func(this goja.Value, args ...goja.Value) (goja.Value, error) {
		if e := x.fired.Load(); e != nil {
			return nil, e
		}
		return fn(this, args...)
	}
}

func (x *execution) run(ctx context.Context, body func() error) (err error) {
	if err := ctx.Err(); err != nil {
		return newError(KindCanceled, "the request was canceled", err)
	}
	// A Caller reuses the execution: forget the previous call's watchdog, including an
	// interrupt it raised after that call's script had finished. No watchdog runs now.
	x.fired.Store(nil)
	x.rt.ClearInterrupt()
	w := startWatchdog(ctx, x.lim, func(e *Error) {
		x.fired.Store(e)
		x.rt.Interrupt(e)
	})
	defer w.stop()
	defer func() {
		// NB: goja turns JavaScript exceptions into errors, but a Go runtime panic inside a
		// built-in (e.g. an allocation size out of range) would crash the server on input a
		// script chose; report it as a failed script instead.
		if r := recover(); r != nil {
			err = newError(KindInternal, "Encountered exception while executing function. Exception = internal error", fmt.Errorf("script panic: %v\n%s", r, debug.Stack()))
		}
	}()
	err = body()
	if err == nil {
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

func (x *execution) callEntry(argv []goja.Value) error {
	fn, err := x.entryFunc()
	if err != nil {
		return err
	}
	if _, err := fn(goja.Undefined(), argv...); err != nil {
		return x.scriptError(err)
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

// stringify encodes v with the VM's JSON.stringify; ok is false when v has no JSON form
// (undefined, a function, a symbol). Errors (a cycle, a BigInt, a throwing toJSON) are
// JavaScript exceptions.
func (x *execution) stringify(v goja.Value) (s string, ok bool, err error) {
	if v == nil {
		return "", false, nil
	}
	out, err := x.jsonStringify(goja.Undefined(), v)
	if err != nil {
		return "", false, err
	}
	if goja.IsUndefined(out) {
		return "", false, nil
	}
	return out.String(), true, nil
}

// stringifyBody is stringify for a result body: nil when v has no JSON form.
func (x *execution) stringifyBody(v goja.Value) ([]byte, error) {
	s, ok, err := x.stringify(v)
	if err != nil {
		return nil, x.scriptError(err)
	}
	if !ok {
		return nil, nil
	}
	return []byte(s), nil
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
	val := ex.Value()
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
	if s, ok, err := x.stringify(v); err == nil && ok {
		return s
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

const heapMetric = "/memory/classes/heap/objects:bytes"

// watchdog interrupts a Runtime when its execution exceeds the time or memory limit or its ctx
// is done. Its goroutine is owned by the execution: stop waits for it.
type watchdog struct {
	done chan struct{}
	wg   sync.WaitGroup
}

// startWatchdog starts a watchdog that calls interrupt at most once.
func startWatchdog(ctx context.Context, lim Limits, interrupt func(*Error)) *watchdog {
	w := &watchdog{done: make(chan struct{})}
	sample := []metrics.Sample{{Name: heapMetric}}
	heap := func() int64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(sample[0].Value.Uint64())
	}
	base := heap()
	w.wg.Go(func() {
		timer := time.NewTimer(lim.Timeout)
		defer timer.Stop()
		tick := time.NewTicker(heapSampleInterval)
		defer tick.Stop()
		var lastGC time.Time
		for {
			select {
			case <-w.done:
				return
			case <-ctx.Done():
				interrupt(newError(KindCanceled, "the request was canceled", ctx.Err()))
				return
			case <-timer.C:
				interrupt(newError(KindTimeout, fmt.Sprintf("the script exceeded its time limit of %v", lim.Timeout), nil))
				return
			case <-tick.C:
				// The baseline is the lowest heap seen: the first sample may hold garbage
				// that a collection during the run frees, which would hide real growth.
				h := heap()
				base = min(base, h)
				if h-base <= lim.MaxHeapGrowth {
					continue
				}
				// The sample counts garbage and other goroutines' allocations: confirm
				// after a collection, at most every gcConfirmInterval, before blaming the
				// script.
				if time.Since(lastGC) < gcConfirmInterval {
					continue
				}
				runtime.GC()
				lastGC = time.Now()
				if heap()-base > lim.MaxHeapGrowth {
					interrupt(newError(KindMemory, fmt.Sprintf("the script exceeded its memory limit of %d bytes", lim.MaxHeapGrowth), nil))
					return
				}
			}
		}
	})
	return w
}

func (w *watchdog) stop() {
	close(w.done)
	w.wg.Wait()
}
