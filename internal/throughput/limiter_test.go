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
	l := NewLimiter(clk.now, Burst{})
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
	l := NewLimiter(clk.now, Burst{})
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
	l := NewLimiter(nil, Burst{})
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
		l := NewLimiter(clk.now, Burst{})
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

// TestLimiterBurst: with burst capacity, a partition idle for 10 s at
// 100 RU/s banks 1,000 RU and spends it at once on top of its bucket; after
// a long idle period the bank is capped at the window, and spent at most
// at MaxRate RU/s.
func TestLimiterBurst(t *testing.T) {
	serve := func(l *Limiter, clk *fakeClock, d time.Duration) float64 {
		served := 0.0
		for range int(d / time.Millisecond) {
			clk.advance(time.Millisecond)
			for {
				if _, ok := l.Admit("p", 100); !ok {
					break
				}
				l.Charge("p", 100, 5)
				served += 5
			}
		}
		return served
	}
	for _, tc := range []struct {
		name     string
		burst    Burst
		idle     time.Duration
		min, max float64 // RU served in the first second of load
	}{
		{"off", Burst{}, 10 * time.Second, 190, 215},
		{"10s idle", Burst{Window: 5 * time.Minute, MaxRate: 3000}, 10 * time.Second, 1150, 1215},
		{"capped rate", Burst{Window: 5 * time.Minute, MaxRate: 3000}, time.Hour, 3150, 3215},
	} {
		clk := &fakeClock{t: time.Unix(1000, 0)}
		l := NewLimiter(clk.now, tc.burst)
		l.Admit("p", 100) // the bucket exists, full
		clk.advance(tc.idle)
		if got := serve(l, clk, time.Second); got < tc.min || got > tc.max {
			t.Errorf("%s: %v RU served in the first second, want %v..%v", tc.name, got, tc.min, tc.max)
		}
		if tc.name == "capped rate" {
			// The bank (30,000 RU at most) lasts about 10 s at 3,000 RU/s.
			if got := serve(l, clk, 5*time.Second); got < 5*3000 {
				t.Errorf("%s: %v RU in the next 5 s, want the bank still spending", tc.name, got)
			}
		}
	}
}

// TestLimiterNoBurstAtHighRates: a partition provisioned at or above
// Burst.Below has no burst capacity, as in Cosmos DB (3,000 RU/s); one
// below it has (a throughput hunt: a 6,000 RU/s partition served 9,000
// RU/s from its bank).
func TestLimiterNoBurstAtHighRates(t *testing.T) {
	for _, tc := range []struct {
		rate     float64
		min, max float64 // RU served in the first second of load after 10 s idle
	}{
		{6000, 11900, 12100}, // its bucket and a second's refill, no bank
		{3000, 5900, 6100},   // at the threshold: none either
		{2000, 6900, 7100},   // its bucket, a second's refill, and 3,000 from the bank
	} {
		clk := &fakeClock{t: time.Unix(1000, 0)}
		l := NewLimiter(clk.now, Burst{Window: 5 * time.Minute, MaxRate: 3000, Below: 3000})
		l.Admit("p", tc.rate)
		clk.advance(10 * time.Second)
		served := 0.0
		for range 1000 {
			clk.advance(time.Millisecond)
			for {
				if _, ok := l.Admit("p", tc.rate); !ok {
					break
				}
				l.Charge("p", tc.rate, 10)
				served += 10
			}
		}
		if served < tc.min || served > tc.max {
			t.Errorf("%v RU/s: %v RU served in the first second after 10 s idle, want %v..%v", tc.rate, served, tc.min, tc.max)
		}
	}
}

// TestLimiterDebit: charges other nodes report spend the partition's bucket
// (its own requests are refused once they have) without counting as its
// own charges, and the wait returned is the time the refill needs.
func TestLimiterDebit(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := NewLimiter(clk.now, Burst{})
	const rate = 100.0
	if w, low := l.Debit("p", rate, 40); w != 0 || low != 0 {
		t.Errorf("Debit within the budget and above the reserve: waits %v, %v; want 0", w, low)
	}
	if w, low := l.Debit("p", rate, 20); w != 0 || low != 101*time.Millisecond {
		t.Errorf("Debit to 40 of 100 RU: waits %v, %v; want 0 and, for low priority, 101ms (to 50)", w, low)
	}
	if w, low := l.Debit("p", rate, 90); w != 501*time.Millisecond || low != 1001*time.Millisecond {
		t.Errorf("Debit 50 RU past the budget at %v RU/s: waits %v, %v; want 501ms, 1001ms", rate, w, low)
	}
	if _, ok := l.Admit("p", rate); ok {
		t.Error("a request admitted after other nodes spent the budget")
	}
	if u := l.Usage("p"); u.Charged != 0 {
		t.Errorf("Usage counts debits of other nodes: %v RU", u.Charged)
	}
	clk.advance(600 * time.Millisecond)
	if _, ok := l.Admit("p", rate); !ok {
		t.Error("not admitted once the wait Debit returned has passed")
	}
	if w, low := l.Debit("q", 0, 1e9); w != 0 || low != 0 {
		t.Errorf("Debit of an unlimited partition: waits %v, %v; want 0", w, low)
	}
}

// TestLimiterLowPriority: low-priority requests stop at half the bucket,
// with a retry-after that admits them once waited; high-priority ones then
// spend the other half; a load of low-priority requests alone is still
// served at the partition's rate over time.
func TestLimiterLowPriority(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := NewLimiter(clk.now, Burst{})
	const rate, cost = 400.0, 5.0
	count := func(admit func() (time.Duration, bool)) int {
		n := 0
		for range 200 {
			if _, ok := admit(); !ok {
				return n
			}
			l.Charge("p", rate, cost)
			n++
		}
		return n
	}
	low := func() (time.Duration, bool) { return l.AdmitLow("p", rate) }
	high := func() (time.Duration, bool) { return l.Admit("p", rate) }
	if n := count(low); n != 40 {
		t.Errorf("low priority: %d writes of %v RU admitted from a full %v RU bucket, want 40 (half)", n, cost, rate)
	}
	wait, ok := l.AdmitLow("p", rate)
	if ok || wait <= 0 {
		t.Fatalf("low priority at half the bucket: admitted %v, retry-after %v", ok, wait)
	}
	if n := count(high); n != 40 {
		t.Errorf("high priority after low: %d admitted, want the other 40", n)
	}
	clk.advance(time.Second) // the bucket refills to 400
	served := 0
	for range 100 { // 10 s of low-priority writes alone
		served += count(low)
		clk.advance(100 * time.Millisecond)
	}
	if rps := float64(served) * cost / 10; rps < rate*0.9 || rps > rate*1.1 {
		t.Errorf("low priority alone: %.0f RU/s over 10 s, want about the rate %v", rps, rate)
	}
}
