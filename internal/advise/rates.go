package advise

import (
	"fmt"
	"math"
)

// Estimating the hottest key's write rate. The rate is the workload's
// stated one (or the live container's measured one); the sample gives only
// each key's share of it. A share seen in a few sampled writes is mostly
// noise, and the largest of many noisy shares is biased upwards: a key
// seen once in a window of 100 sampled writes does not take 1% of the
// writes. So:
//
//   - a key's share pools its sampled writes over every write window it
//     was written in (count c over N sampled writes of those windows);
//   - only keys with at least minHotCount sampled writes are told apart;
//     one whose share is not clearly (95%) above twice the even share is
//     taken at c - 2√c (two standard deviations below, which undoes
//     picking the largest of many similar keys);
//   - every key, seen or not, takes at least the even share 1/D̂, where D̂
//     estimates the keys written in a window (Chao1 from the keys seen
//     once and twice, capped by the writes the window really holds);
//
// and the share's 95% interval (Wilson's) is stated with the estimate.

// minHotCount is how many sampled writes a key needs before its own share
// is trusted.
const minHotCount = 10

// rateEstimate is the hottest key's estimated share of the write rate.
type rateEstimate struct {
	share, low, high float64
	count            int // the hottest key's sampled writes (0: the even share)
	maxCount         int // the most sampled writes of any key
	keys             float64
	flat             bool
}

// wilson returns the 95% Wilson score interval of c successes in n trials.
func wilson(c, n float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	const z = 1.96
	p := c / n
	d := 1 + z*z/n
	center := (p + z*z/(2*n)) / d
	half := z * math.Sqrt(p*(1-p)/n+z*z/(4*n*n)) / d
	return max(0, center-half), min(1, center+half)
}

// chao1 estimates the number of distinct keys from d seen, f1 of them once
// and f2 twice (bias-corrected Chao1).
func chao1(d, f1, f2 int) float64 {
	return float64(d) + float64(f1)*float64(f1-1)/(2*float64(f2+1))
}

// basis says in words what a rate estimate rests on.
func (e rateEstimate) basis(rate string) string {
	switch {
	case e.flat && e.maxCount < minHotCount:
		return fmt.Sprintf("%s; no key has %d sampled writes, so this is the even share among about %s keys written at a time (at most %s of the writes at 95%% confidence)",
			rate, minHotCount, formatCount(e.keys), pct(e.high))
	case e.flat:
		return fmt.Sprintf("%s; no key stands out from the even share among about %s keys written at a time (at most %s of the writes at 95%% confidence)",
			rate, formatCount(e.keys), pct(e.high))
	}
	return fmt.Sprintf("%s; the hottest key has %d sampled writes: %s of the writes (95%% interval %s–%s)",
		rate, e.count, pct(e.share), pct(e.low), pct(e.high))
}

// formatCount formats a large estimated count roughly.
func formatCount(x float64) string {
	switch {
	case x >= 1e9:
		return fmt.Sprintf("%.0f billion", x/1e9)
	case x >= 1e6:
		return fmt.Sprintf("%.0f million", x/1e6)
	case x >= 1e4:
		return fmt.Sprintf("%.0f thousand", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// writeRate returns the write rate the hot key's share applies to (items
// per second, or RU/s when measured) and how it is known; 0 when unknown.
func (an *analysis) writeRate() (rate float64, perWrite float64, source string) {
	if w := an.opts.Workload; w != nil && w.Writes.PerSecond > 0 {
		return w.Writes.PerSecond, an.ruWrite, fmt.Sprintf("at the stated %s writes/s", formatRate(w.Writes.PerSecond))
	}
	if an.opts.MeasuredRU > 0 {
		return an.opts.MeasuredRU, 1, fmt.Sprintf("at the measured %s RU/s", formatRate(an.opts.MeasuredRU))
	}
	return 0, 0, ""
}

func formatRate(x float64) string {
	if x >= 100 || x == math.Trunc(x) {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.1f", x)
}

// estimateHot estimates the hottest key's share of the writes from the
// sampled writes, key(i) giving item i's key within one second (the time
// path and its buckets held constant as they are at one moment).
//
// A key's share is its sampled writes over the sampled writes of its
// lifetime: the windows from its first to its last, widened by (c+1)/(c-1)
// for c sampled writes (c points drawn from a span cover (c-1)/(c+1) of it
// on average), so that a key of one day is measured against that day's
// writes and not only the windows it happened to be sampled in.
func (an *analysis) estimateHot(key func(int) uint64) rateEstimate {
	type kw struct {
		c           int
		first, last int // windows
	}
	per := map[uint64]*kw{}
	wc := an.wcounts
	windows := max(len(an.winIDs), 1)
	prefix := make([]int, windows+1) // sampled writes before window w
	var d, f1, f2, maxC int
	for w := range windows {
		items := an.allItems
		if len(an.winIDs) > 0 {
			items = an.order[an.bounds[w]:an.bounds[w+1]]
		}
		prefix[w+1] = prefix[w] + len(items)
		clear(wc)
		for _, i := range items {
			if k := key(int(i)); k != missingKey {
				wc[k]++
			}
		}
		d += len(wc)
		for k, c := range wc {
			e := per[k]
			if e == nil {
				e = &kw{first: w}
				per[k] = e
			}
			e.c += int(c)
			e.last = w
			switch c {
			case 1:
				f1++
			case 2:
				f2++
			}
		}
	}
	sampled := prefix[windows]
	est := rateEstimate{flat: true}
	if d > 0 {
		// Keys written per window: Chao1 over the (window, key) pairs, so
		// that small windows pool their evidence; no more than a window's
		// writes.
		keys := chao1(d, f1, f2) / float64(windows)
		if lim := an.windowWrites(sampled / windows); lim > 0 {
			keys = min(keys, max(lim, float64(d)/float64(windows)))
		}
		est.keys = max(keys, 1)
		est.share = 1 / est.keys
	}
	flat := est.share
	best, bestN := 0.0, 0.0
	var bestC int
	for _, e := range per {
		maxC = max(maxC, e.c)
		if e.c < minHotCount {
			continue
		}
		c := float64(e.c)
		n := min(float64(prefix[e.last+1]-prefix[e.first])*(c+1)/(c-1), float64(sampled))
		s := c / n
		if lo, _ := wilson(c, n); lo < 2*flat && flat < 0.1 {
			// Not clearly above the even share of many keys: one of many
			// similar keys, whose largest count is inflated by noise.
			s = (c - 2*math.Sqrt(c)) / n
		}
		if s > best {
			best, bestN, bestC = s, n, e.c
		}
	}
	est.maxCount = maxC
	if best >= flat {
		est.share, est.flat, est.count = best, false, bestC
		est.low, est.high = wilson(float64(bestC), bestN)
	} else {
		// No key stands out: at most the largest count over all the
		// sampled writes, at 95%.
		lo, hi := wilson(float64(maxC), float64(sampled))
		est.low, est.high = 0, max(hi, est.share)
		if maxC >= minHotCount {
			// Keys seen often, none standing out: the busiest one's
			// share over the whole sample bounds it below.
			est.low = lo
		}
	}
	est.low = min(est.low, est.share)
	est.high = max(est.high, est.share)
	return est
}

// windowWrites is how many writes a write window of sampled sampled items
// really holds: the stated rate times its length, else the data set's items
// in proportion; 0 if unknown.
func (an *analysis) windowWrites(sampled int) float64 {
	if w := an.opts.Workload; w != nil && w.Writes.PerSecond > 0 && len(an.winIDs) > 0 {
		return w.Writes.PerSecond * an.window.Seconds()
	}
	total := max(an.opts.TotalItems, an.a.seen)
	if total > 0 && an.n > 0 {
		return float64(total) * float64(sampled) / float64(an.n)
	}
	return 0
}

// rateIsWrites reports whether writeRate counts writes (not RU).
func (an *analysis) rateIsWrites() bool {
	w := an.opts.Workload
	return w != nil && w.Writes.PerSecond > 0
}
