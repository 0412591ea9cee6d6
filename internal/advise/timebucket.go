package advise

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Time units of derived time buckets, coarsest first.
var bucketUnits = []string{"month", "day", "hour"}

// bucketSeconds is the length of a time bucket of unit u, in seconds (a
// month taken as 31 days, its most).
func bucketSeconds(u string) float64 {
	switch u {
	case "month":
		return 31 * 86400
	case "day":
		return 86400
	}
	return 3600
}

// formatBucket formats Unix time ms as a bucket of unit u, as synthkey's
// TimeBucket writes it (UTC): "2006-01", "2006-01-02", "2006-01-02T15".
func formatBucket(ms int64, u string) string {
	t := time.UnixMilli(ms).UTC()
	switch u {
	case "month":
		return t.Format("2006-01")
	case "day":
		return t.Format(time.DateOnly)
	}
	return t.Format("2006-01-02T15")
}

// bucketPath names a time bucket of path p: "day(/ts)".
func bucketPath(u, p string) string { return u + "(" + p + ")" }

// setTime picks the time path, measures its resolution, and groups the
// items by write window.
func (an *analysis) setTime(rep *Report) {
	a := an.a
	an.window = an.opts.Window
	if an.window <= 0 {
		an.window = an.opts.Workload.window()
	}
	// Times are read to the millisecond: a shorter window is one of a
	// millisecond, and the report says so (it said "1ns").
	an.window = max(an.window, time.Millisecond)
	p := an.opts.TimePath
	if p == "" && an.opts.Workload != nil {
		p = an.opts.Workload.Writes.TimePath
	}
	var id int32 = -1
	if p != "" {
		if id = a.node(p); id < 0 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("time path %s: no sampled item has it; write skew not measured", p))
		}
	} else {
		id = an.detectTime()
	}
	if id < 0 {
		return
	}
	nd := a.nodes[id]
	numeric := p != "" || nd.path == "/_ts"
	times := make([]int64, len(nd.strs)+1) // value id → Unix ms
	valid := make([]bool, len(nd.strs)+1)
	for v, s := range nd.strs {
		// Epoch seconds or milliseconds only as JSON numbers: synthkey's
		// time buckets read no string of digits (a bug hunt found
		// "1717200000" bucketed here and every item refused there). Null
		// is no time: its items are in no window and no time bucket
		// (synthkey refuses it).
		times[v+1], valid[v+1] = parseTimeMS(s, numeric && nd.kinds[v] == 'n')
	}
	winMS := an.window.Milliseconds()
	if winMS <= 0 {
		winMS = 1
	}
	type iw struct {
		w int64
		i int32
	}
	var ws []iw
	for i := range an.n {
		if v := nd.value(i); valid[v] {
			ws = append(ws, iw{floorDiv(times[v], winMS), int32(i)})
		}
	}
	if len(ws) == 0 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("time path %s: no value is a time; write skew not measured", nd.path))
		return
	}
	slices.SortStableFunc(ws, func(x, y iw) int { return cmp.Compare(x.w, y.w) })
	for k, e := range ws {
		if k == 0 || e.w != ws[k-1].w {
			an.bounds = append(an.bounds, k)
			an.winIDs = append(an.winIDs, e.w)
		}
		an.order = append(an.order, e.i)
	}
	an.bounds = append(an.bounds, len(ws))
	an.timePath = nd.path
	an.timeID = id
	an.times, an.timeValid = times, valid
	an.res = resolution(times, valid)
	rep.TimePath = nd.path
	rep.TimeResolution = formatDuration(an.res)
	rep.Window = formatDuration(an.window)
	rep.Windows = len(an.winIDs)

	// Within one second (the period Cosmos DB budgets request units over)
	// the writes of a moment share the time path's value only when its
	// resolution is a second or coarser; at millisecond resolution they
	// spread over the second's milliseconds. slot holds that value.
	slot := &pathNode{path: nd.path, col: make([]uint32, len(nd.col)), src: -1}
	resMS := an.res.Milliseconds()
	for i, v := range nd.col {
		switch {
		case v == 0 || !valid[v]:
		case resMS >= 1000:
			slot.col[i] = 1
		default:
			slot.col[i] = uint32(floorMod(times[v], 1000)/max(resMS, 1)) + 1
		}
	}
	for v := range 1000 {
		slot.strs = append(slot.strs, strconv.Itoa(v))
		slot.kinds = append(slot.kinds, 'n')
	}
	an.slot = slot

	// Other paths holding times.
	for oid := int32(1); int(oid) < len(a.nodes); oid++ {
		o := a.nodes[oid]
		if oid == id || o.strings*10 < o.present*9 || o.scalars() < 2 {
			continue
		}
		ts := make([]int64, len(o.strs)+1)
		ok := make([]bool, len(o.strs)+1)
		good := 0
		for v, s := range o.strs {
			if ts[v+1], ok[v+1] = parseTimeMS(s, false); ok[v+1] {
				good++
			}
		}
		if good*10 >= o.scalars()*9 { // null is no time, nor counted against one
			an.timeLike[oid] = resolution(ts, ok)
		}
	}
}

// resolution returns the coarsest of a day, an hour, a minute, a second
// and a millisecond of which every valid time is a multiple.
func resolution(times []int64, valid []bool) time.Duration {
	for _, d := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		ok := true
		for v, t := range times {
			if valid[v] && floorMod(t, d.Milliseconds()) != 0 {
				ok = false
				break
			}
		}
		if ok {
			return d
		}
	}
	return time.Millisecond
}

// bucketNode derives the time path's bucket of unit u as a node: each
// item's value is its write time's bucket ("2024-06-01" for a day).
func (an *analysis) bucketNode(u string) int32 {
	if id, ok := an.bucketIDs[u]; ok {
		return id
	}
	src := an.a.nodes[an.timeID]
	nd := &pathNode{path: bucketPath(u, src.path), unit: u, src: an.timeID, values: map[string]uint32{},
		col: make([]uint32, len(src.col))}
	ids := make([]uint32, len(src.strs)+1)
	for v := 1; v < len(ids); v++ {
		if !an.timeValid[v] {
			continue
		}
		s := formatBucket(an.times[v], u)
		id, ok := nd.values[s]
		if !ok {
			nd.strs = append(nd.strs, s)
			nd.kinds = append(nd.kinds, 's')
			id = uint32(len(nd.strs))
			nd.values[s] = id
		}
		ids[v] = id
	}
	for i, v := range src.col {
		if ids[v] != 0 {
			nd.col[i] = ids[v]
			nd.present++
			nd.strings++
		}
	}
	id := int32(len(an.nodes))
	an.nodes = append(an.nodes, nd)
	an.bucketIDs[u] = id
	return id
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// detectTime returns the path most likely to hold write times: string
// timestamps or dates in 90% of the items that have it (and in half of all
// items), the finest-grained first; else /_ts; else -1.
func (an *analysis) detectTime() int32 {
	a := an.a
	best, bestDistinct := int32(-1), 0
	for id := int32(1); int(id) < len(a.nodes); id++ {
		nd := a.nodes[id]
		if nd.present*2 < an.n || nd.strings*10 < nd.present*9 || nd.scalars() < 2 {
			continue
		}
		ok := 0
		for _, s := range nd.strs {
			if _, t := parseTime(s, false); t {
				ok++
			}
		}
		if ok*10 >= nd.scalars()*9 && nd.scalars() > bestDistinct {
			best, bestDistinct = id, nd.scalars()
		}
	}
	if best < 0 {
		best = a.node("/_ts")
	}
	return best
}

// parseTime parses s as a time in Unix seconds: RFC 3339, a date, or (when
// numeric) epoch seconds or milliseconds.
func parseTime(s string, numeric bool) (int64, bool) {
	ms, ok := parseTimeMS(s, numeric)
	return floorDiv(ms, 1000), ok
}

// parseTimeMS is parseTime in Unix milliseconds.
func parseTimeMS(s string, numeric bool) (int64, bool) {
	if len(s) >= 10 && s[4] == '-' && s[7] == '-' {
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04", "2006-01-02 15:04", time.DateOnly} {
			if t, err := time.Parse(layout, s); err == nil {
				return t.UnixMilli(), true
			}
		}
		return 0, false
	}
	if !numeric {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		return 0, false
	case f >= 1e8 && f < 1e11:
		return int64(f * 1000), true
	case f >= 1e11 && f < 1e14:
		return int64(f), true
	}
	return 0, false
}
