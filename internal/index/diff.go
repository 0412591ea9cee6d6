package index

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/partitadb/partita/internal/document"
)

// Diff calls fn once for each term that one version of a document has and
// the other has not, in ascending byte order: with add false for a term of
// old that new lacks (its index entry goes), with add true for a term of
// new that old lacks (its entry comes). Terms both versions have are not
// reported. old or new may be nil for no such version (a create, a delete):
// every term of the other is then reported. Diff returns how many terms it
// reported; the term slice is valid only during the call. Nothing is
// reported in mode none.
//
// The result is the merge of Terms(old) with Terms(new) (FuzzDiff,
// TestDiffMatchesTerms), computed for less: a top-level member that is the
// same in both versions, byte for byte, has the same terms in both, and
// terms of different top-level members never coincide (a term starts with
// its member's name), so such a member is neither parsed nor indexed; only
// the values of the others are. A whole version is parsed instead when the
// members cannot be paired that way: it is not an object, a name is
// escaped or repeated, or a system property's value is not a string.
//
// Errors wrap ErrInvalidJSON and name the version. Like Terms, Diff does
// not validate JSON; unlike Terms, it does not even parse the members the
// two versions share or the system properties' strings, so it must be given
// what the document package accepts or stored (valid JSON nested at most
// 128 deep): on other input it may report the terms of what it read rather
// than an error. Diff is safe for concurrent use; fn may call Terms or Diff.
func (p *Policy) Diff(old, new []byte, fn func(term []byte, add bool)) (int, error) {
	if p.none {
		return 0, nil
	}
	sc, _ := p.pool.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	defer p.release(sc)

	if err := sc.versions(p, old, new); err != nil {
		return 0, err
	}
	was, is := sc.sorted(sc.was), sc.sorted(sc.spans)
	buf, n := sc.buf, 0
	for len(was) > 0 || len(is) > 0 {
		c := 0
		switch {
		case len(was) == 0:
			c = 1
		case len(is) == 0:
			c = -1
		default:
			c = bytes.Compare(buf[was[0][0]:was[0][1]], buf[is[0][0]:is[0][1]])
		}
		switch {
		case c < 0:
			fn(buf[was[0][0]:was[0][1]:was[0][1]], false)
			was, n = was[1:], n+1
		case c > 0:
			fn(buf[is[0][0]:is[0][1]:is[0][1]], true)
			is, n = is[1:], n+1
		default:
			was, is = was[1:], is[1:]
		}
	}
	return n, nil
}

// versions puts the terms of old in sc.was and those of new in sc.spans,
// leaving out the terms of the top-level members both have alike.
func (sc *scratch) versions(p *Policy, old, new []byte) error {
	var paired bool
	if old != nil && new != nil {
		sc.oms, paired = appendMembers(sc.oms, old)
		if paired {
			sc.nms, paired = appendMembers(sc.nms, new)
		}
		paired = paired && pair(sc.oms, sc.nms, &sc.idx)
	}
	for _, v := range []struct {
		name string
		doc  []byte
		ms   []topMember
	}{{"old", old, sc.oms}, {"new", new, sc.nms}} {
		var err error
		switch {
		case v.doc == nil:
		case paired:
			for _, m := range v.ms {
				if err == nil && !m.same {
					err = sc.member(p, m)
				}
			}
		default:
			err = sc.doc(p, v.doc)
		}
		if err != nil {
			return fmt.Errorf("%s version: %w", v.name, err)
		}
		if v.name == "old" {
			sc.was, sc.spans = sc.spans, sc.was[:0]
		}
	}
	return nil
}

// member adds the terms of top-level member m to sc.spans.
func (sc *scratch) member(p *Policy, m topMember) error {
	sc.segs = append(sc.segs, m.key)
	sc.wsegs = append(sc.wsegs, m.key)
	end, err := sc.value(p, m.val, 0, 0, 0, true, false)
	sc.segs, sc.wsegs = sc.segs[:0], sc.wsegs[:0]
	if err == nil && skipSpace(m.val, end) != len(m.val) {
		err = walkError(end, "data after the value")
	}
	if err != nil {
		return err
	}
	return sc.err
}

// topMember is a top-level member of a document: its name as written
// between the quotes (it holds no escape, so that is the name) and its
// value's JSON.
type topMember struct {
	key, val []byte
	same     bool // the other version has this member alike
}

// appendMembers appends the top-level members of doc, a JSON object, to
// ms, leaving out the system properties that are never indexed. It finds
// where values end without validating them. ok is false when doc is not an
// object of that shape, a name holds an escape, or a system property's
// value is not a string (Terms parses those values too; of a string,
// fastjson checks only that it ends, as this scan does).
func appendMembers(ms []topMember, doc []byte) (_ []topMember, ok bool) {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return ms, false
	}
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return ms, skipSpace(doc, i+1) == len(doc)
	}
	for {
		if i >= len(doc) || doc[i] != '"' {
			return ms, false
		}
		ke, ok := document.StringEnd(doc, i)
		if !ok {
			return ms, false
		}
		key := doc[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return ms, false
		}
		i = skipSpace(doc, ke)
		if i >= len(doc) || doc[i] != ':' {
			return ms, false
		}
		vs := skipSpace(doc, i+1)
		ve, ok := document.ValueEnd(doc, vs)
		if !ok {
			return ms, false
		}
		if !isSystem(key) {
			ms = append(ms, topMember{key: key, val: doc[vs:ve]})
		} else if doc[vs] != '"' {
			return ms, false
		}
		i = skipSpace(doc, ve)
		if i < len(doc) && doc[i] == ',' {
			i = skipSpace(doc, i+1)
			continue
		}
		if i < len(doc) && doc[i] == '}' {
			return ms, skipSpace(doc, i+1) == len(doc)
		}
		return ms, false
	}
}

// pair marks the members of oms and nms that the other list has alike
// (same name, same value bytes). It reports false when a name repeats in
// either list: the terms of one name then come from several members, and a
// member alike in both could share a term with one that is not; also when
// many members changed places. idx is scratch space for sorting.
func pair(oms, nms []topMember, idx *[]int32) bool {
	if sameNames(oms, nms) {
		// The usual update: the same names in the same order, so a name
		// repeats in one list if and only if it does in the other.
		if repeats(nms, idx) {
			return false
		}
		for i := range oms {
			if bytes.Equal(oms[i].val, nms[i].val) {
				oms[i].same, nms[i].same = true, true
			}
		}
		return true
	}
	if len(oms)*len(nms) > 256 || repeats(oms, idx) || repeats(nms, idx) {
		return false // many members, moved: rare enough to parse whole
	}
	for i := range oms {
		for j := range nms {
			if bytes.Equal(oms[i].key, nms[j].key) {
				if bytes.Equal(oms[i].val, nms[j].val) {
					oms[i].same, nms[j].same = true, true
				}
				break
			}
		}
	}
	return true
}

// sameNames reports whether a and b hold the same names in the same order.
func sameNames(a, b []topMember) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i].key, b[i].key) {
			return false
		}
	}
	return true
}

// repeats reports whether a name occurs twice in ms. idx is scratch space.
func repeats(ms []topMember, idx *[]int32) bool {
	if len(ms) <= 16 {
		for i := range ms {
			for j := range i {
				if bytes.Equal(ms[i].key, ms[j].key) {
					return true
				}
			}
		}
		return false
	}
	order := (*idx)[:0]
	for i := range ms {
		order = append(order, int32(i))
	}
	*idx = order
	slices.SortFunc(order, func(a, b int32) int { return bytes.Compare(ms[a].key, ms[b].key) })
	for i := 1; i < len(order); i++ {
		if bytes.Equal(ms[order[i-1]].key, ms[order[i]].key) {
			return true
		}
	}
	return false
}

// skipSpace returns the offset of the first byte at or after i that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
