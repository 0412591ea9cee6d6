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
