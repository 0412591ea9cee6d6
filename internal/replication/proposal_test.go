package replication

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
)

// TestEnvelopeRoundTrip: an envelope decodes to what was encoded, its
// write's LSNs included; a version 1 entry (written before proposals
// carried them) decodes with none.
func TestEnvelopeRoundTrip(t *testing.T) {
	for _, lsns := range [][]uint64{nil, {7}, {7, 8, 300, 1 << 40}} {
		in := envelope{Proposal: Proposal{Kind: KindBatch, Term: 3, LSN: 1 << 41, Stable: 6, LSNs: lsns, Repr: []byte("repr")}, node: 2, id: 99}
		out, err := decodeEnvelope(in.encode())
		if err != nil {
			t.Fatal(err)
		}
		if out.Kind != in.Kind || out.Term != in.Term || out.LSN != in.LSN || out.Stable != in.Stable ||
			out.node != in.node || out.id != in.id || !slices.Equal(out.LSNs, in.LSNs) || string(out.Repr) != "repr" {
			t.Errorf("decoded %+v, want %+v", out, in)
		}
	}
	v1 := []byte{1, byte(KindMark)}
	for _, v := range []uint64{2, 99, 3, 12, 9} {
		v1 = binary.AppendUvarint(v1, v)
	}
	out, err := decodeEnvelope(v1)
	if err != nil {
		t.Fatal(err)
	}
	if out.Kind != KindMark || out.node != 2 || out.id != 99 || out.Term != 3 || out.LSN != 12 || out.Stable != 9 || out.LSNs != nil || len(out.Repr) != 0 {
		t.Errorf("version 1 decoded as %+v", out)
	}
}

// FuzzDecodeEnvelope: any bytes decode or fail with errEnvelope, never
// panic, and what decodes has ascending LSNs and encodes back to a value
// that decodes the same.
func FuzzDecodeEnvelope(f *testing.F) {
	f.Add(envelope{Proposal: Proposal{Kind: KindBatch, Term: 1, LSN: 5, Stable: 3, LSNs: []uint64{4, 5}, Repr: []byte{1}}}.encode())
	f.Add([]byte{2, 1, 0, 0, 0, 0, 0, 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEnvelope(b)
		if err != nil {
			if !errors.Is(err, errEnvelope) {
				t.Fatalf("error %v is not errEnvelope", err)
			}
			return
		}
		for i := 1; i < len(e.LSNs); i++ {
			if e.LSNs[i] <= e.LSNs[i-1] {
				t.Fatalf("LSNs not ascending: %v", e.LSNs)
			}
		}
		again, err := decodeEnvelope(e.encode())
		if err != nil || !slices.Equal(again.LSNs, e.LSNs) || again.LSN != e.LSN || string(again.Repr) != string(e.Repr) {
			t.Fatalf("re-encoded %+v decodes as %+v, %v", e, again, err)
		}
	})
}
