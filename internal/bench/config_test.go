package bench

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseMix(t *testing.T) {
	tests := []struct {
		in   string
		want Mix
		ok   bool
	}{
		{"80,10,10", Mix{80, 10, 10}, true},
		{" 0, 100 ,0", Mix{0, 100, 0}, true},
		{"100,0,0", Mix{100, 0, 0}, true},
		{"50,50", Mix{}, false},
		{"50,50,1", Mix{}, false},
		{"-10,100,10", Mix{}, false},
		{"a,b,c", Mix{}, false},
		{"", Mix{}, false},
	}
	for _, tt := range tests {
		got, err := ParseMix(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseMix(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("ParseMix(%q) error %v does not wrap ErrInvalidConfig", tt.in, err)
		}
		if err == nil {
			if back, err := ParseMix(got.String()); err != nil || back != got {
				t.Errorf("ParseMix(%q) = %v, %v; want %v", got.String(), back, err, got)
			}
		}
	}
}

// FuzzParseMix: ParseMix never panics, and what it accepts sums to 100 and
// prints back to the same mix.
func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"80,10,10", "0,0,100", "1,2", "x", "99,1,0,0", "+50,50,0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMix(s)
		if err != nil {
			return
		}
		if m.Write+m.Read+m.Query != 100 || m.Write < 0 || m.Read < 0 || m.Query < 0 {
			t.Fatalf("ParseMix(%q) = %v", s, m)
		}
		if back, err := ParseMix(m.String()); err != nil || back != m {
			t.Fatalf("ParseMix(%q) = %v, %v; want %v", m.String(), back, err, m)
		}
	})
}

func TestWithDefaults(t *testing.T) {
	got, err := Config{Endpoint: "https://x/", Key: "k", Workload: VehiclesHash, Reset: true}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Endpoint: "https://x/", Key: "k", Workload: VehiclesHash, Reset: true, Create: true,
		Database: "bench", Container: VehiclesHash, Throughput: 24000, Mix: &Mix{80, 10, 10}, FanOut: FanOutCross,
		Duration: 30 * time.Second, Concurrency: 16, Records: 1000, Keys: KeysZipfian, ItemBytes: 300, Buckets: 400, Vehicles: 10000, Seed: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("withDefaults (-want +got):\n%s", diff)
	}
	if got, _ := (Config{Endpoint: "e", Key: "k", Workload: YCSBB}).withDefaults(); got.Container != "ycsb" || *got.Mix != (Mix{5, 95, 0}) || got.ItemBytes != 1000 {
		t.Errorf("withDefaults(ycsb-b) = container %q, mix %v, item bytes %d; want ycsb, 5,95,0, 1000", got.Container, *got.Mix, got.ItemBytes)
	}
	if got, _ := (Config{Endpoint: "e", Key: "k", Workload: QueryFilter}).withDefaults(); got.Container != "rows" || *got.Mix != (Mix{0, 0, 100}) || got.Records != 20000 {
		t.Errorf("withDefaults(query-filter) = container %q, mix %v, records %d; want rows, 0,0,100, 20000", got.Container, *got.Mix, got.Records)
	}

	bad := []Config{
		{Key: "k", Workload: YCSBA},
		{Endpoint: "e", Workload: YCSBA},
		{Endpoint: "e", Key: "k", Workload: "vehicles-a"},
		{Endpoint: "e", Key: "k", Workload: YCSBA, Mix: &Mix{50, 50, 50}},
		{Endpoint: "e", Key: "k", Workload: YCSBA, Throughput: 100},
		{Endpoint: "e", Key: "k", Workload: YCSBA, Concurrency: -1},
		{Endpoint: "e", Key: "k", Workload: YCSBA, Duration: -time.Second},
		{Endpoint: "e", Key: "k", Workload: YCSBA, Warmup: -time.Second},
		{Endpoint: "e", Key: "k", Workload: YCSBA, Ops: -1},
		{Endpoint: "e", Key: "k", Workload: YCSBA, Rate: -1},
		{Endpoint: "e", Key: "k", Workload: YCSBA, Retries: -1},
		{Endpoint: "e", Key: "k", Workload: YCSBA, Partitions: -1},
		{Endpoint: "e", Key: "k", Workload: VehiclesRandom, FanOut: "sometimes"},
		{Endpoint: "e", Key: "k", Workload: YCSBA, IndexingPolicy: `{"excludePaths":[{"path":"/data/?"}]}`}, // misspelt
		{Endpoint: "e", Key: "k", Workload: YCSBA, IndexingPolicy: `{`},
	}
	for _, c := range bad {
		if _, err := c.withDefaults(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("withDefaults(%+v) = %v, want ErrInvalidConfig", c, err)
		}
	}
}
