package throughput

import (
	"math"
	"sync"
	"time"
)

// Limiter meters request units per physical partition, as Cosmos DB does:
// each partition has a token bucket refilled at its share of the
// provisioned throughput (RU/s) and holding at most one second of it. A
// request is admitted while the bucket is not empty; its charge, known only
// once the work is done, is then debited and may take the bucket into debt,
// which the refill pays back before the next request is admitted. It is
// safe for concurrent use.
type Limiter struct {
	now   func() time.Time
	burst Burst
	mu    sync.Mutex
	b     map[string]*bucket
}

// Burst is Cosmos DB's burst capacity: a partition provisioned below Below
// RU/s banks the budget it leaves unused beyond its one-second bucket, up
// to Window of its rate, and spends the bank when its bucket is empty at
// up to MaxRate RU/s. The zero Burst disables it.
type Burst struct {
	Window  time.Duration // Cosmos DB: 5 minutes
	MaxRate float64       // Cosmos DB: 3,000 RU/s
	// Below is the rate from which a partition has no burst capacity
	// (Cosmos DB: 3,000 RU/s, "resources that have greater than or equal
	// to 3000 RU/s per physical partition can't benefit from or use burst
	// capacity"); 0: every partition has it. A 6,000 RU/s partition served
	// 9,000 RU/s from its bank (a throughput hunt).
	Below float64
}

// bursts reports whether a partition provisioned at rate has burst
// capacity.
func (b Burst) bursts(rate float64) bool {
	return b.Window > 0 && (b.Below <= 0 || rate < b.Below)
}

type bucket struct {
	tokens float64 // RU available; negative: debt
	last   time.Time
	// bank is the burst capacity saved from idle time; spent counts what
	// was drawn from it since window began.
	bank, spent float64
	// borrowed counts the RU this bucket borrowed from its siblings since
	// window began (adaptive capacity), bounding its rate.
	borrowed float64
	window   time.Time
	// Totals since the bucket was made, for visibility.
	charged   float64
	throttled int64
}

// NewLimiter returns a limiter reading the time from now (nil: time.Now),
// with burst capacity b (the zero Burst: none).
func NewLimiter(now func() time.Time, b Burst) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{now: now, burst: b, b: map[string]*bucket{}}
}

// refill brings partition key's bucket up to date at rate RU/s and returns
// it, creating it full.
func (l *Limiter) refill(key string, rate float64) *bucket {
	now := l.now()
	b := l.b[key]
	if b == nil {
		b = &bucket{tokens: rate, last: now}
		l.b[key] = b
		return b
	}
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		full := b.tokens + rate*dt
		b.tokens = math.Min(rate, full)
		if l.burst.bursts(rate) && full > rate {
			b.bank = math.Min(rate*l.burst.Window.Seconds(), b.bank+full-rate)
		}
		b.last = now
	}
	return b
}

// drawBurst moves burst capacity into an empty bucket: enough to clear its
// debt plus a tenth of a second at rate, within MaxRate per second.
func (l *Limiter) drawBurst(b *bucket, rate float64) {
	if !l.burst.bursts(rate) || b.bank <= 0 {
		return
	}
	now := l.now()
	if now.Sub(b.window) >= time.Second {
		b.window, b.spent, b.borrowed = now, 0, 0
	}
	x := min(b.bank, -b.tokens+rate/10, l.burst.MaxRate-b.spent)
	if x <= 0 {
		return
	}
	b.bank -= x
	b.spent += x
	b.tokens += x
}

// Admit reports whether a request may start on partition key, provisioned
// at rate RU/s. When it may not, it returns how long until it may (at least
// a millisecond), and counts a throttled request.
func (l *Limiter) Admit(key string, rate float64) (retryAfter time.Duration, ok bool) {
	return l.AdmitAdaptive(key, nil, rate, 0)
}

// AdmitAdaptive is Admit with adaptive capacity (beyond Cosmos DB, as
// DynamoDB's): when partition key has spent its budget, it borrows unused
// budget from the sibling partitions of its container (siblings, which may
// include key), taking from the one with the most; tokens move, so the
// container never serves more than its total, and the partition never more
// than maxRate RU/s (its own rate plus what it borrows in a second). With no
// siblings it is Admit.
func (l *Limiter) AdmitAdaptive(key string, siblings []string, rate, maxRate float64) (retryAfter time.Duration, ok bool) {
	if rate <= 0 {
		return 0, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.refill(key, rate)
	if b.tokens <= 0 {
		l.drawBurst(b, rate)
	}
	if b.tokens > 0 {
		return 0, true
	}
	now := l.now()
	if now.Sub(b.window) >= time.Second {
		b.window, b.spent, b.borrowed = now, 0, 0
	}
	var lender *bucket
	for _, s := range siblings {
		if s == key {
			continue
		}
		if sb := l.refill(s, rate); sb.tokens > 0 && (lender == nil || sb.tokens > lender.tokens) {
			lender = sb
		}
	}
	if room := maxRate - rate - b.borrowed; lender != nil && room > 0 {
		// Take what clears the debt plus a tenth of a second at the
		// partition's rate, at most half of what the lender has left.
		x := min(lender.tokens/2, -b.tokens+rate/10, room)
		lender.tokens -= x
		b.tokens += x
		b.borrowed += x
		if b.tokens > 0 {
			return 0, true
		}
	}
	b.throttled++
	wait := time.Duration((-b.tokens/rate)*float64(time.Second)) + time.Millisecond
	return wait.Truncate(time.Millisecond), false
}

// LowPriorityReserve is the share of a partition's bucket (a second of its
// rate) that low-priority requests leave to the others.
const LowPriorityReserve = 0.5

// AdmitLow is Admit for a low-priority request (Cosmos DB's priority-based
// execution): it is admitted only while the bucket holds more than
// LowPriorityReserve of it, so that when the partition's budget runs low
// its low-priority requests are refused first and the rest is left to the
// others. It neither draws burst capacity nor borrows. A load of
// low-priority requests alone is still served at the partition's rate: the
// refill lifts the bucket past the reserve again.
func (l *Limiter) AdmitLow(key string, rate float64) (retryAfter time.Duration, ok bool) {
	if rate <= 0 {
		return 0, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.refill(key, rate)
	reserve := rate * LowPriorityReserve
	if b.tokens > reserve {
		return 0, true
	}
	b.throttled++
	wait := time.Duration(((reserve-b.tokens)/rate)*float64(time.Second)) + time.Millisecond
	return wait.Truncate(time.Millisecond), false
}

// Charge debits ru request units from partition key, provisioned at rate
// RU/s. The bucket may go into debt.
func (l *Limiter) Charge(key string, rate, ru float64) {
	if ru <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.refill(key, rate)
	if rate > 0 {
		b.tokens -= ru
	}
	b.charged += ru
}

// Debit debits ru request units that another node charged for partition
// key (cluster.Budgets: the partition's leader keeps its budget) and
// returns how long the partition's bucket stays empty (spent: 0 while it
// has budget left) and how long it stays at or below LowPriorityReserve
// (low: the wait of a low-priority request, AdmitLow's). Unlike Charge it
// does not count ru in Usage, which each node reports for what it charged
// itself.
func (l *Limiter) Debit(key string, rate, ru float64) (spent, low time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.refill(key, rate)
	if rate <= 0 {
		return 0, 0
	}
	b.tokens -= max(ru, 0)
	until := func(level float64) time.Duration {
		if b.tokens > level {
			return 0
		}
		wait := time.Duration(((level-b.tokens)/rate)*float64(time.Second)) + time.Millisecond
		return wait.Truncate(time.Millisecond)
	}
	return until(0), until(rate * LowPriorityReserve)
}

// Usage is what a partition has consumed since the limiter first saw it.
type Usage struct {
	Charged   float64 // request units charged
	Throttled int64   // requests refused with 429
}

// Usage returns partition key's totals.
func (l *Limiter) Usage(key string) Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.b[key]; b != nil {
		return Usage{Charged: b.charged, Throttled: b.throttled}
	}
	return Usage{}
}

// Keys lists the partitions with a bucket.
func (l *Limiter) Keys() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.b))
	for k := range l.b {
		out = append(out, k)
	}
	return out
}

// Forget drops partition key's bucket (a partition that no longer exists).
func (l *Limiter) Forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.b, key)
}
