package document

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestRID(t *testing.T) {
	tests := []struct {
		b []byte
		s string
	}{
		{[]byte{0xd9, 0x1a, 0x39, 0x00}, "2Ro5AA=="},
		{[]byte{0xd9, 0x1a, 0x39, 0x00, 0xa6, 0x6f, 0x6c, 0x00}, "2Ro5AKZvbAA="},
		{[]byte{0xd9, 0x1a, 0x39, 0x00, 0xa6, 0x6f, 0x6c, 0x00, 1, 0, 0, 0, 0, 0, 0, 0}, "2Ro5AKZvbAABAAAAAAAAAA=="},
		{[]byte{0xff, 0xff, 0xff}, "----"}, // '/' becomes '-'
		{[]byte{0xfb, 0xf0}, "+-A="},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := EncodeRID(tt.b); got != tt.s {
			t.Errorf("EncodeRID(%x) = %q, want %q", tt.b, got, tt.s)
		}
		got, err := DecodeRID(tt.s)
		if err != nil || !bytes.Equal(got, tt.b) {
			t.Errorf("DecodeRID(%q) = %x, %v; want %x", tt.s, got, err, tt.b)
		}
	}
	for _, s := range []string{"2Ro5AA=", "2Ro5AA", "////", "2Ro5\nAA==", "2Ro5AB==", "a b=", "!!!!"} {
		if got, err := DecodeRID(s); err == nil {
			t.Errorf("DecodeRID(%q) = %x, want an error", s, got)
		} else if _, ok := errors.AsType[*InvalidError](err); !ok {
			t.Errorf("DecodeRID(%q) error %T, want *InvalidError", s, err)
		}
	}
}

func TestETag(t *testing.T) {
	tests := []struct {
		seq  uint64
		want string
	}{
		{0, `"00000000-0000-0000-0000-000000000000"`},
		{1, `"00000000-0000-0000-0000-000000000001"`},
		{0x5ee81d9a3bc801db, `"00000000-0000-0000-5ee8-1d9a3bc801db"`},
		{1<<64 - 1, `"00000000-0000-0000-ffff-ffffffffffff"`},
		{1 << 48, `"00000000-0000-0000-0001-000000000000"`},
	}
	for _, tt := range tests {
		if got := ETag(tt.seq); got != tt.want {
			t.Errorf("ETag(%#x) = %s, want %s", tt.seq, got, tt.want)
		}
	}
}

func TestItemSelf(t *testing.T) {
	got := ItemSelf("2Ro5AA==", "2Ro5AKZvbAA=", "2Ro5AKZvbAABAAAAAAAAAA==")
	want := "dbs/2Ro5AA==/colls/2Ro5AKZvbAA=/docs/2Ro5AKZvbAABAAAAAAAAAA==/"
	if got != want {
		t.Errorf("ItemSelf(...) = %q, want %q", got, want)
	}
}

func TestETagSeq(t *testing.T) {
	for _, seq := range []uint64{0, 1, 0xFFFF_FFFF_FFFF, 1 << 48, 1<<64 - 1} {
		if got, err := ETagSeq(ETag(seq)); err != nil || got != seq {
			t.Errorf("ETagSeq(ETag(%d)) = %d, %v", seq, got, err)
		}
		for _, owner := range []uint64{1, 0x1f, 1<<64 - 1} {
			if o, got, err := ParseETag(ItemETag(owner, seq)); err != nil || got != seq || o != owner {
				t.Errorf("ParseETag(ItemETag(%d, %d)) = %d, %d, %v", owner, seq, o, got, err)
			}
		}
	}
	if got := ItemETag(0x1f, 7); got != `"00000000-0000-001f-0000-000000000007"` {
		t.Errorf("ItemETag(0x1f, 7) = %s", got)
	}
	if got := ItemETag(0x0123456789abcdef, 1<<64-1); got != `"01234567-89ab-cdef-ffff-ffffffffffff"` {
		t.Errorf("ItemETag(0x0123456789abcdef, max) = %s", got)
	}
	for _, bad := range []string{"", `"x"`, `"00000000-0000-0000-000g-000000000001"`, `00000000-0000-0000-0000-000000000001""`, `"00000000-0000-0000-0000-0000000000011`,
		`"0000000G-0000-0000-0000-000000000001"`, `"00000000_0000-0000-0000-000000000001"`} {
		if _, err := ETagSeq(bad); err == nil {
			t.Errorf("ETagSeq(%q): no error", bad)
		}
	}
}

// etagSeqScanf is ParseETag as it was written first (for owner 0), with
// fmt.Sscanf and a round trip: FuzzETagSeq checks the hand-written one
// agrees.
func etagSeqScanf(etag string) (owner, seq uint64, ok bool) {
	var o1, o2, o3, hi, lo uint64
	if len(etag) != 38 {
		return 0, 0, false
	}
	const f = `"%08x-%04x-%04x-%04x-%012x"`
	if n, err := fmt.Sscanf(etag, f, &o1, &o2, &o3, &hi, &lo); err != nil || n != 5 || fmt.Sprintf(f, o1, o2, o3, hi, lo) != etag {
		return 0, 0, false
	}
	return o1<<32 | o2<<16 | o3, hi<<48 | lo, true
}

func FuzzETagSeq(f *testing.F) {
	for _, s := range []string{ETag(0), ETag(1), ETag(1<<64 - 1), ETag(0x5ee81d9a3bc801db), `"00000000-0000-0000-ABCD-000000000001"`,
		`"00000000-0000-0000-0x12-000000000001"`, `"00000000-0000-0000-+123-000000000001"`, `"00000000-0000-0000-0000-0000000000011`,
		ItemETag(0x1f, 7), ItemETag(1<<64-1, 1<<64-1), `"0000000g-0000-0000-0000-000000000001"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, etag string) {
		owner, seq, err := ParseETag(etag)
		wo, ws, ok := etagSeqScanf(etag)
		if (err == nil) != ok || owner != wo || seq != ws {
			t.Fatalf("ParseETag(%q) = %d, %d, %v; want %d, %d, ok %v", etag, owner, seq, err, wo, ws, ok)
		}
		if err == nil && ItemETag(owner, seq) != etag {
			t.Fatalf("ItemETag(ParseETag(%q)) = %q", etag, ItemETag(owner, seq))
		}
	})
}

func FuzzETag(f *testing.F) {
	f.Add(uint64(0))
	f.Add(uint64(1<<64 - 1))
	f.Fuzz(func(t *testing.T, seq uint64) {
		if got, want := ETag(seq), fmt.Sprintf(`"00000000-0000-0000-%04x-%012x"`, seq>>48, seq&(1<<48-1)); got != want {
			t.Fatalf("ETag(%#x) = %s, want %s", seq, got, want)
		}
	})
}
