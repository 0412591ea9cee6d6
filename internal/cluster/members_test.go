package cluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCanonicalAddr(t *testing.T) {
	tests := []struct {
		in, want string // want "" means an error
	}{
		{"127.0.0.1:7001", "127.0.0.1:7001"},
		{"127.0.0.1:07001", "127.0.0.1:7001"},
		{"[::1]:7001", "[::1]:7001"},
		{"[0:0::1]:7001", "[::1]:7001"},
		{"[::ffff:10.0.0.1]:7001", "10.0.0.1:7001"},
		{"Node1.Example:7001", "node1.example:7001"},
		{"127.0.0.1", ""},
		{"127.0.0.1:0", ""},
		{"127.0.0.1:65535", ""}, // the etcd peer port would be 65536
		{"127.0.0.1:x", ""},
		{":7001", ""},
		{"a=b:7001", ""},
		{"[fe80::1%eth0]:7001", ""},
	}
	for _, tt := range tests {
		got, err := CanonicalAddr(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("CanonicalAddr(%q) = %q, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("CanonicalAddr(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestNodeID pins the derivation: changing it renumbers every node of
// every existing cluster.
func TestNodeID(t *testing.T) {
	tests := []struct {
		addr string
		want uint64
	}{
		{"127.0.0.1:7001", 0x4c45975e173488e0},
		{"127.0.0.1:07001", 0x4c45975e173488e0}, // the same address, spelt otherwise
		{"127.0.0.1:7002", 0x6abaeb5811e296d4},
		{"[0::1]:7001", 0x62a3ad4f9ceaa5cd},
	}
	for _, tt := range tests {
		if got, err := NodeID(tt.addr); err != nil || got != tt.want {
			t.Errorf("NodeID(%q) = %#x, %v, want %#x", tt.addr, got, err, tt.want)
		}
	}
}

func TestMembers(t *testing.T) {
	ms, err := Members([]string{"127.0.0.1:7005", "127.0.0.1:7001", "127.0.0.1:7003"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		id, _ := NodeID(m.Addr)
		if m.ID != id {
			t.Errorf("member %s: id %x, want NodeID %x", m.Addr, m.ID, id)
		}
		got = append(got, m.Addr+" "+m.PeerURL)
	}
	want := []string{
		"127.0.0.1:7001 https://127.0.0.1:7002",
		"127.0.0.1:7003 https://127.0.0.1:7004",
		"127.0.0.1:7005 https://127.0.0.1:7006",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Members (-want +got):\n%s", d)
	}
	if m, ok := Find(ms, "127.0.0.1:07003"); !ok || m != ms[1] {
		t.Errorf("Find(127.0.0.1:07003) = %v, %v, want %v", m, ok, ms[1])
	}
	if _, ok := Find(ms, "127.0.0.1:7009"); ok {
		t.Errorf("Find(127.0.0.1:7009) found a member")
	}
	if h := ms[0].Host(); h != "127.0.0.1" {
		t.Errorf("Host() = %q, want 127.0.0.1", h)
	}

	for _, bad := range [][]string{
		nil,
		{"127.0.0.1:7001", "127.0.0.1:07001"},
		{"127.0.0.1:7001", "nonsense"},
		{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7004"}, // 7002 is 7001's etcd peer port
	} {
		if _, err := Members(bad); err == nil {
			t.Errorf("Members(%q) succeeded, want an error", bad)
		}
	}
}
