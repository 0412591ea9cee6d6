package throughput

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSketchFindsHeavyKeys: in a skewed stream over 10,000 keys, a 32-key
// sketch ranks the truly heaviest keys first, with estimates within their
// error bounds.
func TestSketchFindsHeavyKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	s := NewSketch(32)
	truth := map[string]float64{}
	for i := range 200000 {
		var key string
		switch {
		case i%5 == 0:
			key = "hot" // 20% of the weight
		case i%13 == 0:
			key = "warm" // ~6%
		default:
			key = fmt.Sprintf("k%d", rng.IntN(10000))
		}
		w := float64(1 + rng.IntN(5))
		truth[key] += w
		s.Add(key, w)
	}
	top, total := s.Top(3)
	if len(top) != 3 || top[0].Key != "hot" || top[1].Key != "warm" {
		t.Fatalf("Top(3) = %+v, want hot then warm", top)
	}
	sum := 0.0
	for _, w := range truth {
		sum += w
	}
	if total != sum {
		t.Errorf("total = %v, want %v", total, sum)
	}
	for _, h := range top {
		if tw := truth[h.Key]; tw > h.Weight || tw < h.Weight-h.Err {
			t.Errorf("%s: true weight %v outside [%v, %v]", h.Key, tw, h.Weight-h.Err, h.Weight)
		}
	}
}

func BenchmarkSketchAdd(b *testing.B) {
	s := NewSketch(64)
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.Add(keys[i%len(keys)], 5)
		i++
	}
}

// scanSketch is the space-saving algorithm with a scan for the lightest
// key: what Sketch computes, written the plain way.
type scanSketch struct {
	k     int
	total float64
	w     map[string]*entry
}

func (s *scanSketch) add(key string, weight float64) {
	if weight <= 0 {
		return
	}
	s.total += weight
	if e := s.w[key]; e != nil {
		e.weight += weight
		return
	}
	if len(s.w) < s.k {
		s.w[key] = &entry{weight: weight}
		return
	}
	var minKey string
	var minE *entry
	for k, e := range s.w {
		if minE == nil || e.weight < minE.weight || (e.weight == minE.weight && k < minKey) {
			minKey, minE = k, e
		}
	}
	delete(s.w, minKey)
	s.w[key] = &entry{weight: minE.weight + weight, err: minE.weight}
}

// TestSketchMatchesScan: Sketch tracks the same keys with the same weights
// and errors as the plain algorithm, on streams with many ties (small
// integer weights) and with few.
func TestSketchMatchesScan(t *testing.T) {
	for _, tc := range []struct {
		k, keys, maxW int
	}{{1, 5, 1}, {4, 10, 2}, {32, 1000, 5}, {32, 40, 1}, {64, 100000, 1000}} {
		rng := rand.New(rand.NewPCG(uint64(tc.k), uint64(tc.keys)))
		s := NewSketch(tc.k)
		ref := &scanSketch{k: tc.k, w: map[string]*entry{}}
		for i := range 50000 {
			key := fmt.Sprintf("k%d", rng.IntN(tc.keys))
			if i%7 == 0 {
				key = "hot"
			}
			w := float64(rng.IntN(tc.maxW + 1)) // 0 included: ignored
			s.Add(key, w)
			ref.add(key, w)
		}
		got, total := s.Top(tc.k)
		var want []Heavy
		for k, e := range ref.w {
			want = append(want, Heavy{Key: k, Weight: e.weight, Err: e.err})
		}
		slices.SortFunc(want, func(a, b Heavy) int {
			switch {
			case a.Weight > b.Weight:
				return -1
			case a.Weight < b.Weight:
				return 1
			}
			return compareStrings(a.Key, b.Key)
		})
		if !slices.Equal(got, want) || total != ref.total {
			t.Errorf("k=%d keys=%d: Top = %v (total %v), want %v (total %v)", tc.k, tc.keys, got, total, want, ref.total)
		}
	}
}
