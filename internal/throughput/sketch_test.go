package throughput

import (
	"fmt"
	"math/rand/v2"
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
