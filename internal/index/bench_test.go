package index

import (
	"bytes"
	"strings"
	"testing"
)

// benchDoc is a ~1 KB item with about 20 scalar leaves, nested objects and
// an array.
const benchDoc = `{"id":"8a1c2f6e-4b7d-4e1a-9c3b-2f5d7e9a1b3c","deviceId":"sensor-00042","tenant":"contoso",
"_rid":"AbCdEfGhIjKBAAAAAAAAAA==","_self":"dbs/AbCdEQ==/colls/AbCdEfGhIjK=/docs/AbCdEfGhIjKBAAAAAAAAAA==/",
"_etag":"\"0000a1b2-0000-0000-0000-65f0c0de0000\"","_attachments":"attachments/","_ts":1710000000,
"type":"reading","status":"active","firmware":{"version":"3.14.2","channel":"stable","build":20240312},
"location":{"site":"Oslo-North","building":"B7","floor":3,"room":"3.21"},
"metrics":{"temperature":21.375,"humidity":44.2,"pressure":1013.25,"battery":0.87,"rssi":-67},
"tags":["hvac","critical","floor-3"],"owner":{"name":"Facilities Team","email":"facilities@example.com"},
"notes":"Calibrated on site during the quarterly maintenance window; readings verified against reference probe.",
"enabled":true,"lastError":null}`

// BenchmarkTerms measures Terms on benchDoc under the default policy.
func BenchmarkTerms(b *testing.B) {
	p := DefaultPolicy()
	doc := []byte(benchDoc)
	n := 0
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Terms(doc, func(term []byte) { n += len(term) }); err != nil {
			b.Fatal(err)
		}
	}
	_ = n
}

// BenchmarkEq measures building an equality span.
func BenchmarkEq(b *testing.B) {
	path := []string{"location", "site"}
	v := StringValue("Oslo-North")
	b.ReportAllocs()
	for b.Loop() {
		_ = Eq(path, v)
	}
}

// BenchmarkDiff measures the index changes of an update of benchDoc that
// changes one nested member and _ts: Diff, and the merge of two Terms calls
// it replaced in the engine (terms of the old version copied, then the new
// version's merged with them).
func BenchmarkDiff(b *testing.B) {
	p := DefaultPolicy()
	old := []byte(benchDoc)
	new := []byte(strings.NewReplacer(`"floor":3`, `"floor":4`, `"_ts":1710000000`, `"_ts":1710000001`).Replace(benchDoc))
	b.Run("diff", func(b *testing.B) {
		b.SetBytes(int64(len(old) + len(new)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Diff(old, new, func([]byte, bool) {}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("terms", func(b *testing.B) {
		b.SetBytes(int64(len(old) + len(new)))
		b.ReportAllocs()
		var was [][]byte
		for b.Loop() {
			was = was[:0]
			if err := p.Terms(old, func(term []byte) { was = append(was, bytes.Clone(term)) }); err != nil {
				b.Fatal(err)
			}
			i := 0
			if err := p.Terms(new, func(term []byte) {
				for i < len(was) && bytes.Compare(was[i], term) < 0 {
					i++
				}
				if i < len(was) && bytes.Equal(was[i], term) {
					i++
				}
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
