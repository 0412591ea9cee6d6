package exec

import (
	"cmp"
	"slices"
	"strings"
	"unsafe"

	"github.com/valyala/fastjson"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/parse"
)

// kind is the type of a value. The order of the constants is Cosmos DB's cross-type sort
// order: undefined < null < booleans < numbers < strings < arrays < objects.
type kind uint8

const (
	kUndef kind = iota
	kNull
	kBool
	kNum
	kStr
	kArr
	kObj
)

// value is one evaluated JSON value, or undefined (the zero value).
//
// Values read from a document keep their *fastjson.Value in j: arrays and objects are then
// read lazily from it, and marshalling reproduces the document's own text (so large integers
// keep all their digits). Values built by the query (object and array literals, function
// results) have j == nil, and arrays and objects keep their contents in c.
type value struct {
	k kind
	n float64 // kNum; for kBool 1 means true
	s string  // kStr
	j *fastjson.Value
	c *composite
}

// composite holds a constructed array (keys == nil) or object (len(keys) == len(elems)).
// It never holds undefined elements.
type composite struct {
	keys  []string
	elems []value
	size  int // sizeOf, when its builder measured it (an ARRAY subquery's); 0: not known
}

var (
	undef  = value{}
	null   = value{k: kNull}
	vTrue  = value{k: kBool, n: 1}
	vFalse = value{k: kBool}
)

func boolean(b bool) value {
	if b {
		return vTrue
	}
	return vFalse
}

// num returns f as a number value, or undefined for NaN and infinities, which JSON cannot
// hold (Cosmos DB returns undefined for, e.g., SQRT(-1)).
func num(f float64) value {
	if f != f || f > maxFloat || f < -maxFloat {
		return undef
	}
	return value{k: kNum, n: f}
}

const maxFloat = 1.79769313486231570814527423731704356798070e+308

func str(s string) value { return value{k: kStr, s: s} }

func arrayOf(elems []value) value {
	return value{k: kArr, c: &composite{elems: elems}}
}

func (v value) isTrue() bool { return v.k == kBool && v.n != 0 }

// fromJSON converts a parsed JSON value. Strings are not copied: they alias the parser's
// buffer, which stays valid until the parser is reused. Run reuses its parser only when no
// value outlives the document it came from (see cquery.retain).
func fromJSON(j *fastjson.Value) value {
	if j == nil {
		return undef
	}
	switch j.Type() {
	case fastjson.TypeNull:
		return value{k: kNull, j: j}
	case fastjson.TypeTrue:
		return value{k: kBool, n: 1, j: j}
	case fastjson.TypeFalse:
		return value{k: kBool, j: j}
	case fastjson.TypeNumber:
		f, err := j.Float64()
		if err != nil {
			return undef
		}
		return value{k: kNum, n: f, j: j}
	case fastjson.TypeString:
		b := j.GetStringBytes()
		return value{k: kStr, s: unsafe.String(unsafe.SliceData(b), len(b)), j: j}
	case fastjson.TypeArray:
		return value{k: kArr, j: j}
	case fastjson.TypeObject:
		return value{k: kObj, j: j}
	}
	return undef
}

// owned returns a deep copy of v that shares nothing with any parser, for values that must
// outlive their document or be shared between goroutines (parameters).
func owned(v value) value {
	switch v.k {
	case kStr:
		return str(strings.Clone(v.s))
	case kArr:
		n := v.length()
		elems := make([]value, 0, n)
		v.each(func(_ string, e value) bool {
			elems = append(elems, owned(e))
			return true
		})
		return arrayOf(elems)
	case kObj:
		c := &composite{}
		v.each(func(k string, e value) bool {
			c.keys = append(c.keys, strings.Clone(k))
			c.elems = append(c.elems, owned(e))
			return true
		})
		return value{k: kObj, c: c}
	case kNum:
		if i, ok := bigInt(v); ok {
			return intValue(i) // its digits, in memory of its own
		}
	}
	v.j = nil
	return v
}

// length returns the number of elements or properties of an array or object.
func (v value) length() int {
	switch {
	case v.c != nil:
		return len(v.c.elems)
	case v.k == kArr:
		return len(v.j.GetArray())
	case v.k == kObj:
		return v.j.GetObject().Len()
	}
	return 0
}

// each calls fn for every element of an array (with key "") or property of an object, in
// order, until fn returns false.
func (v value) each(fn func(k string, e value) bool) {
	switch {
	case v.c != nil:
		for i, e := range v.c.elems {
			k := ""
			if v.c.keys != nil {
				k = v.c.keys[i]
			}
			if !fn(k, e) {
				return
			}
		}
	case v.k == kArr:
		for _, e := range v.j.GetArray() {
			if !fn("", fromJSON(e)) {
				return
			}
		}
	case v.k == kObj:
		stop := false
		v.j.GetObject().Visit(func(k []byte, e *fastjson.Value) {
			if !stop && !fn(string(k), fromJSON(e)) {
				stop = true
			}
		})
	}
}

// get returns property name of an object, or undefined.
func (v value) get(name string) value {
	if v.k != kObj {
		return undef
	}
	if v.c != nil {
		for i, k := range v.c.keys {
			if k == name {
				return v.c.elems[i]
			}
		}
		return undef
	}
	return fromJSON(v.j.GetObject().Get(name))
}

// index returns element i of an array, or undefined.
func (v value) index(i int) value {
	if v.k != kArr || i < 0 {
		return undef
	}
	if v.c != nil {
		if i < len(v.c.elems) {
			return v.c.elems[i]
		}
		return undef
	}
	a := v.j.GetArray()
	if i < len(a) {
		return fromJSON(a[i])
	}
	return undef
}

// elems returns the elements of an array as a slice the caller may not modify.
func (v value) elems() []value {
	if v.k != kArr {
		return nil
	}
	if v.c != nil {
		return v.c.elems
	}
	a := v.j.GetArray()
	out := make([]value, len(a))
	for i, e := range a {
		out[i] = fromJSON(e)
	}
	return out
}

// appendJSON appends v as JSON. v must not be undefined.
func appendJSON(dst []byte, v value) []byte {
	if v.j != nil {
		// Not fastjson's MarshalTo: it quotes a string holding a control character with Go's
		// escapes (\a, \x00), which no JSON parser reads (a bug hunt: a page projecting one
		// could not be parsed).
		return document.AppendJSON(dst, v.j)
	}
	switch v.k {
	case kNull:
		return append(dst, "null"...)
	case kBool:
		if v.n != 0 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case kNum:
		return parse.AppendNumber(dst, v.n)
	case kStr:
		return appendString(dst, v.s)
	case kArr, kObj:
		open, close := byte('['), byte(']')
		if v.k == kObj {
			open, close = '{', '}'
		}
		dst = append(dst, open)
		for i, e := range v.c.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			if v.k == kObj {
				dst = appendString(dst, v.c.keys[i])
				dst = append(dst, ':')
			}
			dst = appendJSON(dst, e)
		}
		return append(dst, close)
	}
	return append(dst, "null"...)
}

// appendString appends s as a JSON string (document.AppendString). Invalid UTF-8 becomes
// U+FFFD, as in encoding/json.
func appendString(dst []byte, s string) []byte {
	return document.AppendString(dst, unsafe.Slice(unsafe.StringData(s), len(s)))
}

// compareValues orders any two values the way ORDER BY does: first by kind (undefined <
// null < false < true < numbers < strings < arrays < objects), then by content. Strings
// compare by code point; arrays element by element; objects by their sorted properties.
func compareValues(a, b value) int {
	if a.k != b.k {
		return cmp.Compare(a.k, b.k)
	}
	switch a.k {
	case kBool, kNum:
		return cmp.Compare(a.n, b.n)
	case kStr:
		return strings.Compare(a.s, b.s)
	case kArr:
		ea, eb := a.elems(), b.elems()
		for i := 0; i < len(ea) && i < len(eb); i++ {
			if c := compareValues(ea[i], eb[i]); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(ea), len(eb))
	case kObj:
		fa, fb := sortedFields(a), sortedFields(b)
		for i := 0; i < len(fa) && i < len(fb); i++ {
			if c := strings.Compare(fa[i].k, fb[i].k); c != 0 {
				return c
			}
			if c := compareValues(fa[i].v, fb[i].v); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(fa), len(fb))
	}
	return 0
}

type field struct {
	k string
	v value
}

func sortedFields(v value) []field {
	fs := make([]field, 0, v.length())
	v.each(func(k string, e value) bool {
		fs = append(fs, field{k, e})
		return true
	})
	slices.SortStableFunc(fs, func(x, y field) int { return strings.Compare(x.k, y.k) })
	return fs
}

// equalValues is Cosmos DB's = operator: undefined unless both sides are defined and of the
// same type; arrays and objects compare deeply (object property order does not matter).
func equalValues(a, b value) value {
	if a.k == kUndef || b.k == kUndef || a.k != b.k {
		return undef
	}
	return boolean(compareValues(a, b) == 0)
}

// appendKey appends a canonical encoding of v: two values get the same encoding exactly when
// they are equal under compareValues. It is used for DISTINCT and GROUP BY.
func appendKey(dst []byte, v value) []byte {
	switch v.k {
	case kUndef:
		return append(dst, '~')
	case kArr:
		dst = append(dst, '[')
		v.each(func(_ string, e value) bool {
			dst = appendKey(dst, e)
			dst = append(dst, ',')
			return true
		})
		return append(dst, ']')
	case kObj:
		dst = append(dst, '{')
		for _, f := range sortedFields(v) {
			dst = appendString(dst, f.k)
			dst = append(dst, ':')
			dst = appendKey(dst, f.v)
			dst = append(dst, ',')
		}
		return append(dst, '}')
	case kNum:
		return parse.AppendNumber(dst, v.n)
	case kStr:
		return appendString(dst, v.s)
	}
	v.j = nil
	return appendJSON(dst, v)
}
