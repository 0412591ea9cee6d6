package script

import (
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"
)

// The budgets of one built-in call. A goja built-in runs natively from start to end: the
// watchdog's interrupt takes effect only at the next JavaScript instruction, and the heap it
// samples only shows an allocation once it is made. So the built-ins that can produce far more
// than their arguments hold check the size first.

// maxStringBytes bounds a string one built-in call produces: a quarter of MaxHeapGrowth, so
// that the result, the copies made while it grows and its inputs stay within the limit.
func (x *execution) maxStringBytes() int { return int(x.lim.MaxHeapGrowth / 4) }

// maxStringUnits is maxStringBytes in UTF-16 code units, at 2 bytes per unit (the worst case).
func (x *execution) maxStringUnits() int64 { return x.lim.MaxHeapGrowth / 8 }

// maxArrayLength bounds the elements a built-in call visits or creates: the most a dense array
// can have within MaxHeapGrowth (a goja.Value is a 16-byte interface).
func (x *execution) maxArrayLength() int64 { return x.lim.MaxHeapGrowth / 16 }

// maxDecomposition is the most UTF-16 code units one code unit becomes under normalize
// (U+FDFA under NFKD).
const maxDecomposition = 18

// regexpMatchTimeout bounds one regular-expression match that goja runs with regexp2, the
// backtracking engine it uses for patterns Go's regexp cannot run (lookaround,
// backreferences). Such a match runs natively, out of the watchdog's reach, and may take time
// exponential in its input: `/^(?=a)(a+)+$/.test("a".repeat(24) + "b")` doubles with every
// "a". regexp2 gives up after its MatchTimeout, and goja then reports "no match"; the timeout
// equals the longest Limits.Timeout allowed, so that a match given up on always outlasted its
// execution's time limit: the watchdog has interrupted the VM by then (and should it lag, a run
// that outlasted its limit fails anyway, see run), so the made-up "no match" never reaches a
// result. A match therefore overshoots the time limit by at most regexpMatchTimeout.
const regexpMatchTimeout = MaxTimeout

// setRegexpTimeout sets regexp2's package-wide default match timeout, which regexp2 copies
// into every pattern it compiles; goja offers no per-pattern or per-runtime setting, and
// patterns compiled into a Program (regular-expression literals) are shared by every
// execution of it, so the timeout cannot follow each execution's remaining time. It runs
// before the first script is compiled or run; this package is the only user of goja, and so
// of regexp2, in the process.
//
// NB: a package variable of a dependency, set once. The alternative, a fork of goja, would
// cost more than a timeout tied to the longest time limit rather than the remaining one.
var setRegexpTimeout = sync.OnceFunc(func() {
	regexp2.DefaultMatchTimeout = regexpMatchTimeout
})

// guardBuiltins makes the built-ins safe to give a script, each with a check ahead of work or
// allocation that a single native call would otherwise do without bound (goja checks for
// interrupts only between JavaScript instructions):
//
//   - JSON.stringify is this package's (stringify.go): bounded output and nesting, and it
//     checks the watchdog at every value;
//   - eval and the Function constructors refuse source of more than maxSourceTokens tokens,
//     as compile refuses such a script body (source.go): goja's parser recurses natively, and
//     "(".repeat(1e6) given to eval overflowed the Go stack, which ends the process;
//   - JSON.parse refuses text nested deeper than MaxCallStack or whose values would take more
//     than maxStringBytes (goja's parser recurses natively: "[".repeat(1e7) overflowed the Go
//     stack, which kills the process);
//   - Array.prototype.join and toLocaleString (and toString, which calls join) are this
//     package's: the result is bounded by maxStringUnits (`new Array(1e6).join(x)` and an
//     array of 3,000 references to one 1 MB string built gigabytes), nesting by MaxCallStack
//     (String(a) of a 500,000-deep array overflowed the Go stack), and the watchdog is checked
//     at every element; Array.prototype.flat is this package's for the same reasons (1,000
//     references to one large array flatten to a billion elements);
//   - String.prototype.repeat, padStart, padEnd, concat and String.raw refuse results over
//     maxStringUnits, normalize refuses inputs whose decomposition could exceed it, split
//     refuses results over maxArrayLength elements, and a replacement string given to
//     replace or replaceAll is expanded by this package, one match at a time under the same
//     budget, when the result could exceed it (RangeError "Invalid string length", as V8 says
//     for its own maximum, or "Invalid array length");
//   - the Array.prototype methods that loop natively over this.length (fill, indexOf, slice,
//     sort, concat, the iterator behind spread and Array.from, the callback methods, which
//     skip holes without running JavaScript, ...), Array.from, Function.prototype.apply and
//     Reflect.apply/construct refuse an array (or array-like) longer than maxArrayLength:
//     `var a = []; a.length = 2**32-1; a.fill(0)` would allocate 64 GiB;
//   - the next methods of the array, string and regular-expression (matchAll) iterators check
//     the watchdog, so that spread, Array.from, new Set(...) and the like, which drive an
//     iterator in a native loop, stop when a limit is reached;
//   - every wrapped built-in checks the watchdog when called;
//   - ArrayBuffer, SharedArrayBuffer, DataView and the typed arrays, which allocate their whole
//     length up front through several entry points, are removed (stored procedures do not use
//     binary data; every document is JSON);
//   - BigInt (the global, and literals, refused before compiling: fold.go), whose powers and
//     shifts are single native calls that build numbers of any size (`2n ** (1n << 40n)` grew
//     the process by 200 MB a second until it was killed); JSON has no BigInt either.
//
// NB: known gaps, each bounded but not by the limits themselves:
//   - a regular-expression match run by regexp2 (see regexpMatchTimeout) may outlast the time
//     limit by up to MaxTimeout;
//   - a global match, replace or split collects all its matches natively (about 100 bytes per
//     match) before returning, and Array.prototype.sort without a comparator sorts natively in
//     O(n log n) string comparisons; both are bounded by the size of what the script already
//     holds (maxArrayLength elements, a string the memory limit let it build) rather than by
//     the limits, and can take a few times that memory or several seconds;
//   - built-ins whose result is a small multiple of their input (case conversion,
//     encodeURIComponent, spreading a Map or Set, ...) can briefly take that multiple of the
//     largest string or collection the script holds;
//
// NB: this costs most of an execution's setup (about 0.3 ms): goja materialises each built-in
// it touches. It is paid per execution, since runtimes are never shared between executions.
func (x *execution) guardBuiltins() {
	rt := x.rt
	maxUnits := float64(x.maxStringUnits())
	maxLen := float64(x.maxArrayLength())
	tooLong := func(n float64) {
		if n > maxLen {
			x.throwRange("Invalid array length")
		}
	}
	strProto := x.proto("String")
	arrProto := x.proto("Array")

	x.wrap(strProto, "repeat", func(call goja.FunctionCall) {
		if units(call.This)*num(call.Argument(0)) > maxUnits {
			x.throwRange("Invalid string length")
		}
	})
	pad := func(call goja.FunctionCall) {
		if num(call.Argument(0)) > maxUnits {
			x.throwRange("Invalid string length")
		}
	}
	x.wrap(strProto, "padStart", pad)
	x.wrap(strProto, "padEnd", pad)
	// Arguments that are objects are converted by their own toString, which is JavaScript
	// (interruptible); only the strings given as they are can be measured ahead.
	x.wrap(strProto, "concat", func(call goja.FunctionCall) {
		n := units(call.This)
		for _, a := range call.Arguments {
			n += units(a)
		}
		if n > maxUnits {
			x.throwRange("Invalid string length")
		}
	})
	x.wrap(strProto, "normalize", func(call goja.FunctionCall) {
		if units(call.This)*maxDecomposition > maxUnits {
			x.throwRange("Invalid string length")
		}
	})
	x.wrap(strProto, "split", func(call goja.FunctionCall) {
		// A separator that is an object (a regular expression) splits in its own
		// Symbol.split, guarded below. Only a string with more units than maxLen can split
		// into more than maxLen pieces; count them then.
		this, sep := call.This, call.Argument(0)
		if !isString(this) || isObject(sep) || isNullish(sep) || units(this) <= maxLen {
			return
		}
		pieces := units(this)
		if s := sep.String(); s != "" {
			pieces = float64(strings.Count(this.String(), s) + 1)
		}
		if lim := call.Argument(1); !goja.IsUndefined(lim) {
			pieces = min(pieces, float64(uint32(lim.ToInteger())))
		}
		tooLong(pieces)
	})
	x.wrap(rt.Get("String").ToObject(rt), "raw", func(call goja.FunctionCall) {
		if cooked, ok := call.Argument(0).(*goja.Object); ok {
			if raw, ok := prop(cooked, "raw").(*goja.Object); ok {
				n := num(prop(raw, "length"))
				tooLong(n)
				// Each literal segment adds at least "undefined" when missing.
				if n*float64(len("undefined")) > maxUnits {
					x.throwRange("Invalid string length")
				}
			}
		}
	})
	x.guardReplace(strProto, "replace")
	x.guardReplace(strProto, "replaceAll")

	checkThisLen := func(call goja.FunctionCall) { tooLong(lengthOf(call.This)) }
	for _, name := range []string{"fill", "indexOf", "lastIndexOf",
		"includes", "reverse", "copyWithin", "slice", "splice", "sort", "toReversed",
		"toSorted", "toSpliced", "with", "keys", "entries", "toString",
		// The callback methods skip holes natively: a sparse array of length 2**32-1 would
		// loop for minutes without running a JavaScript instruction.
		"forEach", "map", "filter", "some", "every", "reduce", "reduceRight", "find", "findIndex",
		"findLast", "findLastIndex", "flatMap", "unshift", "shift"} {
		x.wrap(arrProto, name, checkThisLen)
	}
	// concat spreads its array arguments natively too.
	x.wrap(arrProto, "concat", func(call goja.FunctionCall) {
		total := lengthOf(call.This)
		for _, a := range call.Arguments {
			total += lengthOf(a)
		}
		tooLong(total)
	})
	x.define(arrProto, "join", rt.ToValue(x.arrayJoin))
	x.define(arrProto, "toLocaleString", rt.ToValue(x.arrayToLocaleString))
	x.define(arrProto, "flat", rt.ToValue(x.arrayFlat))

	// Spread, Array.from(iterable), new Set(array), ... iterate an array through
	// Array.prototype[Symbol.iterator] in a native loop.
	if orig, ok := goja.AssertFunction(arrProto.GetSymbol(goja.SymIterator)); ok {
		fn := x.guarded(orig, checkThisLen)
		x.defineSymbol(arrProto, goja.SymIterator, fn)
		x.define(arrProto, "values", fn)
	}
	x.wrap(rt.Get("Array").ToObject(rt), "from", func(call goja.FunctionCall) {
		tooLong(lengthOf(call.Argument(0)))
	})
	x.wrap(x.proto("Function"), "apply", func(call goja.FunctionCall) {
		tooLong(lengthOf(call.Argument(1)))
	})
	if reflect, ok := rt.Get("Reflect").(*goja.Object); ok {
		x.wrap(reflect, "apply", func(call goja.FunctionCall) { tooLong(lengthOf(call.Argument(2))) })
		x.wrap(reflect, "construct", func(call goja.FunctionCall) { tooLong(lengthOf(call.Argument(1))) })
	}

	json := rt.Get("JSON").ToObject(rt)
	x.define(json, "stringify", rt.ToValue(x.jsonStringify))
	x.guardParse(json)
	x.guardCompilers()

	regexpProto := x.proto("RegExp")
	// NB: RegExp.prototype.exec is left alone: replacing it turns every regular-expression
	// method onto goja's generic, spec-literal paths, 6 to 15 times slower.
	x.wrap(regexpProto, goja.SymSplit, func(call goja.FunctionCall) {
		// One piece per code unit at most; the separator is not known ahead.
		tooLong(units(call.Argument(0)))
	})
	x.guardReplace(regexpProto, goja.SymReplace)

	// Interrupt points in the iterators that native loops drive.
	for _, it := range x.iteratorPrototypes() {
		x.wrap(it, "next", nil)
	}

	for _, name := range []string{"ArrayBuffer", "SharedArrayBuffer", "DataView", "Int8Array", "Uint8Array",
		"Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "Float32Array",
		"Float64Array", "BigInt64Array", "BigUint64Array", "BigInt"} {
		rt.GlobalObject().Delete(name)
	}
}

// iteratorPrototypes returns %ArrayIteratorPrototype%, %StringIteratorPrototype% and
// %RegExpStringIteratorPrototype%. (Map and Set iterators are left alone: they visit only what
// the script added one instruction at a time, and materialising Map and Set for every
// execution would cost more than it buys.)
func (x *execution) iteratorPrototypes() []*goja.Object {
	rt := x.rt
	var out []*goja.Object
	iterProto := func(v goja.Value, method any, args ...goja.Value) {
		obj := v.ToObject(rt)
		fn, ok := methodOf(obj, method)
		if !ok {
			return
		}
		it, err := fn(v, args...)
		if err != nil {
			return
		}
		if p := it.ToObject(rt).Prototype(); p != nil {
			out = append(out, p)
		}
	}
	iterProto(rt.NewArray(), goja.SymIterator)
	iterProto(rt.ToValue(""), goja.SymIterator)
	if rx, err := rt.New(rt.Get("RegExp"), rt.ToValue(""), rt.ToValue("g")); err == nil {
		iterProto(rx, goja.SymMatchAll, rt.ToValue(""))
	}
	return out
}

// methodOf returns obj's method key (a string or a *goja.Symbol), and whether it is a function.
func methodOf(obj *goja.Object, key any) (goja.Callable, bool) {
	var v goja.Value
	switch k := key.(type) {
	case string:
		v = obj.Get(k)
	case *goja.Symbol:
		v = obj.GetSymbol(k)
	}
	return goja.AssertFunction(v)
}

// defineMethod defines owner's method key (a string or a *goja.Symbol) as fn, with the
// attributes of a built-in method (see define).
func (x *execution) defineMethod(owner *goja.Object, key any, fn goja.Value) {
	switch k := key.(type) {
	case string:
		x.define(owner, k, fn)
	case *goja.Symbol:
		x.defineSymbol(owner, k, fn)
	}
}

// proto returns the prototype of the global constructor ctor.
func (x *execution) proto(ctor string) *goja.Object {
	return x.rt.Get(ctor).ToObject(x.rt).Get("prototype").ToObject(x.rt)
}

// wrap replaces owner's method key (a string or a *goja.Symbol) with one that checks the
// watchdog, then check (when not nil), then calls the original.
func (x *execution) wrap(owner *goja.Object, key any, check func(goja.FunctionCall)) {
	orig, ok := methodOf(owner, key)
	if !ok {
		return
	}
	fn := x.guarded(orig, check)
	x.defineMethod(owner, key, fn)
}

// guarded returns a native function that checks the watchdog, then check, then calls orig.
func (x *execution) guarded(orig goja.Callable, check func(goja.FunctionCall)) goja.Value {
	return x.rt.ToValue(func(call goja.FunctionCall) goja.Value {
		x.checkFired()
		if check != nil {
			check(call)
		}
		return x.call(orig, call.This, call.Arguments...)
	})
}

// define sets a method as built-in methods are: writable, configurable, not enumerable (for-in
// over arrays must not see it).
func (x *execution) define(owner *goja.Object, name string, fn goja.Value) {
	if err := owner.DefineDataProperty(name, fn, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		panic(err) // built-in methods are configurable
	}
}

func (x *execution) defineSymbol(owner *goja.Object, sym *goja.Symbol, fn goja.Value) {
	if err := owner.DefineDataPropertySymbol(sym, fn, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		panic(err)
	}
}

// throwRange throws a RangeError with msg into the script.
func (x *execution) throwRange(msg string) {
	obj, err := x.rt.New(x.rangeCtor, x.rt.ToValue(msg))
	if err != nil {
		panic(err)
	}
	panic(obj)
}

// num is ToNumber(v) for a length or count: 0 for undefined, null and NaN.
func num(v goja.Value) float64 {
	if isNullish(v) {
		return 0
	}
	n := v.ToFloat()
	if math.IsNaN(n) {
		return 0
	}
	return n
}

// units is the length in UTF-16 code units of v when it is a string, else 0.
func units(v goja.Value) float64 {
	if s, ok := v.(goja.String); ok {
		return float64(s.Length())
	}
	return 0
}

// lengthOf is v.length when v is an object, else 0.
func lengthOf(v goja.Value) float64 {
	obj, ok := v.(*goja.Object)
	if !ok {
		return 0
	}
	return num(obj.Get("length"))
}

// arrayJoin is Array.prototype.join: goja's, bounded (see guardBuiltins). As goja's (and V8's),
// it joins an array that is already being joined, a cycle, as the empty string.
func (x *execution) arrayJoin(call goja.FunctionCall) goja.Value {
	return x.joinWith(call, x.jsString, call.Argument(0))
}

// arrayToLocaleString is Array.prototype.toLocaleString, bounded as arrayJoin.
func (x *execution) arrayToLocaleString(call goja.FunctionCall) goja.Value {
	return x.joinWith(call, func(el goja.Value) goja.String {
		fn, ok := goja.AssertFunction(prop(el.ToObject(x.rt), "toLocaleString"))
		if !ok {
			x.throwTypeError("Property 'toLocaleString' of object %s is not a function", el.String())
		}
		return x.jsString(x.call(fn, el))
	}, goja.Undefined())
}

func (x *execution) joinWith(call goja.FunctionCall, str func(goja.Value) goja.String, sepArg goja.Value) goja.Value {
	x.checkFired()
	o := call.This.ToObject(x.rt)
	for _, a := range x.joining {
		if a == o {
			return x.rt.ToValue("")
		}
	}
	if len(x.joining) >= x.lim.MaxCallStack {
		x.throwRange("Maximum call stack size exceeded")
	}
	x.joining = append(x.joining, o)
	defer func() { x.joining = x.joining[:len(x.joining)-1] }()

	n := toLength(o.Get("length"))
	if n > x.maxArrayLength() {
		x.throwRange("Invalid array length")
	}
	var sep goja.String
	if goja.IsUndefined(sepArg) {
		sep = x.rt.ToValue(",").(goja.String)
	} else {
		sep = x.jsString(sepArg)
	}
	maxUnits := x.maxStringUnits()
	if n > 1 && int64(sep.Length())*(n-1) > maxUnits {
		x.throwRange("Invalid string length")
	}
	var b goja.StringBuilder
	total := int64(0)
	for i := range n {
		x.checkFired()
		if i > 0 {
			b.WriteString(sep)
			total += int64(sep.Length())
		}
		el := prop(o, strconv.FormatInt(i, 10))
		if isNullish(el) {
			continue
		}
		s := str(el)
		total += int64(s.Length())
		if total > maxUnits {
			x.throwRange("Invalid string length")
		}
		b.WriteString(s)
	}
	return b.String()
}

// arrayFlat is Array.prototype.flat (ECMA-262 §23.1.3.13), bounded (see guardBuiltins): at
// most maxArrayLength elements, nesting at most MaxCallStack deep.
func (x *execution) arrayFlat(call goja.FunctionCall) goja.Value {
	x.checkFired()
	o := call.This.ToObject(x.rt)
	n := toLength(o.Get("length"))
	depth := int64(1)
	if d := call.Argument(0); !goja.IsUndefined(d) {
		if f := d.ToFloat(); math.IsInf(f, 1) {
			depth = math.MaxInt64
		} else if !math.IsNaN(f) {
			depth = d.ToInteger()
		} else {
			depth = 0
		}
	}
	target := x.arraySpeciesCreate(o)
	x.flatten(target, o, n, 0, depth, 0)
	return target
}

// flatten is FlattenIntoArray without a mapper; it returns the next target index.
func (x *execution) flatten(target, source *goja.Object, n, next, depth int64, level int) int64 {
	if level >= x.lim.MaxCallStack {
		x.throwRange("Maximum call stack size exceeded")
	}
	isProxy := source.ExportType() == proxyType
	for i := range n {
		x.checkFired()
		key := strconv.FormatInt(i, 10)
		var el goja.Value
		if isProxy {
			if !x.call(x.reflectHasFn, goja.Undefined(), source, x.rt.ToValue(key)).ToBoolean() {
				continue
			}
			el = prop(source, key)
		} else if el = source.Get(key); el == nil {
			continue // absent: a hole
		}
		if depth > 0 {
			if arr, ok := el.(*goja.Object); ok && x.isArray(arr) {
				next = x.flatten(target, arr, toLength(arr.Get("length")), next, depth-1, level+1)
				continue
			}
		}
		if next >= x.maxArrayLength() {
			x.throwRange("Invalid array length")
		}
		if err := target.DefineDataProperty(strconv.FormatInt(next, 10), el, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE); err != nil {
			panic(err)
		}
		next++
	}
	return next
}

// arraySpeciesCreate is ArraySpeciesCreate(o, 0) of ECMA-262 (one realm).
func (x *execution) arraySpeciesCreate(o *goja.Object) *goja.Object {
	if !x.isArray(o) {
		return x.rt.NewArray()
	}
	c := prop(o, "constructor")
	if obj, ok := c.(*goja.Object); ok {
		c = obj.GetSymbol(goja.SymSpecies)
		if c == nil || goja.IsNull(c) {
			c = goja.Undefined()
		}
	}
	if goja.IsUndefined(c) {
		return x.rt.NewArray()
	}
	ctor, ok := goja.AssertConstructor(c)
	if !ok {
		x.throwTypeError("object.constructor[Symbol.species] is not a constructor")
	}
	obj, err := ctor(nil, x.rt.ToValue(0))
	if err != nil {
		panic(err)
	}
	return obj
}

// guardParse wraps JSON.parse: text nested deeper than MaxCallStack, or with so many values
// that the result would take more than maxStringBytes, is refused before goja's recursive
// parser sees it. The text is converted to a string once, here.
func (x *execution) guardParse(json *goja.Object) {
	orig, ok := goja.AssertFunction(json.Get("parse"))
	if !ok {
		return
	}
	x.define(json, "parse", x.rt.ToValue(func(call goja.FunctionCall) goja.Value {
		x.checkFired()
		text := x.jsString(call.Argument(0))
		s := text.String()
		depth, values := jsonShape(s)
		if depth > x.lim.MaxCallStack {
			x.throwRange("Maximum call stack size exceeded")
		}
		// A parsed value costs a goja.Value and its boxing, objects and arrays more; 64
		// bytes a value is a fair average for documents.
		if int64(len(s))+64*values > int64(x.maxStringBytes()) {
			x.throwRange("JSON.parse: the value would exceed the script's memory limit")
		}
		args := append([]goja.Value{text}, call.Arguments[min(1, len(call.Arguments)):]...)
		return x.call(orig, call.This, args...)
	}))
}

// jsonShape returns the deepest nesting of arrays and objects in JSON text s and a count of
// its values (separators and openings), ignoring what is inside strings. It does not validate.
func jsonShape(s string) (depth int, values int64) {
	d, inString := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			d++
			depth = max(depth, d)
			values++
		case ']', '}':
			d--
		case ',', ':':
			values++
		}
	}
	return depth, values + 1
}

// guardReplace wraps a replace method, String.prototype.replace or replaceAll, or
// RegExp.prototype[Symbol.replace]: when the result could exceed maxStringUnits (the string
// plus the replacement at every possible match position), a replacement string is expanded
// here, by a replacement function goja calls at each match, so that the budget and the
// watchdog are checked match by match: `"a".repeat(1e6).replace(/a/g, big)` would otherwise
// build a million copies of big in one native call. The expansion is goja's ($$, $&, $`, $',
// $n, $nn, $<name>), so results are the same.
func (x *execution) guardReplace(owner *goja.Object, key any) {
	orig, ok := methodOf(owner, key)
	if !ok {
		return
	}
	_, onRegexp := key.(*goja.Symbol)
	fn := x.rt.ToValue(func(call goja.FunctionCall) goja.Value {
		x.checkFired()
		this, args := call.This, call.Arguments
		var s, search, replace goja.Value
		if onRegexp {
			// RegExp.prototype[Symbol.replace](string, replaceValue)
			s, replace = x.jsString(call.Argument(0)), call.Argument(1)
			args = []goja.Value{s, replace}
		} else {
			// String.prototype.replace(searchValue, replaceValue): an object searches with
			// its own Symbol.replace (a regular expression's is wrapped too).
			search, replace = call.Argument(0), call.Argument(1)
			if isNullish(this) || isObject(search) {
				return x.call(orig, this, args...)
			}
			s, search = x.jsString(this), x.jsString(search)
			this = s
			args = []goja.Value{search, replace}
		}
		if _, isFn := goja.AssertFunction(replace); isFn {
			return x.call(orig, this, args...)
		}
		r := x.jsString(replace)
		n, maxUnits := int64(s.(goja.String).Length()), x.maxStringUnits()
		args[len(args)-1] = r
		// Each match adds the replacement, in which each $ pattern ($&, $`, $', a capture)
		// adds at most the whole string.
		perMatch := int64(r.Length()) + int64(strings.Count(r.String(), "$"))*n
		if n+perMatch*(n+1) <= maxUnits {
			return x.call(orig, this, args...)
		}
		total := n // the length of the result so far: each match's text gives way to its expansion
		args[len(args)-1] = x.rt.ToValue(func(call goja.FunctionCall) goja.Value {
			x.checkFired()
			out := x.substitute(call.Arguments, r)
			total += int64(out.Length()) - int64(x.jsString(call.Argument(0)).Length())
			if total > maxUnits {
				x.throwRange("Invalid string length")
			}
			return out
		})
		return x.call(orig, this, args...)
	})
	x.defineMethod(owner, key, fn)
}

// substitute is GetSubstitution as goja implements it (writeSubstitution), from the arguments
// a replacement function receives: (matched, p1, ..., pn, position, string[, groups]).
func (x *execution) substitute(args []goja.Value, repl goja.String) goja.String {
	var groups *goja.Object
	if len(args) > 0 {
		if g, ok := args[len(args)-1].(*goja.Object); ok {
			groups, args = g, args[:len(args)-1]
		}
	}
	if len(args) < 3 {
		return repl
	}
	str := x.jsString(args[len(args)-1])
	position := int(args[len(args)-2].ToInteger())
	captures := args[:len(args)-2]
	capture := func(i int) goja.String {
		if v := captures[i]; !isNullish(v) {
			return x.jsString(v)
		}
		return emptyString
	}
	matched := capture(0)
	l, rl := str.Length(), repl.Length()
	tail := position + matched.Length()
	var b goja.StringBuilder
	for i := 0; i < rl; i++ {
		c := repl.CharAt(i)
		if c != '$' || i == rl-1 {
			b.WriteRune(rune(c))
			continue
		}
		ch := repl.CharAt(i + 1)
		switch ch {
		case '$':
			b.WriteRune('$')
		case '`':
			b.WriteString(str.Substring(0, min(position, l)))
		case '\'':
			if tail < l {
				b.WriteString(str.Substring(tail, l))
			}
		case '&':
			b.WriteString(matched)
		case '<':
			end := -1
			for j := i + 2; j < rl; j++ {
				if repl.CharAt(j) == '>' {
					end = j
					break
				}
			}
			if end >= 0 && groups != nil {
				if v := groups.Get(repl.Substring(i+2, end).String()); !isNullish(v) {
					b.WriteString(x.jsString(v))
				}
				i = end
				continue
			}
			b.WriteRune('$')
			b.WriteRune('<')
		default:
			index, j := 0, i+1
			for lim := min(j+2, rl); j < lim; j++ {
				d := repl.CharAt(j)
				if d < '0' || d > '9' {
					break
				}
				m := index*10 + int(d-'0')
				if m >= len(captures) {
					break
				}
				index = m
			}
			if index > 0 {
				b.WriteString(capture(index))
				i = j - 1
				continue
			}
			b.WriteRune('$')
			b.WriteRune(rune(ch))
		}
		i++
	}
	return b.String()
}

var emptyString = goja.StringFromUTF16(nil)

// jsString is ToString(v) of ECMA-262 as a JavaScript string. (goja's Value.ToString returns a
// primitive whose String is the result, a number for a number.)
func (x *execution) jsString(v goja.Value) goja.String {
	if _, ok := v.(*goja.Symbol); ok {
		x.throwTypeError("Cannot convert a Symbol value to a string")
	}
	v = v.ToString()
	if s, ok := v.(goja.String); ok {
		return s
	}
	return x.rt.ToValue(v.String()).(goja.String)
}
