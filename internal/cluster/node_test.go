package cluster

import (
	"net"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/store"
)

// TestStartNodeFailsCleanly: a node that cannot start (its cluster port is
// taken) returns an error naming the cause, having released what it had
// started, rather than panicking.
func TestStartNodeFailsCleanly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	st, err := store.Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	local, err := replica.OpenLocal(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_, err = StartNode(t.Context(), NodeConfig{DataDir: dir, Addr: addr, Join: []string{addr},
		Secret: []byte("a-cluster-secret-of-some-length"), Store: st, Local: local})
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("StartNode on a taken port = %v, want an error naming the listen", err)
	}
}
