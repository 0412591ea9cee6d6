package partition

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/document"
)

// fuzzKey builds up to three components from the fuzzer's inputs: kinds holds
// one kind selector per component (its length, capped at 3, is the component
// count).
func fuzzKey(kinds []byte, s1, s2 string, f float64, b bool) document.PartitionKey {
	if len(kinds) > maxPaths {
		kinds = kinds[:maxPaths]
	}
	pk := make(document.PartitionKey, len(kinds))
	for i, k := range kinds {
		switch k % 6 {
		case 0:
			pk[i] = undefined()
		case 1:
			pk[i] = null()
		case 2:
			pk[i] = boolean(b)
		case 3:
			pk[i] = num(f)
		case 4:
			pk[i] = str(s1)
		case 5:
			pk[i] = str(s2)
		}
	}
	return pk
}

// FuzzHash checks that hashing arbitrary components never panics, yields
// EPKs of the documented lengths inside ["", FF), is deterministic, and that
// Span agrees with Hash.
func FuzzHash(f *testing.F) {
	f.Add([]byte{4}, "asdf", "", 1.0, true)
	f.Add([]byte{3}, "", "", math.Inf(-1), false)
	f.Add([]byte{0, 1, 2}, "x", "y", math.NaN(), true)
	f.Add([]byte{4, 5}, "parent1", "child1", 0.0, false)
	f.Add([]byte{5}, "", "😀😀😀\xff\xfe鱀", -123.456, false)
	f.Add([]byte{4}, string(bytes.Repeat([]byte("a"), 99))+"😀", "", 0.0, false)
	f.Fuzz(func(t *testing.T, kinds []byte, s1, s2 string, num float64, b bool) {
		pk := fuzzKey(kinds, s1, s2, num, b)
		if len(pk) == 0 {
			return
		}
		check := func(d Definition, wantLen int) {
			t.Helper()
			e, err := d.Hash(pk)
			if err != nil {
				t.Fatalf("%s v%d Hash(%v) error %v", d.Kind, d.Version, pk, err)
			}
			if wantLen >= 0 && len(e) != wantLen {
				t.Fatalf("len(%s v%d Hash(%v)) = %d, want %d", d.Kind, d.Version, pk, len(e), wantLen)
			}
			if len(e) == 0 || bytes.Compare(e, MaxEPK()) >= 0 {
				t.Fatalf("%s v%d Hash(%v) = %s, outside the EPK space", d.Kind, d.Version, pk, e)
			}
			again, _ := d.Hash(pk)
			if !bytes.Equal(e, again) {
				t.Fatalf("%s v%d Hash(%v) = %s then %s", d.Kind, d.Version, pk, e, again)
			}
			min, max, err := d.Span(pk)
			if err != nil || !bytes.Equal(min, e) || !(Range{ID: "p", Min: min, Max: max}).Contains(e) {
				t.Fatalf("%s v%d Span(%v) = [%s, %s), %v; want the point %s", d.Kind, d.Version, pk, min, max, err, e)
			}
			back, err := ParseEPK(e.String())
			if err != nil || !bytes.Equal(back, e) {
				t.Fatalf("ParseEPK(%s) = %X, %v", e, back, err)
			}
		}
		md := multi(len(pk))
		check(md, v2Len*len(pk))
		// Each MultiHash prefix span holds the full key's EPK.
		full, _ := md.Hash(pk)
		for k := 1; k < len(pk); k++ {
			min, max, err := md.Span(pk[:k])
			if err != nil || !(Range{ID: "p", Min: min, Max: max}).Contains(full) {
				t.Fatalf("MultiHash Span(%v) = [%s, %s), %v; does not hold %s", pk[:k], min, max, err, full)
			}
		}
		if len(pk) == 1 {
			check(defV2, v2Len)
			check(defV1, -1)
			e, _ := defV1.Hash(pk)
			if len(e) > 109 || e[0] != markerNumber {
				t.Fatalf("V1 Hash(%v) = %s: want at most 109 bytes starting 05", pk, e)
			}
		}
	})
}

// FuzzParseEPK checks that ParseEPK never panics on header input and that
// what it accepts prints back as the upper-case form of its input.
func FuzzParseEPK(f *testing.F) {
	for _, s := range []string{"", "FF", "ff", "05C1E7035DAF84086274656700", "1FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "F", "0g"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEPK(s)
		if err != nil {
			return
		}
		if got, want := e.String(), strings.ToUpper(s); got != want {
			t.Fatalf("ParseEPK(%q).String() = %q, want %q", s, got, want)
		}
	})
}
