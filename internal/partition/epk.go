package partition

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/twmb/murmur3"

	"github.com/partitadb/partita/internal/document"
)

// ErrInvalidEPK is returned (wrapped) by [ParseEPK] for a string that is not
// an even-length hex string.
var ErrInvalidEPK = errors.New("partition: invalid effective partition key")

// ErrInvalidKey is returned (wrapped) by [Definition.Hash] and
// [Definition.Span] when a partition key value does not fit the definition:
// the wrong number of components, or a component of unknown kind.
var ErrInvalidKey = errors.New("partition: partition key does not match definition")

// EPK is an effective partition key: the bytes whose upper-case hex is the EPK
// string Cosmos DB uses in pkranges and x-ms-start-epk/x-ms-end-epk. EPKs order
// as byte strings (bytes.Compare), exactly as Cosmos orders the hex strings.
// The empty EPK is the start of the EPK space.
type EPK []byte

// MaxEPK returns the exclusive end of the EPK space, the single byte 0xFF
// (hex "FF"). Every EPK produced by hashing sorts before it. The returned
// slice is fresh and owned by the caller.
func MaxEPK() EPK { return EPK{0xFF} }

// String returns e as upper-case hex; "" for the empty EPK.
func (e EPK) String() string {
	const digits = "0123456789ABCDEF"
	b := make([]byte, 2*len(e))
	for i, c := range e {
		b[2*i] = digits[c>>4]
		b[2*i+1] = digits[c&0x0F]
	}
	return string(b)
}

// ParseEPK parses a hex EPK string; upper and lower case are accepted and ""
// is the empty EPK. Odd length or a non-hex character yields an error wrapping
// ErrInvalidEPK.
func ParseEPK(s string) (EPK, error) {
	if len(s)%2 != 0 {
		return nil, fmt.Errorf("%w: odd length %d", ErrInvalidEPK, len(s))
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: not hex", ErrInvalidEPK)
	}
	return EPK(b), nil
}

// Component type markers of the hash input and binary encodings (§5.2).
const (
	markerUndefined = 0x00
	markerNull      = 0x01
	markerFalse     = 0x02
	markerTrue      = 0x03
	markerNumber    = 0x05
	markerString    = 0x08
)

const (
	// v1MaxChars is the number of UTF-16 code units V1 truncates strings to.
	v1MaxChars = 100
	// v1MaxStringBytes is the most UTF-8 bytes of a string V1 appends with a
	// terminator; longer strings contribute v1MaxStringBytes+1 bytes and none.
	v1MaxStringBytes = 100
	// v2Len is the length of one V2 hash.
	v2Len = 16
)

// Hash returns the EPK of the full partition key value pk, which must have
// exactly one component per path of d. d must be normalized (see
// [Definition.Normalize]); otherwise Hash returns a *DefinitionError. A
// component count mismatch or a component of unknown kind yields an error
// wrapping ErrInvalidKey.
//
// The result is 16 bytes for V2, 16 bytes per component for MultiHash, and
// the variable-length V1 encoding (at most 109 bytes) for V1. Number -0 hashes
// as 0, so values that compare equal as float64 share an EPK. The "none" value
// of a system key ([Definition.IsNone]) is the empty EPK, as Cosmos DB
// computes it for PartitionKeyInternal.Empty (MinimumInclusiveEffectivePartitionKey).
func (d Definition) Hash(pk document.PartitionKey) (EPK, error) {
	s := d.scheme()
	if s == schemeInvalid {
		return nil, &DefinitionError{Msg: fmt.Sprintf("kind %q with version %d", d.Kind, d.Version)}
	}
	if len(pk) != len(d.Paths) {
		return nil, fmt.Errorf("%w: %d components, definition has %d paths", ErrInvalidKey, len(pk), len(d.Paths))
	}
	if err := checkKinds(pk); err != nil {
		return nil, err
	}
	if d.IsNone(pk) {
		return EPK{}, nil
	}
	return hashKey(s, pk), nil
}

// Span returns the EPK interval [min, max) holding every item whose partition
// key value has pk as a prefix. d must be normalized, as for [Definition.Hash].
//
//   - A full key (len(pk) == len(d.Paths)) is a point: min is its EPK and max
//     is min followed by a 0x00 byte, the least EPK greater than min, so the
//     interval holds exactly that EPK and [Map.Overlapping](min, max) returns
//     the one range that holds it. The none value of a system key is the
//     point at the empty EPK, ["", 00).
//   - A strict prefix of a MultiHash key (0 < len(pk) < len(d.Paths)) is
//     [prefixEPK, prefixEPK+FF), as Cosmos addresses hierarchical prefixes.
//   - An empty pk is the whole space ["", FF).
//
// A pk longer than d's paths, a non-empty strict prefix on a Hash definition,
// or a component of unknown kind yields an error wrapping ErrInvalidKey.
func (d Definition) Span(pk document.PartitionKey) (min, max EPK, err error) {
	s := d.scheme()
	if s == schemeInvalid {
		return nil, nil, &DefinitionError{Msg: fmt.Sprintf("kind %q with version %d", d.Kind, d.Version)}
	}
	switch {
	case len(pk) == 0:
		return EPK{}, MaxEPK(), nil
	case len(pk) > len(d.Paths), len(pk) < len(d.Paths) && s != schemeMulti:
		return nil, nil, fmt.Errorf("%w: %d components, definition has %d paths", ErrInvalidKey, len(pk), len(d.Paths))
	}
	if err := checkKinds(pk); err != nil {
		return nil, nil, err
	}
	if d.IsNone(pk) {
		return EPK{}, EPK{0x00}, nil
	}
	min = hashKey(s, pk)
	max = make(EPK, len(min)+1)
	copy(max, min)
	if len(pk) < len(d.Paths) {
		max[len(min)] = 0xFF
	}
	return min, max, nil
}

// checkKinds returns an error wrapping ErrInvalidKey if a component of pk has
// an unknown kind.
func checkKinds(pk document.PartitionKey) error {
	for i, c := range pk {
		if c.Kind > document.String {
			return fmt.Errorf("%w: component %d has unknown kind %d", ErrInvalidKey, i, c.Kind)
		}
	}
	return nil
}

// hashKey hashes pk (any number of components) with scheme s, which is valid.
func hashKey(s scheme, pk document.PartitionKey) EPK {
	switch s {
	case schemeV1:
		return hashV1(pk)
	case schemeV2:
		out := make(EPK, 0, v2Len)
		return appendV2(out, pk)
	default: // schemeMulti
		out := make(EPK, 0, v2Len*len(pk))
		for i := range pk {
			out = appendV2(out, pk[i:i+1])
		}
		return out
	}
}

// appendV2 appends the V2 hash of the components of pk, hashed together, to b.
func appendV2(b []byte, pk document.PartitionKey) []byte {
	var stack [128]byte
	in := stack[:0]
	for _, c := range pk {
		in = appendHashInput(in, c, 0xFF)
	}
	h := hashV2Raw(in)
	h[0] &= 0x3F // Cosmos clears the top two bits (§5.2 step 3)
	return append(b, h[:]...)
}

// hashV2Raw returns MurmurHash3_x64_128 (seed 0) of in laid out as Cosmos
// does before masking: big-endian h2 then big-endian h1, i.e. the reverse of
// the little-endian h1‖h2.
func hashV2Raw(in []byte) [v2Len]byte {
	h1, h2 := murmur3.Sum128(in)
	var out [v2Len]byte
	binary.BigEndian.PutUint64(out[:8], h2)
	binary.BigEndian.PutUint64(out[8:], h1)
	return out
}

// hashV1 returns the V1 EPK of pk (§5.2): the binary encoding of the number
// murmur3_32(hash inputs), then the binary encoding of each component, with
// strings truncated to 100 UTF-16 code units in both.
func hashV1(pk document.PartitionKey) EPK {
	var stack [128]byte
	in := stack[:0]
	for _, c := range pk {
		if c.Kind == document.String {
			c.String = truncateV1(c.String)
		}
		in = appendHashInput(in, c, 0x00)
	}
	h := murmur3.Sum32(in)
	out := make(EPK, 0, 8+len(in)+2)
	out = appendNumberV1(out, float64(h))
	for _, c := range pk {
		switch c.Kind {
		case document.String:
			out = appendStringV1(out, truncateV1(c.String))
		case document.Number:
			out = appendNumberV1(out, c.Number)
		default:
			out = appendHashInput(out, c, 0)
		}
	}
	return out
}

// appendHashInput appends the hash input encoding of c (§5.2 table): a type
// marker, then for numbers the little-endian IEEE-754 bits and for strings the
// UTF-8 bytes followed by term (0x00 for V1, 0xFF for V2).
func appendHashInput(b []byte, c document.PKValue, term byte) []byte {
	switch c.Kind {
	case document.Null:
		return append(b, markerNull)
	case document.Bool:
		if c.Bool {
			return append(b, markerTrue)
		}
		return append(b, markerFalse)
	case document.Number:
		b = append(b, markerNumber)
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(canonical(c.Number)))
	case document.String:
		b = append(b, markerString)
		b = append(b, c.String...)
		return append(b, term)
	default: // document.Undefined; unknown kinds are rejected by checkKinds
		return append(b, markerUndefined)
	}
}

// canonical maps -0 to 0 so that partition key values that compare equal as
// float64 hash alike. NB: the .NET service reads the JSON literal -0 as the
// integer 0 and therefore agrees; it would hash the literal -0.0 differently.
func canonical(f float64) float64 {
	if f == 0 {
		return 0
	}
	return f
}

// appendNumberV1 appends the order-preserving binary encoding of f used in V1
// EPKs (.NET NumberPartitionKeyComponent.WriteForBinaryEncoding): marker 05,
// the top byte of the sign-adjusted bits, then 7-bit groups each shifted left
// one with the low bit set, the last one with it cleared. A final byte is
// always written, so the encoding is at least 3 bytes and prefix-free.
func appendNumberV1(b []byte, f float64) []byte {
	b = append(b, markerNumber)
	u := math.Float64bits(canonical(f))
	if u&(1<<63) == 0 {
		u ^= 1 << 63
	} else {
		u = ^u + 1
	}
	b = append(b, byte(u>>56))
	u <<= 8
	var last byte
	for first := true; u != 0; first = false {
		if !first {
			b = append(b, last)
		}
		last = byte(u>>56) | 0x01
		u <<= 7
	}
	return append(b, last&0xFE)
}

// appendStringV1 appends the V1 binary encoding of s (.NET
// StringPartitionKeyComponent.WriteForBinaryEncoding): marker 08, then each
// UTF-8 byte plus one (0xFF stays 0xFF); strings of at most 100 bytes end with
// 00, longer ones contribute only their first 101 bytes and no terminator.
func appendStringV1(b []byte, s string) []byte {
	b = append(b, markerString)
	n := len(s)
	if n > v1MaxStringBytes {
		n = v1MaxStringBytes + 1
	}
	for i := range n {
		c := s[i]
		if c < 0xFF {
			c++
		}
		b = append(b, c)
	}
	if len(s) <= v1MaxStringBytes {
		b = append(b, 0x00)
	}
	return b
}

// truncateV1 truncates s to its first 100 UTF-16 code units, as .NET's
// String.Substring(0, 100) does before V1 hashing. If the cut falls inside a
// surrogate pair, .NET keeps a lone high surrogate, which its UTF-8 encoder
// writes as U+FFFD; so does truncateV1. Invalid UTF-8 bytes count as one code
// unit each and are kept as they are.
func truncateV1(s string) string {
	if len(s) <= v1MaxChars { // every code unit takes at least one byte
		return s
	}
	units := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		w := 1
		if r > 0xFFFF {
			w = 2
		}
		if units+w > v1MaxChars {
			if units < v1MaxChars {
				return s[:i] + "\uFFFD"
			}
			return s[:i]
		}
		units += w
		i += size
	}
	return s
}
