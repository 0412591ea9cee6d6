package partition

import (
	"fmt"
	"testing"

	"github.com/partitadb/partita/internal/document"
)

func benchHash(b *testing.B, d Definition) {
	for _, bc := range []struct {
		name string
		pk   document.PartitionKey
	}{
		{"string", key(str("device-0042-eu-west"))},
		{"number", key(num(12313.1221))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Hash(bc.pk); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkHashV2(b *testing.B) { benchHash(b, defV2) }

func BenchmarkHashV1(b *testing.B) { benchHash(b, defV1) }

func BenchmarkHashMulti(b *testing.B) {
	pk := key(str("tenant-7"), str("user-1234"), num(42))
	d := multi(3)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Hash(pk); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLocate(b *testing.B) {
	for _, n := range []int{7} {
		b.Run(fmt.Sprintf("ranges=%d", n), func(b *testing.B) {
			m, err := NewMap(InitialLayout(defV2, n))
			if err != nil {
				b.Fatal(err)
			}
			epks := make([]EPK, 1024)
			for i := range epks {
				epks[i], _ = defV2.Hash(key(num(float64(i))))
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = m.Locate(epks[i%len(epks)])
				i++
			}
		})
	}
}
