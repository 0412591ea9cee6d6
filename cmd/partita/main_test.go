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
	"syscall"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/config"
)

// build compiles the partita binary into a temporary directory.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "partita")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
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
