package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/replication"
	"github.com/partitadb/partita/internal/store"
	"github.com/partitadb/partita/internal/store/storetest"
)

// TestReplicaOnFullDisk: a keyspace this node is a voter of but cannot
// make its replica of (its disk is under the floor: a container created
// while it was full) is served as one it holds no replica of, a Remote
// whose requests go to the other voters; once there is room, the next use
// makes the replica. Before, every request to it answered 503 as if the
// store were recovering from a failed write, and logged an error (a bug
// hunt of a member's full disk).
func TestReplicaOnFullDisk(t *testing.T) {
	const floor = 8 << 20
	fs := storetest.NewFullFS(vfs.NewMem(), 1<<30)
	st, err := store.Open(store.Options{Dir: "data", FS: fs, Sync: true, MinFreeBytes: floor, DiskCheckInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	host, err := replication.Open(st, 1, nopTransport{}, replication.Config{})
	if err != nil {
		t.Fatal(err)
	}
	local, err := replica.OpenLocal(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := NewKeyspaces(host, local, 1, NewPlacement([]uint64{1, 2, 3}, 3), time.Second, &remoteNet{self: 1})
	fs.SetFree(floor / 2)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b := st.NewBatch()
		b.Set([]byte("probe"), nil)
		if err := b.Commit(); err != nil {
			break // the store sees the disk full
		}
		if time.Now().After(deadline) {
			t.Fatal("the store never saw its disk full")
		}
	}
	r, err := k.Replica(7)
	if err != nil {
		t.Fatalf("Replica on a full disk: %v, want a Remote", err)
	}
	if _, ok := r.(*Remote); !ok {
		t.Fatalf("Replica on a full disk: %T, want *Remote", r)
	}
	fs.SetFree(1 << 30)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		r, err := k.Replica(7)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.(*replication.Replica); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("space returned, and the keyspace is still served remotely")
		}
	}
}

type nopTransport struct{}

func (nopTransport) Send(uint64, replication.Message) {}
