package engine

import (
	"fmt"
	"testing"
)

// BenchmarkQueryIntersectRange drains c.cat = "a" AND a range of c.n (an
// equality intersected with a range: plan.IndexIntersect) over 20,000
// items of about 500 B in four physical partitions, cat one of four values
// and n pageBenchN, against the same query with the range written so that
// no lookup serves it (OR false: the equality alone, its 5,000 documents
// loaded and filtered), in pages of 10 and 100. Ranges: 10 terms (gathered
// in each part), 60 terms (merged) and 200 terms (left out after the first
// page: no gain, what it costs).
//
//	go test -run=NONE -bench=BenchmarkQueryIntersectRange -count=5 ./internal/engine
func BenchmarkQueryIntersectRange(b *testing.B) {
	e := pageBenchEngineOf(b, 4, func(i int, pk, pad string) []byte {
		return fmt.Appendf(nil, `{"id":"i%d","pk":%q,"cat":"%c","n":%d,"pad":%q}`, i, pk, 'a'+i%4, pageBenchN(i), pad)
	})
	for _, r := range []struct {
		name, rng string
		lo, hi    int
	}{{"terms=10", "c.n BETWEEN 100 AND 109", 100, 109}, {"terms=60", "c.n BETWEEN 100 AND 159", 100, 159}, {"terms=200", "c.n BETWEEN 100 AND 299", 100, 299}} {
		want := 0
		for i := range pageBenchItems {
			if n := pageBenchN(i); i%4 == 0 && n >= r.lo && n <= r.hi {
				want++
			}
		}
		for _, page := range []int{10, 100} {
			for _, plan := range []string{"intersect", "equality"} {
				b.Run(fmt.Sprintf("%s/page=%d/plan=%s", r.name, page, plan), func(b *testing.B) {
					where := `c.cat = "a" AND ` + r.rng
					if plan == "equality" {
						where = `c.cat = "a" AND (` + r.rng + ` OR false)`
					}
					q := Query{Text: "SELECT * FROM c WHERE " + where, EnableCrossPartition: true, MaxItems: page}
					drainPages(b, e, q, want, nil)
				})
			}
		}
	}
}

// BenchmarkQueryRangesLead drains two ranges on different paths and no
// equality, c.a BETWEEN lo AND hi AND c.b BETWEEN lo AND hi (a and b
// pseudo-random in [0, 1000), independent), over 20,000 items of about
// 500 B in four physical partitions: the range of fewest entries leads,
// the other intersected with it (plan=intersect), against the same query
// with b's range written so that no lookup serves it (OR false: a's range
// alone, as before, its documents loaded and filtered), in pages of 10 and
// 100; intersect-unkept keeps no gathered entries for the next pages
// (queryMemo.gathered), so that each page gathers again. Ranges of 100 values (2,000 items each, ~200 both) and 300 (6,000
// each: a's past what a page gathers, scanned either way).
//
//	go test -run=NONE -bench=BenchmarkQueryRangesLead -count=5 ./internal/engine
func BenchmarkQueryRangesLead(b *testing.B) {
	bOf := func(i int) int { return pageBenchN(i + 7*pageBenchItems) }
	e := pageBenchEngineOf(b, 4, func(i int, pk, pad string) []byte {
		return fmt.Appendf(nil, `{"id":"i%d","pk":%q,"a":%d,"b":%d,"pad":%q}`, i, pk, pageBenchN(i), bOf(i), pad)
	})
	for _, r := range []struct {
		name   string
		lo, hi int
	}{{"values=100", 100, 199}, {"values=300", 100, 399}} {
		want := 0
		for i := range pageBenchItems {
			if a, bv := pageBenchN(i), bOf(i); a >= r.lo && a <= r.hi && bv >= r.lo && bv <= r.hi {
				want++
			}
		}
		for _, page := range []int{10, 100} {
			for _, plan := range []string{"intersect", "intersect-unkept", "first"} {
				b.Run(fmt.Sprintf("%s/page=%d/plan=%s", r.name, page, plan), func(b *testing.B) {
					rb := fmt.Sprintf("c.b BETWEEN %d AND %d", r.lo, r.hi)
					if plan == "first" {
						rb = "(" + rb + " OR false)"
					}
					q := Query{Text: fmt.Sprintf("SELECT * FROM c WHERE c.a BETWEEN %d AND %d AND %s", r.lo, r.hi, rb), EnableCrossPartition: true, MaxItems: page}
					drainPages(b, e, q, want, coldMemo(e, plan != "intersect-unkept"))
				})
			}
		}
	}
}

// BenchmarkQueryMatch drains CONTAINS(c.s, "needle") (a "match" lookup:
// the path's strings read, the matching ones' documents loaded) over
// 20,000 items of about 500 B in four physical partitions, one in 100 of
// whose strings match (200 rows), against the same test written so that
// no lookup serves it (OR false: every document loaded and filtered), in
// pages of 10 and 100; match-unkept keeps no gathered entries for the next
// pages, so that each page reads the path's strings again.
//
//	go test -run=NONE -bench=BenchmarkQueryMatch -count=5 ./internal/engine
func BenchmarkQueryMatch(b *testing.B) {
	e := pageBenchEngineOf(b, 4, func(i int, pk, pad string) []byte {
		s := fmt.Sprintf("w%05d plain", i)
		if pageBenchN(i)%100 == 0 {
			s = fmt.Sprintf("w%05d needle", i)
		}
		return fmt.Appendf(nil, `{"id":"i%d","pk":%q,"s":%q,"pad":%q}`, i, pk, s, pad)
	})
	want := 0
	for i := range pageBenchItems {
		if pageBenchN(i)%100 == 0 {
			want++
		}
	}
	for _, page := range []int{10, 100} {
		for _, plan := range []string{"match", "match-unkept", "scan"} {
			b.Run(fmt.Sprintf("page=%d/plan=%s", page, plan), func(b *testing.B) {
				where := `CONTAINS(c.s, "needle")`
				if plan == "scan" {
					where = "(" + where + " OR false)"
				}
				q := Query{Text: "SELECT * FROM c WHERE " + where, EnableCrossPartition: true, MaxItems: page}
				drainPages(b, e, q, want, coldMemo(e, plan != "match-unkept"))
			})
		}
	}
}

// coldMemo returns drainPages' before: the engine's query memo emptied,
// so that each drain starts as a query's first would (what a drain keeps
// serves its own next pages only), and kept at its budget, or, with keep
// false, keeping nothing (every page gathers again).
func coldMemo(e *Engine, keep bool) func() {
	budget := e.cfg.QueryMemoBytes // not e.memo.budget: an unkept run set it to -1
	return func() {
		m := &e.memo
		m.mu.Lock()
		defer m.mu.Unlock()
		m.byKey, m.used = nil, 0
		m.lru.Init()
		if m.budget = budget; !keep {
			m.budget = -1
		}
	}
}

// BenchmarkQueryMatchIntersected drains c.cat = X AND CONTAINS(c.s, Y)
// (an equality intersected with a match lookup whose strings are gathered
// as the equality's documents pay for them: intersectStream.payMatches)
// over 20,000 items of about 500 B in four physical partitions, cat one of
// four values, one string in 100 holding "needle", against the same query
// with the CONTAINS written so that no lookup serves it (OR false: the
// equality alone, its documents loaded and filtered), in pages of 10 and
// 100. cat="a" finds 5,000 documents, needle 50 of them (the match
// selective); cat="a" AND "plain" passes 99 in 100 (what the match costs
// when it saves nothing); an id finds one (the match never gathered).
//
//	go test -run=NONE -bench=BenchmarkQueryMatchIntersected -count=5 ./internal/engine
func BenchmarkQueryMatchIntersected(b *testing.B) {
	e := pageBenchEngineOf(b, 4, func(i int, pk, pad string) []byte {
		s := fmt.Sprintf("w%05d plain", i)
		if pageBenchN(i)%100 == 0 {
			s = fmt.Sprintf("w%05d needle", i)
		}
		return fmt.Appendf(nil, `{"id":"i%d","pk":%q,"cat":"%c","s":%q,"pad":%q}`, i, pk, 'a'+i%4, s, pad)
	})
	count := func(f func(i int) bool) int {
		n := 0
		for i := range pageBenchItems {
			if f(i) {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		name, eq, arg string
		want          int
	}{
		{"selective", `c.cat = "a"`, "needle", count(func(i int) bool { return i%4 == 0 && pageBenchN(i)%100 == 0 })},
		{"unselective", `c.cat = "a"`, "plain", count(func(i int) bool { return i%4 == 0 && pageBenchN(i)%100 != 0 })},
		{"one", `c.id = "i8"`, "plain", count(func(i int) bool { return i == 8 && pageBenchN(i)%100 != 0 })},
	} {
		for _, page := range []int{10, 100} {
			if c.name == "unselective" && page == 10 {
				continue // 3,700 pages: as slow, and as telling, as pages of 100
			}
			for _, plan := range []string{"intersect", "equality"} {
				b.Run(fmt.Sprintf("%s/page=%d/plan=%s", c.name, page, plan), func(b *testing.B) {
					m := fmt.Sprintf("CONTAINS(c.s, %q)", c.arg)
					if plan == "equality" {
						m = "(" + m + " OR false)"
					}
					q := Query{Text: "SELECT * FROM c WHERE " + c.eq + " AND " + m, EnableCrossPartition: true, MaxItems: page}
					drainPages(b, e, q, c.want, coldMemo(e, true))
				})
			}
		}
	}
}
