package synthkey

import (
	"encoding/json"
	"testing"
)

// BenchmarkKey measures computing a key from a decoded item: the write path
// (Apply), the read path (PointKey) and the fan-out key list.
func BenchmarkKey(b *testing.B) {
	concat, _ := Concat("/pk", "/deviceId", "/date")
	hash, _ := HashSuffix("/pk", 20, []string{"/vehicle/vin"}, "/date")
	random, _ := RandomSuffix("/pk", 20, "/date")
	item := func() map[string]any {
		return map[string]any{"id": "e1", "deviceId": "dev-000042", "date": "2018-08-09", "n": 17.0,
			"vehicle": map[string]any{"vin": "1HGCM82633A004352"}}
	}
	for _, bm := range []struct {
		name string
		fn   func(m map[string]any) error
	}{
		{"concat/PointKey", func(m map[string]any) error { _, err := concat.PointKey(m); return err }},
		{"hash/PointKey", func(m map[string]any) error { _, err := hash.PointKey(m); return err }},
		{"hash/Apply", func(m map[string]any) error { _, err := hash.Apply(m); return err }},
		{"random/Apply", func(m map[string]any) error { _, err := random.Apply(m); return err }},
		{"random/FanOutKeys", func(m map[string]any) error { _, err := random.FanOutKeys(m); return err }},
	} {
		b.Run(bm.name, func(b *testing.B) {
			m := item()
			b.ReportAllocs()
			for b.Loop() {
				if err := bm.fn(m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("hash/ApplyJSON", func(b *testing.B) {
		doc, _ := json.Marshal(item())
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := hash.ApplyJSON(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCanonical measures canonicalising one value of each kind.
func BenchmarkCanonical(b *testing.B) {
	for _, bm := range []struct {
		name string
		v    any
	}{
		{"string", "1HGCM82633A004352"},
		{"int", 1234567},
		{"float", 1234.5678},
		{"number", json.Number("1234.5678")},
	} {
		b.Run(bm.name, func(b *testing.B) {
			buf := make([]byte, 0, 64)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = appendCanonical(buf[:0], bm.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
