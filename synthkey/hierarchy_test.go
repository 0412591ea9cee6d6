package synthkey_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/synthkey"
)

func TestNewHierarchyErrors(t *testing.T) {
	k, _ := synthkey.Concat("/pk", "/a")
	onA, _ := synthkey.Concat("/a", "/b")
	tests := []struct {
		levels []synthkey.Level
		want   error
	}{
		{[]synthkey.Level{{Path: "/a"}}, synthkey.ErrInvalidConfig},
		{[]synthkey.Level{{Path: "/a"}, {Path: "/b"}, {Path: "/c"}, {Path: "/d"}}, synthkey.ErrInvalidConfig},
		{[]synthkey.Level{{Path: "/a"}, {}}, synthkey.ErrInvalidConfig},
		{[]synthkey.Level{{Path: "/a", Key: k}, {Path: "/b"}}, synthkey.ErrInvalidConfig},
		{[]synthkey.Level{{Path: "/a"}, {Path: "/a/b"}}, synthkey.ErrInvalidPath},
		{[]synthkey.Level{{Path: "a"}, {Path: "/b"}}, synthkey.ErrInvalidPath},
		{[]synthkey.Level{{Key: k}, {Key: onA}}, synthkey.ErrInvalidPath}, // onA writes /a, k's input
		{[]synthkey.Level{{Path: "/t"}, {Key: k}}, nil},
	}
	for _, tt := range tests {
		_, err := synthkey.NewHierarchy(tt.levels...)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("NewHierarchy(%+v) = %v, want %v", tt.levels, err, tt.want)
		}
	}
}

func TestHierarchyValues(t *testing.T) {
	day, _ := synthkey.New(synthkey.Config{Target: "/dayKey", Paths: []string{"/deviceId"},
		Time: &synthkey.TimeBucket{Path: "/ts", Unit: synthkey.Day}})
	h, err := synthkey.NewHierarchy(synthkey.Level{Path: "/tenant"}, synthkey.Level{Key: day})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Definition(); got.Kind != azcosmos.PartitionKeyKindMultiHash || got.Version != 2 || !reflect.DeepEqual(got.Paths, []string{"/tenant", "/dayKey"}) {
		t.Errorf("Definition = %+v", got)
	}
	// Plain levels keep their JSON type: 17 and "17" are different keys.
	for _, tt := range []struct {
		tenant any
		want   []any
	}{
		{"17", []any{"17", "dev1-2024-06-01"}},
		{17, []any{17.0, "dev1-2024-06-01"}},
		{json.Number("17.0"), []any{17.0, "dev1-2024-06-01"}},
		{true, []any{true, "dev1-2024-06-01"}},
	} {
		got, err := h.Values(map[string]any{"tenant": tt.tenant, "deviceId": "dev1", "ts": "2024-06-01T10:00:00Z"}, 2)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Values(tenant %#v) = %#v, %v; want %#v", tt.tenant, got, err, tt.want)
		}
	}
	if got, err := h.Values(map[string]any{"tenant": "acme"}, 1); err != nil || !reflect.DeepEqual(got, []any{"acme"}) {
		t.Errorf("prefix Values = %v, %v", got, err)
	}
	if _, err := h.Values(map[string]any{"tenant": "acme"}, 3); !errors.Is(err, synthkey.ErrInvalidConfig) {
		t.Errorf("Values(3 of 2 levels) = %v", err)
	}
	if _, err := h.Values(map[string]any{"tenant": nil}, 1); !errors.Is(err, synthkey.ErrNull) {
		t.Errorf("Values(null tenant) = %v, want ErrNull", err)
	}

	// Apply sets the synthetic level, and changes nothing on error.
	item := map[string]any{"tenant": "acme", "deviceId": "dev1", "ts": 1717236000.0}
	if _, err := h.Apply(item); err != nil || item["dayKey"] != "dev1-2024-06-01" {
		t.Errorf("Apply = %v, item %v", err, item)
	}
	bad := map[string]any{"tenant": "acme", "deviceId": "dev1", "ts": "yesterday"}
	if _, err := h.Apply(bad); !errors.Is(err, synthkey.ErrNotTime) || len(bad) != 3 {
		t.Errorf("Apply(bad time) = %v, item %v", err, bad)
	}
}

func TestTimeBucket(t *testing.T) {
	at := time.Date(2024, 6, 1, 13, 45, 12, 500e6, time.UTC)
	tests := []struct {
		v    any
		unit synthkey.TimeUnit
		want string
		err  error
	}{
		{"2024-06-01T13:45:12.5Z", synthkey.Hour, "2024-06-01T13", nil},
		{"2024-06-01T23:30:00-02:00", synthkey.Day, "2024-06-02", nil}, // in UTC
		{"2024-06-01T13:45:12", synthkey.Day, "2024-06-01", nil},
		{"2024-06-01", synthkey.Month, "2024-06", nil},
		{"2024-06-01 13:45:12", synthkey.Hour, "2024-06-01T13", nil}, // as partita advise reads it
		{"2024-06-01T13:45", synthkey.Hour, "2024-06-01T13", nil},
		{uint16(60000), synthkey.Day, "1970-01-01", nil},
		{1717249512.0, synthkey.Hour, "2024-06-01T13", nil},                 // epoch seconds
		{json.Number("1717249512500"), synthkey.Hour, "2024-06-01T13", nil}, // epoch ms
		{int64(1717249512), synthkey.Day, "2024-06-01", nil},
		{at, synthkey.Month, "2024-06", nil},
		{"June 1st", synthkey.Day, "", synthkey.ErrNotTime},
		{true, synthkey.Day, "", synthkey.ErrNotTime},
		{nil, synthkey.Day, "", synthkey.ErrNull},
	}
	for _, tt := range tests {
		k, err := synthkey.New(synthkey.Config{Target: "/pk", Time: &synthkey.TimeBucket{Path: "/ts", Unit: tt.unit}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := k.Base(map[string]any{"ts": tt.v})
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("%v bucket of %#v = %q, %v; want %q, %v", tt.unit, tt.v, got, err, tt.want, tt.err)
		}
	}
	if _, err := synthkey.New(synthkey.Config{Target: "/pk", Time: &synthkey.TimeBucket{Path: "/ts"}}); !errors.Is(err, synthkey.ErrInvalidConfig) {
		t.Errorf("New(no unit) = %v, want ErrInvalidConfig", err)
	}
	if _, err := synthkey.New(synthkey.Config{Target: "/pk", Time: &synthkey.TimeBucket{Path: "/pk", Unit: synthkey.Day}}); !errors.Is(err, synthkey.ErrInvalidPath) {
		t.Errorf("New(time at the target) = %v, want ErrInvalidPath", err)
	}
}

// TestEscapedPaths: a property named "a/b" is the path "/a~1b", as in JSON
// Pointer (and partita advise).
func TestEscapedPaths(t *testing.T) {
	k, err := synthkey.Concat("/p~1k", "/a~1b", "/t~0x", "/a/b")
	if err != nil {
		t.Fatal(err)
	}
	item := map[string]any{"a/b": "slash", "t~x": "tilde", "a": map[string]any{"b": "nested"}}
	key, err := k.Apply(item)
	if key != "slash-tilde-nested" || err != nil || item["p/k"] != key {
		t.Errorf("Apply = %q, %v; item %v", key, err, item)
	}
	for _, p := range []string{"/a~2b", "/a~", "/~"} {
		if _, err := synthkey.Concat("/pk", p); !errors.Is(err, synthkey.ErrInvalidPath) {
			t.Errorf("Concat(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
}
