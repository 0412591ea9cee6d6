package throughput

import (
	"math"
	"slices"
	"sync"
	"time"
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
	// A decaying sketch (NewDecayingSketch) weighs what was added at t by
	// 2^-((now-t)/halfLife): weights are kept scaled by 2^((t-t0)/halfLife)
	// (forward decay, so an add touches one entry and the heap's order,
	// which a common factor does not change, holds) and read back at now.
	halfLife time.Duration
	now      func() time.Time
	t0       time.Time
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

// NewDecayingSketch returns a sketch tracking at most k keys whose weights
// decay by half every halfLife, reading the time from now (nil: time.Now):
// a key's weight is then what it took lately, and a key that turns heavy
// overtakes keys heavy long ago within a few half-lives, where a sketch of
// totals since the start would list the old keys until the new one's total
// passed theirs. A steady rate r weighs r*halfLife/ln 2.
func NewDecayingSketch(k int, halfLife time.Duration, now func() time.Time) *Sketch {
	if now == nil {
		now = time.Now
	}
	s := NewSketch(k)
	s.halfLife, s.now, s.t0 = halfLife, now, now()
	return s
}

// scaleLocked returns the factor by which weight added now is scaled, first
// rebasing every weight when the factor grows large.
func (s *Sketch) scaleLocked() float64 {
	if s.halfLife <= 0 {
		return 1
	}
	x := float64(s.now().Sub(s.t0)) / float64(s.halfLife)
	if x > 512 { // 2^512: rebase long before float64's range ends
		f := math.Exp2(-x)
		for _, e := range s.heap {
			e.weight *= f
			e.err *= f
		}
		s.total *= f
		s.t0 = s.t0.Add(time.Duration(x * float64(s.halfLife)))
		x = 0
	}
	return math.Exp2(x)
}

// readLocked is the factor that turns a scaled weight into its weight now.
func (s *Sketch) readLocked() float64 {
	if s.halfLife <= 0 {
		return 1
	}
	return math.Exp2(-float64(s.now().Sub(s.t0)) / float64(s.halfLife))
}

// Add counts weight for key.
func (s *Sketch) Add(key string, weight float64) {
	if weight <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	weight *= s.scaleLocked()
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

// AddUntracked counts weight that belongs to no key in the total (a
// query over several logical partitions), so that a key's share of the
// total is of everything.
func (s *Sketch) AddUntracked(weight float64) {
	if weight <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total += weight * s.scaleLocked()
}

// Top returns the n heaviest tracked keys, heaviest first, and the total
// weight added (decayed to now, for a decaying sketch).
func (s *Sketch) Top(n int) ([]Heavy, float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scaleLocked() // rebases a long-idle sketch, whose factor would underflow
	f := s.readLocked()
	out := make([]Heavy, 0, len(s.heap))
	for _, e := range s.heap {
		out = append(out, Heavy{Key: e.key, Weight: e.weight * f, Err: e.err * f})
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
	return out[:min(n, len(out))], s.total * f
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
