package script

import (
	"testing"
	"unicode/utf16"

	"github.com/dop251/goja"
)

// evalGuarded evaluates expr in a runtime set up as for an execution with lim (without the
// watchdog) and in a plain goja runtime, and returns both results as strings; a thrown error
// is "throws <its name>".
func evalGuarded(t *testing.T, expr string, lim Limits) (guarded, plain string) {
	t.Helper()
	p, err := CompileUDF(`function () {}`)
	if err != nil {
		t.Fatal(err)
	}
	src := `(function () { try { return String(` + expr + `); } catch (e) { return "throws " + (e && e.name); } })()`
	eval := func(rt *goja.Runtime) string {
		v, err := rt.RunString(src)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return v.String()
	}
	return eval(newExecution(p, nil, lim, false).rt), eval(goja.New())
}

// TestBuiltinsMatchGoja checks that the built-ins this package replaces with bounded ones
// (JSON.stringify, Array.prototype.join, toLocaleString and flat, the expansion of replacement
// strings) give goja's results.
func TestBuiltinsMatchGoja(t *testing.T) {
	exprs := []string{
		// JSON.stringify: values
		`JSON.stringify(1)`, `JSON.stringify(-0)`, `JSON.stringify(1.5e300)`, `JSON.stringify(0.1 + 0.2)`,
		`JSON.stringify(NaN)`, `JSON.stringify(-Infinity)`, `JSON.stringify(2 ** 53 + 2)`,
		`JSON.stringify("str")`, `JSON.stringify('q"uo\\te/')`, `JSON.stringify("\u0000\u0007\b\t\n\f\r\u001f\u007f\u2028é")`,
		`JSON.stringify("\ud800")`, `JSON.stringify("a\udc00b\ud83d\ude00c\ud83d")`, `JSON.stringify("\ufffd")`,
		`JSON.stringify(true)`, `JSON.stringify(null)`, `JSON.stringify(undefined)`, `JSON.stringify(function () {})`,
		`JSON.stringify(Symbol("s"))`, // (no BigInt: scripts have none, guard.go)
		// objects and arrays
		`JSON.stringify({a: 1, b: [1, 2, {c: 3}], d: "x"})`, `JSON.stringify({b: 1, a: 2, 1: 3, 0: 4})`,
		`JSON.stringify([undefined, function () {}, Symbol()])`, `JSON.stringify({u: undefined, f: function () {}, s: Symbol(), n: null})`,
		`JSON.stringify([1, , 3])`, `JSON.stringify([])`, `JSON.stringify({})`, `JSON.stringify([[], {}, [[]]])`,
		`JSON.stringify({"\ud800k": 1, "q\"k": 2})`, `JSON.stringify(Object.create({inherited: 1}))`,
		`JSON.stringify({[Symbol()]: 1, a: 2})`, `JSON.stringify(new Map([[1, 2]]))`, `JSON.stringify(/re/g)`,
		`JSON.stringify(Object.defineProperty({}, "hidden", {value: 1}))`, `JSON.stringify({get a() { return 5; }})`,
		// toJSON and wrappers
		`JSON.stringify(new Date(0))`, `JSON.stringify({toJSON: function (k) { return "key:" + k; }})`,
		`JSON.stringify({a: {toJSON: function (k) { return [k]; }}})`, `JSON.stringify([{toJSON: function (k) { return typeof k; }}])`,
		`JSON.stringify(new Number(3))`, `JSON.stringify(new String("s"))`, `JSON.stringify(new Boolean(false))`,
		`JSON.stringify({toJSON: 1})`,
		`JSON.stringify({n: Object.assign(new Number(3), {valueOf: function () { return 7; }})})`,
		`JSON.stringify(JSON.rawJSON("1e1000"))`, `JSON.stringify({a: JSON.rawJSON('"x"')})`,
		// proxies and cycles
		`JSON.stringify(new Proxy([1, 2], {}))`, `JSON.stringify(new Proxy({a: 1}, {}))`,
		`JSON.stringify(new Proxy({a: 1}, {get: function (t, k) { return k === "a" ? 9 : t[k]; }}))`,
		`(function () { var o = {}; o.o = o; return JSON.stringify(o); })()`,
		`(function () { var a = []; a.push({b: a}); return JSON.stringify(a); })()`,
		`(function () { var s = {x: 1}; return JSON.stringify([s, s, {s: s}]); })()`,
		// replacers
		`JSON.stringify({a: 1, b: [1, 2]}, function (k, v) { return typeof v === "number" ? v * 2 : v; })`,
		`JSON.stringify({a: 1, b: [1, 2]}, function (k, v) { return k === "" ? v : k + ":" + typeof this; })`,
		`JSON.stringify([1, 2], function (k, v) { return k === "0" ? undefined : v; })`,
		`JSON.stringify({a: 1, b: 2}, function (k, v) { return k === "a" ? undefined : v; })`,
		`JSON.stringify({a: 1, b: 2, c: {a: 3, d: 4}}, ["a", "c"])`, `JSON.stringify({1: 1, b: 2}, [1, "b", "b"])`,
		`JSON.stringify({a: 1, b: 2}, [new String("b"), {}, null])`, `JSON.stringify([{a: 1, b: 2}], ["b"])`,
		`JSON.stringify({b: 1, a: 2}, ["a", "b"])`, `JSON.stringify({a: 1}, "not a replacer")`,
		// space
		`JSON.stringify({a: [1, {b: 2}], c: []}, null, 2)`, `JSON.stringify([1, [2]], null, "\t")`,
		`JSON.stringify({a: 1}, null, "abcdefghijklmno")`, `JSON.stringify({a: 1}, null, 20)`,
		`JSON.stringify({a: 1}, null, new Number(3))`, `JSON.stringify({a: 1}, null, new String("--"))`,
		`JSON.stringify({a: 1}, null, 0)`, `JSON.stringify({a: 1}, null, -1)`, `JSON.stringify({a: 1}, null, 2.7)`,
		`JSON.stringify({a: {}, b: []}, null, 1)`, `JSON.stringify({a: undefined, b: 1}, null, 2)`,
		// join, toString, toLocaleString
		`[1, [2, [3]], null, undefined, "s"].join()`, `[1, 2, 3].join("-")`, `[1, 2].join(undefined)`, `[1, 2].join(null)`,
		`[].join()`, `[, ].join()`, `[, , ].join("x")`, `Array.prototype.join.call({length: 3, 0: "a", 2: "c"}, "+")`,
		`Array.prototype.join.call("abc", ".")`, `[Symbol()].join()`, `[{toString: function () { return "T"; }}].join()`,
		`(function () { var a = [1]; a.push(a, 2); return a.join(); })()`, `String([1, [2, 3]])`,
		`[1, "\ud800", 2].join("\udc00")`, `[1.5, new Date(0)].toLocaleString()`, `[null, undefined, 1].toLocaleString()`,
		`[{toLocaleString: function () { return "L"; }}].toLocaleString()`, `[{toLocaleString: 1}].toLocaleString()`,
		`(function () { var a = [1]; a.push(a); return a.toLocaleString(); })()`,
		// flat
		`JSON.stringify([1, [2, [3, [4]]]].flat())`, `JSON.stringify([1, [2, [3, [4]]]].flat(2))`,
		`JSON.stringify([1, [2, [3, [4]]]].flat(Infinity))`, `JSON.stringify([1, [2]].flat(0))`, `JSON.stringify([1, [2]].flat(-1))`,
		`JSON.stringify([1, , 3, [4, , 6]].flat())`, `JSON.stringify([[1], [2]].flat("1"))`, `JSON.stringify([[1], [[2]]].flat(NaN))`,
		`JSON.stringify(Array.prototype.flat.call({length: 2, 0: [1], 1: 2}))`, `JSON.stringify([new Proxy([1, [2]], {})].flat(2))`,
		`(function () { class A extends Array {} var a = A.from([1, [2]]).flat(); return (a instanceof A) + JSON.stringify(a); })()`,
		`(function () { var a = [1, [2]]; a.constructor = {}; a.constructor[Symbol.species] = null; return Array.isArray(a.flat()); })()`,
	}
	for _, expr := range exprs {
		guarded, plain := evalGuarded(t, expr, Limits{})
		if guarded != plain {
			t.Errorf("%s = %q, goja says %q", expr, guarded, plain)
		}
	}
}

// TestReplaceExpansionMatchesGoja checks the replacement strings this package expands itself,
// match by match, when a replace could exceed the string budget: tiny limits force it here.
func TestReplaceExpansionMatchesGoja(t *testing.T) {
	const maxUnits = 8 << 10
	lim := Limits{MaxHeapGrowth: 8 * maxUnits}
	long := `"abc-def-ghi-".repeat(6)`
	var exprs []string
	for _, repl := range []string{"$$", "$&", "$`", "$'", "$1", "$2", "$3", "$10", "$01", "$0", "$9", "$<w>", "$<none>",
		"$<", "$<w", "$", "x$", "$x", "<$1|$2>", `\ud800$&\udc00`, "[$&$'$`$$$1$<w>]"} {
		r := `"` + repl + `".padEnd(60, "·")`
		exprs = append(exprs,
			long+`.replace(/(\w)(\w)\w/g, `+r+`)`,
			long+`.replace(/(?<w>\w)\w/g, `+r+`)`,
			long+`.replace(/(\w)(x)?-/g, `+r+`)`,
			long+`.replace(/d(e)f/, `+r+`)`,
			long+`.replace("def", `+r+`)`,
			long+`.replaceAll("-", `+r+`)`,
			long+`.replaceAll(/(?<w>-)/g, `+r+`)`,
		)
	}
	exprs = append(exprs, long+`.repeat(20).replace(/./g, "$'")`) // past the budget
	for _, expr := range exprs {
		guarded, plain := evalGuarded(t, expr, lim)
		if len(utf16.Encode([]rune(plain))) > maxUnits {
			plain = "throws RangeError" // the budget must stop it
		}
		if guarded != plain {
			t.Errorf("%s = %.200q, goja says %.200q", expr, guarded, plain)
		}
	}
}
