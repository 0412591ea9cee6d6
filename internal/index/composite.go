package index

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/valyala/fastjson"
)

// Composite index entries (docs/composite-indexes.md). A document has one
// entry per composite index of the policy, whatever it holds: its key's
// term is the composite's number and one component per path,
//
//	composite = u16 number, component+
//	component = 0x01                    undefined
//	          | value                   null, a boolean, a number or a string, as in a term
//	          | 0x06                    an array
//	          | 0x07                    an object
//
// with every byte of a descending path's component complemented. Byte order
// of two composites of one index is then the order of their ORDER BY keys
// (undefined < null < false < true < numbers < strings < arrays < objects,
// each path ascending or descending as declared) wherever the components
// are exact; an array, an object and a bounded string (longer than
// StringTermBytes) are inexact: CompositeRun says where.

// Component tags beyond the term values' (tagNull … tagString).
const (
	tagUndefined = 0x01
	tagArray     = 0x06
	tagObject    = 0x07
)

// Composites returns the number of composite indexes of the policy.
func (p *Policy) Composites() int { return len(p.composites) }

// CompositeTerms calls fn once per composite index of the policy, in their
// order, with the composite term of doc (a JSON object) for it. The term
// slice is valid only during the call. Nothing is called in mode none, or
// for a policy without composite indexes; a document that is not an
// object has only undefined components. It returns an error wrapping
// ErrInvalidJSON for invalid JSON.
func (p *Policy) CompositeTerms(doc []byte, fn func(term []byte)) error {
	if p.none || len(p.composites) == 0 {
		return nil
	}
	jp := compositeParsers.Get()
	defer compositeParsers.Put(jp)
	root, err := jp.ParseBytes(doc)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	var buf []byte
	for i, comp := range p.composites {
		buf = binary.BigEndian.AppendUint16(buf[:0], uint16(i))
		for _, cp := range comp {
			buf = appendComponent(buf, valueAt(root, cp.path), cp.desc)
		}
		fn(buf)
	}
	return nil
}

// compositeParsers parse the documents CompositeTerms reads.
var compositeParsers fastjson.ParserPool

// valueAt returns the value at path below v (each segment a property
// name), or nil when a segment finds no object or no such member.
func valueAt(v *fastjson.Value, path []string) *fastjson.Value {
	for _, s := range path {
		if v == nil || v.Type() != fastjson.TypeObject {
			return nil
		}
		v = v.Get(s)
	}
	return v
}

// appendComponent appends the component of v (nil: undefined), its bytes
// complemented when desc.
func appendComponent(dst []byte, v *fastjson.Value, desc bool) []byte {
	start := len(dst)
	switch {
	case v == nil:
		dst = append(dst, tagUndefined)
	case v.Type() == fastjson.TypeArray:
		dst = append(dst, tagArray)
	case v.Type() == fastjson.TypeObject:
		dst = append(dst, tagObject)
	default:
		sv, ok := valueOf(v)
		if !ok {
			// A number fastjson takes and JSON does not (NaN): the
			// document layer refuses it; ordered as undefined.
			dst = append(dst, tagUndefined)
			break
		}
		dst = appendValue(dst, sv)
	}
	if desc {
		for i := start; i < len(dst); i++ {
			dst[i] = ^dst[i]
		}
	}
	return dst
}

// CompositeComponent appends the component of the scalar v (Undefined for
// undefined) to dst, complemented when desc: the bytes CompositeTerms
// writes for a document whose value at the path is v.
func CompositeComponent(dst []byte, v Value, desc bool) []byte {
	start := len(dst)
	if v.Kind == Undefined {
		dst = append(dst, tagUndefined)
	} else {
		dst = appendValue(dst, v)
	}
	if desc {
		for i := start; i < len(dst); i++ {
			dst[i] = ^dst[i]
		}
	}
	return dst
}

// CompositeRun returns the length of the prefix of a composite term (as
// CompositeTerms makes it: the number, then n components, possibly
// followed by other bytes such as the engine's sequence number) up to the
// end of the exact part of its first inexact component: the entries whose
// terms share that prefix form a run whose order the bytes do not give
// (an ordered read sorts it by the documents' values). exact reports that
// no component is inexact (n is then the length of the components). It
// fails with ErrInvalidTerm on bytes that are not such a term.
func CompositeRun(term []byte, n int) (prefix int, exact bool, err error) {
	if len(term) < 2 {
		return 0, false, ErrInvalidTerm
	}
	i := 2
	for range n {
		end, inexact, err := componentEnd(term, i)
		if err != nil {
			return 0, false, err
		}
		if inexact {
			return end, false, nil
		}
		i = end
	}
	return i, true, nil
}

// componentEnd returns where the component at b[i:] ends and whether it
// is inexact; for an inexact one, end is where its exact part ends (after
// an array's or object's tag, or a bounded string's terminator, before its
// hash).
func componentEnd(b []byte, i int) (end int, inexact bool, err error) {
	if i >= len(b) {
		return 0, false, ErrInvalidTerm
	}
	var flip byte // 0xFF for a descending component
	if b[i] >= 0x80 {
		flip = 0xFF
	}
	at := func(j int) byte { return b[j] ^ flip }
	switch at(i) {
	case tagUndefined, tagNull:
		return i + 1, false, nil
	case tagBool:
		if i+2 > len(b) {
			return 0, false, ErrInvalidTerm
		}
		return i + 2, false, nil
	case tagNumber:
		if i+9 > len(b) {
			return 0, false, ErrInvalidTerm
		}
		return i + 9, false, nil
	case tagArray, tagObject:
		return i + 1, true, nil
	case tagString:
		for j := i + 1; j+1 < len(b); j++ {
			if at(j) != esc {
				continue
			}
			switch at(j + 1) {
			case escZero:
				j++
			case escEnd:
				return j + 2, false, nil
			case escBounded:
				if j+2+8 > len(b) {
					return 0, false, ErrInvalidTerm
				}
				return j + 2, true, nil
			default:
				return 0, false, ErrInvalidTerm
			}
		}
	}
	return 0, false, ErrInvalidTerm
}

// CompositeSpan returns the span of the terms of composite index number:
// every document's entry for it.
func CompositeSpan(number int) Span {
	lo := binary.BigEndian.AppendUint16(nil, uint16(number))
	return Span{Lower: lo, Upper: prefixEnd(lo)}
}

// CompositeOrder returns doc's term for composite index number (the one
// CompositeTerms writes for it) and its exact key: the same components
// with arrays, objects and strings whole (compositeExact), whose byte
// order is the ORDER BY order of the documents' values at the composite's
// paths, each in its declared direction, with equal values equal. An
// ordered read sorts a run of entries (CompositeRun) by their exact keys.
// It fails for a number the policy does not declare, and with an error
// wrapping ErrInvalidJSON for invalid JSON.
func (p *Policy) CompositeOrder(doc []byte, number int) (term, exact []byte, err error) {
	if number < 0 || number >= len(p.composites) {
		return nil, nil, fmt.Errorf("index: no composite index %d", number)
	}
	jp := compositeParsers.Get()
	defer compositeParsers.Put(jp)
	root, err := jp.ParseBytes(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	term = binary.BigEndian.AppendUint16(nil, uint16(number))
	exact = binary.BigEndian.AppendUint16(nil, uint16(number))
	for _, cp := range p.composites[number] {
		v := valueAt(root, cp.path)
		term = appendComponent(term, v, cp.desc)
		start := len(exact)
		exact = appendExact(exact, v)
		if cp.desc {
			for i := start; i < len(exact); i++ {
				exact[i] = ^exact[i]
			}
		}
	}
	return term, exact, nil
}

// appendExact appends the exact component of v (nil: undefined):
//
//	exact  = 0x01                              undefined (and a number JSON does not allow)
//	       | null, a boolean or a number       as in a term
//	       | 0x05 esc(s) 0x00 0x01             a string, whole
//	       | 0x06 exact* 0x00                  an array: its elements
//	       | 0x07 (0x05 esc(k) 0x00 0x01 exact)* 0x00
//	                                           an object: its members sorted by name (stable)
//
// a prefix-free code whose byte order is ORDER BY's (exec's compareValues):
// undefined < null < false < true < numbers < strings < arrays < objects;
// strings by bytes, arrays element by element and shorter first, objects
// member by member (name, then value) and fewer first.
func appendExact(dst []byte, v *fastjson.Value) []byte {
	if v == nil {
		return append(dst, tagUndefined)
	}
	switch v.Type() {
	case fastjson.TypeString:
		s, _ := v.StringBytes()
		return append(appendEscaped(append(dst, tagString), s), esc, escEnd)
	case fastjson.TypeArray:
		dst = append(dst, tagArray)
		for _, e := range v.GetArray() {
			dst = appendExact(dst, e)
		}
		return append(dst, 0x00)
	case fastjson.TypeObject:
		type member struct {
			k []byte
			v *fastjson.Value
		}
		var ms []member
		v.GetObject().Visit(func(k []byte, v *fastjson.Value) { ms = append(ms, member{k, v}) })
		slices.SortStableFunc(ms, func(x, y member) int { return bytes.Compare(x.k, y.k) })
		dst = append(dst, tagObject)
		for _, m := range ms {
			dst = append(appendEscaped(append(dst, tagString), m.k), esc, escEnd)
			dst = appendExact(dst, m.v)
		}
		return append(dst, 0x00)
	}
	sv, ok := valueOf(v)
	if !ok {
		return append(dst, tagUndefined)
	}
	return appendValue(dst, sv)
}

// Composite spans narrow an ordered read of a composite index to the
// documents a filter can match (docs/composite-indexes.md, stage 4): prefix
// is the composite's number and the components of the paths before this
// one (each pinned by an equality), and desc this path's declared
// direction. The spans are of composite terms, as CompositeSpan's; each
// holds every entry whose component here satisfies the predicate, and may
// hold others (strings sharing a bounded term): the filter is still
// evaluated on what they find.

// CompositeEq returns the span of the entries whose component after prefix
// is v's (c.path = v); empty for Undefined, which equals nothing.
func CompositeEq(prefix []byte, v Value, desc bool) Span {
	if tagOf(v.Kind) == 0 {
		return Span{Lower: bytes.Clone(prefix), Upper: bytes.Clone(prefix)}
	}
	c := CompositeComponent(bytes.Clone(prefix), v, desc)
	return Span{Lower: c, Upper: prefixEnd(c)}
}

// CompositePrefix returns the span of the entries whose component after
// prefix is a string starting with s (STARTSWITH(c.path, s)).
func CompositePrefix(prefix []byte, s string, desc bool) Span {
	c := append(bytes.Clone(prefix), tagString)
	if len(s) > StringTermBytes {
		// Every string starting with s is bounded, in the bucket of s's
		// first bytes.
		c = bucketPrefix(appendString(c, s))
	} else {
		c = appendEscaped(c, s)
	}
	if desc {
		complement(c[len(prefix):])
	}
	return Span{Lower: c, Upper: prefixEnd(c)}
}

// CompositeRange returns the span of the entries whose component after
// prefix lies between lo and hi (either nil for unbounded, not both), of
// the kind of the bound(s) as Range's: empty when they differ in kind, when
// either is Undefined, or when lo is above hi. A bound longer than
// StringTermBytes keeps its whole bucket.
func CompositeRange(prefix []byte, lo, hi *Bound, desc bool) Span {
	empty := Span{Lower: bytes.Clone(prefix), Upper: bytes.Clone(prefix)}
	switch {
	case lo == nil && hi == nil:
		return Span{Lower: bytes.Clone(prefix), Upper: prefixEnd(prefix)}
	case lo != nil && hi != nil && lo.V.Kind != hi.V.Kind:
		return empty
	case lo != nil && tagOf(lo.V.Kind) == 0, hi != nil && tagOf(hi.V.Kind) == 0:
		return empty
	}
	kind := lo
	if kind == nil {
		kind = hi
	}
	// flip is a bound's bytes in this direction: the component's
	// complemented for a descending path, which reverses their order.
	flip := func(b []byte) []byte {
		if desc {
			complement(b[len(prefix):])
		}
		return b
	}
	// The span of the kind: its components start with its tag.
	s := Span{Lower: flip(append(bytes.Clone(prefix), tagOf(kind.V.Kind)))}
	s.Upper = prefixEnd(s.Lower)
	// upperAt and lowerAt are the span's upper and lower ends at bound b,
	// which they keep when it is inclusive: ascending, lo gives the lower
	// end and hi the upper; descending, the other way round.
	upperAt := func(b *Bound) []byte {
		t := appendValue(bytes.Clone(prefix), b.V)
		switch {
		case bounded(b.V):
			return prefixEnd(flip(bucketPrefix(t)))
		case b.Inclusive:
			return prefixEnd(flip(t))
		}
		return flip(t)
	}
	lowerAt := func(b *Bound) []byte {
		t := appendValue(bytes.Clone(prefix), b.V)
		switch {
		case bounded(b.V):
			return flip(bucketPrefix(t))
		case b.Inclusive:
			return flip(t)
		}
		return prefixEnd(flip(t))
	}
	if lo != nil {
		if desc {
			s.Upper = upperAt(lo)
		} else {
			s.Lower = lowerAt(lo)
		}
	}
	if hi != nil {
		if desc {
			s.Lower = lowerAt(hi)
		} else {
			s.Upper = upperAt(hi)
		}
	}
	if s.Empty() {
		return empty
	}
	return s
}

// complement complements every byte of b in place.
func complement(b []byte) {
	for i := range b {
		b[i] = ^b[i]
	}
}

// CompositeUnder returns the span of the composite terms that start with
// prefix (a composite's number and the components pinned so far).
func CompositeUnder(prefix []byte) Span {
	return Span{Lower: bytes.Clone(prefix), Upper: prefixEnd(prefix)}
}
