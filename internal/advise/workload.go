package advise

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrWorkload: the workload description is invalid.
var ErrWorkload = errors.New("advise: invalid workload")

// Workload describes how a container is used: which queries run how often
// and filter on what, and how items are written over time. The file format
// is its JSON encoding (see the package documentation).
type Workload struct {
	Queries []Query `json:"queries"`
	Writes  Writes  `json:"writes"`
}

// Query is one kind of query (or point read) of the workload.
type Query struct {
	Name string `json:"name"`
	// Filters are the paths the query filters on by equality
	// ("WHERE c.vin = @vin AND c.date = @d" filters ["/vin", "/date"]).
	// "day(/ts)" (or hour, month) names a query over a time range within
	// one day of the timestamp /ts; a filter on /ts itself counts as naming
	// each of its buckets.
	Filters []string `json:"filters"`
	// Weight is the query's share of the traffic, in any unit (a rate, a
	// count, a percentage); 0 means 1.
	Weight float64 `json:"weight"`
}

// Writes describes the write traffic.
type Writes struct {
	// TimePath is the path holding each item's write time: an RFC 3339
	// timestamp, a date "2006-01-02", or epoch seconds or milliseconds
	// (/_ts, Cosmos DB's last-modified time, is epoch seconds). Empty means
	// detected from the sample.
	TimePath string `json:"timePath"`
	// Window is the period over which write skew is measured, as a Go
	// duration ("1h", "24h"); empty means 24h.
	Window string `json:"window"`
	// PerSecond is the peak write rate (items/s) of the whole container;
	// 0 means unknown. With it, the hottest key's request rate is checked
	// against one logical partition's 10,000 RU/s.
	PerSecond float64 `json:"perSecond"`
	// RUPerWrite is the request charge of one write; 0 means estimated from
	// the mean item size (about 5.5 RU for 1 KB, 1 RU more per further KB).
	RUPerWrite float64 `json:"ruPerWrite"`
}

// ParseWorkload decodes and checks a workload description. Errors wrap
// ErrWorkload and name every problem.
func ParseWorkload(data []byte) (*Workload, error) {
	var w Workload
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWorkload, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrWorkload)
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrWorkload}, args...)...))
	}
	for i := range w.Queries {
		q := &w.Queries[i]
		if q.Name == "" {
			q.Name = fmt.Sprintf("query %d", i+1)
		}
		if q.Weight < 0 {
			bad("query %q: weight %v is negative", q.Name, q.Weight)
		}
		if q.Weight == 0 {
			q.Weight = 1
		}
		for _, f := range q.Filters {
			if !validFilter(f) {
				bad("query %q: filter %q is not a path like /a/b or a time bucket like day(/ts)", q.Name, f)
			}
		}
	}
	if w.Writes.TimePath != "" && !validPath(w.Writes.TimePath) {
		bad("writes: timePath %q is not a path like /a/b", w.Writes.TimePath)
	}
	if w.Writes.Window != "" {
		if d, err := time.ParseDuration(w.Writes.Window); err != nil || d <= 0 {
			bad("writes: window %q is not a positive duration like 1h", w.Writes.Window)
		}
	}
	if w.Writes.PerSecond < 0 || w.Writes.RUPerWrite < 0 {
		bad("writes: perSecond and ruPerWrite must not be negative")
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &w, nil
}

// validPath reports whether p is a property path: "/" then non-empty
// segments separated by "/".
func validPath(p string) bool {
	if len(p) < 2 || p[0] != '/' {
		return false
	}
	return !strings.Contains(p[1:], "//") && !strings.HasSuffix(p, "/")
}

// validFilter reports whether f is a path or a time bucket of one:
// "hour(/ts)", "day(/ts)", "month(/ts)".
func validFilter(f string) bool {
	p, _ := splitBucket(f)
	return validPath(p)
}

// window returns the workload's write window, 24h by default.
func (w *Workload) window() time.Duration {
	if w != nil && w.Writes.Window != "" {
		if d, err := time.ParseDuration(w.Writes.Window); err == nil && d > 0 {
			return d
		}
	}
	return 24 * time.Hour
}
