package cluster

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOfflineCatalog reads, from a copy of a stopped member's etcd data,
// the catalog that member last knew, while the rest of the cluster runs
// on and changes it; the copy disturbs neither the member's directory
// (it restarts and catches up) nor the running members.
func TestOfflineCatalog(t *testing.T) {
	ms := testMembers(t, 3)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	es := startMembersIn(t, dirs, ms, ms)
	putUntil(t, es[0].Client(), CatalogPrefix+"db/a", "1")
	waitValue(t, es[2], "db/a", "1")
	if err := es[2].Close(); err != nil {
		t.Fatal(err)
	}
	putUntil(t, es[0].Client(), CatalogPrefix+"db/a", "2")
	putUntil(t, es[0].Client(), CatalogPrefix+"db/b", "3")

	read := func(dir string) map[string]string {
		t.Helper()
		oc, err := OpenOfflineCatalog(t.Context(), dir, t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := oc.Close(); err != nil {
				t.Error(err)
			}
		}()
		got := map[string]string{}
		if err := oc.Load(t.Context(), "", func(k string, v []byte) error {
			got[k] = string(v)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	before, err := os.ReadDir(filepath.Join(dirs[2], etcdDir, "member", "wal"))
	if err != nil {
		t.Fatal(err)
	}
	if got := read(dirs[2]); len(got) != 1 || got["db/a"] != "1" {
		t.Errorf("the stopped member's catalog: %v, want db/a=1 alone (what it last knew)", got)
	}
	after, err := os.ReadDir(filepath.Join(dirs[2], etcdDir, "member", "wal"))
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("the member's WAL directory changed: %d files, then %d", len(before), len(after))
	}
	// The running members were not disturbed, and the member rejoins.
	putUntil(t, es[1].Client(), CatalogPrefix+"db/a", "4")
	e, err := StartEtcd(t.Context(), etcdConfig(t, dirs[2], ms[2], ms))
	if err != nil {
		t.Fatalf("the member after its copy was read: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	waitValue(t, e, "db/a", "4")
	for _, e := range es[:2] {
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if got := read(dirs[0]); len(got) != 2 || got["db/a"] != "4" || got["db/b"] != "3" {
		t.Errorf("member 1's catalog after all stopped: %v, want db/a=4, db/b=3", got)
	}
}

// waitValue waits at most 20 s until catalog key k reads v through e.
func waitValue(t *testing.T, e *Etcd, k, v string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); mustGet(t, e.Client(), CatalogPrefix+k) != v; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never read %q", k, v)
		}
	}
}
