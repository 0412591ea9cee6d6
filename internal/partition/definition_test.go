package partition

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	}
	for _, in := range tests {
		got, err := in.Normalize()
		if de, ok := errors.AsType[*DefinitionError](err); !ok || de.Msg == "" {
			t.Errorf("%+v.Normalize() = %+v, %v; want *DefinitionError", in, got, err)
		}
	}
}
