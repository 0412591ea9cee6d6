package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/partitadb/partita/internal/replica"
)

// TestEscapeOrder checks that escaped strings, followed by anything, sort as
// the raw strings do, and decode back.
func TestEscapeOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{0x00, 0x01, 0x02, 0xFE, 0xFF}
	gen := func() []byte {
		b := make([]byte, r.IntN(5))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return b
	}
	for range 5000 {
		a, b := gen(), gen()
		ea := append(appendEscaped(nil, a), 0x00, 0x00) // trailing data must not change order
		eb := append(appendEscaped(nil, b), 0xFF)
		want := bytes.Compare(a, b)
		got := bytes.Compare(ea, eb)
		if want != 0 && got != want {
			t.Fatalf("order(%x, %x) = %d, want %d", a, b, got, want)
		}
		dec, rest, err := readEscaped(ea)
		if err != nil || !bytes.Equal(dec, a) || !bytes.Equal(rest, []byte{0, 0}) {
			t.Fatalf("readEscaped(%x) = %x, %x, %v, want %x", ea, dec, rest, err, a)
		}
	}
}

func TestItemKeyRoundTrip(t *testing.T) {
	k := itemKey{EPK: []byte{0x05, 0x00, 0xC1}, PK: []byte{0x08, 'a', 0x00}, ID: "x\x00y"}
	got, err := decodeItemKey(k.encode())
	if err != nil || !bytes.Equal(got.EPK, k.EPK) || !bytes.Equal(got.PK, k.PK) || got.ID != k.ID {
		t.Fatalf("decodeItemKey(encode(%+v)) = %+v, %v", k, got, err)
	}
	if _, err := decodeItemKey([]byte{kindItem, 1}); err == nil {
		t.Errorf("decodeItemKey(short) succeeded")
	}
}

// TestSpans checks that EPK spans select exactly the items whose EPK is in
// range, and that logical partitions do not bleed into each other.
func TestSpans(t *testing.T) {
	var keys [][]byte
	epks := [][]byte{{0x00}, {0x10}, {0x10, 0x00}, {0x1F, 0xFF}, {0x20}, {0x3F, 0xFF}}
	for i, e := range epks {
		for j := range 2 {
			keys = append(keys, itemKey{EPK: e, PK: []byte{byte(i)}, ID: fmt.Sprint(j)}.encode())
		}
	}
	count := func(span replica.Span) (n int) {
		for _, k := range keys {
			if span.Contains(k) {
				n++
			}
		}
		return n
	}
	tests := []struct {
		name string
		span replica.Span
		want int
	}{
		{"items", itemsSpan(), 12},
		{"all epks", epkSpan(nil, []byte{0xFF}), 12},
		{"[10, 20)", epkSpan([]byte{0x10}, []byte{0x20}), 6},
		{"[, 10)", epkSpan(nil, []byte{0x10}), 2},
		{"[1000, 1FFF)", epkSpan([]byte{0x10, 0x00}, []byte{0x1F, 0xFF}), 2},
		{"logical", logicalSpan([]byte{0x10, 0x00}, []byte{2}), 2},
	}
	for _, tt := range tests {
		if got := count(tt.span); got != tt.want {
			t.Errorf("%s: %d items, want %d", tt.name, got, tt.want)
		}
	}
}

// TestUniqueKey: unique key entries lie in their kind's span and no other,
// and distinct (key, epk, pk, tuple) give distinct keys even where the
// parts' bytes run together.
func TestUniqueKey(t *testing.T) {
	type parts struct {
		key            uint16
		epk, pk, tuple string
	}
	tests := []parts{
		{0, "a", "b", "t"},
		{1, "a", "b", "t"},
		{0, "a\x00", "b", "t"},
		{0, "a", "\x00b", "t"},
		{0, "ab", "", "t"},
		{0, "a", "bt", ""},
		{0, "a", "b", "t\x00"},
		{256, "", "", ""},
	}
	seen := map[string]parts{}
	for _, p := range tests {
		k := uniqueKey(p.key, []byte(p.epk), []byte(p.pk), []byte(p.tuple))
		in := 0
		for kind := kindMeta; kind <= kindUnique; kind++ {
			if kindSpan(kind).Contains(k) {
				in++
				if kind != kindUnique {
					t.Errorf("uniqueKey(%+v) = %x lies in kind %x's span", p, k, kind)
				}
			}
		}
		if in != 1 {
			t.Errorf("uniqueKey(%+v) lies in %d kinds' spans, want 1", p, in)
		}
		if o, dup := seen[string(k)]; dup {
			t.Errorf("uniqueKey(%+v) = uniqueKey(%+v) = %x", p, o, k)
		}
		seen[string(k)] = p
	}
}
