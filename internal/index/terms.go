package index

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/valyala/fastjson"
)

// ErrInvalidJSON is returned (wrapped) by Terms when the document is not
// valid JSON.
var ErrInvalidJSON = errors.New("index: invalid JSON")

// maxPooledBuf bounds the scratch memory a Policy keeps between calls.
const maxPooledBuf = 1 << 20

// AnyElement is the wildcard segment of a path that stands for any element
// of an array. A property literally named so shares its terms.
const AnyElement = "[]"

// wildSeg is AnyElement, as terms hold it.
var wildSeg = []byte(AnyElement)

// scratch is the reusable state of one Terms or Diff call.
type scratch struct {
	parser fastjson.Parser
	buf    []byte     // encoded terms, back to back
	spans  [][2]int32 // [start, end) of each term in buf
	segs   [][]byte   // concrete path of the current value
	wsegs  [][]byte   // segs with every array position replaced by "[]"
	digits []byte     // arena for array positions; see walk
	err    error

	// Diff only.
	was      [][2]int32  // the old version's terms while the new one's are in spans
	oms, nms []topMember // the two versions' top-level members
	idx      []int32     // for sorting members
}

// Terms calls fn once per distinct term of doc, a JSON object, under the
// policy, in ascending byte order (so that the engine can diff the terms of
// an item's old and new versions with one merge). The term slice is valid
// only during the call. A scalar yields a term at its concrete path when
// Indexed says so, and, when the path passes through arrays, a second one at
// the path with every position replaced by "[]" when Indexed says so for
// that. Nothing is emitted in mode none, or for a doc that is valid JSON but
// not an object.
//
// Terms returns an error wrapping ErrInvalidJSON only for invalid JSON
// (including the NaN and Infinity tokens that fastjson tolerates); it does
// not fully validate JSON (fastjson accepts a few non-JSON number forms such
// as "+1"), which is the document layer's job. Terms is safe for concurrent
// use; fn may call Terms again.
func (p *Policy) Terms(doc []byte, fn func(term []byte)) error {
	if p.none {
		return nil
	}
	sc, _ := p.pool.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	defer p.release(sc)

	if err := sc.doc(p, doc); err != nil {
		return err
	}
	for _, s := range sc.sorted(sc.spans) {
		fn(sc.buf[s[0]:s[1]:s[1]])
	}
	return nil
}

// doc adds the terms of the whole document doc to sc.spans.
func (sc *scratch) doc(p *Policy, doc []byte) error {
	root, err := sc.parser.ParseBytes(doc)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	if root.Type() != fastjson.TypeObject {
		return nil
	}
	sc.walk(p, root, 0)
	return sc.err
}

// sorted sorts spans by their terms in sc.buf and drops repeated terms.
func (sc *scratch) sorted(spans [][2]int32) [][2]int32 {
	buf := sc.buf
	slices.SortFunc(spans, func(a, b [2]int32) int {
		return bytes.Compare(buf[a[0]:a[1]], buf[b[0]:b[1]])
	})
	return slices.CompactFunc(spans, func(a, b [2]int32) bool {
		return bytes.Equal(buf[a[0]:a[1]], buf[b[0]:b[1]])
	})
}

// release resets sc and returns it to the pool unless it grew too large.
func (p *Policy) release(sc *scratch) {
	if cap(sc.buf) > maxPooledBuf || cap(sc.spans)+cap(sc.was) > maxPooledBuf/8 {
		return
	}
	clear(sc.segs[:cap(sc.segs)]) // drop references into the parsed documents
	clear(sc.wsegs[:cap(sc.wsegs)])
	clear(sc.oms[:cap(sc.oms)])
	clear(sc.nms[:cap(sc.nms)])
	sc.buf, sc.spans, sc.segs, sc.wsegs, sc.digits = sc.buf[:0], sc.spans[:0], sc.segs[:0], sc.wsegs[:0], sc.digits[:0]
	sc.was, sc.oms, sc.nms = sc.was[:0], sc.oms[:0], sc.nms[:0]
	sc.err = nil
	p.pool.Put(sc)
}

// walk emits the terms of v, found at sc.segs, and of everything below it
// into sc.buf and sc.spans; positions counts the array positions in sc.segs.
func (sc *scratch) walk(p *Policy, v *fastjson.Value, positions int) {
	if sc.err != nil {
		return
	}
	switch v.Type() {
	case fastjson.TypeObject:
		o, _ := v.Object()
		top := len(sc.segs) == 0
		o.Visit(func(key []byte, child *fastjson.Value) {
			if top && isSystem(key) {
				return
			}
			sc.segs = append(sc.segs, key)
			sc.wsegs = append(sc.wsegs, key)
			sc.walk(p, child, positions)
			sc.segs = sc.segs[:len(sc.segs)-1]
			sc.wsegs = sc.wsegs[:len(sc.wsegs)-1]
		})
	case fastjson.TypeArray:
		a, _ := v.Array()
		for i, child := range a {
			// Positions live in an arena truncated on return: a position
			// slice is never overwritten while on the path, and one made
			// before the arena grew keeps pointing at the old array.
			mark := len(sc.digits)
			sc.digits = strconv.AppendInt(sc.digits, int64(i), 10)
			sc.segs = append(sc.segs, sc.digits[mark:len(sc.digits):len(sc.digits)])
			sc.wsegs = append(sc.wsegs, wildSeg)
			sc.walk(p, child, positions+1)
			sc.segs = sc.segs[:len(sc.segs)-1]
			sc.wsegs = sc.wsegs[:len(sc.wsegs)-1]
			sc.digits = sc.digits[:mark]
		}
	default:
		sc.leaf(p, v, positions > 0)
	}
}

// leaf emits the terms of the scalar v at sc.segs.
func (sc *scratch) leaf(p *Policy, v *fastjson.Value, inArray bool) {
	if match(p.patterns, sc.segs) {
		sc.emit(sc.segs, v)
	}
	if inArray && sc.err == nil && match(p.patterns, sc.wsegs) {
		sc.emit(sc.wsegs, v)
	}
}

// emit appends the term of (segs, v) to sc.buf.
func (sc *scratch) emit(segs [][]byte, v *fastjson.Value) {
	start := len(sc.buf)
	b := sc.buf
	for _, s := range segs {
		b = appendSegment(b, s)
	}
	b = append(b, esc, escPathEnd)
	switch v.Type() {
	case fastjson.TypeNull:
		b = append(b, tagNull)
	case fastjson.TypeTrue:
		b = append(b, tagBool, 1)
	case fastjson.TypeFalse:
		b = append(b, tagBool, 0)
	case fastjson.TypeNumber:
		f, err := v.Float64()
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) && !finiteSyntax(v) {
			sc.err = fmt.Errorf("%w: bad number %s", ErrInvalidJSON, v.MarshalTo(nil))
			return
		}
		b = appendValue(b, Value{Kind: Number, Num: f})
	case fastjson.TypeString:
		s, _ := v.StringBytes()
		b = appendString(append(b, tagString), s)
	}
	if len(b) > math.MaxInt32 {
		sc.err = fmt.Errorf("%w: document too large to index", ErrInvalidJSON)
		return
	}
	sc.buf = b
	sc.spans = append(sc.spans, [2]int32{int32(start), int32(len(b))})
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
