package cluster

import (
	"strings"
	"testing"
)

// TestCompareDigests: replicas at the same applied index must report the
// same digest; replicas at different indexes are not compared.
func TestCompareDigests(t *testing.T) {
	view := func(node string, ks ...KeyspaceStatus) Status { return Status{Node: node, Keyspaces: ks} }
	dg := func(id, applied uint64, sum string, keys uint64) KeyspaceStatus {
		return KeyspaceStatus{ID: id, Applied: applied, Digest: &DigestStatus{Applied: applied, SHA256: sum, Keys: keys}}
	}
	tests := []struct {
		name  string
		views []Status
		want  []string // the mismatches' String
	}{
		{"agree", []Status{
			view("a", dg(1, 10, "aa", 3), dg(2, 5, "bb", 2)),
			view("b", dg(1, 10, "aa", 3), dg(2, 5, "bb", 2)),
			view("c", dg(1, 10, "aa", 3), dg(2, 5, "bb", 2)),
		}, nil},
		{"one differs", []Status{
			view("a", dg(1, 10, "aa", 3), dg(2, 5, "bb", 2)),
			view("b", dg(1, 10, "aa", 3), dg(2, 5, "bc", 2)),
			view("c", dg(1, 10, "aa", 3), dg(2, 5, "bb", 2)),
		}, []string{"keyspace 2: replicas differ at applied index 5: node a sha256 bb (2 keys); node b sha256 bc (2 keys); node c sha256 bb (2 keys)"}},
		{"key count differs", []Status{
			view("a", dg(1, 10, "aa", 3)),
			view("b", dg(1, 10, "aa", 4)),
		}, []string{"keyspace 1: replicas differ at applied index 10: node a sha256 aa (3 keys); node b sha256 aa (4 keys)"}},
		{"different indexes are not compared", []Status{
			view("a", dg(1, 10, "aa", 3)),
			view("b", dg(1, 11, "ab", 4)),
			view("c", dg(1, 11, "ab", 4)),
		}, nil},
		{"without digests", []Status{
			view("a", KeyspaceStatus{ID: 1, Applied: 3}),
			view("b", KeyspaceStatus{ID: 1, Applied: 3}),
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, m := range CompareDigests(tt.views) {
				got = append(got, m.String())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("CompareDigests = %q, want %q", got, tt.want)
			}
		})
	}
}
