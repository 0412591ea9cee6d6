package cli

import (
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/cluster"
)

// TestWriteClusterStatus: each replica's row takes its figures from its
// own node's view and its lag from the leader's; a member that did not
// answer is shown not live, its figures unknown, and a lag the leader does
// not know yet is "?".
func TestWriteClusterStatus(t *testing.T) {
	yes, no := true, false
	views := []cluster.Status{
		{Node: "aaaaaaaaaaaaaaaa", Addr: "127.0.0.1:7001", Members: []cluster.MemberStatus{
			{Node: "aaaaaaaaaaaaaaaa", Addr: "127.0.0.1:7001", Live: &yes},
			{Node: "bbbbbbbbbbbbbbbb", Addr: "127.0.0.1:7003", Live: &yes},
			{Node: "cccccccccccccccc", Addr: "127.0.0.1:7005", Live: &no, Error: "connection refused"},
		}, Keyspaces: []cluster.KeyspaceStatus{
			{ID: 2, Replicas: []string{"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb", "cccccccccccccccc"}, Leading: true, Term: 3, Applied: 90, LSN: 70, Stable: 69,
				Commit: 90, Progress: []cluster.ReplicaProgress{
					{Node: "aaaaaaaaaaaaaaaa", Match: 90, Known: true, Active: true},
					{Node: "bbbbbbbbbbbbbbbb", Match: 85, Lag: 5, Known: true, Active: true},
					{Node: "cccccccccccccccc", Known: false},
				}},
		}},
		{Node: "bbbbbbbbbbbbbbbb", Addr: "127.0.0.1:7003", Keyspaces: []cluster.KeyspaceStatus{
			{ID: 2, Replicas: []string{"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb", "cccccccccccccccc"}, Term: 3, Applied: 85, LSN: 66, Stable: 66},
		}},
		{Node: "cccccccccccccccc", Addr: "127.0.0.1:7005", Error: "connection refused"},
	}
	var b strings.Builder
	writeClusterStatus(&b, views, false)
	got := b.String()
	for _, want := range []string{
		"asked node aaaaaaaaaaaaaaaa (127.0.0.1:7001), 3 members",
		"aaaaaaaaaaaaaaaa  127.0.0.1:7001  yes (asked)",
		"bbbbbbbbbbbbbbbb  127.0.0.1:7003  yes",
		"cccccccccccccccc  127.0.0.1:7005  no: connection refused",
		"2         aaaaaaaa  leader    3     90       70   69      0    yes",
		"          bbbbbbbb  follower  3     85       66   66      5    yes",
		"          cccccccc  ?         ?     ?        ?    ?       ?    no",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the status lacks %q:\n%s", want, got)
		}
	}
}
