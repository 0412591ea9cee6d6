package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/config"
)

// binDir holds the binary build compiles, once for the package's tests
// (TestMain removes it): linking it took about 8 s, and twenty tests
// linking it each took a third of the package's time in CI.
var (
	binDir  string
	binOnce sync.Once
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "partita-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build returns the partita binary, compiled by the first call (without
// -race: the tests run it as users do). Tests only run it, never change it.
func build(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		bin := filepath.Join(binDir, "partita")
		out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		binPath = bin
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

var readyLine = regexp.MustCompile(`is serving the Cosmos DB API at (https?://\S+) .*ready in`)

// start runs `partita serve` and waits for its ready line; it returns the
// endpoint and the running command.
func start(t *testing.T, bin, addr, data string, extra ...string) (string, *exec.Cmd) {
	t.Helper()
	ep, cmd, _ := startLogged(t, bin, addr, data, extra...)
	return ep, cmd
}

func client(t *testing.T, endpoint, data string) *azcosmos.Client {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(data, "tls", "cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cred, _ := azcosmos.NewKeyCredential(config.EmulatorKey)
	c, err := azcosmos.NewClientWithKey(endpoint, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServeBinary runs the real binary: it becomes ready, serves the SDK over
// TLS with its generated certificate, exits 0 on SIGTERM, and a restart on
// the same data directory keeps the data.
func TestServeBinary(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := build(t)
	data := filepath.Join(t.TempDir(), "data")
	addr := freePort(t)
	endpoint, cmd := start(t, bin, addr, data)
	if endpoint != "https://"+addr+"/" {
		t.Errorf("ready line endpoint %q, want https://%s/", endpoint, addr)
	}
	ctx := context.Background()
	c := client(t, endpoint, data)
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	db, _ := c.NewDatabase("db")
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "k", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, nil); err != nil {
		t.Fatal(err)
	}
	k, _ := db.NewContainer("k")
	for i := range 20 {
		if _, err := k.CreateItem(ctx, azcosmos.NewPartitionKeyString("p"), []byte(fmt.Sprintf(`{"id":"%d","pk":"p"}`, i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("partita serve after SIGTERM: %v, want exit status 0", err)
	}

	endpoint, _ = start(t, bin, addr, data)
	c = client(t, endpoint, data)
	db, _ = c.NewDatabase("db")
	k, _ = db.NewContainer("k")
	for i := range 20 {
		if _, err := k.ReadItem(ctx, azcosmos.NewPartitionKeyString("p"), fmt.Sprint(i), nil); err != nil {
			t.Fatalf("item %d after restart: %v", i, err)
		}
	}
}

// TestServeRejectsBadFlags: invalid configuration exits 2 with a message.
func TestServeRejectsBadFlags(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := build(t)
	out, err := exec.Command(bin, "serve", "--durability=sometimes", "--data", t.TempDir()).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "durability") {
		t.Errorf("serve --durability=sometimes: %v, %s; want exit 2 naming durability", err, out)
	}
}

// TestServeRefusesDataDirInUse: a second server on a data directory a
// running one holds exits 1, saying so, and the first keeps serving.
func TestServeRefusesDataDirInUse(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := build(t)
	data := filepath.Join(t.TempDir(), "data")
	endpoint, cmd := start(t, bin, freePort(t), data)
	out, err := exec.Command(bin, "serve", "--addr", freePort(t), "--data", data).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "already in use by another process") {
		t.Errorf("second serve on %s: %v, %s; want exit 1 saying the directory is already in use by another process", data, err, out)
	}
	if _, err := client(t, endpoint, data).CreateDatabase(context.Background(), azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Errorf("the first server after the refused second: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("partita serve after SIGTERM: %v", err)
	}
}
