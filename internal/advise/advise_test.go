package advise

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partitadb/partita/synthkey"
)

const devicesWorkload = `{
  "queries": [
    {"name": "readings of a device on a day", "filters": ["/deviceId", "/date"], "weight": 10},
    {"name": "latest reading of a device", "filters": ["/deviceId"], "weight": 1}
  ],
  "writes": {"timePath": "/ts", "perSecond": 500}
}`

const fleetWorkload = `{
  "queries": [
    {"name": "readings of a VIN today", "filters": ["/vin", "/date"], "weight": 10},
    {"name": "today's readings", "filters": ["/date"], "weight": 1}
  ]
}`

// analyze reads data (JSON lines) and analyses it with workload (JSON, or
// "" for none).
func analyze(t testing.TB, data []byte, workload string, opts Options) *Report {
	t.Helper()
	a := NewAnalyzer(ReadOptions{})
	if err := a.ReadLines(context.Background(), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if workload != "" {
		w, err := ParseWorkload([]byte(workload))
		if err != nil {
			t.Fatal(err)
		}
		opts.Workload = w
	}
	r, err := a.Analyze(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func find(t *testing.T, r *Report, key string) *Candidate {
	t.Helper()
	for _, c := range r.Candidates {
		if c.Key == key {
			return c
		}
	}
	t.Fatalf("no candidate %s among %d", key, len(r.Candidates))
	return nil
}

func summary(r *Report) string { return strings.Join(r.Summary, "\n") }

// TestKnownAnswers: on generated data sets whose right key is known, the
// recommendation is that key and the explanation names the reasons.
func TestKnownAnswers(t *testing.T) {
	t.Run("orders: unique id beats a hot date and a 3-value status", func(t *testing.T) {
		r := analyze(t, ordersData(30, 600), "", Options{})
		if r.Recommendation != "/id" {
			t.Errorf("recommendation = %s, want /id\n%s", r.Recommendation, summary(r))
		}
		if r.TimePath != "/date" || r.Windows != 30 {
			t.Errorf("time path %q with %d windows, want /date (detected) with 30", r.TimePath, r.Windows)
		}
		date, status, id := find(t, r, "/date"), find(t, r, "/status"), find(t, r, "/id")
		if date.WriteSkew == nil || *date.WriteSkew != 1 {
			t.Errorf("/date write skew = %v, want 1 (every day's writes on one date)", date.WriteSkew)
		}
		if status.Distinct != 3 || status.LargestKey != "shipped" || status.LargestShare < 0.5 {
			t.Errorf("/status: %d values, largest %q with %v; want 3, shipped, ~60%%", status.Distinct, status.LargestKey, status.LargestShare)
		}
		if id.Distinct != 18000 || id.Missing != 0 {
			t.Errorf("/id: %d values, %v missing; want 18000, 0", id.Distinct, id.Missing)
		}
		if !(id.Score > date.Score && id.Score > status.Score) {
			t.Errorf("scores /id %v, /date %v, /status %v", id.Score, date.Score, status.Score)
		}
		for _, want := range []string{"/status has 3 values: 3 logical partitions", "/date puts 100% of each day's writes on one key"} {
			if !strings.Contains(summary(r), want) {
				t.Errorf("summary lacks %q:\n%s", want, summary(r))
			}
		}
		for _, c := range r.Candidates {
			if systemPath(c.Paths[0]) {
				t.Errorf("system property %s is a candidate", c.Key)
			}
		}
	})

	t.Run("device readings: deviceId-date when a device outgrows 20 GB", func(t *testing.T) {
		r := analyze(t, readingsData(1000, 10, 2), devicesWorkload, Options{TotalBytes: 50 << 40})
		if r.Recommendation != "/deviceId-/date" {
			t.Errorf("recommendation = %s, want /deviceId-/date\n%s", r.Recommendation, summary(r))
		}
		best := r.Candidates[0]
		if best.SinglePartition == nil || *best.SinglePartition != 10.0/11 || !slices.Equal(best.FanOut, []string{"latest reading of a device"}) {
			t.Errorf("%s: single-partition %v, fan-out %q; want 10/11, the latest-reading query", best.Key, best.SinglePartition, best.FanOut)
		}
		dev := find(t, r, "/deviceId")
		if dev.CapShare <= 1 || *dev.SinglePartition != 1 {
			t.Errorf("/deviceId: cap share %v (want > 1: 50 GB a device), single-partition %v (want 1)", dev.CapShare, *dev.SinglePartition)
		}
		if !strings.Contains(summary(r), `/deviceId (#`) || !strings.Contains(summary(r), "past the 20 GB limit") {
			t.Errorf("summary does not say /deviceId outgrows the limit:\n%s", summary(r))
		}
		ts := find(t, r, "/ts")
		if ts.WriteSkew == nil || *ts.WriteSkew != 1 {
			t.Errorf("/ts (the time path) write skew = %v, want 1: writes of one moment share its value", ts.WriteSkew)
		}
		if best.HotKeyRU == nil || *best.HotKeyRU <= 0 || *best.HotKeyRU > 100 {
			t.Errorf("%s hottest key RU/s = %v, want a few RU/s", best.Key, best.HotKeyRU)
		}
	})

	t.Run("device readings: deviceId alone while it fits", func(t *testing.T) {
		r := analyze(t, readingsData(1000, 10, 2), devicesWorkload, Options{})
		if r.Recommendation != "/deviceId" {
			t.Errorf("recommendation = %s, want /deviceId\n%s", r.Recommendation, summary(r))
		}
	})

	t.Run("fleet: vin and date together, never the date alone", func(t *testing.T) {
		r := analyze(t, vinData(50, 30, 20), fleetWorkload, Options{})
		if k := r.Recommendation; k != "/vin-/date" && k != "/date.hash(/vin,100)" {
			t.Errorf("recommendation = %s, want /vin-/date or /date.hash(/vin,100)\n%s", k, summary(r))
		}
		hash, random := find(t, r, "/date.hash(/vin,100)"), find(t, r, "/date.random(100)")
		if *hash.SinglePartition != 10.0/11 || *random.SinglePartition != 0 {
			t.Errorf("single-partition share: hash suffix %v (want 10/11), random suffix %v (want 0)", *hash.SinglePartition, *random.SinglePartition)
		}
		if *hash.WriteSkew >= 0.1 || *random.WriteSkew >= 0.1 {
			t.Errorf("suffixes leave write skew %v, %v; want them spread", *hash.WriteSkew, *random.WriteSkew)
		}
		date := find(t, r, "/date")
		if date.Rank <= hash.Rank || !strings.Contains(strings.Join(date.Why, ""), "100% of each day's writes") {
			t.Errorf("/date ranks %d (hash suffix %d), why %q", date.Rank, hash.Rank, date.Why)
		}
	})

	t.Run("hot throughput", func(t *testing.T) {
		// 30 days of one write a second each: a date key takes every write.
		w := `{"writes": {"timePath": "/date", "perSecond": 5000, "ruPerWrite": 6}}`
		r := analyze(t, ordersData(30, 600), w, Options{})
		date := find(t, r, "/date")
		// At 5,000 writes/s of ~100-byte items a date's key also grows past
		// 20 GB in a day: the explanation names that first.
		if date.HotKeyRU == nil || *date.HotKeyRU != 30000 || !strings.Contains(date.HotKeyBasis, "stated 5000 writes/s") ||
			!strings.Contains(strings.Join(date.Why, ""), "past the 20 GB limit") {
			t.Errorf("/date hottest RU/s = %v (%s), why %q; want 30000, past the limit", date.HotKeyRU, date.HotKeyBasis, date.Why)
		}
	})
}

// TestPaths: nested paths, canonical values, and what counts as missing.
func TestPaths(t *testing.T) {
	data := `{"id":"1","a":{"b":17.0,"c":[1]},"t":true,"n":null,"x/y":1}
{"id":"2","a":{"b":1.7e1},"t":false,"n":"v","a2":{}}
{"id":"3","a":{"b":0.5},"t":true,"id":"dup"}
`
	a := NewAnalyzer(ReadOptions{})
	if err := a.ReadLines(t.Context(), strings.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want []string // value of each item, "" for missing
	}{
		{"/id", []string{"1", "2", "3"}},
		{"/a/b", []string{"17", "17", "0.5"}},
		{"/a/c", []string{"", "", ""}},
		{"/t", []string{"true", "false", "true"}},
		{"/n", []string{"null", "v", ""}}, // null is a value, apart from missing
	}
	for _, tt := range tests {
		id := a.node(tt.path)
		if id < 0 {
			t.Errorf("node(%s) = -1", tt.path)
			continue
		}
		var got []string
		for i := range 3 {
			v := a.nodes[id].value(i)
			if v == 0 {
				got = append(got, "")
			} else {
				got = append(got, a.nodes[id].strs[v-1])
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("values of %s = %q, want %q", tt.path, got, tt.want)
		}
	}
	if a.node("/x/y") >= 0 || a.node("/x") >= 0 {
		t.Errorf("a property named with a slash was tracked")
	}
	r, err := a.Analyze(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b := find(t, r, "/a/b"); b.Distinct != 2 {
		t.Errorf("/a/b distinct = %d, want 2 (17.0 and 1.7e1 are one value)", b.Distinct)
	}
	if n := find(t, r, "/n"); n.Missing < 0.33 || n.Missing > 0.34 || n.Distinct != 2 {
		t.Errorf("/n: missing %v, %d distinct; want 1/3 (null is a value of its own), 2 (null and v)", n.Missing, n.Distinct)
	}
}

// TestMalformed: a bad line is named by number; stop ends reading with it,
// skip reports each and goes on.
func TestMalformed(t *testing.T) {
	long := `{"id":"` + strings.Repeat("x", MaxLineBytes) + `"}`
	input := strings.Join([]string{
		`{"id":"1","k":"a"}`,
		``,
		`{"id":"2","k":`,
		`[1,2]`,
		`{"id":"3","k":"b"}`,
		long,
		`{"id":"4","k":"c"}`,
	}, "\n")
	wantLines := []int{3, 4, 6}
	wantErrs := []error{ErrSyntax, ErrNotObject, ErrLineTooLong}

	a := NewAnalyzer(ReadOptions{OnError: Stop})
	err := a.ReadLines(t.Context(), strings.NewReader(input))
	le, ok := errors.AsType[*LineError](err)
	if !ok || le.Line != 3 || !errors.Is(err, ErrSyntax) {
		t.Fatalf("ReadLines(stop) = %v, want a *LineError at line 3 wrapping ErrSyntax", err)
	}
	if a.Items() != 1 {
		t.Errorf("stop: %d items read before the bad line, want 1", a.Items())
	}

	for _, sample := range []int{0, 2} {
		var got []*LineError
		a = NewAnalyzer(ReadOptions{OnError: Skip, Sample: sample, Malformed: func(e *LineError) { got = append(got, e) }})
		if err := a.ReadLines(t.Context(), strings.NewReader(input)); err != nil {
			t.Fatalf("ReadLines(skip, sample %d) = %v", sample, err)
		}
		if len(got) != len(wantLines) {
			t.Fatalf("skip, sample %d: %d lines reported (%v), want %v", sample, len(got), got, wantLines)
		}
		for i, e := range got {
			if e.Line != wantLines[i] || !errors.Is(e, wantErrs[i]) {
				t.Errorf("skip, sample %d: report %d = %v, want line %d wrapping %v", sample, i, e, wantLines[i], wantErrs[i])
			}
		}
		r, err := a.Analyze(t.Context(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		wantItems := 3
		if sample > 0 {
			wantItems = sample
		}
		if r.Items != wantItems || r.InputItems != 3 || r.Malformed != 3 {
			t.Errorf("skip, sample %d: report items %d of %d, malformed %d; want %d of 3 well-formed, 3 malformed", sample, r.Items, r.InputItems, r.Malformed, wantItems)
		}
	}
}

// TestSample: a sampled input keeps Sample items, reproducibly, and
// projects onto the whole input.
func TestSample(t *testing.T) {
	data := ordersData(10, 100)
	run := func() *Report {
		a := NewAnalyzer(ReadOptions{Sample: 200})
		if err := a.ReadLines(t.Context(), bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		r, err := a.Analyze(t.Context(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1, r2 := run(), run()
	if r1.Items != 200 || r1.InputItems != 1000 || r1.ProjectedBytes != int64(len(data))-1000 {
		t.Errorf("sample: %d items of %d, projected %d bytes; want 200 of 1000, %d", r1.Items, r1.InputItems, r1.ProjectedBytes, len(data)-1000)
	}
	if r1.Windows != 10 {
		t.Errorf("sample covers %d of 10 days: not uniform", r1.Windows)
	}
	var b1, b2 bytes.Buffer
	_ = r1.WriteJSON(&b1)
	_ = r2.WriteJSON(&b2)
	if !bytes.Equal(b1.Bytes(), b2.Bytes()) {
		t.Errorf("two runs over the same input differ")
	}
}

// TestReportJSON checks the --json shape tools rely on.
func TestReportJSON(t *testing.T) {
	r := analyze(t, vinData(10, 3, 5), fleetWorkload, Options{TotalItems: 1000000})
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Items          int      `json:"items"`
		Recommendation string   `json:"recommendation"`
		Summary        []string `json:"summary"`
		TimePath       string   `json:"timePath"`
		ProjectedBytes int64    `json:"projectedBytes"`
		Candidates     []struct {
			Rank            int      `json:"rank"`
			Key             string   `json:"key"`
			Strategy        string   `json:"strategy"`
			Paths           []string `json:"paths"`
			Distinct        int      `json:"distinct"`
			LargestShare    float64  `json:"largestShare"`
			LargestBytes    int64    `json:"largestBytes"`
			CapShare        float64  `json:"capShare"`
			WriteSkew       *float64 `json:"writeSkew"`
			SinglePartition *float64 `json:"singlePartition"`
			Score           float64  `json:"score"`
			Build           string   `json:"build"`
		} `json:"candidates"`
	}
	dec := json.NewDecoder(&buf)
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Items != 150 || got.TimePath != "/date" || got.ProjectedBytes <= 0 || len(got.Summary) == 0 || len(got.Candidates) < 5 {
		t.Fatalf("report JSON = %+v", got)
	}
	if got.Recommendation != got.Candidates[0].Key {
		t.Errorf("recommendation %q is not the first candidate %q", got.Recommendation, got.Candidates[0].Key)
	}
	for i, c := range got.Candidates {
		if c.Rank != i+1 || c.Key == "" || len(c.Paths) == 0 || c.Distinct < 1 || c.WriteSkew == nil || c.SinglePartition == nil || c.Build == "" {
			t.Errorf("candidate %d = %+v", i, c)
		}
		if i > 0 && c.Score > got.Candidates[i-1].Score {
			t.Errorf("candidate %d scores %v, above its predecessor's %v", i, c.Score, got.Candidates[i-1].Score)
		}
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table, 3); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "RANK") || !strings.Contains(table.String(), "Recommended: "+r.Recommendation) ||
		!strings.Contains(table.String(), "more candidates") {
		t.Errorf("table:\n%s", table.String())
	}
}

func TestParseWorkload(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{`{}`, true},
		{devicesWorkload, true},
		{`{"queries":[{"filters":["/a"]}],"writes":{"window":"1h"}}`, true},
		{`{"queries":[{"filters":["a"]}]}`, false},
		{`{"queries":[{"filters":["/a/"]}]}`, false},
		{`{"queries":[{"filters":["/a"],"weight":-1}]}`, false},
		{`{"writes":{"window":"daily"}}`, false},
		{`{"writes":{"timePath":"ts"}}`, false},
		{`{"writes":{"perSecond":-5}}`, false},
		{`{"query":[]}`, false}, // unknown field
		{`[`, false},
	}
	for _, tt := range tests {
		w, err := ParseWorkload([]byte(tt.in))
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrWorkload)) {
			t.Errorf("ParseWorkload(%s) = %v, want ok %v (errors wrap ErrWorkload)", tt.in, err, tt.ok)
		}
		if err == nil {
			for _, q := range w.Queries {
				if q.Weight <= 0 || q.Name == "" {
					t.Errorf("ParseWorkload(%s): query %+v lacks its defaults", tt.in, q)
				}
			}
		}
	}
}

func TestParseTime(t *testing.T) {
	tests := []struct {
		in      string
		numeric bool
		want    int64
		ok      bool
	}{
		{"2024-05-01", false, 1714521600, true},
		{"2024-05-01T01:00:00Z", false, 1714525200, true},
		{"2024-05-01T01:00:00.123+01:00", false, 1714521600, true},
		{"2024-05-01 01:00:00", false, 1714525200, true},
		{"2024-13-01", false, 0, false},
		{"1714521600", false, 0, false},
		{"1714521600", true, 1714521600, true},
		{"1714521600500", true, 1714521600, true},
		{"17", true, 0, false},
		{"shipped", true, 0, false},
	}
	for _, tt := range tests {
		got, ok := parseTime(tt.in, tt.numeric)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseTime(%q, %v) = %d, %v, want %d, %v", tt.in, tt.numeric, got, ok, tt.want, tt.ok)
		}
	}
}

// TestHashBucket: the hash suffix uses synthkey's documented bucket
// (synthkey/doc.go test vectors).
func TestHashBucket(t *testing.T) {
	tests := []struct {
		in      string
		h       uint32
		n, want uint32
	}{
		{"", 0x811c9dc5, 100, 62},
		{"1HGCM82633A004352", 0x848a2802, 20, 3},
		{"Zürich", 0xd7007f20, 10, 5},
		{"17", 0x1aeb28b1, 20, 14},
	}
	for _, tt := range tests {
		if h := fnv1a32(tt.in); h != tt.h || h%tt.n+1 != tt.want {
			t.Errorf("fnv1a32(%q) = %#x (bucket %d of %d), want %#x (bucket %d)", tt.in, h, h%tt.n+1, tt.n, tt.h, tt.want)
		}
	}
}

func TestFormat(t *testing.T) {
	bytesTests := []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1536, "1.5 KB"}, {20 << 30, "20 GB"}, {50 << 40, "50 TB"}, {3 << 50, "3072 TB"}}
	for _, tt := range bytesTests {
		if got := formatBytes(tt.n); got != tt.want {
			t.Errorf("formatBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	pctTests := []struct {
		x    float64
		want string
	}{{0, "0%"}, {1, "100%"}, {0.5, "50%"}, {0.05, "5.0%"}, {0.0005, "0.05%"}, {1e-7, "<0.01%"}}
	for _, tt := range pctTests {
		if got := pct(tt.x); got != tt.want {
			t.Errorf("pct(%v) = %q, want %q", tt.x, got, tt.want)
		}
	}
}

func TestAnalyzeEmpty(t *testing.T) {
	a := NewAnalyzer(ReadOptions{})
	if _, err := a.Analyze(t.Context(), Options{}); !errors.Is(err, ErrNoItems) {
		t.Errorf("Analyze(no items) = %v, want ErrNoItems", err)
	}
	if err := a.Add([]byte(`{"a":[1],"b":null}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Analyze(t.Context(), Options{}); !errors.Is(err, ErrNoItems) {
		t.Errorf("Analyze(no scalar) = %v, want ErrNoItems", err)
	}
	a = NewAnalyzer(ReadOptions{})
	_ = a.Add([]byte(`{"k":"same"}`))
	_ = a.Add([]byte(`{"k":"same"}`))
	r, err := a.Analyze(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Candidates[0].Score != 0 || !strings.Contains(summary(r), "No candidate is good") {
		t.Errorf("constant key: score %v, summary %q", r.Candidates[0].Score, summary(r))
	}
}

func TestMaxPaths(t *testing.T) {
	a := NewAnalyzer(ReadOptions{MaxPaths: 3})
	var b strings.Builder
	for i := range 10 {
		fmt.Fprintf(&b, `"p%d":%d,`, i, i)
	}
	if err := a.Add([]byte("{" + b.String() + `"z":1}`)); err != nil {
		t.Fatal(err)
	}
	r, err := a.Analyze(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Paths != 3 || r.PathsIgnored != 8 {
		t.Errorf("MaxPaths 3: %d paths, %d ignored; want 3, 8", r.Paths, r.PathsIgnored)
	}
}

// TestTimeLayoutsAgree: every string and number the advisor reads as a time
// (and so proposes a time-bucketed key on) is one synthkey's TimeBucket
// reads, as the same instant. The advisor once read "2024-06-01 13:45:12"
// and "2024-06-01T13:45", which the key it proposed then refused.
func TestTimeLayoutsAgree(t *testing.T) {
	k, err := synthkey.New(synthkey.Config{Target: "/pk", Time: &synthkey.TimeBucket{Path: "/ts", Unit: synthkey.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v       string
		numeric bool
	}{
		{"2024-06-01T13:45:12.5Z", false}, {"2024-06-01T23:45:12+02:00", false}, {"2024-06-01T13:45:12", false},
		{"2024-06-01 13:45:12.123", false}, {"2024-06-01T13:45", false}, {"2024-06-01 13:45", false}, {"2024-06-01", false},
		{"1717249512", true}, {"1717249512500", true},
	} {
		ms, ok := parseTimeMS(tc.v, tc.numeric)
		if !ok {
			t.Errorf("the advisor does not read %q as a time", tc.v)
			continue
		}
		var v any = tc.v
		if tc.numeric {
			v = json.Number(tc.v)
		}
		got, err := k.Base(map[string]any{"ts": v})
		if want := time.UnixMilli(ms).UTC().Format("2006-01-02T15"); err != nil || got != want {
			t.Errorf("synthkey's hour of %q = %q, %v; the advisor's %q", tc.v, got, err, want)
		}
	}
}

// TestHierarchicalMissingLevel: an item without a lower level of a
// hierarchical key is in its upper levels' logical partition (the
// Undefined component, as Cosmos DB keys it), not in one of every such
// item: 100 tenants whose tenant-level documents (30% of the items) lack
// /userId make 800 logical partitions of at most 3 items. They were all
// counted as missing: one 30% partition.
func TestHierarchicalMissingLevel(t *testing.T) {
	var b bytes.Buffer
	for tn := range 100 {
		for u := range 7 {
			fmt.Fprintf(&b, `{"id":"u%d-%d","tenantId":"t%d","userId":"u%d-%d"}`+"\n", tn, u, tn, tn, u)
		}
		for d := range 3 {
			fmt.Fprintf(&b, `{"id":"d%d-%d","tenantId":"t%d"}`+"\n", tn, d, tn)
		}
	}
	a := NewAnalyzer(ReadOptions{})
	if err := a.ReadLines(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	a.SetCurrentKey([]string{"/tenantId", "/userId"})
	r, err := a.Analyze(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := find(t, r, "[/tenantId, /userId]")
	if c.Distinct != 800 || c.Missing != 0 || c.LargestShare != 0.003 || !strings.Contains(c.LargestKey, "{}") {
		t.Errorf("[/tenantId, /userId]: %d distinct, %.3f missing, largest %.3f (%s); want 800, 0, 0.003 (a tenant's {} partition)",
			c.Distinct, c.Missing, c.LargestShare, c.LargestKey)
	}
}

// TestArrayInputSizes: the same items read as JSON lines and as an
// indented JSON array (as Data Explorer exports) measure the same: an
// item's size is taken without the input's white space. The indented
// array measured about 1.5 times as much, and projected partitions so.
func TestArrayInputSizes(t *testing.T) {
	var lines bytes.Buffer
	var items []map[string]any
	for i := range 200 {
		it := map[string]any{"id": fmt.Sprint("i", i), "deviceId": fmt.Sprint("d", i%20), "reading": map[string]any{"t": i, "ok": true}}
		items = append(items, it)
		b, _ := json.Marshal(it)
		lines.Write(append(b, '\n'))
	}
	indented, err := json.MarshalIndent(items, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	var got [2]*Candidate
	for i, in := range [][]byte{lines.Bytes(), indented} {
		a := NewAnalyzer(ReadOptions{})
		if err := a.ReadLines(context.Background(), bytes.NewReader(in)); err != nil {
			t.Fatal(err)
		}
		r, err := a.Analyze(context.Background(), Options{TotalBytes: 1 << 40})
		if err != nil {
			t.Fatal(err)
		}
		got[i] = find(t, r, "/deviceId")
	}
	if got[0].LargestBytes != got[1].LargestBytes {
		t.Errorf("/deviceId's largest partition: %d bytes from JSON lines, %d from an indented array", got[0].LargestBytes, got[1].LargestBytes)
	}
}

// TestUnsafeNumbersNotSynthesized: a path holding integers past 2^53−1 is
// in no concatenated or hashed key (synthkey refuses them: a bug hunt
// found such a key recommended, failing on every item), and the report
// says why.
func TestUnsafeNumbersNotSynthesized(t *testing.T) {
	var data bytes.Buffer
	for i := range 300 {
		fmt.Fprintf(&data, `{"id":"%d","accountId":%d,"date":"2024-06-%02d","n":%d}`+"\n", i, int64(1<<53)+int64(i%60)*4096, 1+i%28, i%40)
	}
	w := `{"queries":[{"name":"by account and day","filters":["/accountId","/date"]}],"writes":{"perSecond":100}}`
	r := analyze(t, data.Bytes(), w, Options{})
	for _, c := range r.Candidates {
		if c.Strategy != Single && c.Strategy != Hierarchical && (slices.Contains(c.Paths, "/accountId") || slices.Contains(c.HashPaths, "/accountId")) {
			t.Errorf("candidate %s (%s) of /accountId, whose numbers synthkey refuses", c.Key, c.Strategy)
		}
	}
	if c := find(t, r, "/accountId"); strings.Contains(c.Build, "synthkey") {
		t.Errorf("/accountId alone is built with %q: synthkey refuses its numbers", c.Build)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "/accountId holds numbers past") {
		t.Errorf("warnings %q: want one naming /accountId", r.Warnings)
	}
	// The item itself: synthkey does refuse it.
	item := map[string]any{"accountId": json.Number("9007199254740992"), "date": "2024-06-01"}
	k, err := synthkey.Concat("/pk", "/accountId", "/date")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Base(item); !errors.Is(err, synthkey.ErrNumberRange) {
		t.Errorf("synthkey on an unsafe number: %v, want ErrNumberRange", err)
	}
}

// TestDigitStringsAreNoTimes: a string of digits is no time, even at the
// workload's time path (synthkey's buckets read none: a bug hunt found
// "1717200000" bucketed by the advisor and every item refused by synthkey).
func TestDigitStringsAreNoTimes(t *testing.T) {
	var data bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&data, `{"id":"%d","device":"d%d","ts":"%d"}`+"\n", i, i%10, 1717200000+i*60)
	}
	r := analyze(t, data.Bytes(), `{"writes":{"perSecond":100,"timePath":"/ts"}}`, Options{})
	for _, c := range r.Candidates {
		if c.TimeBucket != "" {
			t.Errorf("candidate %s buckets /ts, a string of digits synthkey reads as no time", c.Key)
		}
	}
}

// TestWindowAndTotalBounds: a window shorter than the times' millisecond is
// one of a millisecond, and the report says so (it said "1ns"); a total
// smaller than the sample projects onto it with a warning saying so.
func TestWindowAndTotalBounds(t *testing.T) {
	var data bytes.Buffer
	for i := range 50 {
		fmt.Fprintf(&data, `{"id":"%d","d":"d%d","ts":"2024-06-01T10:%02d:00Z"}`+"\n", i, i%5, i%60)
	}
	r := analyze(t, data.Bytes(), "", Options{Window: time.Nanosecond, TimePath: "/ts", TotalItems: 10})
	if r.Window != "1ms" {
		t.Errorf("window %q, want 1ms", r.Window)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "fewer than the 50 read") {
		t.Errorf("warnings %q: want one saying the total is below the sample", r.Warnings)
	}
}
