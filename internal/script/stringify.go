package script

import (
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// jsonWriter is one run of JSON.stringify (ECMA-262 §25.5.2), written over goja's public API
// so that it is bounded where goja's own is not. goja's walks every element natively without
// ever returning to the VM, so nothing could stop it: `JSON.stringify({a: new Array(1e8)})`
// (the length check on the top-level argument does not see nested arrays) ran for 70 s and
// took 2 GiB, and its cycle check scans the whole path for every object, which made a
// 100,000-deep nesting run for 30 s and a deeper one overflow the Go stack. This one
//
//   - checks the watchdog's verdict at every value, so the time and memory limits stop it;
//   - refuses output beyond maxStringBytes with a RangeError "Invalid string length";
//   - refuses nesting deeper than MaxCallStack with a RangeError "Maximum call stack size
//     exceeded" (V8 overflows its stack there too);
//   - detects cycles with a set, in constant time.
//
// Everything else follows the specification: toJSON, replacer functions and property lists,
// the space argument, boxed primitives, JSON.rawJSON values, proxies, getters; lone surrogates
// are escaped as \uXXXX (well-formed JSON.stringify).
type jsonWriter struct {
	x        *execution
	buf      []byte
	max      int
	replacer goja.Callable // nil when none
	props    []jsonKey     // the replacer's property list; nil when none
	gap      string
	indent   string
	stack    map[*goja.Object]struct{} // objects being serialized
}

// marshalJSON is JSON.stringify(v, replacer, space) into bytes; ok is false when the result
// is undefined. It throws (panics with) JavaScript exceptions and interrupts, so it must run
// inside a native function or x.protect.
func (x *execution) marshalJSON(v, replacer, space goja.Value) (b []byte, ok bool) {
	w := &jsonWriter{x: x, max: x.maxStringBytes(), stack: make(map[*goja.Object]struct{})}
	if obj, isObj := replacer.(*goja.Object); isObj {
		if fn, isFn := goja.AssertFunction(obj); isFn {
			w.replacer = fn
		} else if x.isArray(obj) {
			w.props = x.propertyList(obj)
		}
	}
	w.gap = x.jsonGap(space)
	holder := x.rt.NewObject()
	if err := holder.Set("", v); err != nil {
		panic(err)
	}
	if !w.property(holder, jsonKey{}) {
		return nil, false
	}
	return w.buf, true
}

// jsonStringify is the JSON.stringify installed in every runtime.
func (x *execution) jsonStringify(call goja.FunctionCall) goja.Value {
	b, ok := x.marshalJSON(call.Argument(0), call.Argument(1), call.Argument(2))
	if !ok {
		return goja.Undefined()
	}
	return x.rt.ToValue(string(b))
}

// jsonKey is a property key: its Go form, and the JavaScript string when the Go form is not
// exact (goja's Go form of a string replaces lone surrogates with U+FFFD).
type jsonKey struct {
	s string
	v goja.String // nil when s is exact
}

func (x *execution) newKey(v goja.String) jsonKey {
	s := v.String()
	if strings.ContainsRune(s, utf8.RuneError) {
		return jsonKey{s: s, v: v}
	}
	return jsonKey{s: s}
}

// value is the key as a JavaScript value.
func (k jsonKey) value(x *execution) goja.Value {
	if k.v != nil {
		return k.v
	}
	return x.rt.ToValue(k.s)
}

// get is obj[k].
func (x *execution) get(obj *goja.Object, k jsonKey) goja.Value {
	if k.v != nil {
		return x.call(x.reflectGetFn, goja.Undefined(), obj, k.v)
	}
	return prop(obj, k.s)
}

// propertyList is the property list of a replacer array: its string and number elements (and
// String and Number objects), converted to strings, without duplicates.
func (x *execution) propertyList(arr *goja.Object) []jsonKey {
	n := toLength(arr.Get("length"))
	if n > x.maxArrayLength() {
		x.throwRange("Invalid array length")
	}
	props := []jsonKey{}
	seen := make(map[string]bool)
	for i := range n {
		v := arr.Get(strconv.FormatInt(i, 10))
		switch {
		case isString(v) || isNumber(v):
		case isObject(v) && (v.(*goja.Object).ClassName() == "String" || v.(*goja.Object).ClassName() == "Number"):
		default:
			continue
		}
		k := x.newKey(x.jsString(v)) // ToString: may run user code, as the specification says
		if !seen[k.s] {
			seen[k.s] = true
			props = append(props, k)
		}
	}
	return props
}

// jsonGap is the indentation string of the space argument.
func (x *execution) jsonGap(space goja.Value) string {
	if obj, ok := space.(*goja.Object); ok {
		switch obj.ClassName() {
		case "Number":
			space = obj.ToNumber()
		case "String":
			space = obj.ToString()
		}
	}
	if isNumber(space) {
		n := min(10, space.ToFloat())
		if n < 1 {
			return ""
		}
		return strings.Repeat(" ", int(n))
	}
	if isString(space) {
		s := space.(goja.String)
		if s.Length() > 10 {
			s = s.Substring(0, 10)
		}
		return s.String()
	}
	return ""
}

// property is SerializeJSONProperty(key, holder): it writes holder[key] and reports whether it
// wrote anything (false for undefined, functions and symbols).
func (w *jsonWriter) property(holder *goja.Object, key jsonKey) bool {
	x := w.x
	x.checkFired()
	value := x.get(holder, key)
	if isObject(value) || isBigInt(value) {
		if fn, ok := goja.AssertFunction(prop(value.ToObject(x.rt), "toJSON")); ok {
			value = x.call(fn, value, key.value(x))
		}
	}
	if w.replacer != nil {
		value = x.call(w.replacer, holder, key.value(x), value)
	}
	if obj, ok := value.(*goja.Object); ok {
		switch obj.ClassName() {
		case "Number":
			value = obj.ToNumber()
		case "String":
			value = obj.ToString()
		case "Boolean":
			value = x.rt.ToValue(obj.Export())
		case "Object":
			// goja's BigInt wrappers are of class Object.
			if obj.ExportType() == bigIntType {
				x.throwTypeError("Do not know how to serialize a BigInt")
			}
		case "RawJSON":
			w.write(prop(obj, "rawJSON").String())
			return true
		}
	}
	switch v := value.(type) {
	case nil:
		return false
	case goja.String:
		w.quote(v.String(), v)
		return true
	case *goja.Symbol:
		return false
	case *goja.Object:
		if _, ok := goja.AssertFunction(v); ok {
			return false
		}
		if _, ok := w.stack[v]; ok {
			x.throwTypeError("Converting circular structure to JSON")
		}
		if len(w.stack) >= x.lim.MaxCallStack {
			x.throwRange("Maximum call stack size exceeded")
		}
		w.stack[v] = struct{}{}
		if x.isArray(v) {
			w.array(v)
		} else {
			w.object(v)
		}
		delete(w.stack, v)
		return true
	}
	switch v := value.Export().(type) {
	case nil:
		if goja.IsNull(value) {
			w.write("null")
			return true
		}
		return false // undefined
	case bool:
		w.write(strconv.FormatBool(v))
	case int64:
		w.write(strconv.FormatInt(v, 10))
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			w.write("null")
		} else {
			w.write(value.String())
		}
	case *big.Int:
		x.throwTypeError("Do not know how to serialize a BigInt")
	default:
		return false
	}
	return true
}

func (w *jsonWriter) array(arr *goja.Object) {
	n := toLength(arr.Get("length"))
	if n == 0 {
		w.write("[]")
		return
	}
	// Every element takes at least one byte and a comma: refuse at once what cannot fit.
	if int64(len(w.buf))+2*n+1 > int64(w.max) {
		w.x.throwRange("Invalid string length")
	}
	stepback := w.indent
	w.indent += w.gap
	w.write("[")
	for i := range n {
		if i > 0 {
			w.write(",")
		}
		w.newline()
		if !w.property(arr, jsonKey{s: strconv.FormatInt(i, 10)}) {
			w.write("null")
		}
	}
	w.indent = stepback
	w.newline()
	w.write("]")
}

func (w *jsonWriter) object(obj *goja.Object) {
	x := w.x
	keys := w.props
	if keys == nil {
		keys = x.ownKeys(obj)
	}
	stepback := w.indent
	w.indent += w.gap
	w.write("{")
	empty := true
	for _, k := range keys {
		mark := len(w.buf)
		if !empty {
			w.write(",")
		}
		w.newline()
		w.quote(k.s, k.v)
		w.write(":")
		if w.gap != "" {
			w.write(" ")
		}
		if w.property(obj, k) {
			empty = false
		} else {
			w.buf = w.buf[:mark]
		}
	}
	w.indent = stepback
	if !empty {
		w.newline()
	}
	w.write("}")
}

// ownKeys is EnumerableOwnProperties(obj, key).
func (x *execution) ownKeys(obj *goja.Object) []jsonKey {
	names := obj.Keys()
	keys := make([]jsonKey, len(names))
	for i, name := range names {
		if strings.ContainsRune(name, utf8.RuneError) {
			// Not exact: ask again for the keys as JavaScript strings.
			return x.ownKeysExact(obj)
		}
		keys[i] = jsonKey{s: name}
	}
	return keys
}

func (x *execution) ownKeysExact(obj *goja.Object) []jsonKey {
	arr := x.call(x.objectKeysFn, goja.Undefined(), obj).ToObject(x.rt)
	n := toLength(arr.Get("length"))
	keys := make([]jsonKey, n)
	for i := range n {
		keys[i] = x.newKey(x.jsString(arr.Get(strconv.FormatInt(i, 10))))
	}
	return keys
}

// newline starts a line at the current indentation when there is a gap.
func (w *jsonWriter) newline() {
	if w.gap != "" {
		w.write("\n")
		w.write(w.indent)
	}
}

func (w *jsonWriter) write(s string) {
	if len(w.buf)+len(s) > w.max {
		w.x.throwRange("Invalid string length")
	}
	w.buf = append(w.buf, s...)
}

// quote writes str as a JSON string literal, escaping as goja's JSON.stringify does. s, when
// not nil, is the JavaScript string whose Go form str is: the Go form replaces lone surrogates
// with U+FFFD, so a string containing U+FFFD is walked over its UTF-16 code units instead, to
// escape them.
func (w *jsonWriter) quote(str string, s goja.String) {
	if len(w.buf)+len(str)+2 > w.max {
		w.x.throwRange("Invalid string length")
	}
	w.buf = append(w.buf, '"')
	if s == nil || !strings.ContainsRune(str, utf8.RuneError) {
		start := 0
		for i := 0; i < len(str); i++ {
			if c := str[i]; c < 0x20 || c == '"' || c == '\\' {
				w.buf = append(w.buf, str[start:i]...)
				w.escape(rune(c))
				start = i + 1
			}
		}
		w.buf = append(w.buf, str[start:]...)
	} else {
		n := s.Length()
		for i := 0; i < n; i++ {
			r := rune(s.CharAt(i))
			if utf16.IsSurrogate(r) && r < 0xDC00 && i+1 < n {
				if r2 := rune(s.CharAt(i + 1)); r2 >= 0xDC00 && r2 <= 0xDFFF {
					w.buf = utf8.AppendRune(w.buf, utf16.DecodeRune(r, r2))
					i++
					continue
				}
			}
			if r < 0x20 || r == '"' || r == '\\' || utf16.IsSurrogate(r) {
				w.escape(r)
			} else {
				w.buf = utf8.AppendRune(w.buf, r)
			}
		}
	}
	w.write(`"`)
}

const hexDigits = "0123456789abcdef"

func (w *jsonWriter) escape(r rune) {
	switch r {
	case '"', '\\':
		w.buf = append(w.buf, '\\', byte(r))
	case '\b':
		w.buf = append(w.buf, `\b`...)
	case '\t':
		w.buf = append(w.buf, `\t`...)
	case '\n':
		w.buf = append(w.buf, `\n`...)
	case '\f':
		w.buf = append(w.buf, `\f`...)
	case '\r':
		w.buf = append(w.buf, `\r`...)
	default:
		w.buf = append(w.buf, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
	}
	if len(w.buf) > w.max {
		w.x.throwRange("Invalid string length")
	}
}

// toLength is ToLength(ToIntegerOrInfinity(v)) of ECMA-262, at least 0 and at most 2^53-1.
func toLength(v goja.Value) int64 {
	if v == nil {
		return 0
	}
	n := v.ToInteger()
	return min(max(n, 0), 1<<53-1)
}

func isNumber(v goja.Value) bool {
	if v == nil || isObject(v) {
		return false
	}
	switch v.Export().(type) {
	case int64, float64:
		return true
	}
	return false
}

func isBigInt(v goja.Value) bool {
	if v == nil || isObject(v) {
		return false
	}
	_, ok := v.Export().(*big.Int)
	return ok
}

var (
	proxyType  = reflect.TypeFor[goja.Proxy]()
	bigIntType = reflect.TypeFor[*big.Int]()
)

// isArray is IsArray of ECMA-262: true for arrays and proxies of arrays. It throws a TypeError
// for a revoked proxy.
func (x *execution) isArray(obj *goja.Object) bool {
	switch obj.ClassName() {
	case "Array":
		return true
	case "Object", "Function":
		if obj.ExportType() == proxyType {
			return x.call(x.isArrayFn, goja.Undefined(), obj).ToBoolean()
		}
	}
	return false
}
