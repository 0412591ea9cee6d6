package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/partitadb/partita/internal/catalog"
)

// load returns what b.Load(prefix) passes to its callback, as key=value.
func load(t *testing.T, b *Backend, prefix string) []string {
	t.Helper()
	var got []string
	if err := b.Load(t.Context(), prefix, func(k string, v []byte) error {
		got = append(got, k+"="+string(v))
		return nil
	}); err != nil {
		t.Fatalf("Load(%q): %v", prefix, err)
	}
	return got
}

func TestBackend(t *testing.T) {
	e := startSingle(t, t.TempDir())
	b := NewBackend(e.Client(), BackendConfig{})

	if v, ok, err := b.Get("cat/db/a"); err != nil || ok {
		t.Fatalf("Get of a missing key = %q, %v, %v", v, ok, err)
	}
	if err := b.Apply(map[string][]byte{"cat/db/a": []byte("1"), "cat/db/b": []byte("2"), "cat/seq": []byte("s")}, nil); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if v, ok, err := b.Get("cat/db/a"); err != nil || !ok || string(v) != "1" {
		t.Fatalf("Get(cat/db/a) = %q, %v, %v, want 1", v, ok, err)
	}
	// The catalog's keys live under the prefix in etcd.
	if got := mustGet(t, e.Client(), CatalogPrefix+"cat/db/a"); got != "1" {
		t.Errorf("etcd key %scat/db/a = %q, want 1", CatalogPrefix, got)
	}

	// Deleted and set again in one change: set, as the catalog means it.
	if err := b.Apply(map[string][]byte{"cat/db/b": []byte("3")}, []string{"cat/db/a", "cat/db/b", "cat/db/a"}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if d := cmp.Diff([]string{"cat/db/b=3"}, load(t, b, "cat/db/")); d != "" {
		t.Errorf("after delete and set (-want +got):\n%s", d)
	}
	if err := b.Apply(nil, nil); err != nil {
		t.Errorf("empty Apply: %v", err)
	}
}

// TestBackendLoadOrder: Load visits keys in byte order across pages, at
// one revision, and stops at fn's error.
func TestBackendLoadOrder(t *testing.T) {
	e := startSingle(t, t.TempDir())
	b := NewBackend(e.Client(), BackendConfig{})
	set := map[string][]byte{"cat/coll0": []byte("outside"), "cat/col": []byte("outside")}
	var keys []string
	for i := range 3*loadPage + 7 {
		// Keys as the catalog makes them: ids separated by NUL.
		k := fmt.Sprintf("cat/coll/db%d\x00c%d", i%5, i)
		set[k] = fmt.Appendf(nil, "%d", i)
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var want []string
	for _, k := range keys {
		want = append(want, k+"="+string(set[k]))
	}
	if err := b.Apply(set, nil); err != nil {
		t.Fatalf("Apply of %d keys: %v", len(set), err)
	}
	if d := cmp.Diff(want, load(t, b, "cat/coll/")); d != "" {
		t.Errorf("Load(cat/coll/) (-want +got):\n%s", d)
	}

	stop := errors.New("stop")
	n := 0
	err := b.Load(t.Context(), "cat/coll/", func(string, []byte) error {
		if n++; n == loadPage+1 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != loadPage+1 {
		t.Errorf("Load stopped after %d calls with %v, want %d and fn's error", n, err, loadPage+1)
	}
}

// TestBackendApplyAtomic: one Apply is one etcd revision: a watcher sees
// all of its changes at once.
func TestBackendApplyAtomic(t *testing.T) {
	e := startSingle(t, t.TempDir())
	b := NewBackend(e.Client(), BackendConfig{})
	if err := b.Apply(map[string][]byte{"x/c": []byte("0")}, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// Watch from the revision after the first change on.
	resp, err := e.Client().Get(ctx, CatalogPrefix+"x/c")
	if err != nil {
		t.Fatal(err)
	}
	wch := e.Client().Watch(ctx, CatalogPrefix+"x/", clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	if err := b.Apply(map[string][]byte{"x/a": []byte("1"), "x/b": []byte("2")}, []string{"x/c"}); err != nil {
		t.Fatal(err)
	}
	wr, ok := <-wch
	if !ok {
		t.Fatalf("watch ended without the change: %v", ctx.Err())
	}
	if err := wr.Err(); err != nil {
		t.Fatalf("watch: %v", err)
	}
	var got []string
	for _, ev := range wr.Events {
		got = append(got, fmt.Sprintf("%s %s", ev.Type, ev.Kv.Key[len(CatalogPrefix):]))
	}
	if d := cmp.Diff([]string{"DELETE x/c", "PUT x/a", "PUT x/b"}, got); d != "" {
		t.Errorf("one watch response (-want +got):\n%s", d)
	}
}

// TestBackendFence: a writer that lost the election cannot write, even
// though it still holds its fenced backend.
func TestBackendFence(t *testing.T) {
	e := startSingle(t, t.TempDir())
	cli := e.Client()
	b := NewBackend(cli, BackendConfig{})

	campaign := func(name string) (*concurrency.Session, *Backend) {
		t.Helper()
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
		if err != nil {
			t.Fatalf("session: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		el := concurrency.NewElection(s, "/partita/catalog-leader")
		if err := el.Campaign(opCtx(t), name); err != nil {
			t.Fatalf("campaign %s: %v", name, err)
		}
		f, err := ElectionFence(el)
		if err != nil {
			t.Fatal(err)
		}
		return s, b.Fenced(f)
	}

	s1, w1 := campaign("n1")
	if err := w1.Apply(map[string][]byte{"k": []byte("n1")}, nil); err != nil {
		t.Fatalf("the leader's Apply: %v", err)
	}
	// n1's tenure ends (here: its session closes, as when its lease
	// expires), and n2 wins. n1 has not noticed and writes on.
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	_, w2 := campaign("n2")
	err := w1.Apply(map[string][]byte{"k": []byte("n1 again"), "k2": []byte("n1")}, []string{"k3"})
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("the deposed writer's Apply = %v, want ErrFenced", err)
	}
	if err := w2.Apply(map[string][]byte{"k3": []byte("n2")}, nil); err != nil {
		t.Fatalf("the new leader's Apply: %v", err)
	}
	if d := cmp.Diff([]string{"k=n1", "k3=n2"}, load(t, b, "k")); d != "" {
		t.Errorf("after the deposed writer's attempt (-want +got):\n%s", d)
	}

	if _, err := ElectionFence(concurrency.NewElection(nil, "/x")); err == nil {
		t.Errorf("ElectionFence of an election never won succeeded")
	}
}

// TestBackendCatalog: the catalog runs on the backend, and a reopened
// catalog finds what the first wrote.
func TestBackendCatalog(t *testing.T) {
	e := startSingle(t, t.TempDir())
	b := NewBackend(e.Client(), BackendConfig{})
	now := func() time.Time { return time.Unix(1700000000, 0) }
	c, err := catalog.Open(t.Context(), b, now)
	if err != nil {
		t.Fatalf("catalog.Open: %v", err)
	}
	if _, err := c.CreateDatabase("db1", catalog.Throughput{}); err != nil {
		t.Fatalf("CreateDatabase: %v", err)
	}
	if _, err := c.CreateContainer("db1", []byte(`{"id":"c1","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2}}`), catalog.Throughput{}); err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	c2, err := catalog.Open(t.Context(), b, now)
	if err != nil {
		t.Fatalf("catalog.Open again: %v", err)
	}
	if _, err := c2.Database("db1"); err != nil {
		t.Errorf("reopened catalog: database db1: %v", err)
	}
	if _, err := c2.Container("db1", "c1"); err != nil {
		t.Errorf("reopened catalog: container db1/c1: %v", err)
	}
}

// TestBackendReadUnavailable: a catalog read etcd does not answer in time
// is catalog.ErrUnavailable (a 503 the client may retry), not a bare error
// (a 500: a bug hunt's stored procedures through a node just resumed from
// SIGSTOP, "etcd get: context deadline exceeded").
func TestBackendReadUnavailable(t *testing.T) {
	cli := silentEtcd(t)
	b := NewBackend(cli, BackendConfig{Timeout: 200 * time.Millisecond})
	if _, _, err := b.Get("cat/db/a"); !errors.Is(err, catalog.ErrUnavailable) {
		t.Errorf("Get = %v, want catalog.ErrUnavailable", err)
	}
	if err := b.Load(t.Context(), "cat/", func(string, []byte) error { return nil }); !errors.Is(err, catalog.ErrUnavailable) {
		t.Errorf("Load = %v, want catalog.ErrUnavailable", err)
	}
}

// silentEtcd returns an etcd client of an endpoint that accepts
// connections and never answers, closed with the test.
func silentEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ln.Addr().String()}, DialTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
