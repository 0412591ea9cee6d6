package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/store"
)

// checkStore writes a data directory through the engine, as a server
// would, and closes it.
func checkStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	withStore(t, dir, func(ctx context.Context, host *replica.Local) {
		e := checkEngine(t, ctx, host, engine.Throughput{Manual: 24000})
		for i := range 50 {
			pk := document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("p%d", i%7)}}
			body := fmt.Appendf(nil, `{"id":"%d","pk":"p%d","n":%d}`, i, i%7, i)
			if _, err := e.WriteItem(ctx, engine.Write{DB: "db", Container: "k", Kind: engine.Upsert, PK: pk, Body: body}); err != nil {
				t.Fatal(err)
			}
		}
	})
	return dir
}

// checkEngine opens an engine on host with database db and container k
// (partition key /pk) of throughput tp.
func checkEngine(t *testing.T, ctx context.Context, host *replica.Local, tp engine.Throughput) *engine.Engine {
	t.Helper()
	e, err := engine.New(ctx, host, host.Meta(), engine.Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateDatabase("db", engine.Throughput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateContainer("db", []byte(`{"id":"k","partitionKey":{"paths":["/pk"]}}`), tp); err != nil {
		t.Fatal(err)
	}
	return e
}

// withStore opens the store in dir, calls fn with its replica host and
// closes it.
func withStore(t *testing.T, dir string, fn func(ctx context.Context, host *replica.Local)) {
	t.Helper()
	st, err := store.Open(store.Options{Dir: dir, Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	host, err := replica.OpenLocal(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	fn(t.Context(), host)
}

func runCheck(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(t.Context(), append([]string{"check"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// TestCheckCommand: partita check exits 0 on a store written through the
// engine and 1, naming the key in hex, once an index entry is gone.
func TestCheckCommand(t *testing.T) {
	dir := checkStore(t)
	if code, out, errs := runCheck(t, "--data", dir); code != 0 || !strings.Contains(out, "no problems") {
		t.Fatalf("check of a clean store: exit %d, stdout %q, stderr %q; want 0 and no problems", code, out, errs)
	}

	// Delete the first index entry (kind 0x04, docs/storage-seams.md)
	// of the first keyspace.
	var gone []byte
	withStore(t, dir, func(ctx context.Context, host *replica.Local) {
		kss, err := host.Keyspaces(ctx)
		if err != nil || len(kss) == 0 {
			t.Fatalf("keyspaces: %v %v", kss, err)
		}
		rep, err := host.Replica(kss[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := replica.Scan(ctx, rep, replica.Span{Lower: []byte{0x04}, Upper: []byte{0x05}}, func(k, _ []byte) bool {
			gone = bytes.Clone(k)
			return false
		}); err != nil || gone == nil {
			t.Fatalf("no index entry: %v", err)
		}
		b := rep.NewBatch(false)
		defer b.Close()
		b.Delete(gone)
		if err := rep.Commit(b); err != nil {
			t.Fatal(err)
		}
	})
	code, out, errs := runCheck(t, "--data", dir)
	if code != 1 || !strings.Contains(out, fmt.Sprintf("missing key %x", gone)) || !strings.Contains(out, "1 problems") {
		t.Errorf("check after deleting index entry %x: exit %d, stdout %q, stderr %q; want 1 naming the key", gone, code, out, errs)
	}
}

// TestCheckCommandRefuses: usage errors and directories the check cannot
// open exit 2 with a message.
func TestCheckCommandRefuses(t *testing.T) {
	dir := checkStore(t)
	format6 := t.TempDir()
	if b, err := exec.Command("tar", "-xzf", "../testserver/testdata/format6/store.tar.gz", "-C", format6).CombinedOutput(); err != nil {
		t.Fatalf("untar: %v %s", err, b)
	}
	empty := t.TempDir()
	// A cluster member's directory whose etcd data is missing (a member
	// whose data does hold it is checked by the kill loop, cmd/partita).
	member := checkStore(t)
	if err := os.Mkdir(filepath.Join(member, "etcd"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
		hold bool   // the store is open meanwhile, as by a running server
	}{
		{"extra argument", []string{"--data", dir, "extra"}, "unexpected arguments", false},
		{"unknown flag", []string{"--nope"}, "flag provided but not defined", false},
		{"no such directory", []string{"--data", filepath.Join(empty, "nope")}, "no such file", false},
		{"not a store", []string{"--data", empty}, "no Partita data directory", false},
		{"in use", []string{"--data", dir}, "is a server running on it", true},
		{"format 6", []string{"--data", format6}, "storage format 6", false},
		{"cluster member without etcd data", []string{"--data", member}, "holds no etcd member", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.hold {
				st, err := store.Open(store.Options{Dir: dir})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
			}
			code, out, errs := runCheck(t, tc.args...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("check %q: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errs, tc.want)
			}
		})
	}
	// The refused format 6 directory is as it was: nothing converted it.
	if code, _, _ := runCheck(t, "--data", format6); code != 2 {
		t.Errorf("a second check of the format 6 directory: exit %d, want 2 again", code)
	}
	if _, err := os.Stat(filepath.Join(empty, "nope")); !os.IsNotExist(err) {
		t.Errorf("the check created the missing directory: %v", err)
	}
}

// TestCheckWritesNothing: partita check leaves the directory as it found
// it, every file's name, size and contents (it opened the store
// read-write: Pebble wrote a new log, MANIFEST and OPTIONS file, changing
// the state a crash left, which is what one checks; a crash-consistency
// hunt).
func TestCheckWritesNothing(t *testing.T) {
	dir := checkStore(t)
	snapshot := func() map[string]string {
		files := map[string]string{}
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			files[strings.TrimPrefix(path, dir)] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	before := snapshot()
	if code, out, errs := runCheck(t, "--data", dir); code != 0 {
		t.Fatalf("check: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	after := snapshot()
	for name, b := range before {
		if a, ok := after[name]; !ok {
			t.Errorf("check removed %s", name)
		} else if a != b {
			t.Errorf("check changed %s (%d bytes, was %d)", name, len(a), len(b))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("check wrote %s", name)
		}
	}
}

// corruptSSTable flips three bytes in the middle of dir's largest sstable.
func corruptSSTable(t *testing.T, dir string) string {
	t.Helper()
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(ssts) == 0 {
		t.Fatalf("no sstable in %s: %v", dir, err)
	}
	largest, size := "", int64(0)
	for _, p := range ssts {
		if fi, err := os.Stat(p); err == nil && fi.Size() > size {
			largest, size = p, fi.Size()
		}
	}
	b, err := os.ReadFile(largest)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{len(b) / 4, len(b) / 3, len(b) / 2} {
		b[at] ^= 0xff
	}
	if err := os.WriteFile(largest, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return largest
}

// TestCheckReportsCorruption: a damaged sstable block is a problem the
// check reports (exit 1, a "corrupt" line naming the keyspace and the
// file), and a server's store keeps serving what is intact: reads of the
// damaged data fail with replica.ErrCorrupt, others succeed, and writes go
// on. The check panicked, and the server refused every request as if a log
// write had failed (an operator hunt).
func TestCheckReportsCorruption(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	withStore(t, dir, func(ctx context.Context, host *replica.Local) {
		e := checkEngine(t, ctx, host, engine.Throughput{})
		pad := strings.Repeat("x", 900)
		for i := range 600 {
			pk := document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("p%d", i%7)}}
			body := fmt.Appendf(nil, `{"id":"%d","pk":"p%d","pad":"%s%d"}`, i, i%7, pad, i)
			if _, err := e.WriteItem(ctx, engine.Write{DB: "db", Container: "k", Kind: engine.Upsert, PK: pk, Body: body}); err != nil {
				t.Fatal(err)
			}
		}
	})
	file := filepath.Base(corruptSSTable(t, dir))
	code, out, errs := runCheck(t, "--data", dir)
	if code != 1 || !strings.Contains(out, "corrupt: ") || !strings.Contains(out, strings.TrimSuffix(file, ".sst")) || strings.Contains(errs, "panic") {
		t.Errorf("check of a corrupted store: exit %d, stdout %q, stderr %q; want 1 and a corrupt line naming %s", code, out, errs, file)
	}

	withStore(t, dir, func(ctx context.Context, host *replica.Local) {
		e, err := engine.New(ctx, host, host.Meta(), engine.Config{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		failed, served := 0, 0
		for i := range 600 {
			pk := document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("p%d", i%7)}}
			_, err := e.ReadItem(ctx, engine.ItemRef{DB: "db", Container: "k", ID: fmt.Sprint(i)}, pk, "")
			switch {
			case err == nil:
				served++
			case errors.Is(err, replica.ErrCorrupt):
				failed++
			default:
				t.Fatalf("read %d: %v, want it served or ErrCorrupt", i, err)
			}
		}
		if failed == 0 || served == 0 {
			t.Errorf("reads: %d served, %d failed as corrupt; want some of each", served, failed)
		}
		pk := document.PartitionKey{{Kind: document.String, String: "new"}}
		if _, err := e.WriteItem(ctx, engine.Write{DB: "db", Container: "k", Kind: engine.Create, PK: pk, Body: []byte(`{"id":"after","pk":"new"}`)}); err != nil {
			t.Errorf("write after meeting the corruption: %v", err)
		}
	})
}
