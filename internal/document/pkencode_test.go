package document

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// encodeSamples are keys that differ in every way the encoding must keep.
func encodeSamples() []PartitionKey {
	return []PartitionKey{
		key(),
		key(undefined()), key(null()), key(boolean(false)), key(boolean(true)),
		key(num(0)), key(num(1)), key(num(-1)), key(num(math.Inf(1))), key(num(5e-324)),
		key(str("")), key(str("a")), key(str("ab")), key(str("a\x00")), key(str("\x00")),
		key(str(string(make([]byte, 200)))),
		key(str("a"), str("b")), key(str("ab"), str("")), key(str(""), str("ab")),
		key(undefined(), undefined()), key(null(), null(), null()),
		key(str("a"), num(1), boolean(true)), key(str("a"), num(1)),
		key(num(1), str("a")),
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	suffix := []byte("id\x00rest")
	for _, pk := range encodeSamples() {
		enc := pk.AppendEncoded([]byte("prefix"))
		if !bytes.HasPrefix(enc, []byte("prefix")) {
			t.Fatalf("AppendEncoded(%v) dropped dst: %q", pk, enc)
		}
		enc = append(enc[len("prefix"):], suffix...)
		got, rest, err := DecodePartitionKey(enc)
		if err != nil || !got.Equal(pk) || !bytes.Equal(rest, suffix) {
			t.Errorf("DecodePartitionKey(%x) = %v, %q, %v; want %v, %q", enc, got, rest, err, pk, suffix)
		}
	}
}

func TestEncodeInjective(t *testing.T) {
	seen := map[string]PartitionKey{}
	samples := encodeSamples()
	for _, pk := range samples {
		enc := string(pk.AppendEncoded(nil))
		if prev, ok := seen[enc]; ok {
			t.Errorf("%v and %v both encode as %x", prev, pk, enc)
		}
		seen[enc] = pk
	}
	// Self-delimiting: no encoding is a prefix of another.
	for a := range seen {
		for b := range seen {
			if a != b && len(a) < len(b) && b[:len(a)] == a {
				t.Errorf("encoding %x (%v) is a prefix of %x (%v)", a, seen[a], b, seen[b])
			}
		}
	}
}

func TestEncodeNormalisesNumbers(t *testing.T) {
	negZero := key(num(math.Copysign(0, -1)))
	if got, want := negZero.AppendEncoded(nil), key(num(0)).AppendEncoded(nil); !bytes.Equal(got, want) {
		t.Errorf("AppendEncoded(-0) = %x, want %x (as 0)", got, want)
	}
	otherNaN := key(num(math.Float64frombits(0x7ff0000000000abc)))
	if got, want := otherNaN.AppendEncoded(nil), key(num(math.NaN())).AppendEncoded(nil); !bytes.Equal(got, want) {
		t.Errorf("AppendEncoded(NaN') = %x, want %x", got, want)
	}
	got, _, err := DecodePartitionKey(negZero.AppendEncoded(nil))
	if err != nil || math.Signbit(got[0].Number) {
		t.Errorf("DecodePartitionKey(enc(-0)) = %v, %v; want +0", got, err)
	}
}

func TestDecodePartitionKeyErrors(t *testing.T) {
	tests := [][]byte{
		nil,
		{},
		{0x01},                                  // one component, none present
		{0x02, 0x01},                            // two components, one present
		{0x01, 0x04},                            // unknown marker
		{0x01, 0x05, 0, 0, 0},                   // truncated number
		{0x01, 0x05, 0x80, 0, 0, 0, 0, 0, 0, 0}, // -0: not canonical
		{0x01, 0x05, 0x7f, 0xf0, 0, 0, 0, 0, 0, 0x01}, // non-canonical NaN
		{0x01, 0x08, 0x05, 'a'},                       // truncated string
		{0x01, 0x08},                                  // missing string length
		{0x81, 0x00, 0x00},                            // non-minimal count varint
		{0x01, 0x08, 0x81, 0x00},                      // non-minimal length varint
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // overflow
		{0xff, 0xff, 0xff, 0xff, 0x0f, 0x00},                               // huge count
	}
	for _, in := range tests {
		got, rest, err := DecodePartitionKey(in)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodePartitionKey(%x) = %v, %x, %v; want ErrCorrupt", in, got, rest, err)
		}
	}
}

func FuzzDecodePartitionKey(f *testing.F) {
	for _, pk := range encodeSamples() {
		f.Add(pk.AppendEncoded(nil))
	}
	f.Add([]byte{0x01, 0x05, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		pk, rest, err := DecodePartitionKey(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodePartitionKey(%x) error %v, want ErrCorrupt", b, err)
			}
			return
		}
		used := b[:len(b)-len(rest)]
		if enc := pk.AppendEncoded(nil); !bytes.Equal(enc, used) {
			t.Fatalf("DecodePartitionKey(%x) = %v; re-encoded %x, want %x", b, pk, enc, used)
		}
	})
}
