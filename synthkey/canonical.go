package synthkey

import (
	"encoding/json"
	"math"
	"strconv"
)

// maxSafeInteger is 2^53 - 1, the largest integer every JSON client (a
// JavaScript number, a Cosmos DB double) represents exactly.
const maxSafeInteger = 1<<53 - 1

// Canonical returns the canonical string of one property value, the form in
// which it enters a concatenated key and the hash input (see the package doc,
// "Type rules"). It returns ErrNull for nil, ErrNotScalar for map[string]any
// and []any, ErrNumberRange for numbers that are not finite or whose
// magnitude is 2^53 or more, and ErrUnsupportedType for any other Go type.
func Canonical(v any) (string, error) {
	b, err := appendCanonical(nil, v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// appendCanonical appends v's canonical string to dst.
func appendCanonical(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case string:
		return append(dst, v...), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case float64:
		return appendFloat(dst, v, 64)
	case float32:
		// NB: at float32 precision, as encoding/json writes it, so that the
		// key agrees with the number stored in the item (0.1, not
		// 0.10000000149011612).
		return appendFloat(dst, float64(v), 32)
	case json.Number:
		return appendNumber(dst, v)
	case int:
		return appendInt(dst, int64(v))
	case int8:
		return appendInt(dst, int64(v))
	case int16:
		return appendInt(dst, int64(v))
	case int32:
		return appendInt(dst, int64(v))
	case int64:
		return appendInt(dst, v)
	case uint:
		return appendUint(dst, uint64(v))
	case uint8:
		return appendUint(dst, uint64(v))
	case uint16:
		return appendUint(dst, uint64(v))
	case uint32:
		return appendUint(dst, uint64(v))
	case uint64:
		return appendUint(dst, v)
	case nil:
		return dst, ErrNull
	case map[string]any, []any:
		return dst, ErrNotScalar
	default:
		return dst, ErrUnsupportedType
	}
}

func appendInt(dst []byte, i int64) ([]byte, error) {
	if i > maxSafeInteger || i < -maxSafeInteger {
		return dst, ErrNumberRange
	}
	return strconv.AppendInt(dst, i, 10), nil
}

func appendUint(dst []byte, u uint64) ([]byte, error) {
	if u > maxSafeInteger {
		return dst, ErrNumberRange
	}
	return strconv.AppendUint(dst, u, 10), nil
}

// appendFloat formats f as the shortest decimal that reads back as the same
// float of bitSize bits, in plain notation (no exponent), with -0 as 0.
func appendFloat(dst []byte, f float64, bitSize int) ([]byte, error) {
	if math.IsNaN(f) || math.Abs(f) > maxSafeInteger {
		return dst, ErrNumberRange // NaN and ±Inf included
	}
	if f == 0 {
		return append(dst, '0'), nil
	}
	return strconv.AppendFloat(dst, f, 'f', -1, bitSize), nil
}

// appendNumber canonicalises a JSON number literal by its float64 value, as
// Cosmos DB and JavaScript read it.
func appendNumber(dst []byte, n json.Number) ([]byte, error) {
	s := string(n)
	if !isJSONNumber(s) {
		return dst, ErrUnsupportedType
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return dst, ErrNumberRange // out of float64 range
	}
	return appendFloat(dst, f, 64)
}

// isJSONNumber reports whether s is a number literal in JSON's grammar
// (RFC 8259 §6), which strconv.ParseFloat alone would widen (hex, "Inf",
// underscores, a leading '+').
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}
