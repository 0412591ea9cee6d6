package bench

import (
	"math/bits"
	"time"
)

// Histogram buckets durations HDR-style: exact below 128 ns, then 64
// buckets per power of two, so a recorded value is reported within 1/64
// (1.6%) of itself, in at most 3,776 counters (about 30 KB) whatever the
// number of samples. The zero value is empty and ready to use; it is not
// safe for concurrent use (each worker keeps its own and they are merged).
type Histogram struct {
	counts   []uint64 // grown on demand up to maxIndex+1
	n        uint64
	min, max time.Duration
	sum      time.Duration
}

const (
	subBits  = 7                  // 2^7 = 128: values below are exact
	subHalf  = 1 << (subBits - 1) // buckets per power of two above that
	subCount = 1 << subBits
)

// index returns v's bucket.
func index(v uint64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBits // ≥ 1
	top := v >> shift                // in [64, 128)
	return subCount + (shift-1)*subHalf + int(top-subHalf)
}

// bounds returns the smallest and largest values of bucket i.
func bounds(i int) (lo, hi uint64) {
	if i < subCount {
		return uint64(i), uint64(i)
	}
	shift := (i-subCount)/subHalf + 1
	top := uint64((i-subCount)%subHalf + subHalf)
	lo = top << shift
	return lo, lo + (1 << shift) - 1
}

// Record adds one sample; negative durations count as 0.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	i := index(uint64(d))
	if i >= len(h.counts) {
		h.counts = append(h.counts, make([]uint64, i+1-len(h.counts))...)
	}
	h.counts[i]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += d
}

// Merge adds o's samples to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	if len(o.counts) > len(h.counts) {
		h.counts = append(h.counts, make([]uint64, len(o.counts)-len(h.counts))...)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count returns the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest sample, 0 when empty.
func (h *Histogram) Max() time.Duration { return h.max }

// Mean returns the mean sample, 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Quantile returns the sample of rank ceil(q·n) (q in [0, 1], clamped), as
// the midpoint of its bucket kept within [min, max]; 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := uint64(q*float64(h.n) + 0.999999999) // ceil without float noise at exact ranks
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bounds(i)
			v := time.Duration(lo + (hi-lo)/2)
			return min(max(v, h.min), h.max)
		}
	}
	return h.max
}
