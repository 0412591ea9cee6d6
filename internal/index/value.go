package index

import (
	"cmp"
	"math"
	"strings"

	"github.com/valyala/fastjson"
)

// Kind is the type of a scalar Value. Kinds are declared in Cosmos DB's
// comparison order.
type Kind uint8

// The kinds of Value. Undefined (the zero Kind) is no value at all: it is
// never indexed and its spans are empty.
const (
	Undefined Kind = iota
	Null
	Bool
	Number
	String
)

// String returns the kind's name as Cosmos DB's type functions spell it
// ("undefined", "null", "boolean", "number", "string").
func (k Kind) String() string {
	switch k {
	case Undefined:
		return "undefined"
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	}
	return "invalid"
}

// Value is a scalar: a query literal or an indexed document value. Only the
// field of its Kind is meaningful. The zero Value is Undefined.
type Value struct {
	Kind Kind
	Bool bool
	Num  float64
	Str  string
	// Bounded marks a string decoded from a bounded term (DecodeTerm): Str
	// is the first StringTermBytes bytes of the string indexed, Hash the
	// whole string's hash.
	Bounded bool
	Hash    uint64
}

// NullValue returns the null Value.
func NullValue() Value { return Value{Kind: Null} }

// BoolValue returns the boolean Value b.
func BoolValue(b bool) Value { return Value{Kind: Bool, Bool: b} }

// NumberValue returns the number Value f.
func NumberValue(f float64) Value { return Value{Kind: Number, Num: f} }

// StringValue returns the string Value s.
func StringValue(s string) Value { return Value{Kind: String, Str: s} }

// ValueFromJSON returns the scalar encoded by the JSON text raw (leading and
// trailing white space allowed). It reports false for arrays, objects,
// invalid JSON and NaN.
func ValueFromJSON(raw []byte) (Value, bool) {
	var p fastjson.Parser
	v, err := p.ParseBytes(raw)
	if err != nil {
		return Value{}, false
	}
	return valueOf(v)
}

// valueOf converts a parsed scalar; it reports false for arrays, objects and
// numbers that do not parse or are NaN or Infinity words (fastjson accepts
// them, JSON does not). ±Inf from an overflowing JSON number (1e999) is kept:
// it orders beyond every finite number.
func valueOf(v *fastjson.Value) (Value, bool) {
	switch v.Type() {
	case fastjson.TypeNull:
		return Value{Kind: Null}, true
	case fastjson.TypeTrue:
		return Value{Kind: Bool, Bool: true}, true
	case fastjson.TypeFalse:
		return Value{Kind: Bool}, true
	case fastjson.TypeNumber:
		f, err := v.Float64()
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) && !finiteSyntax(v) {
			return Value{}, false
		}
		return Value{Kind: Number, Num: f}, true
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		return Value{Kind: String, Str: string(b)}, true
	}
	return Value{}, false
}

// Compare returns -1, 0 or +1 as a orders before, equal to or after b in
// Cosmos DB's ORDER BY order: undefined < null < false < true < numbers <
// strings; numbers numerically (-0 == 0), strings by Unicode code point. It
// is the order of the encoded terms of a and b on the same path.
func Compare(a, b Value) int {
	if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	switch a.Kind {
	case Bool:
		switch {
		case a.Bool == b.Bool:
			return 0
		case b.Bool:
			return -1
		}
		return 1
	case Number:
		return cmp.Compare(a.Num, b.Num)
	case String:
		return strings.Compare(a.Str, b.Str)
	}
	return 0
}

// finiteSyntax reports whether the number token v is written as a JSON number
// (digits, as in 1e999, which overflows to ±Inf and is indexed as such), not
// as the "Infinity"/"inf" words fastjson also accepts.
func finiteSyntax(v *fastjson.Value) bool {
	var a [32]byte
	for _, c := range v.MarshalTo(a[:0]) {
		if c == 'i' || c == 'I' || c == 'n' || c == 'N' {
			return false
		}
	}
	return true
}
