package throughput

import (
	"sync"
	"testing"
	"time"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestLimiterServesItsRate: at 400 RU/s, 5-RU writes are admitted up to one
// second of budget, then refused with a retry-after that, once waited,
// admits again; over 10 s the admitted charge stays within the rate plus
// the one-second bucket.
func TestLimiterServesItsRate(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := NewLimiter(clk.now)
	const rate, cost = 400.0, 5.0
	admitted := 0
	for range 200 {
		if _, ok := l.Admit("p", rate); !ok {
			break
		}
		l.Charge("p", rate, cost)
		admitted++
	}
	if admitted != 80 {
		t.Errorf("admitted %d writes of %v RU from a full %v RU/s bucket, want 80", admitted, cost, rate)
	}
	wait, ok := l.Admit("p", rate)
	if ok || wait <= 0 || wait > 10*time.Millisecond+time.Millisecond {
		t.Fatalf("Admit on an empty bucket = %v, %v; want refused, ~1 ms", wait, ok)
	}
	clk.advance(wait)
	if _, ok := l.Admit("p", rate); !ok {
		t.Errorf("Admit after waiting retry-after %v: refused", wait)
	}
	// Steady state: hammer for 10 s in 1 ms steps.
	total := 0.0
	for range 10000 {
		clk.advance(time.Millisecond)
		if _, ok := l.Admit("p", rate); ok {
			l.Charge("p", rate, cost)
			total += cost
		}
	}
	if total < 10*rate-cost || total > 10*rate+rate {
		t.Errorf("charged %v RU in 10 s at %v RU/s", total, rate)
	}
	if u := l.Usage("p"); u.Throttled == 0 || u.Charged < total {
		t.Errorf("Usage = %+v, want throttles counted and at least %v RU", u, total)
	}
}

// TestLimiterDebt: a charge larger than the bucket is let through, and the
// partition is refused until the refill has paid the debt back.
func TestLimiterDebt(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := NewLimiter(clk.now)
	if _, ok := l.Admit("p", 100); !ok {
		t.Fatal("first request refused")
	}
	l.Charge("p", 100, 350) // 3.5 s of budget: 250 RU of debt
	wait, ok := l.Admit("p", 100)
	if ok || wait < 2490*time.Millisecond || wait > 2510*time.Millisecond {
		t.Errorf("Admit in debt of 250 RU at 100 RU/s = %v, %v; want refused for ~2.5 s", wait, ok)
	}
	clk.advance(2600 * time.Millisecond)
	if _, ok := l.Admit("p", 100); !ok {
		t.Error("Admit after the debt was repaid: refused")
	}
	// Partitions are independent, and rate 0 means unlimited.
	if _, ok := l.Admit("q", 100); !ok {
		t.Error("a fresh partition was refused")
	}
	if _, ok := l.Admit("p", 0); !ok {
		t.Error("rate 0 refused a request")
	}
}

func BenchmarkLimiterAdmitCharge(b *testing.B) {
	l := NewLimiter(nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := l.Admit("p", 1e12); ok {
			l.Charge("p", 1e12, 5)
		}
	}
}

// TestLimiterAdaptiveCapacity: of two 100 RU/s partitions, a hammered one
// borrows the idle one's budget: it serves about the container's 200 RU/s,
// never more, and no more than maxRate when that is lower.
func TestLimiterAdaptiveCapacity(t *testing.T) {
	for _, tc := range []struct {
		maxRate  float64
		min, max float64 // RU served over 10 s after the buckets' first second
	}{
		{maxRate: 1000, min: 1800, max: 2150},
		{maxRate: 150, min: 1350, max: 1600},
		{maxRate: 100, min: 950, max: 1100},
	} {
		clk := &fakeClock{t: time.Unix(1000, 0)}
		l := NewLimiter(clk.now)
		siblings := []string{"a", "b"}
		l.Charge("b", 100, 0) // make b's bucket exist: idle, full
		for range 1000 {      // drain a's first second
			if _, ok := l.AdmitAdaptive("a", siblings, 100, tc.maxRate); !ok {
				break
			}
			l.Charge("a", 100, 5)
		}
		served := 0.0
		for range 10000 {
			clk.advance(time.Millisecond)
			if _, ok := l.AdmitAdaptive("a", siblings, 100, tc.maxRate); ok {
				l.Charge("a", 100, 5)
				served += 5
			}
		}
		if served < tc.min || served > tc.max {
			t.Errorf("maxRate %v: a served %v RU in 10 s, want %v..%v", tc.maxRate, served, tc.min, tc.max)
		}
	}
}
