package document

import (
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// AppendJSON appends v as JSON: what fastjson's MarshalTo writes, but with
// JSON's string escapes. MarshalTo quotes a string holding a control
// character, or a character Go does not print, with Go's escapes (\a, \x00,
// \U000e0001), which no JSON parser reads: a definition or a query result
// holding "\u0007" came back unreadable (a bug hunt).
func AppendJSON(dst []byte, v *fastjson.Value) []byte {
	switch v.Type() {
	case fastjson.TypeObject:
		dst = append(dst, '{')
		n := 0
		o, _ := v.Object()
		o.Visit(func(k []byte, e *fastjson.Value) {
			if n > 0 {
				dst = append(dst, ',')
			}
			n++
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			dst = AppendJSON(dst, e)
		})
		return append(dst, '}')
	case fastjson.TypeArray:
		dst = append(dst, '[')
		for i, e := range v.GetArray() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJSON(dst, e)
		}
		return append(dst, ']')
	case fastjson.TypeString:
		return AppendString(dst, v.GetStringBytes())
	}
	return v.MarshalTo(dst) // a number's own text, true, false, null
}

// appendEscape appends the JSON escape of the ASCII character c: '"' and
// '\\' escaped, \b \f \n \r \t by name, other characters as \u00XX.
func appendEscape(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return appendU(dst, rune(c))
}

// AppendString appends s as a JSON string literal: '"', '\\' and control
// characters escaped (\b \f \n \r \t by name, the others as \u00XX), every
// other character as it is, and each byte of invalid UTF-8 as \ufffd.
func AppendString(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
		}
		dst = append(dst, s[start:i]...)
		if c >= utf8.RuneSelf {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = appendEscape(dst, c)
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
