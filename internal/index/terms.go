package index

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
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
	buf    []byte     // encoded terms, back to back
	spans  [][2]int32 // [start, end) of each term in buf
	segs   [][]byte   // concrete path of the current value
	wsegs  [][]byte   // segs with every array position replaced by "[]"
	digits []byte     // arena for array positions and unescaped names; see array
	str    []byte     // an unescaped string value
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

// doc adds the terms of the whole document doc to sc.spans (walk.go); a
// document that is not an object has none, but must be valid JSON.
func (sc *scratch) doc(p *Policy, doc []byte) error {
	i := skipSpace(doc, 0)
	obj := i < len(doc) && doc[i] == '{'
	end, err := sc.value(p, doc, i, 0, 0, obj, true)
	if err != nil {
		return err
	}
	if end = skipSpace(doc, end); end != len(doc) {
		return walkError(end, "data after the document")
	}
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

// scalar is a string, number, boolean or null value as a term encodes it:
// its tag, and num (numbers; 1 for true) or str (strings, unescaped).
type scalar struct {
	tag byte
	num float64
	str []byte
}

// leaf emits the terms of the scalar v at sc.segs.
func (sc *scratch) leaf(p *Policy, v scalar, inArray bool) {
	if match(p.patterns, sc.segs) {
		sc.emit(sc.segs, v)
	}
	if inArray && sc.err == nil && match(p.patterns, sc.wsegs) {
		sc.emit(sc.wsegs, v)
	}
}

// emit appends the term of (segs, v) to sc.buf.
func (sc *scratch) emit(segs [][]byte, v scalar) {
	start := len(sc.buf)
	b := sc.buf
	for _, s := range segs {
		b = appendSegment(b, s)
	}
	b = append(b, esc, escPathEnd)
	switch v.tag {
	case tagNull:
		b = append(b, tagNull)
	case tagBool:
		b = append(b, tagBool, byte(v.num))
	case tagNumber:
		b = appendValue(b, Value{Kind: Number, Num: v.num})
	case tagString:
		b = appendString(append(b, tagString), v.str)
	}
	if len(b) > math.MaxInt32 {
		sc.err = fmt.Errorf("%w: document too large to index", ErrInvalidJSON)
		return
	}
	sc.buf = b
	sc.spans = append(sc.spans, [2]int32{int32(start), int32(len(b))})
}
