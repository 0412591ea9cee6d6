package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// ErrInvalidTerm is returned by DecodeTerm, TermPath and TermLen for bytes
// that are not an encoded term.
var ErrInvalidTerm = errors.New("index: invalid term")

// Encoding bytes; see the package comment.
const (
	esc        = 0x00 // escape byte; followed by one of the three below
	escZero    = 0xFF // esc escZero is a literal 0x00
	escEnd     = 0x01 // esc escEnd terminates a segment or string
	escPathEnd = 0x02 // esc escPathEnd ends the path (at a segment start)
	escBounded = 0x03 // esc escBounded ends a string cut at StringTermBytes

	tagNull   = 0x02
	tagBool   = 0x03
	tagNumber = 0x04
	tagString = 0x05
)

// tagOf returns the tag byte of kind k, or 0 for Undefined.
func tagOf(k Kind) byte {
	switch k {
	case Null:
		return tagNull
	case Bool:
		return tagBool
	case Number:
		return tagNumber
	case String:
		return tagString
	}
	return 0
}

// appendEscaped appends the escaped bytes of s without a terminator.
func appendEscaped[S ~string | ~[]byte](dst []byte, s S) []byte {
	for {
		i := indexEsc(s)
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(append(dst, s[:i]...), esc, escZero)
		s = s[i+1:]
	}
}

// indexEsc returns the index of the first esc byte in s, or -1. (Strings
// and byte slices take the vectorised search: document values can be long.)
func indexEsc[S ~string | ~[]byte](s S) int {
	switch v := any(s).(type) {
	case string:
		return strings.IndexByte(v, esc)
	case []byte:
		return bytes.IndexByte(v, esc)
	}
	for i := 0; i < len(s); i++ {
		if s[i] == esc {
			return i
		}
	}
	return -1
}

// appendSegment appends one terminated path segment.
func appendSegment[S ~string | ~[]byte](dst []byte, s S) []byte {
	return append(appendEscaped(dst, s), esc, escEnd)
}

// AppendPath appends the encoding of path, including its end-of-path
// marker, to dst: every term of path starts with these bytes, and no term of
// another path does.
func AppendPath(dst []byte, path []string) []byte {
	for _, s := range path {
		dst = appendSegment(dst, s)
	}
	return append(dst, esc, escPathEnd)
}

// numberBits returns the order-preserving big-endian image of f: -0 is
// normalised to 0, then negative numbers have all bits flipped and others
// only the sign bit, so unsigned comparison agrees with numeric order.
func numberBits(f float64) uint64 {
	if f == 0 {
		f = 0 // -0 → +0
	}
	u := math.Float64bits(f)
	if u&(1<<63) != 0 {
		return ^u
	}
	return u | 1<<63
}

// StringTermBytes is the most bytes of a string that a term holds whole.
// The term of a longer string is a bounded term: its first StringTermBytes
// bytes, a terminator (esc escBounded) that orders it after the string of
// exactly those bytes and before every string whose bytes differ earlier,
// and the string's 64-bit hash (xxhash, big-endian). The longer strings
// sharing their first bytes form one run of terms (a bucket), ordered
// among themselves by hash rather than by value: equality finds its string
// by its hash (the filter re-checks a collision), while ranges, prefixes
// and ordered reads take the whole bucket, and an ordered read sorts its
// entries by the full values (docs/query-plan.md, "Bounded string terms").
const StringTermBytes = 128

// appendString appends the encoding of the string s (after its tag).
func appendString[S ~string | ~[]byte](dst []byte, s S) []byte {
	if len(s) > StringTermBytes {
		return appendBounded(dst, s[:StringTermBytes], stringHash(s))
	}
	return appendSegment(dst, s)
}

// appendBounded appends a bounded term's string: prefix (the string's first
// StringTermBytes bytes), the terminator and the string's hash.
func appendBounded[S ~string | ~[]byte](dst []byte, prefix S, hash uint64) []byte {
	return binary.BigEndian.AppendUint64(append(appendEscaped(dst, prefix), esc, escBounded), hash)
}

// stringHash is the hash a bounded term holds of its whole string.
func stringHash[S ~string | ~[]byte](s S) uint64 {
	switch v := any(s).(type) {
	case string:
		return xxhash.Sum64String(v)
	case []byte:
		return xxhash.Sum64(v)
	}
	return xxhash.Sum64String(string(s))
}

// appendValue appends the encoding of v; Undefined appends nothing.
func appendValue(dst []byte, v Value) []byte {
	switch v.Kind {
	case Null:
		return append(dst, tagNull)
	case Bool:
		if v.Bool {
			return append(dst, tagBool, 1)
		}
		return append(dst, tagBool, 0)
	case Number:
		return binary.BigEndian.AppendUint64(append(dst, tagNumber), numberBits(v.Num))
	case String:
		if v.Bounded {
			// A bounded term's value (DecodeTerm): its term again.
			return appendBounded(append(dst, tagString), v.Str[:min(len(v.Str), StringTermBytes)], v.Hash)
		}
		return appendString(append(dst, tagString), v.Str)
	}
	return dst
}

// AppendTerm appends the term of (path, v) to dst. v must not be Undefined
// (nothing is appended for the value then, and the result is no term).
func AppendTerm(dst []byte, path []string, v Value) []byte {
	return appendValue(AppendPath(dst, path), v)
}

// Term returns the term of (path, v) in a new slice.
func Term(path []string, v Value) []byte {
	return AppendTerm(nil, path, v)
}

// readSegment decodes one escaped, terminated byte string from the front of
// b, returning the string and the number of bytes consumed.
func readSegment(b []byte) (string, int, error) {
	s, n, end, err := readEscaped(b)
	if err == nil && end != escEnd {
		return "", 0, ErrInvalidTerm
	}
	return s, n, err
}

// readEscaped decodes one escaped byte string from the front of b up to its
// terminator (esc escEnd, or esc escBounded), returning the string, the
// number of bytes consumed and the terminator's second byte.
func readEscaped(b []byte) (string, int, byte, error) {
	var out []byte // nil until the first escaped zero
	from := 0      // start of the bytes not yet copied to out
	for i := 0; i < len(b); i++ {
		if b[i] != esc {
			continue
		}
		if i+1 >= len(b) {
			return "", 0, 0, ErrInvalidTerm
		}
		switch b[i+1] {
		case escEnd, escBounded:
			if out == nil {
				return string(b[:i]), i + 2, b[i+1], nil
			}
			return string(append(out, b[from:i]...)), i + 2, b[i+1], nil
		case escZero:
			out = append(append(out, b[from:i]...), 0)
			i++
			from = i + 1
		default:
			return "", 0, 0, ErrInvalidTerm
		}
	}
	return "", 0, 0, ErrInvalidTerm
}

// decode parses the term at the front of b. With wantPath false the path is
// skipped without allocating.
func decode(b []byte, wantPath bool) (path []string, v Value, n int, err error) {
	i := 0
	for {
		if len(b)-i >= 2 && b[i] == esc && b[i+1] == escPathEnd {
			i += 2
			break
		}
		s, m, err := readSegment(b[i:])
		if err != nil {
			return nil, Value{}, 0, err
		}
		if wantPath {
			path = append(path, s)
		}
		i += m
	}
	if i >= len(b) {
		return nil, Value{}, 0, ErrInvalidTerm
	}
	tag := b[i]
	i++
	switch tag {
	case tagNull:
		v = Value{Kind: Null}
	case tagBool:
		if i >= len(b) || b[i] > 1 {
			return nil, Value{}, 0, ErrInvalidTerm
		}
		v = Value{Kind: Bool, Bool: b[i] == 1}
		i++
	case tagNumber:
		if len(b)-i < 8 {
			return nil, Value{}, 0, ErrInvalidTerm
		}
		u := binary.BigEndian.Uint64(b[i:])
		if u&(1<<63) != 0 {
			u &^= 1 << 63
		} else {
			u = ^u
		}
		f := math.Float64frombits(u)
		if math.IsNaN(f) || u == 1<<63 { // NaN and -0 are never encoded
			return nil, Value{}, 0, ErrInvalidTerm
		}
		v = Value{Kind: Number, Num: f}
		i += 8
	case tagString:
		s, m, end, err := readEscaped(b[i:])
		if err != nil {
			return nil, Value{}, 0, err
		}
		i += m
		v = Value{Kind: String, Str: s}
		if end == escBounded {
			if len(s) != StringTermBytes || len(b)-i < 8 {
				return nil, Value{}, 0, ErrInvalidTerm
			}
			v.Bounded, v.Hash = true, binary.BigEndian.Uint64(b[i:])
			i += 8
		}
	default:
		return nil, Value{}, 0, ErrInvalidTerm
	}
	return path, v, i, nil
}

// DecodeTerm returns the path and value of term, which must be exactly one
// term (no trailing bytes). It returns ErrInvalidTerm otherwise. A nil path
// means the empty path. A bounded term's value is its string's first
// StringTermBytes bytes, marked Bounded.
func DecodeTerm(term []byte) (path []string, v Value, err error) {
	path, v, n, err := decode(term, true)
	if err != nil {
		return nil, Value{}, err
	}
	if n != len(term) {
		return nil, Value{}, ErrInvalidTerm
	}
	return path, v, nil
}

// TermValue returns the value of the term at the front of b (its path
// skipped); bytes after the term (such as a ridSeq) are ignored. A bounded
// term's value is its string's first StringTermBytes bytes, marked
// Bounded. It returns ErrInvalidTerm when b does not start with a term.
func TermValue(b []byte) (Value, error) {
	_, v, _, err := decode(b, false)
	return v, err
}

// TermPath returns the path of the term at the front of b; bytes after the
// term (such as a ridSeq) are ignored. It returns ErrInvalidTerm when b does
// not start with a term.
func TermPath(b []byte) ([]string, error) {
	path, _, _, err := decode(b, true)
	return path, err
}

// BoundedTerm reports whether the term at the front of b (followed by
// anything, such as a ridSeq) is a bounded term (StringTermBytes), and if
// so returns the length of its bucket's prefix: the term without its hash,
// which every bounded term of a string with the same first bytes starts
// with. It returns ErrInvalidTerm when b does not start with a term.
func BoundedTerm(b []byte) (bucket int, bounded bool, err error) {
	_, v, n, err := decode(b, false)
	if err != nil || !v.Bounded {
		return 0, false, err
	}
	return n - 8, true, nil
}

// bucketPrefix returns the bucket prefix of bounded term t (BoundedTerm).
func bucketPrefix(t []byte) []byte { return t[:len(t)-8] }

// TermLen returns the length of the term at the front of b, so that a caller
// holding term | suffix can split it. It returns ErrInvalidTerm when b does
// not start with a term.
func TermLen(b []byte) (int, error) {
	_, _, n, err := decode(b, false)
	return n, err
}

// prefixEnd returns the smallest byte string greater than every string with
// prefix p, in a new slice; nil if p is empty or all 0xFF (never the case for
// the spans built here, which always contain a tag or marker byte below 0xFF).
func prefixEnd(p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] < 0xFF {
			end := bytes.Clone(p[:i+1])
			end[i]++
			return end
		}
	}
	return nil
}
