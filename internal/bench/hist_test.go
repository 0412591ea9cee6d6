package bench

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// exactQuantile is Quantile's definition on a sorted slice: the sample of
// rank ceil(q·n).
func exactQuantile(sorted []time.Duration, q float64) time.Duration {
	rank := int(q*float64(len(sorted)) + 0.999999999)
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// within reports whether got is within 1/64 of want (the bucket width).
func within(got, want time.Duration) bool {
	diff := got - want
	if diff < 0 {
		diff = -diff
	}
	return float64(diff) <= float64(want)/64+1
}

func TestIndexBounds(t *testing.T) {
	// Every value lies within its bucket's bounds, and buckets are
	// contiguous and increasing.
	for _, v := range []uint64{0, 1, 127, 128, 129, 255, 256, 1000, 1 << 20, 1<<20 + 12345, 1<<62 + 7, 1<<63 - 1} {
		i := index(v)
		lo, hi := bounds(i)
		if v < lo || v > hi {
			t.Errorf("bounds(index(%d)) = [%d, %d], want it to hold %d", v, lo, hi, v)
		}
		if i > 0 {
			_, prevHi := bounds(i - 1)
			if prevHi+1 != lo {
				t.Errorf("bucket %d ends at %d, bucket %d starts at %d: want contiguous", i-1, prevHi, i, lo)
			}
		}
	}
	if got := index(1<<63 - 1); got >= 3776 {
		t.Errorf("index(max) = %d, want < 3776 buckets", got)
	}
}

func TestQuantile(t *testing.T) {
	tests := []struct {
		name    string
		samples []time.Duration
		q       float64
		want    time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", []time.Duration{5 * time.Millisecond}, 0.99, 5 * time.Millisecond},
		{"exact small", []time.Duration{1, 2, 3, 4}, 0.5, 2},
		{"exact small p100", []time.Duration{1, 2, 3, 4}, 1, 4},
		{"p0 is min", []time.Duration{7 * time.Millisecond, 9 * time.Millisecond}, 0, 7 * time.Millisecond},
		{"q clamped", []time.Duration{7 * time.Millisecond, 9 * time.Millisecond}, 2, 9 * time.Millisecond},
		{"negative as zero", []time.Duration{-5}, 0.5, 0},
	}
	for _, tt := range tests {
		var h Histogram
		for _, s := range tt.samples {
			h.Record(s)
		}
		if got := h.Quantile(tt.q); !within(got, tt.want) {
			t.Errorf("%s: Quantile(%g) = %v, want %v", tt.name, tt.q, got, tt.want)
		}
	}
}

// TestQuantileRandom compares quantiles of a merged histogram with the exact
// ones of the sorted samples, over latencies spanning microseconds to
// seconds.
func TestQuantileRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var a, b Histogram
	var all []time.Duration
	for i := range 100000 {
		d := time.Duration(rng.ExpFloat64() * float64(3*time.Millisecond))
		if i%1000 == 0 {
			d = time.Duration(rng.Int64N(int64(2 * time.Second)))
		}
		all = append(all, d)
		if i%2 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(&b)
	slices.Sort(all)
	if a.Count() != uint64(len(all)) || a.Max() != all[len(all)-1] {
		t.Fatalf("merged Count, Max = %d, %v; want %d, %v", a.Count(), a.Max(), len(all), all[len(all)-1])
	}
	for _, q := range []float64{0.001, 0.5, 0.9, 0.99, 0.999, 0.9999, 1} {
		if got, want := a.Quantile(q), exactQuantile(all, q); !within(got, want) {
			t.Errorf("Quantile(%g) = %v, want %v within 1/64", q, got, want)
		}
	}
}

// FuzzHistogram: for any samples, every quantile is within a bucket's width
// of the exact one, and merging two halves gives the same answers.
func FuzzHistogram(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, uint16(500))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0}, uint16(999))
	f.Fuzz(func(t *testing.T, data []byte, qm uint16) {
		var h, x, y Histogram
		var all []time.Duration
		for i := 0; i+8 <= len(data); i += 8 {
			d := time.Duration(binary.LittleEndian.Uint64(data[i:]) &^ (1 << 63))
			all = append(all, d)
			h.Record(d)
			if i%16 == 0 {
				x.Record(d)
			} else {
				y.Record(d)
			}
		}
		x.Merge(&y)
		q := float64(qm%1001) / 1000
		if len(all) == 0 {
			if h.Quantile(q) != 0 || x.Quantile(q) != 0 {
				t.Fatalf("empty histogram: Quantile(%g) != 0", q)
			}
			return
		}
		slices.Sort(all)
		want := exactQuantile(all, q)
		if got := h.Quantile(q); !within(got, want) {
			t.Fatalf("Quantile(%g) = %v, want %v within 1/64 (samples %v)", q, got, want, all)
		}
		if got, want := x.Quantile(q), h.Quantile(q); got != want {
			t.Fatalf("merged Quantile(%g) = %v, want %v as unmerged", q, got, want)
		}
	})
}

func BenchmarkHistogramRecord(b *testing.B) {
	var h Histogram
	d := time.Duration(1)
	b.ReportAllocs()
	for b.Loop() {
		d = d*6364136223846793005 + 1442695040888963407
		h.Record(d & (1<<32 - 1))
	}
}
