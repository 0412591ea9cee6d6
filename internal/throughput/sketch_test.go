package throughput

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
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

// TestDecayingSketch, on a fake clock: a key heavy long ago is overtaken by
// one heavy now within a few half-lives (a sketch of totals listed the old
// one until the new one's total passed it), a steady rate reads back as
// itself, and an hour of adds (weights rebased past 2^512) stays finite.
func TestDecayingSketch(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	s := NewDecayingSketch(4, 5*time.Second, clk.now)
	s.Add("old", 100_000)
	clk.advance(time.Minute)
	for range 20 { // 100 RU/s for 10 s
		s.Add("new", 50)
		clk.advance(500 * time.Millisecond)
	}
	top, _ := s.Top(2)
	if len(top) != 2 || top[0].Key != "new" || top[1].Key != "old" {
		t.Fatalf("Top after old's weight decayed a minute and new's 10 s = %+v", top)
	}
	if w := top[0].Weight * math.Ln2 / 5; w < 60 || w > 100 { // weight to rate: ln 2 / half-life
		t.Errorf("new's rate after 10 s at 100/s: %.1f, want a little under 100", w)
	}
	for range 7200 { // an hour at 100/s
		s.Add("steady", 50)
		clk.advance(500 * time.Millisecond)
	}
	top, total := s.Top(1)
	if top[0].Key != "steady" || math.IsInf(total, 0) || math.IsNaN(total) {
		t.Fatalf("after an hour: %+v, total %v", top, total)
	}
	if w := top[0].Weight * math.Ln2 / 5; w < 95 || w > 105 {
		t.Errorf("a steady 100/s reads %.1f", w)
	}
}

// TestDecayingSketchIdle: read after hours without an add (its factor
// would underflow to 0), a decaying sketch's weights and total are finite
// (0); weight added untracked counts in the total a key's share is of.
// Read so, it answered NaN (0/0) in the partitions report: a 500.
func TestDecayingSketchIdle(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	s := NewDecayingSketch(4, 5*time.Second, clk.now)
	s.Add("a", 10)
	s.AddUntracked(30)
	if top, total := s.Top(1); top[0].Weight != 10 || total != 40 {
		t.Errorf("Top = %+v, total %v; want a at 10 of 40", top, total)
	}
	for _, idle := range []time.Duration{time.Minute, 80 * time.Minute, 15 * time.Minute, 10 * time.Hour} {
		clk.advance(idle)
		top, total := s.Top(1)
		if math.IsNaN(total) || math.IsInf(total, 0) || math.IsNaN(top[0].Weight) || math.IsNaN(top[0].Err) || top[0].Weight > total {
			t.Fatalf("after %v more idle: %+v, total %v", idle, top, total)
		}
	}
	s.Add("b", 1)
	if top, total := s.Top(1); top[0].Key != "b" || total != 1 {
		t.Errorf("after a long idle, then b: %+v, total %v", top, total)
	}
}
