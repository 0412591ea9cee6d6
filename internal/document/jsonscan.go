package document

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// This file holds a strict JSON scanner over []byte. It validates as it goes
// (RFC 8259: escapes, no raw control characters in strings, valid UTF-8,
// number grammar, nesting depth) and reports byte offsets, so that item bodies
// can be copied member by member without being re-encoded. fastjson is not
// used for this: its parser accepts invalid escapes and raw control
// characters, and its MarshalTo re-quotes strings with Go (not JSON) escapes.
//
// With goEsc set, string literals also accept the escapes of Go's
// strconv.QuoteToASCII (the Go SDK's partition key header, protocol §5.1).

// maxDepth is the deepest nesting of arrays and objects below an item's root
// object; Cosmos DB documents the same limit (128) for items.
const maxDepth = 128

// syntaxError is a JSON syntax error at byte offset off.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.off) }

func synErr(off int, format string, args ...any) *syntaxError {
	return &syntaxError{off: off, msg: fmt.Sprintf(format, args...)}
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// describe names the byte at b[i] for an error message.
func describe(b []byte, i int) string {
	if i >= len(b) {
		return "unexpected end of input"
	}
	c := b[i]
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("unexpected character %q", rune(c))
	}
	return fmt.Sprintf("unexpected byte 0x%02x", c)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexVal(c byte) rune {
	switch {
	case c <= '9':
		return rune(c - '0')
	case c >= 'a':
		return rune(c-'a') + 10
	default:
		return rune(c-'A') + 10
	}
}

// hexRun reports whether b[i:i+n] are n hex digits and returns their value.
func hexRun(b []byte, i, n int) (rune, bool) {
	if i+n > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+n] {
		if !isHex(c) {
			return 0, false
		}
		r = r<<4 | hexVal(c)
	}
	return r, true
}

// plainStr[c] is 1 for the bytes a string literal may hold unescaped that
// need no further check: ASCII from 0x20, except '"' and '\\'.
const plainStr = "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x01\x01\x00\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x00\x01\x01\x01" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"

// scanString validates the string literal starting at b[i] == '"' and
// returns the offset just past its closing quote and whether it contains any
// escape (so needs unescaping).
func scanString(b []byte, i int, goEsc bool) (end int, esc bool, err error) {
	start := i
	i++
	for {
		// Fast path over plain ASCII.
		for i < len(b) && plainStr[b[i]] != 0 {
			i++
		}
		if i >= len(b) {
			return 0, false, synErr(start, "unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc, nil
		case c < 0x20:
			return 0, false, synErr(i, "control character 0x%02x in string", c)
		case c >= 0x80:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 {
				return 0, false, synErr(i, "invalid UTF-8 in string")
			}
			i += n
		default: // backslash
			esc = true
			n, err := escapeLen(b, i, goEsc)
			if err != nil {
				return 0, false, err
			}
			i += n
		}
	}
}

// escapeLen validates the escape sequence at b[i] == '\\' and returns its
// length.
func escapeLen(b []byte, i int, goEsc bool) (int, error) {
	if i+1 >= len(b) {
		return 0, synErr(i, "unterminated string")
	}
	switch c := b[i+1]; c {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
		if _, ok := hexRun(b, i+2, 4); !ok {
			return 0, synErr(i, `invalid escape \u: want 4 hex digits`)
		}
		return 6, nil
	}
	if !goEsc {
		return 0, synErr(i, "invalid escape %s", escName(b, i))
	}
	switch c := b[i+1]; {
	case c == 'a' || c == 'v' || c == '\'':
		return 2, nil
	case c == 'x':
		if _, ok := hexRun(b, i+2, 2); !ok {
			return 0, synErr(i, `invalid escape \x: want 2 hex digits`)
		}
		return 4, nil
	case c == 'U':
		r, ok := hexRun(b, i+2, 8)
		if !ok {
			return 0, synErr(i, `invalid escape \U: want 8 hex digits`)
		}
		if !utf8.ValidRune(r) {
			return 0, synErr(i, `escape \U%08x is not a valid code point`, r)
		}
		return 10, nil
	case '0' <= c && c <= '7':
		if i+4 > len(b) || b[i+2] < '0' || b[i+2] > '7' || b[i+3] < '0' || b[i+3] > '7' {
			return 0, synErr(i, "invalid octal escape: want 3 octal digits")
		}
		if c > '3' { // over 0xff, as strconv.Unquote
			return 0, synErr(i, "octal escape %s is over \\377", string(b[i:i+4]))
		}
		return 4, nil
	}
	return 0, synErr(i, "invalid escape %s", escName(b, i))
}

// escName renders the escape at b[i] for an error message.
func escName(b []byte, i int) string {
	c := b[i+1]
	if c >= 0x20 && c < 0x7f {
		return `\` + string(rune(c))
	}
	return fmt.Sprintf(`\ followed by byte 0x%02x`, c)
}

// appendUnescaped appends the decoded content of a string literal that
// scanString accepted; raw excludes the quotes. A lone UTF-16 surrogate
// becomes U+FFFD (as JavaScript's UTF-8 encoder and Go's encoding/json do), and
// so does each byte of a \xHH or octal escape that does not form valid UTF-8
// (as Go's encoding/json does when the Go SDK marshals such a string).
func appendUnescaped(dst, raw []byte) []byte {
	start := len(dst)
	byteEsc := false
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			j := i + 1
			for j < len(raw) && raw[j] != '\\' {
				j++
			}
			dst = append(dst, raw[i:j]...)
			i = j
			continue
		}
		switch e := raw[i+1]; e {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'a':
			dst = append(dst, '\a')
		case 'v':
			dst = append(dst, '\v')
		case 'u':
			r, _ := hexRun(raw, i+2, 4)
			i += 6
			if r >= 0xd800 && r < 0xdc00 && i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
				if lo, ok := hexRun(raw, i+2, 4); ok && lo >= 0xdc00 && lo < 0xe000 {
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
					i += 6
				}
			}
			if r >= 0xd800 && r < 0xe000 {
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		case 'U':
			r, _ := hexRun(raw, i+2, 8)
			dst = utf8.AppendRune(dst, r)
			i += 10
			continue
		case 'x':
			r, _ := hexRun(raw, i+2, 2)
			dst = append(dst, byte(r))
			byteEsc = byteEsc || r >= 0x80
			i += 4
			continue
		case '0', '1', '2', '3':
			v := (e-'0')<<6 | (raw[i+2]-'0')<<3 | (raw[i+3] - '0')
			dst = append(dst, v)
			byteEsc = byteEsc || v >= 0x80
			i += 4
			continue
		default: // " \ / '
			dst = append(dst, e)
		}
		i += 2
	}
	if byteEsc && !utf8.Valid(dst[start:]) {
		dst = append(dst[:start], fixUTF8(dst[start:])...)
	}
	return dst
}

// fixUTF8 returns b with each byte that is not part of a valid UTF-8 sequence
// replaced by U+FFFD. It returns a new slice.
func fixUTF8(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
			i++
			continue
		}
		out = append(out, b[i:i+n]...)
		i += n
	}
	return out
}

// scanNumber validates the JSON number starting at b[i] and returns the
// offset just past it.
func scanNumber(b []byte, i int) (int, error) {
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return 0, synErr(start, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0, synErr(start, "invalid number: no digits after '.'")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0, synErr(start, "invalid number: no digits in exponent")
		}
	}
	return i, nil
}

// checkDouble refuses (*InvalidError) a number literal at offset off too
// large for a double (±Inf): Cosmos DB holds numbers as doubles, every SDK
// decodes them so, and the query engine's arithmetic and aggregates would
// meet a value they cannot represent. Only a literal with an exponent or
// more than 308 integer digits can be that large, so only those are
// converted.
func checkDouble(lit []byte, off int) error {
	// The integer digits, or any exponent.
	digits := 0
	for _, c := range lit {
		if c == 'e' || c == 'E' {
			digits = maxIntDigits + 1 // the exponent decides
			break
		}
		if c >= '0' && c <= '9' {
			digits++
		}
	}
	if digits <= maxIntDigits {
		return nil
	}
	if _, ok := parseNumber(lit); ok {
		return nil
	}
	if len(lit) > 40 {
		lit = append(lit[:37:37], "..."...)
	}
	return &InvalidError{Msg: fmt.Sprintf("the number %s at offset %d is out of the range of a double", lit, off)}
}

// maxIntDigits is the most integer digits a number without an exponent
// can have and still be a finite double (the largest is about 1.8e308).
const maxIntDigits = 308

// parseNumber converts a number literal scanNumber accepted. Literals too
// large for a double are refused: every SDK decodes numbers as doubles.
func parseNumber(lit []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil && f != 0 { // ±Inf; underflow to 0 is fine
		return 0, false
	}
	return f, true
}

// scanLiteral checks that b[i:] starts with lit.
func scanLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, synErr(i, "invalid literal, want %s", lit)
	}
	return i + len(lit), nil
}

// member is the byte spans of one object member: the key literal including
// its quotes, and the value.
type member struct {
	ks, ke int // key literal b[ks:ke], quotes included
	kesc   bool
	vs, ve int // value b[vs:ve]
}

// scanValue validates the JSON value starting at b[i] (no leading space) and
// returns the offset just past it. depth counts the containers around it.
//
// With strict set, an object with two members of one name, at any depth, is
// a *DuplicateNameError, and a number too large for a double an
// *InvalidError (checkDouble): input from clients is scanned strictly;
// stored bytes (which older releases may have written so) are not.
func scanValue(b []byte, i, depth int, strict bool) (int, error) {
	if i >= len(b) {
		return 0, synErr(i, "unexpected end of input")
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := scanString(b, i, false)
		return end, err
	case c == '{':
		return scanObject(b, i, depth+1, nil, strict)
	case c == '[':
		return scanArray(b, i, depth+1, strict)
	case c == '-' || c >= '0' && c <= '9':
		end, err := scanNumber(b, i)
		if err == nil && strict {
			err = checkDouble(b[i:end], i)
		}
		return end, err
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	}
	return 0, synErr(i, "%s", describe(b, i))
}

// scanObject validates the object starting at b[i] == '{' and returns the
// offset just past it. If ms is not nil, its members are appended to *ms.
// strict as for scanValue.
func scanObject(b []byte, i, depth int, ms *[]member, strict bool) (int, error) {
	if depth > maxDepth {
		return 0, synErr(i, "nesting deeper than %d", maxDepth)
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	var names nameSet
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, synErr(i, "%s, want an object key", describe(b, i))
		}
		ks := i
		ke, kesc, err := scanString(b, i, false)
		if err != nil {
			return 0, err
		}
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return 0, synErr(i, "%s, want ':'", describe(b, i))
		}
		if strict {
			if err := names.add(b, ks, ke, kesc); err != nil {
				return 0, err
			}
		}
		vs := skipWS(b, i+1)
		ve, err := scanValue(b, vs, depth, strict)
		if err != nil {
			return 0, err
		}
		if ms != nil {
			*ms = append(*ms, member{ks: ks, ke: ke, kesc: kesc, vs: vs, ve: ve})
		}
		i = skipWS(b, ve)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		return 0, synErr(i, "%s, want ',' or '}'", describe(b, i))
	}
}

// DuplicateNameError reports an object with two members of one name. JSON
// (RFC 8259 §4) leaves such objects' meaning to the reader, and readers
// disagree (the first or the last wins), so an item that has one would have
// two identities: Partita refuses them wherever a document enters.
type DuplicateNameError struct {
	Name   string // the decoded property name
	Offset int    // byte offset of its second occurrence
}

func (e *DuplicateNameError) Error() string {
	return fmt.Sprintf("duplicate property name %q at offset %d: property names must be unique within an object", e.Name, e.Offset)
}

// nameSet holds the member names of one object being scanned. Objects are
// small: up to smallNames names are compared pairwise on their literals
// without allocating; larger objects switch to a map of decoded names.
type nameSet struct {
	n     int
	small [smallNames]struct {
		ks, ke int
		esc    bool
	}
	big map[string]struct{}
}

const smallNames = 16

// add records the key literal b[ks:ke] (quotes included) and returns a
// *DuplicateNameError if the object already has a member of that name.
func (s *nameSet) add(b []byte, ks, ke int, esc bool) error {
	raw := b[ks+1 : ke-1]
	if s.big == nil && s.n < smallNames {
		for _, k := range s.small[:s.n] {
			other := b[k.ks+1 : k.ke-1]
			same := false
			if !esc && !k.esc {
				same = bytes.Equal(raw, other)
			} else {
				same = bytes.Equal(appendUnescaped(nil, raw), appendUnescaped(nil, other))
			}
			if same {
				return &DuplicateNameError{Name: string(appendUnescaped(nil, raw)), Offset: ks}
			}
		}
		s.small[s.n] = struct {
			ks, ke int
			esc    bool
		}{ks, ke, esc}
		s.n++
		return nil
	}
	if s.big == nil {
		s.big = make(map[string]struct{}, 2*smallNames)
		for _, k := range s.small[:s.n] {
			s.big[string(appendUnescaped(nil, b[k.ks+1:k.ke-1]))] = struct{}{}
		}
	}
	name := raw
	if esc {
		name = appendUnescaped(nil, raw)
	}
	if _, dup := s.big[string(name)]; dup {
		return &DuplicateNameError{Name: string(name), Offset: ks}
	}
	s.big[string(name)] = struct{}{}
	return nil
}

// scanArray validates the array starting at b[i] == '[' and returns the
// offset just past it.
func scanArray(b []byte, i, depth int, strict bool) (int, error) {
	if depth > maxDepth {
		return 0, synErr(i, "nesting deeper than %d", maxDepth)
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		ve, err := scanValue(b, i, depth, strict)
		if err != nil {
			return 0, err
		}
		i = skipWS(b, ve)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		return 0, synErr(i, "%s, want ',' or ']'", describe(b, i))
	}
}

// keyIs reports whether the validated key literal b[m.ks:m.ke] decodes to
// want.
func keyIs(b []byte, m member, want string) bool {
	raw := b[m.ks+1 : m.ke-1]
	if !m.kesc {
		return string(raw) == want
	}
	var buf [64]byte
	return string(appendUnescaped(buf[:0], raw)) == want
}

// findMember returns the value span of the last member named key of the
// validated object starting at b[i] == '{'. The last one wins on duplicate
// keys, as in JavaScript's JSON.parse and Go's encoding/json.
func findMember(b []byte, i int, key string) (vs, ve int, ok bool) {
	i = skipWS(b, i+1)
	for i < len(b) && b[i] == '"' {
		ke := skipString(b, i)
		m := member{ks: i, ke: ke, kesc: hasEscape(b[i+1 : ke-1])}
		m.vs = skipWS(b, skipWS(b, ke)+1) // past ':'
		m.ve = skipValue(b, m.vs)
		if keyIs(b, m, key) {
			vs, ve, ok = m.vs, m.ve, true
		}
		i = skipWS(b, m.ve)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
		}
	}
	return vs, ve, ok
}

// appendCompact appends the validated JSON value v with the whitespace
// between tokens removed; the tokens themselves are copied verbatim.
func appendCompact(dst, v []byte) []byte {
	for i := 0; i < len(v); {
		c := v[i]
		switch {
		case isWS(c):
			i++
		case c == '"':
			end := skipString(v, i)
			dst = append(dst, v[i:end]...)
			i = end
		default:
			j := i + 1
			for j < len(v) && !isWS(v[j]) && v[j] != '"' {
				j++
			}
			dst = append(dst, v[i:j]...)
			i = j
		}
	}
	return dst
}

// skipString returns the offset just past the validated string literal at
// b[i] == '"'.
func skipString(b []byte, i int) int {
	i++
	for {
		k := i + bytes.IndexByte(b[i:], '"')
		n := 0 // backslashes before the quote: odd means it is escaped
		for m := k - 1; m >= i && b[m] == '\\'; m-- {
			n++
		}
		if n%2 == 0 {
			return k + 1
		}
		i = k + 1
	}
}

// skipValue returns the offset just past the validated JSON value at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && !isWS(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
		i++
	}
	return i
}
