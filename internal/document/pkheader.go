package document

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParsePKHeader parses an x-ms-documentdb-partitionkey header value: a JSON
// array whose elements are strings, numbers, true, false, null or {} (the
// Undefined component). Strings may use JSON's escapes and also those of Go's
// strconv.QuoteToASCII, which the Go SDK sends (protocol §5.1): \a \v \'
// \xHH \UHHHHHHHH and octal \OOO. A lone UTF-16 surrogate decodes to U+FFFD,
// and so does each \xHH or octal byte that does not form valid UTF-8. Numbers
// follow the JSON grammar and are doubles; literals beyond the double range
// are refused. The empty array "[]" gives an empty (non-nil) key. The number
// of components is not checked. Errors are *PKError.
func ParsePKHeader(h string) (PartitionKey, error) {
	b := []byte(h)
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, &PKError{Msg: "partition key must be a JSON array"}
	}
	pk := make(PartitionKey, 0, 1+strings.Count(h, ","))
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		i++
	} else {
		for {
			v, end, err := parsePKComponent(b, i)
			if err != nil {
				return nil, err
			}
			pk = append(pk, v)
			i = skipWS(b, end)
			if i < len(b) && b[i] == ',' {
				i = skipWS(b, i+1)
				continue
			}
			if i < len(b) && b[i] == ']' {
				i++
				break
			}
			return nil, pkErr(synErr(i, "%s, want ',' or ']'", describe(b, i)))
		}
	}
	if i = skipWS(b, i); i != len(b) {
		return nil, pkErr(synErr(i, "%s after the array", describe(b, i)))
	}
	return pk, nil
}

// pkErr turns a scanner error into a *PKError.
func pkErr(err error) error {
	if se, ok := errors.AsType[*syntaxError](err); ok {
		return &PKError{Msg: se.Error()}
	}
	return &PKError{Msg: err.Error()}
}

// parsePKComponent parses one element of the header array at b[i].
func parsePKComponent(b []byte, i int) (PKValue, int, error) {
	if i >= len(b) {
		return PKValue{}, 0, pkErr(synErr(i, "unexpected end of input"))
	}
	switch c := b[i]; {
	case c == '"':
		end, esc, err := scanString(b, i, true)
		if err != nil {
			return PKValue{}, 0, pkErr(err)
		}
		return PKValue{Kind: String, String: decodeString(b[i+1:end-1], esc)}, end, nil
	case c == '-' || c >= '0' && c <= '9':
		end, err := scanNumber(b, i)
		if err != nil {
			return PKValue{}, 0, pkErr(err)
		}
		f, ok := parseNumber(b[i:end])
		if !ok {
			return PKValue{}, 0, &PKError{Msg: "number " + string(b[i:end]) + " is out of range"}
		}
		return PKValue{Kind: Number, Number: f}, end, nil
	case c == 't':
		end, err := scanLiteral(b, i, "true")
		return PKValue{Kind: Bool, Bool: true}, end, pkErrOrNil(err)
	case c == 'f':
		end, err := scanLiteral(b, i, "false")
		return PKValue{Kind: Bool}, end, pkErrOrNil(err)
	case c == 'n':
		end, err := scanLiteral(b, i, "null")
		return PKValue{Kind: Null}, end, pkErrOrNil(err)
	case c == '{':
		j := skipWS(b, i+1)
		if j < len(b) && b[j] == '}' {
			return PKValue{Kind: Undefined}, j + 1, nil
		}
		return PKValue{}, 0, &PKError{Msg: "a partition key component may be {} but no other object"}
	case c == '[':
		return PKValue{}, 0, &PKError{Msg: "a partition key component may not be an array"}
	}
	return PKValue{}, 0, pkErr(synErr(i, "%s", describe(b, i)))
}

func pkErrOrNil(err error) error {
	if err == nil {
		return nil
	}
	return pkErr(err)
}

// decodeString decodes the content of a validated string literal.
func decodeString(raw []byte, esc bool) string {
	if !esc {
		return string(raw)
	}
	var buf [128]byte
	return string(appendUnescaped(buf[:0], raw))
}

// String returns pk in canonical JSON array form, e.g. ["a",1,true,null,{}]:
// no spaces, Undefined as {}, numbers as JavaScript's Number.prototype.toString
// (and Go's encoding/json) print them, strings ASCII-only with every other
// character escaped as \uXXXX (UTF-16, lower-case hex, as the JavaScript SDK
// sends them). ParsePKHeader(pk.String()) is Equal to pk, except that NaN and
// infinities (which no parsed key holds) print as null, and bytes of invalid
// UTF-8 in a string print as U+FFFD.
func (pk PartitionKey) String() string {
	return string(pk.AppendJSON(make([]byte, 0, 16*len(pk)+2)))
}

// AppendJSON appends pk.String() to dst and returns the extended slice.
func (pk PartitionKey) AppendJSON(dst []byte) []byte {
	dst = append(dst, '[')
	for i, v := range pk {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = v.AppendJSON(dst)
	}
	return append(dst, ']')
}

// AppendJSON appends v in the canonical JSON form PartitionKey.String uses.
func (v PKValue) AppendJSON(dst []byte) []byte {
	switch v.Kind {
	case Null:
		return append(dst, "null"...)
	case Bool:
		return strconv.AppendBool(dst, v.Bool)
	case Number:
		return appendNumber(dst, v.Number)
	case String:
		return appendJSONString(dst, v.String)
	default:
		return append(dst, "{}"...)
	}
}

// Equal reports whether pk and o have the same length and equal components:
// the same kind, and then numbers equal as float64 (so 0 == -0 and NaN is
// never equal), strings byte for byte, booleans by value. Undefined equals
// Undefined and Null equals Null.
func (pk PartitionKey) Equal(o PartitionKey) bool {
	if len(pk) != len(o) {
		return false
	}
	for i := range pk {
		if !pk[i].Equal(o[i]) {
			return false
		}
	}
	return true
}

// Equal reports whether v and o are equal, as PartitionKey.Equal compares
// components.
func (v PKValue) Equal(o PKValue) bool {
	if v.Kind != o.Kind {
		return false
	}
	switch v.Kind {
	case Bool:
		return v.Bool == o.Bool
	case Number:
		return v.Number == o.Number
	case String:
		return v.String == o.String
	}
	return true
}

// appendNumber appends f as JavaScript's Number.prototype.toString prints it
// (ECMA-262 Number::toString): the shortest digits that round-trip, in fixed
// notation when 1e-7 < |f| < 1e21 and as d.ddde±x otherwise. Go's
// encoding/json prints the same. -0 prints as 0; NaN and ±Inf as null.
func appendNumber(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	if f == 0 {
		return append(dst, '0')
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64) // d[.ddd]e±XX
	mant, exp := e, 0
	for j := range e {
		if e[j] == 'e' {
			mant = e[:j]
			exp, _ = strconv.Atoi(string(e[j+1:]))
			break
		}
	}
	var digs [24]byte
	d := digs[:0]
	for _, c := range mant {
		if c != '.' {
			d = append(d, c)
		}
	}
	k, n := len(d), exp+1 // value = 0.d × 10^n
	switch {
	case k <= n && n <= 21:
		dst = append(dst, d...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as an ASCII-only JSON string literal: '"' and
// '\\' escaped, \b \f \n \r \t by name, other control characters, DEL and
// every non-ASCII character as \uXXXX (surrogate pairs beyond the BMP), and
// each byte of invalid UTF-8 as \ufffd. The result is safe in an HTTP header.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			j := i + 1
			for j < len(s) && s[j] >= 0x20 && s[j] < 0x7f && s[j] != '"' && s[j] != '\\' {
				j++
			}
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		if c < utf8.RuneSelf {
			dst = appendEscape(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if r > 0xffff {
			r -= 0x10000
			dst = appendU(dst, 0xd800+(r>>10))
			dst = appendU(dst, 0xdc00+(r&0x3ff))
		} else {
			dst = appendU(dst, r) // includes RuneError for invalid bytes
		}
	}
	return append(dst, '"')
}

func appendU(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}
