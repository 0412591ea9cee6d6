package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"

	"github.com/partitadb/partita/internal/replica"
)

// The key layout inside a keyspace (docs/storage-seams.md). Keys are
// relative to the keyspace: the replica adds its prefix. Each key starts
// with its kind; 0x00 belongs to the replica.
const (
	kindMeta   byte = 0x01 // name → engine state of the keyspace (formatKey)
	kindItem   byte = 0x02 // esc(epk) esc(pk) esc(id) → the stored item
	kindOrder  byte = 0x03 // seq → item key: the keyspace's items in creation (_rid) order
	kindIndex  byte = 0x04 // term seq → item key: range index entries
	kindStats  byte = 0x05 // esc(epk) esc(pk) → logical partition statistics
	kindChange byte = 0x06 // lsn → item key: live items in last-write order
	kindUnique byte = 0x07 // uint16 key, esc(epk) esc(pk) tuple → item id
	// kindComposite: composite index entries, composite term (index.CompositeTerms) seq → item key.
	kindComposite byte = 0x08
)

// errBadKey is returned when a stored key cannot be decoded.
var errBadKey = errors.New("engine: malformed key")

// formatKey holds indexFormat of the keyspace's derived entries; a keyspace
// without it has them rebuilt (ensureIndexes).
var formatKey = []byte{kindMeta, 'f', 'o', 'r', 'm', 'a', 't'}

// formatString is indexFormat as formatKey holds it.
var formatString = strconv.Itoa(indexFormat)

// formatRebuilding is what formatKey holds while the start's rebuild of
// the keyspace's derived entries is under way (ensureIndexes): a crash
// leaves it, the next start rebuilds again, and Check tells it from a
// record lost or damaged.
const formatRebuilding = "rebuilding"

// itemKey identifies an item in its keyspace: its effective partition key,
// its encoded partition key value and its id.
type itemKey struct {
	EPK []byte
	PK  []byte
	ID  string
}

// appendEscaped appends the order-preserving escape of b to dst: 0x00
// becomes 0x00 0xFF, and 0x00 0x01 ends it.
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

// skipEscaped returns what follows the escaped byte string at the front of
// b (readEscaped without the decoding).
func skipEscaped(b []byte) (rest []byte, err error) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] != 0 {
			continue
		}
		switch b[i+1] {
		case 0x01:
			return b[i+2:], nil
		case 0xFF:
			i++
		default:
			return nil, errBadKey
		}
	}
	return nil, errBadKey
}

// readEscaped decodes one escaped byte string from the front of b.
func readEscaped(b []byte) (val, rest []byte, err error) {
	for i := 0; i < len(b); i++ {
		if b[i] != 0 {
			val = append(val, b[i])
			continue
		}
		if i+1 >= len(b) {
			return nil, nil, errBadKey
		}
		switch b[i+1] {
		case 0x01:
			return val, b[i+2:], nil
		case 0xFF:
			val = append(val, 0)
			i++
		default:
			return nil, nil, errBadKey
		}
	}
	return nil, nil, errBadKey
}

// encode returns the item's key.
func (k itemKey) encode() []byte {
	b := make([]byte, 0, 1+len(k.EPK)+len(k.PK)+len(k.ID)+8)
	b = append(b, kindItem)
	b = appendEscaped(b, k.EPK)
	b = appendEscaped(b, k.PK)
	return appendEscaped(b, []byte(k.ID))
}

// decodeItemKey parses a key made by itemKey.encode.
func decodeItemKey(key []byte) (itemKey, error) {
	if len(key) < 1 || key[0] != kindItem {
		return itemKey{}, errBadKey
	}
	var k itemKey
	rest := key[1:]
	var id []byte
	var err error
	if k.EPK, rest, err = readEscaped(rest); err != nil {
		return itemKey{}, err
	}
	if k.PK, rest, err = readEscaped(rest); err != nil {
		return itemKey{}, err
	}
	if id, rest, err = readEscaped(rest); err != nil {
		return itemKey{}, err
	}
	if len(rest) != 0 {
		return itemKey{}, errBadKey
	}
	k.ID = string(id)
	return k, nil
}

// kindSpan is the span of every key of one kind.
func kindSpan(kind byte) replica.Span {
	return replica.Span{Lower: []byte{kind}, Upper: []byte{kind + 1}}
}

// itemsSpan is the span of a keyspace's items.
func itemsSpan() replica.Span { return kindSpan(kindItem) }

// epkSpan is the span of the items whose EPK lies in [min, max): an empty
// min means from the start, a nil max to the end.
func epkSpan(min, max []byte) replica.Span {
	s := itemsSpan()
	if len(min) > 0 {
		s.Lower = appendEscaped([]byte{kindItem}, min)
	}
	if max != nil {
		s.Upper = appendEscaped([]byte{kindItem}, max)
	}
	return s
}

// logicalSpan is the span of one logical partition's items: EPK epk and
// encoded partition key pk.
func logicalSpan(epk, pk []byte) replica.Span {
	return replica.PrefixSpan(appendEscaped(appendEscaped([]byte{kindItem}, epk), pk))
}

// orderKey is the key of the order entry of the item created with _rid
// sequence number seq. Order entries hold the item's key; in key order they
// list the keyspace's items in creation order, Cosmos DB's _rid order.
func orderKey(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, 9), kindOrder), seq)
}

// orderSpan is the span of the order entries from sequence number from on.
func orderSpan(from uint64) replica.Span {
	s := kindSpan(kindOrder)
	if from > 0 {
		s.Lower = orderKey(from)
	}
	return s
}

// indexKey is the key of the index entry of term (an encoded path and
// value) for the item with _rid sequence number seq; it holds the item's
// key. term must be self-delimiting (no term a proper prefix of another),
// so that entries sort by term, then by seq.
func indexKey(term []byte, seq uint64) []byte {
	b := append(make([]byte, 0, 9+len(term)), kindIndex)
	b = append(b, term...)
	return binary.BigEndian.AppendUint64(b, seq)
}

// compositeKey is the key of the composite index entry of term (a
// composite term: the index's number and its components) for the item
// with _rid sequence number seq; it holds the item's key. Composite terms
// are self-delimiting, so entries sort by term, then by seq.
func compositeKey(term []byte, seq uint64) []byte {
	b := append(make([]byte, 0, 9+len(term)), kindComposite)
	b = append(b, term...)
	return binary.BigEndian.AppendUint64(b, seq)
}

// indexSpans are the spans of the entries an indexing policy derives: the
// range index's and the composite indexes'.
func indexSpans() []replica.Span {
	return []replica.Span{kindSpan(kindIndex), kindSpan(kindComposite)}
}

// indexSpan is the span of the index entries whose term lies in [lo, hi);
// a nil hi means to the end of the index.
func indexSpan(lo, hi []byte) replica.Span { return termSpan(kindIndex, lo, hi) }

// termSpan is the span of the entries of key kind kind (kindIndex,
// kindComposite) whose term lies in [lo, hi); a nil hi means to the end of
// the kind.
func termSpan(kind byte, lo, hi []byte) replica.Span {
	s := replica.Span{Lower: append([]byte{kind}, lo...), Upper: []byte{kind + 1}}
	if hi != nil {
		s.Upper = append([]byte{kind}, hi...)
	}
	return s
}

// entrySeq returns the sequence number at the end of an order, index,
// composite or change key.
func entrySeq(key []byte) (uint64, error) {
	if len(key) < 9 || (key[0] != kindOrder && key[0] != kindIndex && key[0] != kindComposite && key[0] != kindChange) {
		return 0, errBadKey
	}
	return binary.BigEndian.Uint64(key[len(key)-8:]), nil
}

// statsKey is the key of one logical partition's statistics.
func statsKey(epk, pk []byte) []byte {
	return appendEscaped(appendEscaped([]byte{kindStats}, epk), pk)
}

// statsEPKSpan is the span of the statistics of logical partitions whose
// EPK lies in [min, max) (an empty min: from the start; nil max: to the
// end).
func statsEPKSpan(min, max []byte) replica.Span {
	s := kindSpan(kindStats)
	if len(min) > 0 {
		s.Lower = appendEscaped([]byte{kindStats}, min)
	}
	if max != nil {
		s.Upper = appendEscaped([]byte{kindStats}, max)
	}
	return s
}

// decodeStatsKey returns the EPK and encoded partition key of a statsKey.
func decodeStatsKey(key []byte) (epk, pk []byte, err error) {
	if len(key) < 1 || key[0] != kindStats {
		return nil, nil, errBadKey
	}
	rest := key[1:]
	if epk, rest, err = readEscaped(rest); err != nil {
		return nil, nil, err
	}
	if pk, rest, err = readEscaped(rest); err != nil || len(rest) != 0 {
		return nil, nil, errBadKey
	}
	return epk, pk, nil
}

// changeKey is the key of the change entry of the item last written at
// lsn. Change entries hold the item's key (changeValue); in key order they
// list the keyspace's live items in the order of their last writes: the
// change feed's order.
func changeKey(lsn uint64) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, 9), kindChange), lsn)
}

// changeSpan is the span of the change entries with LSNs after after.
func changeSpan(after uint64) replica.Span {
	s := kindSpan(kindChange)
	switch {
	case after == ^uint64(0):
		s.Lower = s.Upper
	case after > 0:
		s.Lower = changeKey(after + 1)
	}
	return s
}

// uniqueKey is the key of the entry of unique key number key (its position
// in the container's unique key policy) for the logical partition with
// effective key epk and encoded partition key pk, and tuple, the encoding
// of the item's values at the key's paths. The entry holds the id of the
// item that has those values. tuple ends the key, so it need not be
// self-delimiting.
func uniqueKey(key uint16, epk, pk, tuple []byte) []byte {
	b := make([]byte, 0, 3+len(epk)+len(pk)+len(tuple)+8)
	b = binary.BigEndian.AppendUint16(append(b, kindUnique), key)
	b = appendEscaped(appendEscaped(b, epk), pk)
	return append(b, tuple...)
}

// intersect returns the span of the keys in both a and b.
func intersect(a, b replica.Span) replica.Span {
	if bytes.Compare(b.Lower, a.Lower) > 0 {
		a.Lower = b.Lower
	}
	if a.Upper == nil || (b.Upper != nil && bytes.Compare(b.Upper, a.Upper) < 0) {
		a.Upper = b.Upper
	}
	return a
}

// uniqueEPKSpan is the span of the entries of unique key number key for the
// logical partitions whose EPK lies in [min, max) (an empty min: from the
// start; nil max: to the end).
func uniqueEPKSpan(key uint16, min, max []byte) replica.Span {
	prefix := binary.BigEndian.AppendUint16([]byte{kindUnique}, key)
	s := replica.PrefixSpan(prefix)
	if len(min) > 0 {
		s.Lower = appendEscaped(bytes.Clone(prefix), min)
	}
	if max != nil {
		s.Upper = appendEscaped(bytes.Clone(prefix), max)
	}
	return s
}

// changeValue is a change entry's value: the item's key, followed, when
// the write was one of a transaction's several (a batch, a stored
// procedure), by the largest LSN that transaction's change entries took,
// 8 bytes big-endian. The change feed reads up to it before it ends a
// page, so that a page holds a transaction whole (docs/change-feed.md). An
// item key ends where its three escaped parts do, so the suffix needs no
// marker.
func changeValue(itemKey []byte, txnEnd uint64) []byte {
	if txnEnd == 0 {
		return itemKey
	}
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, len(itemKey)+8), itemKey...), txnEnd)
}

// splitChangeValue parses a change entry's value: the item's key, and the
// transaction's largest LSN (0 for a write made alone).
func splitChangeValue(v []byte) (itemKey []byte, txnEnd uint64, err error) {
	if len(v) < 1 || v[0] != kindItem {
		return nil, 0, errBadKey
	}
	rest := v[1:]
	for range 3 {
		if rest, err = skipEscaped(rest); err != nil {
			return nil, 0, err
		}
	}
	switch len(rest) {
	case 0:
		return v, 0, nil
	case 8:
		return v[:len(v)-8], binary.BigEndian.Uint64(rest), nil
	}
	return nil, 0, errBadKey
}
