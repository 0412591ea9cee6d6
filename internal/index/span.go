package index

import (
	"bytes"
	"slices"
)

// Span is a half-open interval [Lower, Upper) of index keys relative to the
// engine's index prefix: a term t, with or without bytes appended after it
// (the engine's ridSeq), lies in the span exactly when Lower <= t < Upper.
// Lower and Upper are never nil; an empty span has Lower >= Upper. The
// slices are new and owned by the caller.
type Span struct {
	Lower, Upper []byte
}

// Empty reports whether s contains no key.
func (s Span) Empty() bool { return bytes.Compare(s.Lower, s.Upper) >= 0 }

// Contains reports whether the key k (a term, optionally followed by a
// suffix) lies in s.
func (s Span) Contains(k []byte) bool {
	return bytes.Compare(s.Lower, k) <= 0 && bytes.Compare(k, s.Upper) < 0
}

// Bound is one end of a range predicate: its literal and whether the
// literal itself is included (>= and <=) or not (> and <).
type Bound struct {
	V         Value
	Inclusive bool
}

// emptySpan returns an empty span located at the start of path's terms.
func emptySpan(path []string) Span {
	p := AppendPath(nil, path)
	return Span{Lower: p, Upper: bytes.Clone(p)}
}

// PathSpan returns the span of every term of path, in Cosmos DB order; a
// scan of it serves an index-ordered ORDER BY on path (documents without a
// scalar at path have no term there and are not in the span).
func PathSpan(path []string) Span {
	p := AppendPath(nil, path)
	// The end-of-path marker is esc escPathEnd; esc escPathEnd+1 follows it
	// and is no prefix of any other term of another path either.
	end := bytes.Clone(p)
	end[len(end)-1]++
	return Span{Lower: p, Upper: end}
}

// kindSpan returns the span of all terms of path whose value has kind k.
func kindSpan(path []string, k Kind) Span {
	lo := append(AppendPath(nil, path), tagOf(k))
	hi := bytes.Clone(lo)
	hi[len(hi)-1]++
	return Span{Lower: lo, Upper: hi}
}

// Eq returns the span of the terms equal to v on path (c.path = v). The
// span is empty when v is Undefined, which equals nothing.
func Eq(path []string, v Value) Span {
	if tagOf(v.Kind) == 0 {
		return emptySpan(path)
	}
	t := AppendTerm(nil, path, v)
	return Span{Lower: t, Upper: prefixEnd(t)}
}

// In returns the spans of c.path IN (vs...): one Eq span per distinct value,
// sorted by Lower and free of duplicates (so a scan of them in order yields
// keys in index order). Undefined values are dropped.
func In(path []string, vs []Value) []Span {
	spans := make([]Span, 0, len(vs))
	for _, v := range vs {
		if tagOf(v.Kind) != 0 {
			spans = append(spans, Eq(path, v))
		}
	}
	slices.SortFunc(spans, func(a, b Span) int { return bytes.Compare(a.Lower, b.Lower) })
	return slices.CompactFunc(spans, func(a, b Span) bool { return bytes.Equal(a.Lower, b.Lower) })
}

// Range returns the span of the terms on path between lo and hi (either nil
// for unbounded). Cosmos DB compares only values of the same type, so a
// range is bounded to the kind of its literal(s): c.x > 5 spans numbers only,
// c.s >= "a" strings only. Both nil spans every term of path (PathSpan). The
// span is empty when lo and hi differ in kind, when either is Undefined, or
// when lo is above hi.
func Range(path []string, lo, hi *Bound) Span {
	switch {
	case lo == nil && hi == nil:
		return PathSpan(path)
	case lo != nil && hi != nil && lo.V.Kind != hi.V.Kind:
		return emptySpan(path)
	case lo != nil && tagOf(lo.V.Kind) == 0, hi != nil && tagOf(hi.V.Kind) == 0:
		return emptySpan(path)
	}
	var k Kind
	if lo != nil {
		k = lo.V.Kind
	} else {
		k = hi.V.Kind
	}
	s := kindSpan(path, k)
	// A bound longer than StringTermBytes has a bounded term, whose bucket
	// holds values on both sides of it (ordered by hash): the span keeps
	// the whole bucket, whose entries are candidates.
	if lo != nil {
		t := AppendTerm(nil, path, lo.V)
		switch {
		case bounded(lo.V):
			s.Lower = bucketPrefix(t)
		case lo.Inclusive:
			s.Lower = t
		default:
			s.Lower = prefixEnd(t)
		}
	}
	if hi != nil {
		t := AppendTerm(nil, path, hi.V)
		switch {
		case bounded(hi.V):
			s.Upper = prefixEnd(bucketPrefix(t))
		case hi.Inclusive:
			s.Upper = prefixEnd(t)
		default:
			s.Upper = t
		}
	}
	if s.Empty() {
		return emptySpan(path)
	}
	return s
}

// Prefix returns the span of the string terms on path that start with s
// (STARTSWITH(c.path, s), case-sensitive; the case-insensitive form cannot
// use the index). The empty prefix spans every string on path.
func Prefix(path []string, s string) Span {
	if len(s) > StringTermBytes {
		// Every string starting with s is longer than the bound, and has
		// a bounded term in the bucket of s's first bytes.
		lo := bucketPrefix(AppendTerm(nil, path, StringValue(s)))
		return Span{Lower: lo, Upper: prefixEnd(lo)}
	}
	// Every encoded string with prefix s begins with tag esc(s) (without the
	// terminator), and nothing else does: the escape is a prefix-free code
	// and esc(s) never ends inside an escape pair. A bounded term with
	// prefix s does too (s is at most the bound).
	lo := appendEscaped(append(AppendPath(nil, path), tagString), s)
	return Span{Lower: lo, Upper: prefixEnd(lo)}
}

// bounded reports whether v's term is a bounded term (StringTermBytes).
func bounded(v Value) bool { return v.Kind == String && (v.Bounded || len(v.Str) > StringTermBytes) }
