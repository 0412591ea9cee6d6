package script

import (
	"fmt"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
)

// maxSourceTokens bounds the tokens of JavaScript source that goja's parser is given: a
// script's body, and text given to eval or to a Function constructor. The parser recurses
// natively, and a Go stack past its limit (1 GB) ends the process: `eval("(".repeat(1e6) +
// "1" + ")".repeat(1e6))`, a hundred bytes of stored procedure, did. Each level of nesting
// takes at least one token and, at worst, about 2.6 KB of stack (measured: `((((…` and nested
// `function f(){` took 128 MB for 50,000 levels, other constructs less), so the bound keeps
// the parser under about 260 MB; real scripts are far smaller (a 100 KB body has some 40,000).
const maxSourceTokens = 100_000

// sourceTokens returns an upper bound of the tokens in JavaScript source src: a run of
// identifier characters (ASCII letters, digits, '_' and '$') counts one, and every other
// character that is not white space counts one, inside strings, templates, regular
// expressions and comments too. Never fewer than the parser sees, whatever those hold.
func sourceTokens(src string) int {
	n, inWord := 0, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '$':
			if !inWord {
				n++
			}
			inWord = true
		case c == ' ', c == '\t', c == '\n', c == '\r', c == '\v', c == '\f':
			inWord = false
		default:
			n++
			inWord = false
		}
	}
	return n
}

// sourceTooLarge returns the message refusing src, or "" when it is within maxSourceTokens.
func sourceTooLarge(what string, src string) string {
	if len(src) <= maxSourceTokens { // a token takes a byte at least
		return ""
	}
	if n := sourceTokens(src); n > maxSourceTokens {
		return fmt.Sprintf("%s is too large to compile: about %d tokens, the limit is %d", what, n, maxSourceTokens)
	}
	return ""
}

// guardCompilers bounds the source that eval and the Function constructors (Function,
// and the async and generator ones reachable through their functions' constructor
// property) hand to goja's parser (maxSourceTokens): more throws a RangeError.
//
// NB: eval replaced by a function of this package is no longer the intrinsic one, so
// goja runs every eval as an indirect eval, in the global scope: a script's eval no longer
// sees the local variables of the function that calls it. Scripts that need that are rare,
// and a Go stack overflow in the parser would take the whole server down.
func (x *execution) guardCompilers() {
	rt := x.rt
	// check refuses args, given to eval (prefix "") or to a Function constructor (the source
	// it compiles begins with prefix), when they are too large or fold too much (fold.go).
	check := func(prefix string, args []goja.Value) {
		x.checkFired()
		total := 0
		for _, a := range args {
			if s, ok := a.Export().(string); ok {
				total += len(s)
				if msg := sourceTooLarge("the source given to eval or Function", s); msg != "" {
					x.throwRange(msg)
				}
			}
		}
		if total > 16*maxSourceTokens { // a Function's parameters and body together
			x.throwRange(fmt.Sprintf("the source given to Function is too large to compile: %d bytes", total))
		}
		if msg := checkFolds(compiledSource(prefix, args)); msg != "" {
			x.throwRange(msg)
		}
	}
	global := rt.GlobalObject()
	if orig, ok := goja.AssertFunction(global.Get("eval")); ok {
		x.define(global, "eval", rt.ToValue(func(call goja.FunctionCall) goja.Value {
			if len(call.Arguments) > 0 {
				check("", call.Arguments[:1])
			}
			return x.call(orig, goja.Undefined(), call.Arguments...)
		}))
	}
	for _, src := range []string{"(function(){})", "(async function(){})", "(function*(){})", "(async function*(){})"} {
		prefix := strings.TrimSuffix(src, "(){})") + " anonymous("
		fn, err := rt.RunString(src)
		if err != nil {
			continue // a kind of function goja does not have
		}
		proto := fn.ToObject(rt).Prototype()
		if proto == nil {
			continue
		}
		ctorVal := proto.Get("constructor")
		orig, ok := goja.AssertFunction(ctorVal)
		if !ok {
			continue
		}
		origObj := ctorVal.ToObject(rt)
		guardedCtor := rt.ToValue(func(call goja.ConstructorCall) *goja.Object {
			// Converted once, here: an object's toString could answer the check with one
			// source and the constructor with another.
			args := make([]goja.Value, len(call.Arguments))
			for i, a := range call.Arguments {
				args[i] = a.ToString()
			}
			check(prefix, args)
			return x.call(orig, goja.Undefined(), args...).ToObject(rt)
		}).ToObject(rt)
		if err := guardedCtor.DefineDataProperty("prototype", proto, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE); err != nil {
			panic(err)
		}
		x.define(proto, "constructor", guardedCtor)
		if global.Get("Function") == ctorVal || sameObject(global.Get("Function"), origObj) {
			x.define(global, "Function", guardedCtor)
		}
	}
}

// compiledSource parses the source goja compiles for eval (prefix "": the one argument, when
// it is a string) or for a Function constructor (its parameters and body, the source goja's
// functionCtor builds), or returns nil when there is none or it does not parse (goja then
// refuses the same source with its SyntaxError).
func compiledSource(prefix string, args []goja.Value) *ast.Program {
	var src string
	if prefix == "" {
		s, ok := args[0].Export().(string)
		if !ok {
			return nil // eval of a non-string returns it
		}
		src = s
	} else {
		var b strings.Builder
		b.WriteString(prefix)
		for i, a := range args[:max(len(args)-1, 0)] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(a.String())
		}
		b.WriteString("\n) {\n")
		if len(args) > 0 {
			b.WriteString(args[len(args)-1].String())
		}
		b.WriteString("\n})")
		src = b.String()
	}
	prg, err := parser.ParseFile(nil, "", src, 0)
	if err != nil {
		return nil
	}
	return prg
}

// sameObject reports whether v is the object o.
func sameObject(v goja.Value, o *goja.Object) bool {
	vo, ok := v.(*goja.Object)
	return ok && vo == o
}
