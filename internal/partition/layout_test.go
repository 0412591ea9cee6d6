package partition

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/twmb/murmur3"

	"github.com/partitadb/partita/internal/document"
)

func TestEvenBoundariesIncreasing(t *testing.T) {
	for _, d := range []Definition{defV1, defV2, multi(2)} {
		if got := EvenBoundaries(d, 1); got != nil {
			t.Errorf("EvenBoundaries(%s v%d, 1) = %v, want nil", d.Kind, d.Version, got)
		}
		if got := EvenBoundaries(d, 0); got != nil {
			t.Errorf("EvenBoundaries(%s v%d, 0) = %v, want nil", d.Kind, d.Version, got)
		}
		for n := 1; n <= 16; n++ {
			b := EvenBoundaries(d, n)
			if len(b) != n-1 {
				t.Fatalf("len(EvenBoundaries(%s v%d, %d)) = %d, want %d", d.Kind, d.Version, n, len(b), n-1)
			}
			prev := EPK{}
			for i, e := range b {
				if bytes.Compare(prev, e) >= 0 {
					t.Errorf("EvenBoundaries(%s v%d, %d)[%d] = %s, not above %s", d.Kind, d.Version, n, i, e, prev)
				}
				prev = e
			}
			if bytes.Compare(prev, MaxEPK()) >= 0 {
				t.Errorf("EvenBoundaries(%s v%d, %d) last = %s, not below FF", d.Kind, d.Version, n, prev)
			}
		}
	}
}

func TestEvenBoundariesValues(t *testing.T) {
	tests := []struct {
		d    Definition
		n    int
		want []string
	}{
		{defV2, 2, []string{"1FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"}},
		{multi(3), 2, []string{"1FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"}},
		{defV2, 4, []string{"0FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "1FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF", "2FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"}},
		{defV2, 3, []string{"15555555555555555555555555555555", "2AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}},
		// V1: the number encoding of 2^31, then of 2^30, 2^31 and 3*2^30.
		{defV1, 2, []string{EPK(appendNumberV1(nil, 1<<31)).String()}},
		{defV1, 4, []string{
			EPK(appendNumberV1(nil, 1<<30)).String(),
			EPK(appendNumberV1(nil, 1<<31)).String(),
			EPK(appendNumberV1(nil, 3<<30)).String(),
		}},
		{defV1, 2, []string{"05C1E0"}}, // 2^31 = 0x41E0000000000000
	}
	for _, tt := range tests {
		got := EvenBoundaries(tt.d, tt.n)
		gotS := make([]string, len(got))
		for i, e := range got {
			gotS[i] = e.String()
		}
		if fmt.Sprint(gotS) != fmt.Sprint(tt.want) {
			t.Errorf("EvenBoundaries(%s v%d, %d) = %v, want %v", tt.d.Kind, tt.d.Version, tt.n, gotS, tt.want)
		}
	}
}

// randomKey returns a random string or number partition key component;
// collisions are negligible, so counts per range measure the hash spread.
func randomKey(r *rand.Rand) document.PKValue {
	switch r.IntN(10) {
	case 0:
		return num(r.NormFloat64() * 1e6)
	case 1:
		return num(float64(r.IntN(1 << 40)))
	default:
		b := make([]byte, 1+r.IntN(150))
		for i := range b {
			b[i] = byte(' ' + r.IntN(95))
		}
		return str(string(b))
	}
}

// TestLayoutDistribution hashes 100k random keys into the 7 ranges of an
// even layout and checks that each range gets within ±10% of the mean. For V1
// it also checks each EPK lands in the range its murmur3_32 value selects,
// which proves the V1 boundaries sort right against real V1 EPKs; for V2, the
// range its 126-bit hash selects.
func TestLayoutDistribution(t *testing.T) {
	const keys, n = 100_000, 7
	for _, d := range []Definition{defV1, defV2, multi(2)} {
		t.Run(fmt.Sprintf("%s-v%d", d.Kind, d.Version), func(t *testing.T) {
			m, err := NewMap(InitialLayout(d, n))
			if err != nil {
				t.Fatal(err)
			}
			index := make(map[string]int, n)
			for i, r := range m.Ranges() {
				index[r.ID] = i
			}
			r := rand.New(rand.NewPCG(1, 2))
			counts := make([]int, n)
			for range keys {
				pk := key(randomKey(r))
				if d.Kind == MultiHash {
					pk = append(pk, randomKey(r))
				}
				e, err := d.Hash(pk)
				if err != nil {
					t.Fatal(err)
				}
				got := index[m.Locate(e).ID]
				counts[got]++
				if want := expectedRange(t, d, pk, n); got != want {
					t.Fatalf("Locate(Hash(%v) = %s) = range %d, want %d", pk, e, got, want)
				}
			}
			mean := float64(keys) / n
			for i, c := range counts {
				if dev := (float64(c) - mean) / mean; dev < -0.1 || dev > 0.1 {
					t.Errorf("range %d got %d of %d keys (%.1f%% off the mean %.0f)", i, c, keys, 100*dev, mean)
				}
			}
		})
	}
}

// expectedRange computes, independently of EPK byte order, which of n equal
// ranges a key's hash value falls in: the largest i with boundary_i <= hash.
func expectedRange(t *testing.T, d Definition, pk document.PartitionKey, n int) int {
	t.Helper()
	if d.Version == 1 {
		c := pk[0]
		if c.Kind == document.String {
			c.String = truncateV1(c.String)
		}
		h := uint64(murmur3.Sum32(appendHashInput(nil, c, 0x00)))
		i := n - 1
		for i > 0 && h < (uint64(i)<<32)/uint64(n) {
			i--
		}
		return i
	}
	raw := hashV2Raw(appendHashInput(nil, pk[0], 0xFF))
	raw[0] &= 0x3F
	h := new(big.Int).SetBytes(raw[:])
	space := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 126), big.NewInt(1))
	i := n - 1
	for i > 0 {
		b := new(big.Int).Mul(space, big.NewInt(int64(i)))
		b.Quo(b, big.NewInt(int64(n)))
		if h.Cmp(b) >= 0 {
			break
		}
		i--
	}
	return i
}

// TestV1BoundaryEdges checks V1 EPKs whose hash equals a boundary or sits
// just beside it, using synthetic EPKs built as the service builds them.
func TestV1BoundaryEdges(t *testing.T) {
	for n := 2; n <= 16; n++ {
		bounds := EvenBoundaries(defV1, n)
		for i, b := range bounds {
			h := (uint64(i+1) << 32) / uint64(n)
			for _, tail := range []EPK{appendStringV1(nil, ""), appendStringV1(nil, "zzz"), {0x00}, {0x03}} {
				at := append(appendNumberV1(nil, float64(h)), tail...)
				below := append(appendNumberV1(nil, float64(h-1)), tail...)
				if bytes.Compare(at, b) < 0 {
					t.Errorf("n=%d: EPK %X with hash %d sorts below boundary %s", n, at, h, b)
				}
				if bytes.Compare(below, b) >= 0 {
					t.Errorf("n=%d: EPK %X with hash %d sorts at or above boundary %s", n, below, h-1, b)
				}
			}
		}
	}
	// The extreme hash values stay inside the space.
	top := appendNumberV1(nil, math.MaxUint32)
	if bytes.Compare(top, MaxEPK()) >= 0 {
		t.Errorf("V1 EPK of hash 2^32-1 = %X, not below FF", top)
	}
}

func TestInitialRangeCount(t *testing.T) {
	tests := []struct {
		manual, autoscale, want int
	}{
		{0, 0, 1},
		{400, 0, 1},
		{6000, 0, 1},
		{6001, 0, 2},
		{12000, 0, 2},
		{30000, 0, 5},
		{40000, 0, 7},
		{0, 1000, 1},
		{0, 4000, 1},
		{0, 10000, 1},
		{0, 10001, 2},
		{0, 100000, 10},
		{0, 70000, 7},
		{6000, 100000, 1}, // manual wins when both are given
		{-5, -5, 1},
	}
	for _, tt := range tests {
		if got := InitialRangeCount(tt.manual, tt.autoscale); got != tt.want {
			t.Errorf("InitialRangeCount(%d, %d) = %d, want %d", tt.manual, tt.autoscale, got, tt.want)
		}
	}
}

func TestMidpoint(t *testing.T) {
	v2 := Definition{Paths: []string{"/pk"}, Kind: "Hash", Version: 2}
	bounds := EvenBoundaries(v2, 4)
	if got, ok := Midpoint(v2, EPK{}, MaxEPK()); !ok || got.String() != EvenBoundaries(v2, 2)[0].String() {
		t.Errorf("Midpoint(whole space) = %s, %v; want %s", got, ok, EvenBoundaries(v2, 2)[0])
	}
	if got, ok := Midpoint(v2, EPK{}, bounds[1]); !ok || got.String() != bounds[0].String() {
		t.Errorf("Midpoint(first half) = %s, %v; want %s", got, ok, bounds[0])
	}
	if got, ok := Midpoint(v2, bounds[1], MaxEPK()); !ok || got.String() != bounds[2].String() {
		t.Errorf("Midpoint(second half) = %s, %v; want %s", got, ok, bounds[2])
	}
	one := EPK(append(make([]byte, 15), 1))
	if got, ok := Midpoint(v2, EPK{}, one); ok {
		t.Errorf("Midpoint of a one-hash range = %s, want none", got)
	}
	if _, ok := Midpoint(Definition{Paths: []string{"/pk"}, Kind: "Hash", Version: 1}, EPK{}, MaxEPK()); ok {
		t.Error("Midpoint for V1: want none")
	}
}

// TestSlice: a key's slice of n is the index of the range of a container
// laid out in n (InitialLayout) that holds its EPK, for every scheme, and
// a range's start is in the slice of its index.
func TestSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, d := range []Definition{defV1, defV2, multi(2)} {
		for n := 0; n <= 9; n++ {
			layout, err := NewMap(InitialLayout(d, n))
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range layout.Ranges() {
				if got := d.Slice(n, r.Min); got != i {
					t.Errorf("%s v%d: Slice(%d, start of range %d) = %d", d.Kind, d.Version, n, i, got)
				}
				if got := d.SliceStart(n, i); !bytes.Equal(got, r.Min) || got == nil {
					t.Errorf("%s v%d: SliceStart(%d, %d) = %s, want %s", d.Kind, d.Version, n, i, got, r.Min)
				}
			}
			if d.SliceStart(max(n, 1), max(n, 1)) != nil || d.SliceStart(n, -1) != nil {
				t.Errorf("%s v%d: SliceStart out of range is not nil", d.Kind, d.Version)
			}
			for range 200 {
				var pk document.PartitionKey
				for range len(d.Paths) {
					pk = append(pk, document.PKValue{Kind: document.String, String: fmt.Sprint(rng.Uint64())})
				}
				e, err := d.Hash(pk)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := layout.ByID(layout.Locate(e).ID)
				if got := d.Slice(n, e); fmt.Sprint(got) != want.ID {
					t.Errorf("%s v%d: Slice(%d, %s) = %d, in range %s", d.Kind, d.Version, n, e, got, want.ID)
				}
			}
		}
	}
}
