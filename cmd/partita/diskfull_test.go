package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// syncBuf is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// loudLines returns the log lines at WARN or ERROR level.
func loudLines(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			out = append(out, l)
		}
	}
	return out
}

// startLogged is start with the server's log kept (and copied to stderr).
func startLogged(t *testing.T, bin, addr, data string, extra ...string) (string, *exec.Cmd, *syncBuf) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", addr, "--data", data, "--rate-limit=off"}, extra...)...)
	cmd.Env = append(os.Environ(), "PARTITA_LOG_LEVEL=warn")
	logs := &syncBuf{}
	cmd.Stderr = io.MultiWriter(os.Stderr, logs)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	found := make(chan string, 1) // one ready line
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case ep := <-found:
		return ep, cmd, logs
	case <-time.After(60 * time.Second):
		t.Fatalf("partita serve did not become ready in 60s; log:\n%s", logs)
		return "", nil, nil
	}
}

// fill grows the file at path until the filesystem has at most leave bytes
// free (leave 0: until it is full).
func fill(t *testing.T, path string, leave int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		var st syscall.Statfs_t
		if err := syscall.Statfs(filepath.Dir(path), &st); err != nil {
			t.Fatal(err)
		}
		free := int64(st.Bavail) * st.Bsize
		if free <= leave {
			return
		}
		n := min(int64(len(chunk)), free-leave)
		if _, err := f.Write(chunk[:n]); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}

// eventually retries op every 100 ms for up to limit and returns its last
// error: for state another process changes on its own clock.
func eventually(limit time.Duration, op func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := op()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDiskFullRealFilesystem fills a real, small filesystem of its own
// (PARTITA_DISKFULL_DIR; make diskfull mounts a 256 MiB tmpfs there) under
// the built binary: writes get 507 at the floor while reads go on; another
// process then fills the disk to the last byte; SIGTERM stops the server
// within its shutdown timeout; restarted on the full disk it becomes ready,
// logs one line, serves reads and refuses writes; and once the filler is
// deleted writes resume without a restart. With a ballast the restart
// releases it and opens read-write; without one it opens read-only.
func TestDiskFullRealFilesystem(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("PARTITA_DISKFULL_DIR")
	if dir == "" {
		t.Skip("set PARTITA_DISKFULL_DIR to a small filesystem of its own (make diskfull mounts one)")
	}
	bin := build(t)
	// A 64 MiB floor (and ballast): after the restart, the released
	// ballast and the old logs' preallocation Pebble frees are not enough
	// for writes to resume (the floor and the ballast, 128 MiB).
	for _, ballast := range []string{"67108864", "0"} {
		t.Run("ballast="+ballast, func(t *testing.T) {
			diskFullRealFilesystem(t, bin, dir, []string{"--min-free-bytes=67108864", "--ballast-bytes=" + ballast, "--shutdown-timeout=5s"}, ballast != "0")
		})
	}
}

func diskFullRealFilesystem(t *testing.T, bin, dir string, flags []string, ballast bool) {
	data, filler := filepath.Join(dir, "data"), filepath.Join(dir, "filler")
	_ = os.RemoveAll(data)
	_ = os.Remove(filler)
	defer os.Remove(filler)
	defer os.RemoveAll(data)
	addr := freePort(t)
	endpoint, cmd, logs := startLogged(t, bin, addr, data, flags...)
	ctx := context.Background()
	c := client(t, endpoint, data)
	if ballast {
		if err := eventually(10*time.Second, func() error {
			_, err := os.Stat(filepath.Join(data, "EMERGENCY-BALLAST"))
			return err
		}); err != nil {
			t.Fatalf("no ballast: %v", err)
		}
	}
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	db, _ := c.NewDatabase("db")
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil); err != nil {
		t.Fatal(err)
	}
	pk := azcosmos.NewPartitionKeyString("p")
	pad := strings.Repeat("x", 256<<10)
	create := func(c *azcosmos.Client, id string) error {
		k, _ := c.NewContainer("db", "k")
		_, err := k.CreateItem(ctx, pk, fmt.Appendf(nil, `{"id":%q,"pk":"p","pad":%q}`, id, pad), nil)
		return err
	}
	status := func(err error) int {
		var re *azcore.ResponseError
		if errors.As(err, &re) {
			return re.StatusCode
		}
		return 0
	}
	read := func(c *azcosmos.Client, id string) error {
		k, _ := c.NewContainer("db", "k")
		_, err := k.ReadItem(ctx, pk, id, nil)
		return err
	}

	// Leave 32 MiB above the floor, and fill that with items. (Pebble may
	// take 35 MiB of it at once: it preallocates its write-ahead log in
	// blocks of 110% of a memtable.)
	fill(t, filler, 96<<20)
	var acked []string
	for i := 0; ; i++ {
		id := fmt.Sprint("a", i)
		err := create(c, id)
		if err == nil {
			acked = append(acked, id)
			continue
		}
		if status(err) != http.StatusInsufficientStorage || i < 3 {
			t.Fatalf("item %d: %v, want 507 after a few items", i, err)
		}
		t.Logf("%d items of 256 KiB before the floor", i)
		break
	}
	for _, id := range []string{acked[0], acked[len(acked)-1]} {
		if err := read(c, id); err != nil {
			t.Errorf("read %s at the floor: %v", id, err)
		}
	}
	// Another process takes every last byte.
	fill(t, filler, 0)
	if err := create(c, "after-filler"); status(err) != http.StatusInsufficientStorage {
		t.Errorf("write on the full disk: %v, want 507", err)
	}
	if err := eventually(5*time.Second, func() error { return read(c, acked[0]) }); err != nil {
		t.Errorf("read on the full disk: %v", err)
	}
	// SIGTERM: stopped within the 5 s shutdown timeout.
	startStop := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1) // one send
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		t.Logf("stopped %s after SIGTERM on the full disk: %v", time.Since(startStop).Round(time.Millisecond), err)
	case <-time.After(20 * time.Second):
		t.Fatalf("still running 20 s after SIGTERM on the full disk (shutdown timeout 5 s)")
	}
	// The run logged the full disk, not every refused write.
	if lines := loudLines(logs.String()); len(lines) > 3 {
		t.Errorf("the run on a filling disk logged %d warnings or errors, want at most 3:\n%s", len(lines), strings.Join(lines, "\n"))
	}

	// Restart on the full disk.
	endpoint, _, logs = startLogged(t, bin, addr, data, flags...)
	c = client(t, endpoint, data)
	for _, id := range []string{acked[0], acked[len(acked)-1]} {
		if err := read(c, id); err != nil {
			t.Errorf("read %s after a restart on the full disk: %v", id, err)
		}
	}
	if lines := loudLines(logs.String()); len(lines) != 1 {
		t.Errorf("restart on the full disk logged %d warnings or errors, want 1:\n%s", len(lines), strings.Join(lines, "\n"))
	} else {
		t.Logf("the one line: %s", lines[0])
	}
	if read := strings.Contains(logs.String(), "read_only=true"); read == ballast {
		t.Errorf("restart on the full disk: read-only %v with a ballast %v", read, ballast)
	}
	// A restart that released the ballast let Pebble free its old logs'
	// preallocated space: the filler takes that too, and writes are
	// refused again within a few (a stale view of the free space may let
	// one or two through, into space the ballast or the floor still keep).
	fill(t, filler, 0)
	for i := 0; ; i++ {
		err := create(c, fmt.Sprint("r", i))
		if status(err) == http.StatusInsufficientStorage {
			break
		}
		if err != nil || i == 5 {
			t.Fatalf("write %d after a restart on the full disk: %v, want success or 507, and 507 within 5", i, err)
		}
	}
	// Space returns: writes resume without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	resumeStart := time.Now()
	if err := eventually(10*time.Second, func() error { return create(c, "resumed") }); err != nil {
		t.Errorf("write after the filler was deleted: %v", err)
	}
	t.Logf("writes resumed %s after the filler was deleted", time.Since(resumeStart).Round(time.Millisecond))
}

// TestDiskFullClusterMember: a member of a three-node cluster whose disk
// (PARTITA_DISKFULL_DIR, a tmpfs of its own: make diskfull) falls under
// the floor while it leads a partition. Writes through it keep succeeding:
// a full leader leads none of the engine's writes of a group with other
// voters, and forwards them to those (replication.Replica.Lead,
// cluster.Node.Forward); it answered 507 before, for as long as its stalled
// driver kept it believing it led (a bug hunt: 20,463 writes over two
// minutes while the others served them). Reads through it find them. Its
// SIGTERM then stops it.
func TestDiskFullClusterMember(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("PARTITA_DISKFULL_DIR")
	if dir == "" {
		t.Skip("set PARTITA_DISKFULL_DIR to a small filesystem of its own (make diskfull mounts one)")
	}
	bin := build(t)
	nodes := newCluster(t, 3)
	nodes[0].data = filepath.Join(dir, "m1")
	filler := filepath.Join(dir, "filler")
	_ = os.RemoveAll(nodes[0].data)
	_ = os.Remove(filler)
	defer os.RemoveAll(nodes[0].data)
	defer os.Remove(filler)
	startAll(t, bin, nodes, "--min-free-bytes=67108864", "--ballast-bytes=0")
	createContainer(t, nodes[1], 18000) // three partitions: the balancer gives each node one to lead
	if err := eventually(60*time.Second, func() error {
		for _, v := range clusterViews(t, bin, nodes, false) {
			if v.Addr != nodes[0].clusterAddr {
				continue
			}
			for _, k := range v.Keyspaces {
				if k.Leading {
					return nil
				}
			}
		}
		return errors.New("node 1 leads no partition")
	}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	c := nodes[0].container(t, "db", "c")
	upsert := func(i int) error {
		body := fmt.Appendf(nil, `{"id":"i%d","pk":"p%d"}`, i, i%12)
		_, err := c.UpsertItem(ctx, azcosmos.NewPartitionKeyString(fmt.Sprintf("p%d", i%12)), body, nil)
		return err
	}
	for i := range 24 {
		if err := upsert(i); err != nil {
			t.Fatal(err)
		}
	}
	fill(t, filler, 32<<20)     // under the 64 MiB floor
	time.Sleep(2 * time.Second) // the store reads the free space again every second
	for i := range 48 {
		var last error
		ok := eventually(15*time.Second, func() error {
			last = upsert(i)
			var re *azcore.ResponseError
			if errors.As(last, &re) && re.StatusCode == http.StatusInsufficientStorage {
				return nil // a failure, not to be retried: reported below
			}
			return last
		}) == nil
		if !ok || last != nil {
			t.Fatalf("upsert %d through the full member: %v", i, last)
		}
	}
	if !strings.Contains(nodes[0].logs.String(), "disk is full") {
		t.Fatal("node 1 never saw its disk full: the writes proved nothing")
	}
	// Reads through it find every one of them: its own replicas stall
	// behind the others (it cannot persist what they append), so it reads
	// through the leaders (replica.Host.ReadsHere). They answered 404 (and
	// 404/1002 with a session token) before.
	for i := range 48 {
		id := fmt.Sprintf("i%d", i)
		if _, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString(fmt.Sprintf("p%d", i%12)), id, nil); err != nil {
			t.Fatalf("read %s through the full member: %v", id, err)
		}
	}
	nodes[0].stop(t)
}
