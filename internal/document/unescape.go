package document

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// UnescapeNonASCII returns the JSON text b with every \uXXXX escape of a
// character past ASCII (a surrogate pair as the one character it makes)
// written as the character's UTF-8 bytes, and every other byte as it was:
// the same JSON value, as a client that writes UTF-8 would have sent it.
// Escapes of ASCII characters (quotes, backslashes, control characters)
// and of lone surrogates are kept. b is returned itself when it has none
// to rewrite.
//
// Cosmos DB measures an item as the UTF-8 length of its JSON (its 2 MB
// limit, storage, request units), and clients that escape every non-ASCII
// character (the Python SDK's json.dumps) would otherwise have their text
// counted, and stored, at twice its size or more: 400,000 CJK characters,
// 1.2 MB as UTF-8, were refused as 2.4 MB (a Python SDK hunt).
//
// b need not be valid JSON: escapes are recognised only where a backslash
// is not itself escaped, so a valid text keeps its value and an invalid
// one stays invalid for the parser to refuse.
func UnescapeNonASCII(b []byte) []byte {
	i := bytes.Index(b, []byte(`\u`))
	if i < 0 {
		return b
	}
	var out []byte // nil until the first rewrite
	last := 0      // b[last:] not yet copied to out
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if i+1 >= len(b) {
			break
		}
		if b[i+1] != 'u' {
			i++ // \" \\ \n …: skip the escaped byte
			continue
		}
		r, ok := hex4(b, i+2)
		if !ok {
			i++
			continue
		}
		n := 6 // bytes of the escape(s) replaced
		switch {
		case r < utf8.RuneSelf:
			i += 5
			continue
		case utf16.IsSurrogate(r):
			// A pair \uD8xx\uDCxx is one character; a lone one stays.
			r2, ok := rune(0), false
			if i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
				r2, ok = hex4(b, i+8)
			}
			c := utf16.DecodeRune(r, r2)
			if !ok || c == utf8.RuneError {
				i += 5
				continue
			}
			r, n = c, 12
		}
		if out == nil {
			out = make([]byte, 0, len(b))
		}
		out = append(out, b[last:i]...)
		out = utf8.AppendRune(out, r)
		last = i + n
		i += n - 1
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// hex4 reads the four hex digits at b[i:i+4] as a UTF-16 code unit.
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
