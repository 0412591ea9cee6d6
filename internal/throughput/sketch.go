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
	// The tracked keys form a min-heap by (weight, key), so the key a new
	// one replaces is at the root: found in O(1) and replaced in O(log k),
	// where a scan of every tracked key cost O(k) on each add of an
	// untracked key (every add, when keys are many, as with point
	// operations over many logical partitions). The order is total (keys are
	// unique), so the key replaced is the one a scan would pick: the
	// lightest, the smallest key among equals.
	heap []*entry
	keys map[string]*entry
}

type entry struct {
	key         string
	weight, err float64
	i           int // index in Sketch.heap
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
	k = max(k, 1)
	return &Sketch{k: k, heap: make([]*entry, 0, min(k, 1024)), keys: make(map[string]*entry, min(k, 1024))}
}

// Add counts weight for key.
func (s *Sketch) Add(key string, weight float64) {
	if weight <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total += weight
	if e := s.keys[key]; e != nil {
		e.weight += weight
		s.down(e.i)
		return
	}
	if len(s.heap) < s.k {
		e := &entry{key: key, weight: weight, i: len(s.heap)}
		s.heap = append(s.heap, e)
		s.keys[key] = e
		s.up(e.i)
		return
	}
	// The lightest key's entry takes the new key, with its weight as the
	// new key's overestimate.
	e := s.heap[0]
	delete(s.keys, e.key)
	e.key, e.err, e.weight = key, e.weight, e.weight+weight
	s.keys[key] = e
	s.down(0)
}

// less orders the heap: lighter first, then by key.
func (s *Sketch) less(i, j int) bool {
	a, b := s.heap[i], s.heap[j]
	return a.weight < b.weight || (a.weight == b.weight && a.key < b.key)
}

func (s *Sketch) swap(i, j int) {
	s.heap[i], s.heap[j] = s.heap[j], s.heap[i]
	s.heap[i].i, s.heap[j].i = i, j
}

func (s *Sketch) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			return
		}
		s.swap(i, p)
		i = p
	}
}

func (s *Sketch) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(s.heap) {
			return
		}
		m := l
		if r := l + 1; r < len(s.heap) && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			return
		}
		s.swap(i, m)
		i = m
	}
}

// Top returns the n heaviest tracked keys, heaviest first, and the total
// weight added.
func (s *Sketch) Top(n int) ([]Heavy, float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Heavy, 0, len(s.heap))
	for _, e := range s.heap {
		out = append(out, Heavy{Key: e.key, Weight: e.weight, Err: e.err})
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
