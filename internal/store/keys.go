package store

import (
	"bytes"
	"encoding/binary"
	"errors"
)

const (
	kindMeta   byte = 0x01
	kindItem   byte = 0x02
	kindOrder  byte = 0x03 // container | seq → item key: a container's items in creation order
	kindIndex  byte = 0x04 // container | term | seq → item key: range index entries
	kindStats  byte = 0x05 // container | esc(epk) | esc(pk) → logical partition statistics
	kindChange byte = 0x06 // container | lsn → item key: a container's items in last-write order
	kindUnique byte = 0x07 // container | uint16 key | esc(epk) | esc(pk) | tuple → item id: unique key entries
)

// ErrBadKey is returned when a stored key cannot be decoded.
var ErrBadKey = errors.New("store: malformed key")

// ItemKey identifies an item: its container's internal id, its effective
// partition key, its encoded partition key value and its id.
type ItemKey struct {
	Container uint64
	EPK       []byte
	PK        []byte
	ID        string
}

// appendEscaped appends the order-preserving escape of b to dst.
func appendEscaped(dst, b []byte) []byte {
	for {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			break
		}
		dst = append(dst, b[:i]...)
		dst = append(dst, 0x00, 0xFF)
		b = b[i+1:]
	}
	dst = append(dst, b...)
	return append(dst, 0x00, 0x01)
}

// readEscaped decodes one escaped byte string from the front of b.
func readEscaped(b []byte) (val, rest []byte, err error) {
	for i := 0; i < len(b); i++ {
		if b[i] != 0 {
			val = append(val, b[i])
			continue
		}
		if i+1 >= len(b) {
			return nil, nil, ErrBadKey
		}
		switch b[i+1] {
		case 0x01:
			return val, b[i+2:], nil
		case 0xFF:
			val = append(val, 0)
			i++
		default:
			return nil, nil, ErrBadKey
		}
	}
	return nil, nil, ErrBadKey
}

func containerPrefix(dst []byte, c uint64) []byte {
	return kindPrefix(dst, kindItem, c)
}

func kindPrefix(dst []byte, kind byte, c uint64) []byte {
	dst = append(dst, kind)
	return binary.BigEndian.AppendUint64(dst, c)
}

// Encode returns the storage key of k.
func (k ItemKey) Encode() []byte {
	b := make([]byte, 0, 1+8+len(k.EPK)+len(k.PK)+len(k.ID)+8)
	b = containerPrefix(b, k.Container)
	b = appendEscaped(b, k.EPK)
	b = appendEscaped(b, k.PK)
	return appendEscaped(b, []byte(k.ID))
}

// DecodeItemKey parses a storage key produced by ItemKey.Encode.
func DecodeItemKey(key []byte) (ItemKey, error) {
	if len(key) < 9 || key[0] != kindItem {
		return ItemKey{}, ErrBadKey
	}
	k := ItemKey{Container: binary.BigEndian.Uint64(key[1:9])}
	rest := key[9:]
	var id []byte
	var err error
	if k.EPK, rest, err = readEscaped(rest); err != nil {
		return ItemKey{}, err
	}
	if k.PK, rest, err = readEscaped(rest); err != nil {
		return ItemKey{}, err
	}
	if id, rest, err = readEscaped(rest); err != nil {
		return ItemKey{}, err
	}
	if len(rest) != 0 {
		return ItemKey{}, ErrBadKey
	}
	k.ID = string(id)
	return k, nil
}

// Span is a half-open key span [Lower, Upper).
type Span struct {
	Lower, Upper []byte
}

// ContainerSpan is the span of all of container c's items.
func ContainerSpan(c uint64) Span {
	lo := containerPrefix(nil, c)
	return Span{Lower: lo, Upper: containerPrefix(nil, c+1)}
}

// EPKSpan is the span of container c's items whose EPK lies in [min, max).
// An empty min means the start of the container; a nil max its end.
func EPKSpan(c uint64, min, max []byte) Span {
	s := ContainerSpan(c)
	if len(min) > 0 {
		s.Lower = appendEscaped(containerPrefix(nil, c), min)
	}
	if max != nil {
		s.Upper = appendEscaped(containerPrefix(nil, c), max)
	}
	return s
}

// LogicalSpan is the span of one logical partition: the items of container c
// with effective key epk and encoded partition key pk.
func LogicalSpan(c uint64, epk, pk []byte) Span {
	lo := appendEscaped(appendEscaped(containerPrefix(nil, c), epk), pk)
	return Span{Lower: lo, Upper: prefixEnd(lo)}
}

// OrderKey is the key of the order entry of the item of container c created
// with sequence number seq (the sequence number in its _rid). Order entries
// hold the item's key; in key order they list a container's items in
// creation order, which is Cosmos DB's _rid order.
func OrderKey(c, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(kindPrefix(make([]byte, 0, 17), kindOrder, c), seq)
}

// OrderSpan is the span of container c's order entries.
func OrderSpan(c uint64) Span {
	return Span{Lower: kindPrefix(nil, kindOrder, c), Upper: kindPrefix(nil, kindOrder, c+1)}
}

// IndexKey is the key of the index entry of term (an encoded path and value)
// for the item of container c with sequence number seq. Index entries hold
// the item's key. term must be self-delimiting (no term a proper prefix of
// another), so that entries sort by term, then by seq.
func IndexKey(c uint64, term []byte, seq uint64) []byte {
	b := kindPrefix(make([]byte, 0, 17+len(term)), kindIndex, c)
	b = append(b, term...)
	return binary.BigEndian.AppendUint64(b, seq)
}

// IndexSpan is the span of container c's index entries whose term lies in
// [lo, hi). A nil hi means the end of the container's entries.
func IndexSpan(c uint64, lo, hi []byte) Span {
	s := Span{Lower: append(kindPrefix(nil, kindIndex, c), lo...), Upper: kindPrefix(nil, kindIndex, c+1)}
	if hi != nil {
		s.Upper = append(kindPrefix(nil, kindIndex, c), hi...)
	}
	return s
}

// EntrySeq returns the sequence number at the end of an order, index or
// change key.
func EntrySeq(key []byte) (uint64, error) {
	if len(key) < 17 || (key[0] != kindOrder && key[0] != kindIndex && key[0] != kindChange) {
		return 0, ErrBadKey
	}
	return binary.BigEndian.Uint64(key[len(key)-8:]), nil
}

// EntryTerm returns the term of an index key (it aliases key).
func EntryTerm(key []byte) ([]byte, error) {
	if len(key) < 17 || key[0] != kindIndex {
		return nil, ErrBadKey
	}
	return key[9 : len(key)-8], nil
}

// StatsKey is the key of the statistics of one logical partition of
// container c: its effective and encoded partition key.
func StatsKey(c uint64, epk, pk []byte) []byte {
	return appendEscaped(appendEscaped(kindPrefix(nil, kindStats, c), epk), pk)
}

// StatsEPKSpan is the span of container c's logical partition statistics
// whose EPK lies in [min, max) (an empty min: from the start; nil max: to
// the end).
func StatsEPKSpan(c uint64, min, max []byte) Span {
	s := StatsSpan(c)
	if len(min) > 0 {
		s.Lower = appendEscaped(kindPrefix(nil, kindStats, c), min)
	}
	if max != nil {
		s.Upper = appendEscaped(kindPrefix(nil, kindStats, c), max)
	}
	return s
}

// DecodeStatsKey returns the EPK and encoded partition key of a StatsKey.
func DecodeStatsKey(key []byte) (epk, pk []byte, err error) {
	if len(key) < 9 || key[0] != kindStats {
		return nil, nil, ErrBadKey
	}
	rest := key[9:]
	if epk, rest, err = readEscaped(rest); err != nil {
		return nil, nil, err
	}
	if pk, rest, err = readEscaped(rest); err != nil || len(rest) != 0 {
		return nil, nil, ErrBadKey
	}
	return epk, pk, nil
}

// StatsSpan is the span of container c's logical partition statistics.
func StatsSpan(c uint64) Span {
	return Span{Lower: kindPrefix(nil, kindStats, c), Upper: kindPrefix(nil, kindStats, c+1)}
}

// ChangeKey is the key of the change entry of the item of container c last
// written at sequence number lsn. Change entries hold the item's key; in
// key order they list a container's live items in the order of their last
// writes: the change feed's order.
func ChangeKey(c, lsn uint64) []byte {
	return binary.BigEndian.AppendUint64(kindPrefix(make([]byte, 0, 17), kindChange, c), lsn)
}

// ChangeSpan is the span of container c's change entries with sequence
// numbers after lsn.
func ChangeSpan(c, after uint64) Span {
	s := Span{Lower: kindPrefix(nil, kindChange, c), Upper: kindPrefix(nil, kindChange, c+1)}
	switch {
	case after == ^uint64(0):
		s.Lower = s.Upper
	case after > 0:
		s.Lower = ChangeKey(c, after+1)
	}
	return s
}

// UniqueKey is the key of the entry of unique key number key (its position
// in the container's unique key policy) of container c for the logical
// partition with effective key epk and encoded partition key pk, and tuple,
// the encoding of the item's values at the key's paths. The entry holds the
// id of the item that has those values. tuple need not be self-delimiting:
// it ends the key.
func UniqueKey(c uint64, key uint16, epk, pk, tuple []byte) []byte {
	b := make([]byte, 0, 11+len(epk)+len(pk)+len(tuple)+8)
	b = binary.BigEndian.AppendUint16(kindPrefix(b, kindUnique, c), key)
	b = appendEscaped(appendEscaped(b, epk), pk)
	return append(b, tuple...)
}

// UniqueSpan is the span of container c's unique key entries.
func UniqueSpan(c uint64) Span {
	return Span{Lower: kindPrefix(nil, kindUnique, c), Upper: kindPrefix(nil, kindUnique, c+1)}
}

// ContainerSpans are the spans of everything stored for container c's items:
// the items, their order, index, change and unique key entries, and the
// logical partitions' statistics.
func ContainerSpans(c uint64) []Span {
	return []Span{ContainerSpan(c), OrderSpan(c), IndexSpan(c, nil, nil), StatsSpan(c), ChangeSpan(c, 0), UniqueSpan(c)}
}

// Contains reports whether key lies in s.
func (s Span) Contains(key []byte) bool {
	return bytes.Compare(key, s.Lower) >= 0 && (s.Upper == nil || bytes.Compare(key, s.Upper) < 0)
}

// MetaKey returns the storage key of a meta (catalog) entry.
func MetaKey(k []byte) []byte {
	return append([]byte{kindMeta}, k...)
}

// MetaSpan is the span of meta entries whose key starts with prefix.
func MetaSpan(prefix []byte) Span {
	lo := MetaKey(prefix)
	return Span{Lower: lo, Upper: prefixEnd(lo)}
}

// prefixEnd returns the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil // p is all 0xFF: no upper bound
}
