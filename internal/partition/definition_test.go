package partition

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/partitadb/partita/internal/document"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		in   Definition
		want Definition
	}{
		{Definition{Paths: []string{"/pk"}}, Definition{Paths: []string{"/pk"}, Kind: Hash, Version: 2}},
		{Definition{Paths: []string{"/pk"}, Version: 1}, Definition{Paths: []string{"/pk"}, Kind: Hash, Version: 1}},
		{Definition{Paths: []string{"/a/b"}, Kind: Hash, Version: 2}, Definition{Paths: []string{"/a/b"}, Kind: Hash, Version: 2}},
		{Definition{Paths: []string{"/a", "/b"}}, Definition{Paths: []string{"/a", "/b"}, Kind: MultiHash, Version: 2}},
		{Definition{Paths: []string{"/a", "/b", "/c"}, Kind: MultiHash}, Definition{Paths: []string{"/a", "/b", "/c"}, Kind: MultiHash, Version: 2}},
		{Definition{Paths: []string{"/a"}, Kind: MultiHash}, Definition{Paths: []string{"/a"}, Kind: MultiHash, Version: 2}},
		{Definition{Paths: []string{"/_partitionKey"}}, Definition{Paths: []string{"/_partitionKey"}, Kind: Hash, Version: 2}},
		{Definition{Paths: []string{"/_partitionKey"}, SystemKey: true}, Definition{Paths: []string{"/_partitionKey"}, Kind: Hash, Version: 1, SystemKey: true}},
		{Definition{Paths: []string{"/_partitionKey"}, Version: 2, SystemKey: true}, Definition{Paths: []string{"/_partitionKey"}, Kind: Hash, Version: 2, SystemKey: true}},
	}
	for _, tt := range tests {
		got, err := tt.in.Normalize()
		if err != nil {
			t.Errorf("%+v.Normalize() error %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%+v.Normalize() mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestNormalizeCopiesPaths(t *testing.T) {
	in := Definition{Paths: []string{"/pk"}}
	got, err := in.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	in.Paths[0] = "/changed"
	if got.Paths[0] != "/pk" {
		t.Errorf("Normalize() result shares Paths with its receiver: %q", got.Paths[0])
	}
}

func TestNormalizeErrors(t *testing.T) {
	tests := []Definition{
		{},
		{Paths: []string{}},
		{Paths: []string{"/a", "/b", "/c", "/d"}},
		{Paths: []string{"pk"}},
		{Paths: []string{""}},
		{Paths: []string{"/"}},
		{Paths: []string{"/a//b"}},
		{Paths: []string{"/a/"}},
		{Paths: []string{"/a", "b"}},
		{Paths: []string{"/a", "/b"}, Kind: Hash},
		{Paths: []string{"/a"}, Version: 3},
		{Paths: []string{"/a"}, Version: -1},
		{Paths: []string{"/a", "/b"}, Version: 1},
		{Paths: []string{"/a", "/b"}, Kind: MultiHash, Version: 1},
		{Paths: []string{"/a"}, Kind: "Range"},
		{Paths: []string{"/a"}, Kind: "hash"},
		{Paths: []string{"/pk"}, SystemKey: true},
		{Paths: []string{"/_partitionKey", "/b"}, SystemKey: true},
	}
	for _, in := range tests {
		got, err := in.Normalize()
		if de, ok := errors.AsType[*DefinitionError](err); !ok || de.Msg == "" {
			t.Errorf("%+v.Normalize() = %+v, %v; want *DefinitionError", in, got, err)
		}
	}
}

// TestSystemKeyNone checks the none partition of a system key: the single
// Undefined component hashes to the empty EPK and spans the point there,
// while other keys (and Undefined without a system key) hash as usual.
func TestSystemKeyNone(t *testing.T) {
	sys, err := Definition{Paths: []string{SystemKeyPath}, SystemKey: true}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	plain := Definition{Paths: []string{SystemKeyPath}, Kind: Hash, Version: 1}
	undefined := document.PartitionKey{{Kind: document.Undefined}}
	if !sys.IsNone(undefined) || plain.IsNone(undefined) || sys.IsNone(document.PartitionKey{{Kind: document.Null}}) {
		t.Errorf("IsNone is wrong")
	}
	epk, err := sys.Hash(undefined)
	if err != nil || len(epk) != 0 {
		t.Errorf("system key Hash(undefined) = %X, %v; want the empty EPK", epk, err)
	}
	lo, hi, err := sys.Span(undefined)
	if err != nil || len(lo) != 0 || !bytes.Equal(hi, EPK{0x00}) {
		t.Errorf("system key Span(undefined) = [%X, %X), %v; want [\"\", 00)", lo, hi, err)
	}
	want, _ := plain.Hash(undefined)
	if len(want) == 0 {
		t.Errorf("Hash(undefined) without a system key is empty")
	}
	key := document.PartitionKey{{Kind: document.String, String: "p1"}}
	a, _ := sys.Hash(key)
	b, _ := plain.Hash(key)
	if !bytes.Equal(a, b) {
		t.Errorf("a system key hashes \"p1\" to %X, V1 to %X", a, b)
	}
	if !sys.Equal(sys) || sys.Equal(plain) {
		t.Errorf("Equal ignores SystemKey")
	}
}
