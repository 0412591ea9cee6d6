package store

import (
	"bytes"
	"testing"
)

// TestUniqueKey: unique key entries lie in their container's UniqueSpan
// (hence in ContainerSpans) and no other's, and distinct (key, epk, pk,
// tuple) give distinct keys even where the parts' bytes run together.
func TestUniqueKey(t *testing.T) {
	type parts struct {
		key            uint16
		epk, pk, tuple string
	}
	tests := []parts{
		{0, "a", "b", "t"},
		{1, "a", "b", "t"},
		{0, "a\x00", "b", "t"},
		{0, "a", "\x00b", "t"},
		{0, "ab", "", "t"},
		{0, "a", "bt", ""},
		{0, "a", "b", "t\x00"},
		{256, "", "", ""},
	}
	seen := map[string]parts{}
	for _, p := range tests {
		k := UniqueKey(7, p.key, []byte(p.epk), []byte(p.pk), []byte(p.tuple))
		if !UniqueSpan(7).Contains(k) || UniqueSpan(6).Contains(k) || UniqueSpan(8).Contains(k) {
			t.Errorf("UniqueKey(7, %+v) = %x, not (only) in UniqueSpan(7)", p, k)
		}
		in := 0
		for _, sp := range ContainerSpans(7) {
			if sp.Contains(k) {
				in++
			}
		}
		if in != 1 {
			t.Errorf("UniqueKey(7, %+v) lies in %d of ContainerSpans(7), want 1", p, in)
		}
		if o, dup := seen[string(k)]; dup {
			t.Errorf("UniqueKey(7, %+v) = UniqueKey(7, %+v) = %x", p, o, k)
		}
		seen[string(k)] = p
		if bytes.HasPrefix(k, kindPrefix(nil, kindItem, 7)) {
			t.Errorf("UniqueKey(7, %+v) = %x has an item key's prefix", p, k)
		}
	}
}
