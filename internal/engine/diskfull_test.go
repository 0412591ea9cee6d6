package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/store"
	"github.com/partitadb/partita/internal/store/storetest"
)

// TestDiskFull drives the engine on a disk with 16 MiB free and an 8 MiB
// floor: writes fill it up to the floor and are then refused with 507 (items,
// batches, stored procedures, catalog changes), at once and without a trace,
// while reads, queries and feeds go on; writes resume by themselves when
// space returns. Then another process takes the rest of the disk behind
// the store's back: the write that meets ENOSPC is not acknowledged, and
// after a restart it is absent while every acknowledged one is present.
func TestDiskFull(t *testing.T) {
	ctx := context.Background()
	fs := storetest.NewFullFS(vfs.NewMem(), 64<<20)
	fs.SetFree(16 << 20) // another process holds the rest
	open := func() (*Engine, *store.Store) {
		t.Helper()
		// The store reads free space before refusing, and every hour
		// otherwise: what another process does goes unseen until a write
		// meets it.
		st, err := store.Open(store.Options{Dir: "db", FS: fs, Sync: true, MinFreeBytes: 8 << 20, DiskCheckInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		e, err := openOn(t, ctx, st, Config{GatewayQueryFull: true}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return e, st
	}
	e, st := open()
	if _, err := e.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"k","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 400}); err != nil {
		t.Fatal(err)
	}
	sp, _ := json.Marshal(map[string]string{"id": "two", "body": `function (id) {
		var coll = getContext().getCollection();
		for (var i = 0; i < 2; i++) coll.createDocument(coll.getSelfLink(), {id: id + "-" + i, pk: "p0", pad: "x"});
	}`})
	if _, err := e.CreateScript("db", "k", StoredProcedures, sp); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 256<<10)
	write := func(id string) error {
		_, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pkN(0),
			Body: fmt.Appendf(nil, `{"id":%q,"pk":"p0","pad":%q}`, id, pad)})
		return err
	}
	insufficient := func(err error) bool {
		se, ok := err.(*status.Error)
		return ok && se.Code == http.StatusInsufficientStorage && strings.Contains(se.Message, "disk is short of space")
	}
	acked := map[string]bool{}
	var refused []string
	for i := 0; len(refused) < 3; i++ {
		if i > 200 {
			t.Fatal("200 writes of 256 KiB with 16 MiB free: none refused")
		}
		id := fmt.Sprint("a", i)
		switch err := write(id); {
		case err == nil:
			if len(refused) > 0 {
				t.Fatalf("write %s accepted after %s was refused", id, refused[0])
			}
			acked[id] = true
		case insufficient(err):
			refused = append(refused, id)
		default:
			t.Fatalf("write %s: %v, want success or 507", id, err)
		}
	}
	if len(acked) < 10 {
		t.Fatalf("only %d writes before the floor", len(acked))
	}
	// Small writes would still fit above the floor: another process takes
	// a little more, which the next refusal (it reads the free space) sees.
	fs.SetFree(8<<20 - 64<<10)
	if err := write("a-last"); !insufficient(err) {
		t.Fatalf("write under the floor: %v, want 507", err)
	}
	refused = append(refused, "a-last")
	// Every kind of write is refused; nothing of them shows.
	if res, err := e.ExecuteBatch(ctx, "db", "k", pkN(0), []BatchOp{{Type: "Create", Body: []byte(`{"id":"b0","pk":"p0"}`)}}); !insufficient(err) {
		t.Errorf("batch on a full disk: %+v, %v; want 507", res, err)
	}
	if _, err := e.ExecuteStoredProcedure(ctx, "db", "k", "two", pkN(0), []byte(`["s"]`), false); !insufficient(err) {
		t.Errorf("stored procedure on a full disk: %v, want 507", err)
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"k2","partitionKey":{"paths":["/pk"]}}`), Throughput{Manual: 400}); !insufficient(err) {
		t.Errorf("create container on a full disk: %v, want 507", err)
	}
	if _, err := e.ReadContainer("db", "k2"); code(err) != http.StatusNotFound {
		t.Errorf("the refused container: %v, want 404", err)
	}
	check := func(when string, e *Engine, acked map[string]bool, absent []string) {
		t.Helper()
		for id := range acked {
			if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: id}, pkN(0), ""); err != nil {
				t.Errorf("%s: acknowledged item %s: %v", when, id, err)
			}
		}
		for _, id := range absent {
			if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: id}, pkN(0), ""); code(err) != http.StatusNotFound {
				t.Errorf("%s: refused item %s: %v, want 404", when, id, err)
			}
		}
		rows := queryAll(t, e, Scope{}, Query{Text: "SELECT VALUE c.id FROM c", EnableCrossPartition: true})
		if len(rows) != len(acked) {
			t.Errorf("%s: the query returns %d items, want the %d acknowledged", when, len(rows), len(acked))
		}
		if n, err := changeCount(ctx, e, "db", "k"); err != nil || n != len(acked) {
			t.Errorf("%s: the change feed returns %d items, %v; want %d", when, n, err, len(acked))
		}
	}
	refusedAll := append(append([]string(nil), refused...), "b0", "s-0", "s-1")
	check("on the full disk", e, acked, refusedAll)

	// Space returns: writes resume.
	fs.SetFree(24 << 20)
	if err := write(refused[0]); err != nil {
		t.Fatalf("write after space returned: %v", err)
	}
	acked[refused[0]] = true
	refusedAll = refusedAll[1:]
	if _, err := e.ExecuteStoredProcedure(ctx, "db", "k", "two", pkN(0), []byte(`["s"]`), false); err != nil {
		t.Errorf("stored procedure after space returned: %v", err)
	}
	acked["s-0"], acked["s-1"] = true, true
	refusedAll = refusedAll[:len(refusedAll)-2]

	// Another process takes the whole disk: the store does not know yet.
	fs.SetFree(0)
	if err := write("lost"); !insufficient(err) {
		t.Errorf("the write that met ENOSPC: %v, want 507", err)
	}
	refusedAll = append(refusedAll, "lost")
	_ = st.Close() // the store may still be failed: its Close reports the log write
	fs.SetFree(24 << 20)
	e, st = open()
	defer st.Close()
	check("after a restart", e, acked, refusedAll)
}

// changeCount reads db/coll's whole change feed from the beginning and
// returns how many items it holds.
func changeCount(ctx context.Context, e *Engine, db, coll string) (int, error) {
	n := 0
	req := ChangeFeed{MaxItems: -1}
	for {
		p, err := e.ReadChanges(ctx, db, coll, req)
		if err != nil {
			return n, err
		}
		if len(p.Items) == 0 {
			return n, nil
		}
		n += len(p.Items)
		req.After, req.HasAfter = p.Position, true
	}
}
