package synthkey_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/partitadb/partita/internal/testserver"
)

// shared is the server the examples run against, started on first use (so
// unit tests, benchmarks and fuzz workers start none) and stopped by
// TestMain.
var shared struct {
	once   sync.Once
	tb     mainTB
	client *azcosmos.Client
}

func TestMain(m *testing.M) {
	code := m.Run()
	if !shared.tb.stop() && code == 0 {
		code = 1
	}
	os.Exit(code)
}

// mainTB is the testing.TB that testserver.Start and Server.Client get
// outside any test (Example functions take no *testing.T). Only the methods
// they call are implemented; the embedded nil TB would panic on any other,
// which a test run reports loudly.
type mainTB struct {
	testing.TB
	mu       sync.Mutex // guards the fields below
	cleanups []func()
	dirs     []string
	failed   bool
}

func (tb *mainTB) Helper() {}

func (tb *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "synthkey-example-")
	if err != nil {
		tb.Fatalf("temp dir: %v", err)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.dirs = append(tb.dirs, dir)
	return dir
}

func (tb *mainTB) Cleanup(f func()) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.cleanups = append(tb.cleanups, f)
}

func (tb *mainTB) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "example server: "+format+"\n", args...)
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.failed = true
}

// Fatalf panics: it is called only while an Example starts the server, and
// the test binary reports the panic as that Example's failure.
func (tb *mainTB) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("example server: "+format, args...))
}

// stop runs the cleanups in reverse order, removes the temporary
// directories and reports whether nothing failed.
func (tb *mainTB) stop() bool {
	tb.mu.Lock()
	cleanups, dirs := tb.cleanups, tb.dirs
	tb.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	for _, d := range dirs {
		os.RemoveAll(d)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return !tb.failed
}

// exampleContainer returns a new, empty container id with partition key
// path /partitionKey in database "examples" of the shared server. In an
// application this is client.NewContainer("db", "id") against Cosmos DB,
// the emulator or `partita serve`.
func exampleContainer(id string) *azcosmos.ContainerClient {
	return exampleContainerWith(id, azcosmos.PartitionKeyDefinition{Paths: []string{"/partitionKey"}})
}

// exampleContainerWith is exampleContainer with the partition key
// definition def.
func exampleContainerWith(id string, def azcosmos.PartitionKeyDefinition) *azcosmos.ContainerClient {
	shared.once.Do(func() {
		s := testserver.Start(&shared.tb, testserver.Options{})
		shared.client = s.Client(&shared.tb)
	})
	ctx := context.Background()
	c := shared.client
	if _, err := c.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "examples"}, nil); err != nil && !isStatus(err, http.StatusConflict) {
		panic(err)
	}
	db, err := c.NewDatabase("examples")
	if err != nil {
		panic(err)
	}
	if k, err := db.NewContainer(id); err == nil {
		// Left over from an earlier run in this process (-count=N).
		if _, err := k.Delete(ctx, nil); err != nil && !isStatus(err, http.StatusNotFound) {
			panic(err)
		}
	}
	props := azcosmos.ContainerProperties{ID: id, PartitionKeyDefinition: def}
	if _, err := db.CreateContainer(ctx, props, nil); err != nil {
		panic(err)
	}
	k, err := db.NewContainer(id)
	if err != nil {
		panic(err)
	}
	return k
}

func isStatus(err error, code int) bool {
	re, ok := errors.AsType[*azcore.ResponseError](err)
	return ok && re.StatusCode == code
}
