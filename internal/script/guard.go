package script

import (
	"math"

	"github.com/dop251/goja"
)

// guardBuiltins stops the built-ins that would do unbounded work or allocation in one native
// call, which the watchdog cannot interrupt (goja checks for interrupts between JavaScript
// instructions only):
//
//   - String.prototype.repeat, padStart and padEnd refuse results bigger than MaxHeapGrowth
//     (RangeError "Invalid string length", as V8 says for its own maximum);
//   - the Array.prototype methods that loop natively over this.length (fill, join, indexOf,
//     slice, sort, concat, the iterator behind spread and Array.from, and the callback
//     methods, which skip holes without running JavaScript), Array.from, JSON.stringify,
//     Function.prototype.apply and Reflect.apply/construct refuse an array (or array-like) whose
//     length exceeds MaxHeapGrowth/16, the most elements a dense array can have within the
//     limit (RangeError "Invalid array length"): `var a = []; a.length = 2**32-1; a.fill(0)`
//     would otherwise allocate 64 GiB, and `[...a]` loop for minutes;
//   - ArrayBuffer, SharedArrayBuffer, DataView and the typed arrays, which allocate their whole
//     length up front through several entry points, are removed (stored procedures do not use
//     binary data; every document is JSON).
//
// NB: known gaps, all needing a deliberately sparse array or pathological pattern: such an
// array nested inside a value given to JSON.stringify (only the top level is checked), and a
// catastrophically backtracking regular expression (goja's regexp2 has no per-runtime match
// timeout). Both stop when the native call ends; the watchdog then interrupts the script.
//
// NB: this costs most of an execution's setup (about 0.2 ms): goja materialises each built-in
// it touches. It is paid per execution, since runtimes are never shared between executions.
func (x *execution) guardBuiltins() {
	rt := x.rt
	maxBytes := float64(x.lim.MaxHeapGrowth)
	maxLen := maxBytes / 16 // a goja.Value is a 16-byte interface
	throwRange := func(msg string) {
		obj, err := rt.New(rt.Get("RangeError"), rt.ToValue(msg))
		if err != nil {
			panic(err)
		}
		panic(obj)
	}
	wrap := func(owner *goja.Object, name string, check func(call goja.FunctionCall)) {
		orig, ok := goja.AssertFunction(owner.Get(name))
		if !ok {
			return
		}
		fn := rt.ToValue(func(call goja.FunctionCall) goja.Value {
			check(call)
			v, err := orig(call.This, call.Arguments...)
			if err != nil {
				panic(err) // rethrow into the script
			}
			return v
		})
		// Built-in methods are non-enumerable; keep them so (for-in over arrays, etc.).
		if err := owner.DefineDataProperty(name, fn, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			panic(err) // built-in methods are configurable
		}
	}
	proto := func(ctor string) *goja.Object {
		return rt.Get(ctor).ToObject(rt).Get("prototype").ToObject(rt)
	}
	num := func(v goja.Value) float64 {
		if isNullish(v) {
			return 0
		}
		n := v.ToFloat()
		if math.IsNaN(n) {
			return 0
		}
		return n
	}
	strLen := func(v goja.Value) float64 {
		if s, ok := v.Export().(string); ok && !isObject(v) {
			return float64(len(s))
		}
		return 0
	}
	lengthOf := func(v goja.Value) float64 {
		obj, ok := v.(*goja.Object)
		if !ok {
			return 0
		}
		return num(obj.Get("length"))
	}

	strProto := proto("String")
	// 2 bytes per UTF-16 code unit at worst.
	wrap(strProto, "repeat", func(call goja.FunctionCall) {
		if strLen(call.This)*num(call.Argument(0))*2 > maxBytes {
			throwRange("Invalid string length")
		}
	})
	pad := func(call goja.FunctionCall) {
		if num(call.Argument(0))*2 > maxBytes {
			throwRange("Invalid string length")
		}
	}
	wrap(strProto, "padStart", pad)
	wrap(strProto, "padEnd", pad)

	checkThisLen := func(call goja.FunctionCall) {
		if lengthOf(call.This) > maxLen {
			throwRange("Invalid array length")
		}
	}
	// concat spreads its array arguments natively too.
	checkAllLen := func(call goja.FunctionCall) {
		total := lengthOf(call.This)
		for _, a := range call.Arguments {
			total += lengthOf(a)
		}
		if total > maxLen {
			throwRange("Invalid array length")
		}
	}
	arrProto := proto("Array")
	for _, name := range []string{"fill", "join", "toString", "toLocaleString", "indexOf", "lastIndexOf",
		"includes", "reverse", "copyWithin", "slice", "splice", "flat", "sort", "toReversed",
		"toSorted", "toSpliced", "with", "keys", "entries",
		// The callback methods skip holes natively: a sparse array of length 2**32-1 would
		// loop for minutes without running a JavaScript instruction.
		"forEach", "map", "filter", "some", "every", "reduce", "reduceRight", "find", "findIndex",
		"findLast", "findLastIndex", "flatMap", "unshift", "shift"} {
		wrap(arrProto, name, checkThisLen)
	}
	wrap(arrProto, "concat", checkAllLen)
	// Spread, Array.from(iterable), new Set(array), ... iterate an array through
	// Array.prototype[Symbol.iterator] in a native loop.
	if iter, ok := prop(rt.Get("Symbol").ToObject(rt), "iterator").(*goja.Symbol); ok {
		if orig, ok := goja.AssertFunction(arrProto.GetSymbol(iter)); ok {
			fn := rt.ToValue(func(call goja.FunctionCall) goja.Value {
				checkThisLen(call)
				v, err := orig(call.This, call.Arguments...)
				if err != nil {
					panic(err)
				}
				return v
			})
			if err := arrProto.DefineDataPropertySymbol(iter, fn, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
				panic(err)
			}
			if err := arrProto.DefineDataProperty("values", fn, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
				panic(err)
			}
		}
	}
	wrap(rt.Get("Array").ToObject(rt), "from", func(call goja.FunctionCall) {
		if lengthOf(call.Argument(0)) > maxLen {
			throwRange("Invalid array length")
		}
	})
	wrap(rt.Get("JSON").ToObject(rt), "stringify", func(call goja.FunctionCall) {
		if lengthOf(call.Argument(0)) > maxLen {
			throwRange("Invalid array length")
		}
	})
	wrap(proto("Function"), "apply", func(call goja.FunctionCall) {
		if lengthOf(call.Argument(1)) > maxLen {
			throwRange("Invalid array length")
		}
	})
	if reflect, ok := rt.Get("Reflect").(*goja.Object); ok {
		for _, name := range []string{"apply", "construct"} {
			idx := 1
			if name == "apply" {
				idx = 2
			}
			wrap(reflect, name, func(call goja.FunctionCall) {
				if lengthOf(call.Argument(idx)) > maxLen {
					throwRange("Invalid array length")
				}
			})
		}
	}
	for _, name := range []string{"ArrayBuffer", "SharedArrayBuffer", "DataView", "Int8Array", "Uint8Array",
		"Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "Float32Array",
		"Float64Array", "BigInt64Array", "BigUint64Array"} {
		rt.GlobalObject().Delete(name)
	}
}
