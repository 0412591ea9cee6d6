package partition

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
)

// ErrInvalidMap is returned (wrapped) by [NewMap] when the ranges do not tile
// the EPK space ["", FF) exactly once, or an id is empty or repeated.
var ErrInvalidMap = errors.New("partition: invalid partition key range map")

// Range is one physical partition (a partition key range): the EPKs in
// [Min, Max). The first range of a map has an empty Min and the last has Max
// equal to [MaxEPK].
type Range struct {
	ID      string   // "0", "1", ...; never reused within a container
	Min     EPK      // inclusive
	Max     EPK      // exclusive
	Parents []string // ids of the ranges this one was split or merged from
}

// Contains reports whether e lies in [r.Min, r.Max).
func (r Range) Contains(e EPK) bool {
	return bytes.Compare(r.Min, e) <= 0 && bytes.Compare(e, r.Max) < 0
}

// Map is an immutable list of ranges, sorted by Min, that tile the EPK space
// ["", FF) with no gaps or overlaps. It is safe for concurrent use. The zero
// Map is not valid; build one with [NewMap].
type Map struct {
	ranges []Range
	byID   map[string]int // id → index in ranges
}

// NewMap returns the map of the given ranges, which may come in any order. It
// copies them, so the caller keeps ownership of its slices. It returns an
// error wrapping ErrInvalidMap when the ranges are empty, an id is empty or
// repeated, a range has Min >= Max, or the ranges sorted by Min do not start
// at "", end at FF and meet each other exactly.
func NewMap(ranges []Range) (*Map, error) {
	if len(ranges) == 0 {
		return nil, fmt.Errorf("%w: no ranges", ErrInvalidMap)
	}
	m := &Map{ranges: make([]Range, len(ranges)), byID: make(map[string]int, len(ranges))}
	for i, r := range ranges {
		if r.ID == "" {
			return nil, fmt.Errorf("%w: range with [%s, %s) has no id", ErrInvalidMap, r.Min, r.Max)
		}
		if bytes.Compare(r.Min, r.Max) >= 0 {
			return nil, fmt.Errorf("%w: range %q has min %s not below max %s", ErrInvalidMap, r.ID, r.Min, r.Max)
		}
		m.ranges[i] = Range{
			ID:      r.ID,
			Min:     EPK(bytes.Clone([]byte(r.Min))),
			Max:     EPK(bytes.Clone([]byte(r.Max))),
			Parents: slices.Clone(r.Parents),
		}
		if m.ranges[i].Min == nil {
			m.ranges[i].Min = EPK{}
		}
	}
	slices.SortFunc(m.ranges, func(a, b Range) int { return bytes.Compare(a.Min, b.Min) })
	if first := m.ranges[0]; len(first.Min) != 0 {
		return nil, fmt.Errorf("%w: first range %q starts at %s, not at the empty EPK", ErrInvalidMap, first.ID, first.Min)
	}
	if last := m.ranges[len(m.ranges)-1]; !bytes.Equal(last.Max, MaxEPK()) {
		return nil, fmt.Errorf("%w: last range %q ends at %s, not at FF", ErrInvalidMap, last.ID, last.Max)
	}
	for i, r := range m.ranges {
		if _, dup := m.byID[r.ID]; dup {
			return nil, fmt.Errorf("%w: id %q repeated", ErrInvalidMap, r.ID)
		}
		m.byID[r.ID] = i
		if i == 0 {
			continue
		}
		prev := m.ranges[i-1]
		switch c := bytes.Compare(prev.Max, r.Min); {
		case c < 0:
			return nil, fmt.Errorf("%w: gap [%s, %s) between ranges %q and %q", ErrInvalidMap, prev.Max, r.Min, prev.ID, r.ID)
		case c > 0:
			return nil, fmt.Errorf("%w: ranges %q and %q overlap", ErrInvalidMap, prev.ID, r.ID)
		}
	}
	return m, nil
}

// Ranges returns the ranges sorted by Min. The slice and the ranges' slices
// belong to m: the caller must not modify them.
func (m *Map) Ranges() []Range { return m.ranges }

// Len returns the number of ranges.
func (m *Map) Len() int { return len(m.ranges) }

// Locate returns the range containing e. An e at or beyond FF, which hashing
// never produces, maps to the last range. The returned range's slices belong
// to m.
func (m *Map) Locate(e EPK) Range {
	return m.ranges[m.search(e)]
}

// search returns the index of the first range whose Max is above e, or the
// last index if there is none.
func (m *Map) search(e EPK) int {
	lo, hi := 0, len(m.ranges)-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if bytes.Compare(m.ranges[mid].Max, e) > 0 {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// Overlapping returns the ranges, in order, that intersect [min, max): those
// with Min < max and min < Max. It returns nil when min >= max (so an empty
// max is an empty interval, not "unbounded"). The slice belongs to m: the
// caller must not modify it.
func (m *Map) Overlapping(min, max EPK) []Range {
	if bytes.Compare(min, max) >= 0 {
		return nil
	}
	i := m.search(min)
	if bytes.Compare(m.ranges[i].Max, min) <= 0 { // min at or beyond FF
		return nil
	}
	j := i + 1
	for j < len(m.ranges) && bytes.Compare(m.ranges[j].Min, max) < 0 {
		j++
	}
	return m.ranges[i:j:j]
}

// ByID returns the range with the given id and reports whether there is one.
// The returned range's slices belong to m.
func (m *Map) ByID(id string) (Range, bool) {
	i, ok := m.byID[id]
	if !ok {
		return Range{}, false
	}
	return m.ranges[i], true
}
