package bench

import (
	"math"
	"testing"
	"time"
)

func testRunner(t *testing.T, workload string, mix *Mix) *runner {
	t.Helper()
	cfg, err := Config{Endpoint: "e", Key: "k", Workload: workload, Mix: mix, Records: 1000, Seed: 42}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return &runner{cfg: cfg, partitions: 4}
}

// TestMix: each workload's operations follow its mix within 1.5 points
// over 20,000 draws, and a seed fixes the sequence.
func TestMix(t *testing.T) {
	const n = 20000
	tests := []struct {
		workload string
		mix      *Mix
		want     [numKinds]float64 // percent
	}{
		{YCSBA, nil, [numKinds]float64{KindWrite: 50, KindRead: 50}},
		{YCSBB, nil, [numKinds]float64{KindWrite: 5, KindRead: 95}},
		{YCSBC, nil, [numKinds]float64{KindRead: 100}},
		{Query, nil, [numKinds]float64{KindQuery: 50, KindQueryCross: 50}},
		{VehiclesDate, nil, [numKinds]float64{KindWrite: 80, KindRead: 10, KindQuery: 10}},
		{VehiclesHash, &Mix{20, 30, 50}, [numKinds]float64{KindWrite: 20, KindRead: 30, KindQuery: 50}},
	}
	for _, tt := range tests {
		r := testRunner(t, tt.workload, tt.mix)
		w1, w2, other := newWorker(r, 3, time.Time{}), newWorker(r, 3, time.Time{}), newWorker(r, 4, time.Time{})
		var counts [numKinds]int
		same, differ := true, false
		for range n {
			o := w1.next()
			counts[o.kind]++
			if o != w2.next() {
				same = false
			}
			if o != other.next() {
				differ = true
			}
			if o.rec < 0 || (isVehicles(tt.workload) && o.rec >= r.cfg.Vehicles) || (!isVehicles(tt.workload) && o.rec >= r.cfg.Records) {
				t.Fatalf("%s: next() = %+v, record out of range", tt.workload, o)
			}
		}
		for k := range numKinds {
			got := 100 * float64(counts[k]) / n
			if math.Abs(got-tt.want[k]) > 1.5 {
				t.Errorf("%s: %s share = %.1f%%, want %.0f%%", tt.workload, k, got, tt.want[k])
			}
		}
		if !same || !differ {
			t.Errorf("%s: same seed and worker gave the same ops: %v (want true); another worker differed: %v (want true)", tt.workload, same, differ)
		}
	}
}

// TestYCSBSkew: record choice is skewed (zipfian): the hottest 1% of
// records draw far more than 1% of operations.
func TestYCSBSkew(t *testing.T) {
	w := newWorker(testRunner(t, YCSBA, nil), 0, time.Time{})
	hot := 0
	const n = 10000
	for range n {
		if w.next().rec < 10 {
			hot++
		}
	}
	if hot < n/5 {
		t.Errorf("ops on the first 10 of 1000 records = %d of %d, want a zipfian skew (> 20%%)", hot, n)
	}
}

func TestVehicleKeys(t *testing.T) {
	tests := []struct {
		workload string
		vin      int
		want     string
	}{
		{VehiclesDate, 7, "2024-05-01"},
		{VehiclesHash, 7, "2024-05-01.298"}, // FNV-1a("PART0000000000007") mod 400 + 1, computed independently
		{VehiclesHash, 8, "2024-05-01.69"},
	}
	for _, tt := range tests {
		k, err := newKey(tt.workload, 400)
		if err != nil {
			t.Fatal(err)
		}
		got, err := k.PointKey(map[string]any{"vin": vin(tt.vin), "date": "2024-05-01"})
		if err != nil || got != tt.want {
			t.Errorf("%s PointKey(vin %d) = %q, %v; want %q", tt.workload, tt.vin, got, err, tt.want)
		}
	}
	k, err := newKey(VehiclesRandom, 400)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := k.FanOutKeys(map[string]any{"date": "2024-05-01"})
	if err != nil || len(keys) != 400 || keys[0] != "2024-05-01.1" {
		t.Errorf("random FanOutKeys = %d keys starting %q, %v; want 400 from 2024-05-01.1", len(keys), keys[0], err)
	}
	if got := vin(12); len(got) != 17 {
		t.Errorf("vin(12) = %q, want 17 characters", got)
	}
}

func BenchmarkNext(b *testing.B) {
	cfg, _ := Config{Endpoint: "e", Key: "k", Workload: YCSBA}.withDefaults()
	w := newWorker(&runner{cfg: cfg}, 0, time.Time{})
	b.ReportAllocs()
	for b.Loop() {
		w.next()
	}
}
