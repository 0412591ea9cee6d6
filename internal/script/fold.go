package script

import (
	"fmt"
	"math/big"
	"reflect"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"
)

// goja's compiler folds constant expressions as it compiles: `"a" + "b"` becomes "ab", and
// `2n ** (1n << 40n)` is computed then and there, on a VM of its own that no interrupt or
// memory check of this package reaches. A security review made a stored procedure's creation
// allocate until the process was killed (the BigInt power), and a 4 MB body of 1 KB string
// literals joined by + take 3 GB in 2 s (each fold copies the whole string so far: quadratic).
// So every source goja compiles (a script's body, text given to eval or a Function constructor)
// is looked at first (checkFolds): BigInt literals are refused (and the BigInt global is removed,
// guard.go: a BigInt power or shift is one native call that no limit can stop), and the bytes
// the folds of constant string concatenations would build, summed, are bounded by maxFoldBytes.

// maxFoldBytes bounds the bytes goja's constant folding may build for one source: the sum of
// the lengths of the strings its constant concatenations produce. Real scripts build a few
// kilobytes this way (a long message split over lines).
const maxFoldBytes = 16 << 20

// foldNumberBytes stands for the length of a folded number, boolean, null or undefined as a
// string (a double's longest form is 24 characters).
const foldNumberBytes = 24

// checkFolds returns the message refusing the program prg, or "" when compiling it is safe:
// no BigInt literal, and at most maxFoldBytes built by constant string concatenations.
func checkFolds(prg *ast.Program) string {
	if prg == nil {
		return ""
	}
	f := folder{seen: make(map[uintptr]bool)}
	f.walk(reflect.ValueOf(prg))
	switch {
	case f.bigint:
		return "BigInt is not supported in scripts"
	case f.bytes > maxFoldBytes:
		return fmt.Sprintf("the script's constant string expressions build more than %d bytes as it compiles", maxFoldBytes)
	}
	return ""
}

// folder walks a goja AST, summing what constant folding would build.
type folder struct {
	bytes  int64
	bigint bool
	seen   map[uintptr]bool // nodes walked (a declaration is listed in its scope and its statement)
}

var astPkg = reflect.TypeFor[ast.Program]().PkgPath()

// walk visits every node under v, the value of an AST node or of a field holding nodes.
func (f *folder) walk(v reflect.Value) {
	if f.bigint || f.bytes > maxFoldBytes {
		return // decided
	}
	switch v.Kind() {
	case reflect.Interface:
		if !v.IsNil() {
			f.walk(v.Elem())
		}
	case reflect.Pointer:
		if v.IsNil() || v.Elem().Kind() != reflect.Struct || v.Elem().Type().PkgPath() != astPkg {
			return
		}
		if f.seen[v.Pointer()] {
			return
		}
		f.seen[v.Pointer()] = true
		if e, ok := v.Interface().(ast.Expression); ok {
			f.expr(e)
			return
		}
		f.fields(v.Elem())
	case reflect.Struct:
		if v.Type().PkgPath() == astPkg {
			f.fields(v)
		}
	case reflect.Slice:
		for i := range v.Len() {
			f.walk(v.Index(i))
		}
	}
}

func (f *folder) fields(v reflect.Value) {
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() {
			f.walk(v.Field(i))
		}
	}
}

// expr walks e and returns whether goja's compiler treats it as a constant and, if so, the
// length of its value as a string.
func (f *folder) expr(e ast.Expression) (n int64, constant bool) {
	switch e := e.(type) {
	case *ast.StringLiteral:
		return int64(len(e.Value)), true
	case *ast.NumberLiteral:
		if _, ok := e.Value.(*big.Int); ok {
			f.bigint = true
		}
		return foldNumberBytes, true
	case *ast.BooleanLiteral, *ast.NullLiteral:
		return foldNumberBytes, true
	case *ast.UnaryExpression:
		if _, c := f.sub(e.Operand); c {
			return foldNumberBytes, true // typeof, !, -, ~, void: short
		}
		return 0, false
	case *ast.BinaryExpression:
		l, lc := f.sub(e.Left)
		r, rc := f.sub(e.Right)
		if !lc || !rc {
			return 0, false
		}
		switch e.Operator {
		case token.PLUS:
			f.bytes += l + r
			return l + r, true
		case token.LOGICAL_AND, token.LOGICAL_OR, token.COALESCE:
			return max(l, r), true
		}
		return foldNumberBytes, true
	}
	f.fields(reflect.ValueOf(e).Elem())
	return 0, false
}

// sub is expr for an operand, marking it walked.
func (f *folder) sub(e ast.Expression) (int64, bool) {
	if e == nil {
		return 0, false
	}
	if v := reflect.ValueOf(e); v.Kind() == reflect.Pointer && !v.IsNil() {
		f.seen[v.Pointer()] = true
	}
	return f.expr(e)
}
