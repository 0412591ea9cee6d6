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
//   - Array.prototype methods that loop natively over this.length (fill, join, indexOf, ...),
//     Array.from and Function.prototype.apply refuse lengths above MaxHeapGrowth/16, the most
//     elements a dense array can have within the limit (RangeError "Invalid array length"):
//     `var a = []; a.length = 2**32-1; a.fill(0)` would otherwise allocate 64 GiB;
//   - ArrayBuffer, SharedArrayBuffer, DataView and the typed arrays, which allocate their whole
//     length up front through several entry points, are removed (stored procedures do not use
//     binary data; every document is JSON).
//
// NB: a catastrophically backtracking regular expression also runs natively; goja's regexp2
// has no per-runtime match timeout, so it is a known gap (it stops when the match ends).
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
	arrProto := proto("Array")
	for _, name := range []string{"fill", "join", "toString", "toLocaleString", "indexOf", "lastIndexOf",
		"includes", "reverse", "copyWithin", "slice", "splice", "concat", "flat", "sort", "toReversed",
		"toSorted", "toSpliced", "with"} {
		wrap(arrProto, name, checkThisLen)
	}
	wrap(rt.Get("Array").ToObject(rt), "from", func(call goja.FunctionCall) {
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
