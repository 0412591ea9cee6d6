package index

import (
	"encoding/binary"
	"fmt"

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
