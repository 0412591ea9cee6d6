package document

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Markers of the binary partition key encoding. They match the type bytes of
// the EPK hash input (protocol §5.2) for readability; the encoding is ours.
const (
	encUndefined byte = 0x00
	encNull      byte = 0x01
	encFalse     byte = 0x02
	encTrue      byte = 0x03
	encNumber    byte = 0x05
	encString    byte = 0x08
)

// canonicalNaN is the bit pattern every NaN is encoded as (math.NaN's).
const canonicalNaN uint64 = 0x7ff8000000000001

// AppendEncoded appends a canonical, self-delimiting binary encoding of pk to
// dst and returns the extended slice. The layout is a uvarint component count,
// then per component a marker byte (00 undefined, 01 null, 02 false, 03 true,
// 05 number, 08 string), followed for numbers by the 8 big-endian bytes of the
// IEEE-754 bits and for strings by a uvarint byte length and the bytes.
// Distinct keys encode to distinct bytes, except that -0 encodes as 0 and
// every NaN alike; no encoding is a prefix of another, so more bytes (an id)
// may follow it in a storage key. It is not order-preserving.
func (pk PartitionKey) AppendEncoded(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(pk)))
	for _, v := range pk {
		switch v.Kind {
		case Null:
			dst = append(dst, encNull)
		case Bool:
			if v.Bool {
				dst = append(dst, encTrue)
			} else {
				dst = append(dst, encFalse)
			}
		case Number:
			dst = append(dst, encNumber)
			dst = binary.BigEndian.AppendUint64(dst, numberBits(v.Number))
		case String:
			dst = append(dst, encString)
			dst = binary.AppendUvarint(dst, uint64(len(v.String)))
			dst = append(dst, v.String...)
		default:
			dst = append(dst, encUndefined)
		}
	}
	return dst
}

func numberBits(f float64) uint64 {
	switch {
	case f == 0:
		return 0 // -0 too
	case f != f:
		return canonicalNaN
	}
	return math.Float64bits(f)
}

// DecodePartitionKey decodes a key that AppendEncoded wrote at the start of b
// and returns it with the bytes after it (a subslice of b). It accepts only
// canonical encodings, so re-encoding pk gives back exactly the bytes
// consumed. Errors wrap ErrCorrupt. The strings of pk are copies; pk does not
// alias b.
func DecodePartitionKey(b []byte) (pk PartitionKey, rest []byte, err error) {
	n, b, err := decodeUvarint(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: partition key component count: %v", ErrCorrupt, err)
	}
	if n > uint64(len(b)) { // every component takes at least one byte
		return nil, nil, fmt.Errorf("%w: partition key has %d components in %d bytes", ErrCorrupt, n, len(b))
	}
	pk = make(PartitionKey, n)
	for i := range pk {
		if len(b) == 0 {
			return nil, nil, fmt.Errorf("%w: partition key component %d missing", ErrCorrupt, i)
		}
		m := b[0]
		b = b[1:]
		switch m {
		case encUndefined:
			pk[i] = PKValue{Kind: Undefined}
		case encNull:
			pk[i] = PKValue{Kind: Null}
		case encFalse, encTrue:
			pk[i] = PKValue{Kind: Bool, Bool: m == encTrue}
		case encNumber:
			if len(b) < 8 {
				return nil, nil, fmt.Errorf("%w: partition key number %d truncated", ErrCorrupt, i)
			}
			u := binary.BigEndian.Uint64(b)
			f := math.Float64frombits(u)
			if u != numberBits(f) {
				return nil, nil, fmt.Errorf("%w: partition key number %d is not canonical (bits %#x)", ErrCorrupt, i, u)
			}
			pk[i] = PKValue{Kind: Number, Number: f}
			b = b[8:]
		case encString:
			l, r, err := decodeUvarint(b)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: partition key string %d length: %v", ErrCorrupt, i, err)
			}
			if l > uint64(len(r)) {
				return nil, nil, fmt.Errorf("%w: partition key string %d truncated", ErrCorrupt, i)
			}
			pk[i] = PKValue{Kind: String, String: string(r[:l])}
			b = r[l:]
		default:
			return nil, nil, fmt.Errorf("%w: partition key component %d has marker %#02x", ErrCorrupt, i, m)
		}
	}
	return pk, b, nil
}

// decodeUvarint reads a minimally encoded uvarint.
func decodeUvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	switch {
	case n == 0:
		return 0, nil, fmt.Errorf("truncated varint")
	case n < 0:
		return 0, nil, fmt.Errorf("varint overflows 64 bits")
	case n > 1 && b[n-1] == 0:
		return 0, nil, fmt.Errorf("varint not minimally encoded")
	}
	return v, b[n:], nil
}
