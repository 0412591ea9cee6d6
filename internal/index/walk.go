package index

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unsafe"

	"github.com/valyala/fastjson/fastfloat"

	"github.com/partitadb/partita/internal/document"
)

// The terms of a document are read from its JSON text as it is walked: no
// parse tree is built. A tree cost about 400 bytes for each value of the
// document (a parser's values and the arrays of them, grown by doubling),
// so a 2 MB item of a million small values took 440 MB to index before its
// terms were made (a security review); the walk takes the terms alone.
// It reads what fastjson read before it, as fastjson did: strings and
// names unescaped alike (unescape), numbers decoded by fastjson's own
// fastfloat.Parse, so that every term is the one the index already holds
// (FuzzWalkMatchesTree keeps a tree walk as the reference). It is stricter
// about syntax: a number must be a JSON number and a literal true, false
// or null (fastjson took NaN and Infinity words, and Terms refused them
// afterwards), and nothing may follow the value. Strings are not checked
// for control characters or invalid escapes, as fastjson did not.

// maxWalkDepth bounds nesting, as fastjson's MaxDepth did; the document
// package refuses items nested deeper than 128 levels.
const maxWalkDepth = 300

// walkError is the syntax error of a walk at an offset.
func walkError(off int, what string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrInvalidJSON, what, off)
}

// value walks the JSON value at b[i:] (white space first) found at
// sc.segs, emitting the terms of its scalars when emit is set (otherwise
// checking it only), and returns the offset just past it. positions counts
// the array positions in sc.segs, depth the containers around the value;
// top marks the document's root object, whose system properties have no
// terms.
func (sc *scratch) value(p *Policy, b []byte, i, positions, depth int, emit, top bool) (int, error) {
	i = skipSpace(b, i)
	if i >= len(b) {
		return 0, walkError(i, "unexpected end of input")
	}
	switch c := b[i]; {
	case c == '{':
		return sc.object(p, b, i, positions, depth+1, emit, top)
	case c == '[':
		return sc.array(p, b, i, positions, depth+1, emit)
	case c == '"':
		end, esc, ok := stringEnd(b, i)
		if !ok {
			return 0, walkError(i, "unterminated string")
		}
		if emit {
			s := b[i+1 : end-1]
			if esc {
				sc.str = unescape(sc.str[:0], s)
				s = sc.str
			}
			sc.leaf(p, scalar{tag: tagString, str: s}, positions > 0)
		}
		return end, nil
	case c == '-' || c >= '0' && c <= '9':
		end, ok := numberEnd(b, i)
		if !ok {
			return 0, walkError(i, "invalid number")
		}
		if emit {
			f, err := fastfloat.Parse(unsafe.String(&b[i], end-i))
			if err != nil || math.IsNaN(f) {
				return 0, walkError(i, "bad number "+string(b[i:end]))
			}
			sc.leaf(p, scalar{tag: tagNumber, num: f}, positions > 0)
		}
		return end, nil
	case c == 't':
		return sc.literal(p, b, i, "true", scalar{tag: tagBool, num: 1}, positions, emit)
	case c == 'f':
		return sc.literal(p, b, i, "false", scalar{tag: tagBool}, positions, emit)
	case c == 'n':
		return sc.literal(p, b, i, "null", scalar{tag: tagNull}, positions, emit)
	}
	return 0, walkError(i, fmt.Sprintf("unexpected %q", b[i]))
}

func (sc *scratch) literal(p *Policy, b []byte, i int, lit string, s scalar, positions int, emit bool) (int, error) {
	if !bytes.HasPrefix(b[i:], []byte(lit)) {
		return 0, walkError(i, "invalid literal")
	}
	if emit {
		sc.leaf(p, s, positions > 0)
	}
	return i + len(lit), nil
}

// object walks the object at b[i] == '{' (see value).
func (sc *scratch) object(p *Policy, b []byte, i, positions, depth int, emit, top bool) (int, error) {
	if depth > maxWalkDepth {
		return 0, walkError(i, "nesting too deep")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, walkError(i, "want an object key")
		}
		ke, esc, ok := stringEnd(b, i)
		if !ok {
			return 0, walkError(i, "unterminated key")
		}
		key := b[i+1 : ke-1]
		// An unescaped name lives in the arena of path segments, truncated
		// on return (see array).
		mark := len(sc.digits)
		if esc && emit {
			sc.digits = unescape(sc.digits, key)
			key = sc.digits[mark:len(sc.digits):len(sc.digits)]
		}
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return 0, walkError(i, "want ':'")
		}
		var err error
		if emit && !(top && isSystem(key)) {
			sc.segs = append(sc.segs, key)
			sc.wsegs = append(sc.wsegs, key)
			i, err = sc.value(p, b, i+1, positions, depth, true, false)
			sc.segs = sc.segs[:len(sc.segs)-1]
			sc.wsegs = sc.wsegs[:len(sc.wsegs)-1]
		} else {
			i, err = sc.value(p, b, i+1, positions, depth, false, false)
		}
		sc.digits = sc.digits[:mark]
		if err != nil {
			return 0, err
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		return 0, walkError(i, "want ',' or '}'")
	}
}

// array walks the array at b[i] == '[' (see value).
func (sc *scratch) array(p *Policy, b []byte, i, positions, depth int, emit bool) (int, error) {
	if depth > maxWalkDepth {
		return 0, walkError(i, "nesting too deep")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for n := 0; ; n++ {
		var err error
		if emit {
			// Positions live in an arena truncated on return: a position
			// slice is never overwritten while on the path, and one made
			// before the arena grew keeps pointing at the old array.
			mark := len(sc.digits)
			sc.digits = strconv.AppendInt(sc.digits, int64(n), 10)
			sc.segs = append(sc.segs, sc.digits[mark:len(sc.digits):len(sc.digits)])
			sc.wsegs = append(sc.wsegs, wildSeg)
			i, err = sc.value(p, b, i, positions+1, depth, true, false)
			sc.segs = sc.segs[:len(sc.segs)-1]
			sc.wsegs = sc.wsegs[:len(sc.wsegs)-1]
			sc.digits = sc.digits[:mark]
		} else {
			i, err = sc.value(p, b, i, positions, depth, false, false)
		}
		if err != nil {
			return 0, err
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		return 0, walkError(i, "want ',' or ']'")
	}
}

// stringEnd returns the offset just past the string literal at b[i] == '"'
// and whether it holds a backslash; ok is false when it does not end.
func stringEnd(b []byte, i int) (end int, esc, ok bool) {
	end, ok = document.StringEnd(b, i)
	if !ok {
		return 0, false, false
	}
	return end, bytes.IndexByte(b[i+1:end-1], '\\') >= 0, true
}

// numberEnd returns the offset just past the JSON number at b[i], or false
// when b[i:] does not start with one: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// unescape appends raw, the text of a string literal between its quotes,
// to dst with its escapes decoded as fastjson decodes them (best effort: an
// escape it cannot decode is kept as written; a surrogate escape not
// followed by another \u escape is kept as written, and a pair that is not
// a valid one decodes to U+FFFD), so that names and strings have the terms
// they had when fastjson read them.
func unescape(dst, raw []byte) []byte {
	for {
		n := bytes.IndexByte(raw, '\\')
		if n < 0 {
			return append(dst, raw...)
		}
		dst = append(dst, raw[:n]...)
		raw = raw[n+1:]
		if len(raw) == 0 {
			return dst
		}
		ch := raw[0]
		raw = raw[1:]
		switch ch {
		case '"', '\\', '/':
			dst = append(dst, ch)
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
		case 'u':
			x, ok := hex4(raw)
			if !ok {
				dst = append(dst, `\u`...)
				break
			}
			xs := raw[:4]
			raw = raw[4:]
			if !utf16.IsSurrogate(rune(x)) {
				dst = append(dst, string(rune(x))...)
				break
			}
			var x1 uint64
			if len(raw) >= 6 && raw[0] == '\\' && raw[1] == 'u' {
				x1, ok = hex4(raw[2:])
			} else {
				ok = false
			}
			if !ok {
				dst = append(dst, `\u`...)
				dst = append(dst, xs...)
				break
			}
			dst = append(dst, string(utf16.DecodeRune(rune(x), rune(x1)))...)
			raw = raw[6:]
		default:
			dst = append(dst, '\\', ch)
		}
	}
}

// hex4 decodes the four hexadecimal digits that b starts with, as
// strconv.ParseUint(b[:4], 16, 16) does.
func hex4(b []byte) (uint64, bool) {
	if len(b) < 4 {
		return 0, false
	}
	x, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return x, err == nil
}
