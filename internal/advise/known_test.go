package advise

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// reportJSON round-trips r through --json's encoding, so that the checks
// below hold for the JSON output too.
func reportJSON(t *testing.T, r *Report) map[string]any {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// table renders r as the table output.
func table(t *testing.T, r *Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteTable(&buf, 10); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestKnownAnswersIssue17: generated data sets with known right keys
// (issue #17), checked in the table and the JSON output, with the reason
// in the explanation.
func TestKnownAnswersIssue17(t *testing.T) {
	t.Run("whale tenants: a hierarchical key tenant then user", func(t *testing.T) {
		const w = `{"queries": [
		  {"name": "a user's items", "filters": ["/tenantId", "/userId"], "weight": 5},
		  {"name": "a tenant's items", "filters": ["/tenantId"], "weight": 5}]}`
		// 3 whales hold 60% of 2 TB: about 400 GB each.
		r := analyze(t, tenantsData(60, 3, 0.6, 20000), w, Options{TotalBytes: 2 << 40})
		if r.Recommendation != "[/tenantId, /userId]" {
			t.Fatalf("recommendation = %s, want [/tenantId, /userId]\n%s", r.Recommendation, table(t, r))
		}
		best := r.Candidates[0]
		if best.Strategy != Hierarchical || best.CapShare > 0.5 || best.LargestPrefixBytes <= 20<<30 || best.PrefixPartitions < 2 ||
			*best.SinglePartition != 0.5 || *best.Targeted != 0.5 {
			t.Errorf("best = %+v; want a leaf under the limit, a whale prefix past it over several partitions, half single, half targeted", best)
		}
		ten, cat := find(t, r, "/tenantId"), find(t, r, "/tenantId-/userId")
		if ten.CapShare <= 1 || !slices.Equal(cat.FanOut, []string{"a tenant's items"}) || cat.Score >= best.Score {
			t.Errorf("/tenantId cap %v (want > 1); concat fan-out %q, score %v vs %v", ten.CapShare, cat.FanOut, cat.Score, best.Score)
		}
		sum := summary(r)
		for _, want := range []string{"targeted by a prefix", "fine as a prefix", "PartitionKeyKindMultiHash",
			"/tenantId (#", "past the 20 GB limit", "a tenant's items"} {
			if !strings.Contains(sum, want) {
				t.Errorf("summary lacks %q:\n%s", want, sum)
			}
		}
		m := reportJSON(t, r)
		c0 := m["candidates"].([]any)[0].(map[string]any)
		if m["recommendation"] != "[/tenantId, /userId]" || c0["strategy"] != "hierarchical" || c0["targeted"] != 0.5 ||
			!slices.Equal(anyStrings(c0["paths"]), []string{"/tenantId", "/userId"}) {
			t.Errorf("JSON candidate = %v", c0)
		}
		if tb := table(t, r); !strings.Contains(tb, "(+50% by prefix)") || !slices.Contains(strings.Fields(tb), "hierarchical") ||
			!strings.Contains(tb, "Recommended: [/tenantId, /userId] (hierarchical key of 2 levels") {
			t.Errorf("table:\n%s", tb)
		}
		if u := find(t, r, "/userId"); !strings.Contains(u.Why[0], `"a tenant's items" would fan out to every partition, where [/tenantId, /userId] routes them by its prefix`) {
			t.Errorf("/userId why = %q", u.Why)
		}
		for _, c := range r.Candidates {
			if c.Strategy == Hierarchical && c.Paths[0] != "/tenantId" {
				t.Errorf("hierarchical candidate %s: its prefix is not queried", c.Key)
			}
		}
	})

	t.Run("timestamp-only telemetry: device and a day bucket", func(t *testing.T) {
		const w = `{"queries": [{"name": "a device's readings of a day", "filters": ["/deviceId", "day(/ts)"], "weight": 10},
		  {"name": "a device's readings of an hour", "filters": ["/deviceId", "/ts"], "weight": 5}],
		  "writes": {"timePath": "/ts", "perSecond": 100}}`
		// 20 devices over 60 days, 1 TB: 50 GB a device, 25 GB a device-month.
		r := analyze(t, telemetryData(20, 60, 20, false), w, Options{TotalBytes: 1 << 40})
		best := r.Candidates[0]
		if best.Key != "/deviceId-day(/ts)" || best.TimeBucket != "day" || best.CapShare > 0.5 {
			t.Fatalf("recommendation = %s (bucket %q, cap share %v), want /deviceId-day(/ts)\n%s", best.Key, best.TimeBucket, best.CapShare, table(t, r))
		}
		if !strings.Contains(best.Build, "synthkey.TimeBucket{Path: \"/ts\", Unit: synthkey.Day}") {
			t.Errorf("build = %s", best.Build)
		}
		if dev := find(t, r, "/deviceId"); dev.CapShare <= 1 {
			t.Errorf("/deviceId cap share %v, want > 1", dev.CapShare)
		}
		if !strings.Contains(summary(r), "a day bucket is the coarsest") || strings.Contains(summary(r), "may not exist") {
			t.Errorf("summary:\n%s", summary(r))
		}
		for _, c := range r.Candidates {
			for _, p := range c.Paths {
				if p == "/temp" || p == "/hum" || p == "/fw" {
					t.Errorf("measurement or payload %s in candidate %s", p, c.Key)
				}
			}
		}
		if len(r.NotKeys) != 3 {
			t.Errorf("not keys = %q, want /temp, /hum, /fw", r.NotKeys)
		}
		if m := reportJSON(t, r); m["candidates"].([]any)[0].(map[string]any)["timeBucket"] != "day" {
			t.Errorf("JSON timeBucket missing")
		}

		// At 20,000 writes/s a device (1,000 writes/s, 5,500 RU/s: within
		// one logical partition's 10,000) fills a day past half the limit:
		// hours.
		hi := strings.Replace(w, `"perSecond": 100`, `"perSecond": 20000`, 1)
		hi = strings.ReplaceAll(hi, `"day(/ts)"`, `"hour(/ts)"`)
		r = analyze(t, telemetryData(20, 60, 20, false), hi, Options{TotalBytes: 1 << 40})
		if best := r.Candidates[0]; best.Key != "/deviceId-hour(/ts)" {
			t.Errorf("at 20,000 writes/s: recommendation = %s, want /deviceId-hour(/ts)\n%s", best.Key, table(t, r))
		}
	})

	t.Run("unique ids at 200k writes/s are not penalised", func(t *testing.T) {
		const w = `{"queries": [{"name": "an order", "filters": ["/id"]}],
		  "writes": {"timePath": "/date", "perSecond": 200000, "ruPerWrite": 6}}`
		r := analyze(t, ordersData(30, 600), w, Options{})
		id := find(t, r, "/id")
		if r.Recommendation != "/id" || id.HotKeyRU == nil || *id.HotKeyRU > 100 || *id.HotKeyRUHigh > PartitionMaxRU {
			t.Fatalf("recommendation %s; /id hottest key %v RU/s (≤ %v); want /id at a few RU/s\n%s", r.Recommendation, id.HotKeyRU, id.HotKeyRUHigh, table(t, r))
		}
		if !strings.Contains(id.HotKeyBasis, "even share") || !strings.Contains(summary(r), "stated 200000 writes/s") {
			t.Errorf("basis %q; summary:\n%s", id.HotKeyBasis, summary(r))
		}
		if date := find(t, r, "/date"); *date.HotKeyRU != 1.2e6 {
			t.Errorf("/date hottest key %v RU/s, want all 200,000 writes/s × 6 RU", *date.HotKeyRU)
		}
	})

	t.Run("millisecond timestamps are not one key per day", func(t *testing.T) {
		r := analyze(t, telemetryData(20, 5, 200, true), `{"writes": {"timePath": "/ts", "perSecond": 2000}}`, Options{})
		ts := find(t, r, "/ts")
		if r.TimeResolution != "1ms" || ts.WriteSkew == nil || *ts.WriteSkew > 0.05 || *ts.HotKeyRU > 100 {
			t.Errorf("resolution %s; /ts write skew %v, hottest %v RU/s; want ms, small, small", r.TimeResolution, ts.WriteSkew, *ts.HotKeyRU)
		}
		if strings.Contains(summary(r), "/ts puts") {
			t.Errorf("summary says /ts puts writes on one key:\n%s", summary(r))
		}
		// At seconds, all writes of a second do share one key.
		r = analyze(t, telemetryData(20, 5, 200, false), `{"writes": {"timePath": "/ts", "perSecond": 2000}}`, Options{})
		if ts := find(t, r, "/ts"); r.TimeResolution != "1s" || *ts.WriteSkew != 1 || !strings.Contains(strings.Join(ts.Why, ""), "each second's writes") {
			t.Errorf("seconds: resolution %s, /ts skew %v, why %q", r.TimeResolution, *ts.WriteSkew, ts.Why)
		}
	})

	t.Run("IoT at 9,000 writes/s: device and date stay first", func(t *testing.T) {
		const w = `{"queries": [
		  {"name": "a device's readings of a day", "filters": ["/deviceId", "/date"], "weight": 10},
		  {"name": "a day's readings", "filters": ["/date"], "weight": 1}],
		  "writes": {"timePath": "/ts", "window": "1h", "perSecond": 9000}}`
		// 20 devices, 30 days; 5 sampled readings a device a day, so a
		// 1-hour window holds only about 4 sampled writes.
		// 9,000 writes/s of ~100 bytes for 30 days: about 2.3 TB.
		r := analyze(t, iotData(20, 30, 5), w, Options{TotalBytes: 2300 << 30})
		best := r.Candidates[0]
		if best.Key != "/deviceId-/date" {
			t.Fatalf("recommendation = %s, want /deviceId-/date\n%s", best.Key, table(t, r))
		}
		// Really 9,000/20 = 450 writes/s a device: about 2,500 RU/s.
		if *best.HotKeyRU < 1500 || *best.HotKeyRU > 4000 || *best.HotKeyRULow > 2475 || *best.HotKeyRUHigh < 2475 {
			t.Errorf("%s hottest key %v RU/s (%v-%v), want about 2,500 within its interval", best.Key, *best.HotKeyRU, *best.HotKeyRULow, *best.HotKeyRUHigh)
		}
		if id := find(t, r, "/id"); *id.HotKeyRU > 100 {
			t.Errorf("/id (written once each) hottest key %v RU/s", *id.HotKeyRU)
		}
		if m := reportJSON(t, r); m["recommendation"] != "/deviceId-/date" || m["writesPerSecond"] != 9000.0 {
			t.Errorf("JSON = %v, %v", m["recommendation"], m["writesPerSecond"])
		}
	})
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestHygiene: Cosmos DB's key typing, JSON arrays, escaped paths.
func TestHygiene(t *testing.T) {
	t.Run("17 and \"17\" are two keys, one synthetic value", func(t *testing.T) {
		a := NewAnalyzer(ReadOptions{})
		for _, doc := range []string{`{"k":17,"d":"x"}`, `{"k":"17","d":"x"}`, `{"k":17.0,"d":"y"}`, `{"k":true,"d":"y"}`, `{"k":"true","d":"x"}`} {
			if err := a.Add([]byte(doc)); err != nil {
				t.Fatal(err)
			}
		}
		r, err := a.Analyze(t.Context(), Options{PairPaths: 2})
		if err != nil {
			t.Fatal(err)
		}
		if k := find(t, r, "/k"); k.Distinct != 4 {
			t.Errorf("/k distinct = %d, want 4 (17, \"17\", true, \"true\")", k.Distinct)
		}
		if c := find(t, r, "/k-/d"); c.Distinct != 4 {
			t.Errorf("/k-/d distinct = %d, want 4: the synthetic strings 17-x, 17-y, true-y, true-x", c.Distinct)
		}
	})

	t.Run("a JSON array is read", func(t *testing.T) {
		in := "\uFEFF [\n  {\"id\": \"1\", \"k\": \"a\"},\n  {\"id\": \"2\",\n   \"k\": \"b\"}, [1], {\"id\": \"3\", \"k\": \"a\"}\n]\n"
		var bad []*LineError
		a := NewAnalyzer(ReadOptions{OnError: Skip, Malformed: func(e *LineError) { bad = append(bad, e) }})
		if err := a.ReadLines(t.Context(), strings.NewReader(in)); err != nil {
			t.Fatal(err)
		}
		if a.Items() != 3 || len(bad) != 1 || bad[0].Item != 3 || !errors.Is(bad[0], ErrNotObject) {
			t.Errorf("array: %d items, malformed %v; want 3 and item 3 not an object", a.Items(), bad)
		}
		a = NewAnalyzer(ReadOptions{Sample: 2})
		if err := a.ReadLines(t.Context(), strings.NewReader(`[{"k":1},{"k":2},{"k":3}]`)); err != nil || a.Items() != 2 {
			t.Errorf("sampled array: %d items, %v", a.Items(), err)
		}
		a = NewAnalyzer(ReadOptions{})
		err := a.ReadLines(t.Context(), strings.NewReader(`[{"k":1}, {"k":`))
		if le, ok := errors.AsType[*LineError](err); !ok || le.Item != 2 || !errors.Is(err, ErrSyntax) {
			t.Errorf("truncated array: %v, want item 2 wrapping ErrSyntax", err)
		}
	})

	t.Run("no time bucket of /_ts, which the server sets", func(t *testing.T) {
		var b strings.Builder
		for i := range 200 {
			fmt.Fprintf(&b, `{"id":"x%d","dev":"d%d","_ts":%d}`+"\n", i, i%7, 1717200000+i*37)
		}
		r := analyze(t, []byte(b.String()), "", Options{})
		if r.TimePath != "/_ts" {
			t.Fatalf("time path %q, want /_ts", r.TimePath)
		}
		for _, c := range r.Candidates {
			if c.TimeBucket != "" {
				t.Errorf("candidate %s buckets /_ts", c.Key)
			}
		}
	})

	t.Run("a/b is /a~1b, apart from a.b and /a/b", func(t *testing.T) {
		a := NewAnalyzer(ReadOptions{})
		for _, doc := range []string{`{"a/b":1,"a.b":2,"a":{"b":3},"t~x":4}`, `{"a/b":5,"a.b":6,"a":{"b":7},"t~x":8}`} {
			if err := a.Add([]byte(doc)); err != nil {
				t.Fatal(err)
			}
		}
		for p, want := range map[string]string{"/a~1b": "1", "/a.b": "2", "/a/b": "3", "/t~0x": "4"} {
			id := a.node(p)
			if id < 0 || a.nodes[id].strs[0] != want {
				t.Errorf("node(%s) = %d, want the value %s", p, id, want)
			}
		}
	})
}
