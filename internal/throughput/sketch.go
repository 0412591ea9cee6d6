package throughput

import (
	"slices"
	"sync"
)

// Sketch finds the heaviest keys of a stream (the logical partitions using
// the most request units) in bounded memory, with the space-saving
// algorithm: it tracks at most k keys; a new key replaces the lightest,
// inheriting its weight as an overestimate. Any key whose true weight
// exceeds total/k is tracked, and a tracked key's weight is overestimated by
// at most its Err. It is safe for concurrent use.
type Sketch struct {
	mu    sync.Mutex
	k     int
	total float64
	w     map[string]*entry
}

type entry struct {
	weight, err float64
}

// Heavy is a tracked key and its estimated weight: the true weight lies in
// [Weight-Err, Weight].
type Heavy struct {
	Key    string  `json:"key"`
	Weight float64 `json:"weight"`
	Err    float64 `json:"maxOverestimate"`
}

// NewSketch returns a sketch tracking at most k keys (k < 1 means 1).
func NewSketch(k int) *Sketch {
	return &Sketch{k: max(k, 1), w: map[string]*entry{}}
}

// Add counts weight for key.
func (s *Sketch) Add(key string, weight float64) {
	if weight <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
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

// Top returns the n heaviest tracked keys, heaviest first, and the total
// weight added.
func (s *Sketch) Top(n int) ([]Heavy, float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Heavy, 0, len(s.w))
	for k, e := range s.w {
		out = append(out, Heavy{Key: k, Weight: e.weight, Err: e.err})
	}
	slices.SortFunc(out, func(a, b Heavy) int {
		switch {
		case a.Weight > b.Weight:
			return -1
		case a.Weight < b.Weight:
			return 1
		}
		return compareStrings(a.Key, b.Key)
	})
	return out[:min(n, len(out))], s.total
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
