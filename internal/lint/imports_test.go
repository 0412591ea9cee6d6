package lint

import (
	"encoding/json"
	"io"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/partitadb/partita"

// allowed lists, for each package, the internal packages its non-test code
// may import directly (STYLE §1: imports point down). A new edge needs a
// reason in review; a new package needs an entry here.
var allowed = map[string][]string{
	"cmd/partita":              {"internal/cli"}, // its e2e test also imports config (EmulatorKey)
	"internal/advise":          {"synthkey"},     // partition key analysis; talks to servers only through the SDK; synthkey: the keys it proposes are synthkey's, within its limits
	"internal/bench":           {"synthkey"},
	"internal/cli":             {"internal/advise", "internal/auth", "internal/bench", "internal/catalog", "internal/cluster", "internal/config", "internal/document", "internal/engine", "internal/replica", "internal/server", "internal/store"},                 // catalog, engine, replica, store: partita check and partita load open a data directory themselves, without server.Open's start-up repairs; document: load's partition keys
	"internal/server":          {"internal/api", "internal/auth", "internal/catalog", "internal/cluster", "internal/config", "internal/drain", "internal/engine", "internal/explorer", "internal/floor", "internal/metrics", "internal/replica", "internal/store"}, // floor: OpenFloor runs it on the same listener, TLS and auth; cluster and catalog: a cluster node's keyspaces and shared catalog for the engine
	"internal/floor":           {"internal/auth", "internal/document", "internal/status"},                                                                                                                                                                          // the null server of the benchmarks: the api's auth, item parsing and errors, no engine
	"internal/explorer":        {},                                                                                                                                                                                                                                 // the Data Explorer page: static assets; the page reaches data only through the signed Cosmos API
	"internal/metrics":         {"internal/engine"},
	"internal/config":          {},
	"internal/api":             {"internal/advise", "internal/auth", "internal/document", "internal/engine", "internal/status", "internal/throughput"}, // advise: the advise endpoint runs the advisor on a sample the engine reads
	"internal/auth":            {},
	"internal/auth/authtest":   {},                                                                                                                                                                                                                                       // test tokens and JWKS; imported by tests only
	"internal/engine":          {"internal/catalog", "internal/document", "internal/index", "internal/partition", "internal/query/exec", "internal/query/parse", "internal/query/plan", "internal/replica", "internal/script", "internal/status", "internal/throughput"}, // never store: it reaches data through the replica seam
	"internal/script":          {},
	"internal/catalog":         {"internal/document", "internal/index", "internal/partition"},                                        // persists through its Backend interface
	"internal/replica":         {"internal/store"},                                                                                   // the seam's types, and its implementation on the node's store
	"internal/replication":     {"internal/replica", "internal/store"},                                                               // Raft groups of keyspaces: logs and applied state in the node's store
	"internal/cluster":         {"internal/catalog", "internal/drain", "internal/replica", "internal/replication", "internal/store"}, // etcd, credentials, transport: implements catalog.Backend over etcd, replication.Transport between nodes, and replica.Host over Raft groups in the node's store
	"internal/index":           {"internal/document"},
	"internal/document":        {},
	"internal/drain":           {}, // a stopping HTTP server's HTTP/1.1 connections closed before Shutdown
	"internal/partition":       {"internal/document"},
	"internal/query/parse":     {},
	"internal/query/exec":      {"internal/document", "internal/geo", "internal/query/parse"}, // document: JSON's string escapes
	"internal/geo":             {},                                                            // GeoJSON geography for the spatial query functions
	"internal/query/plan":      {"internal/document", "internal/index", "internal/query/parse"},
	"internal/throughput":      {},
	"internal/store":           {},
	"internal/store/storetest": {}, // test doubles of the store's filesystem (Pebble's vfs); imported by tests only
	"internal/status":          {},
	"internal/testserver":      {"internal/auth", "internal/config", "internal/server", "internal/store"}, // store: the hook that gives tests a faulty filesystem
	"internal/lint":            {},
	"synthkey":                 {}, // public: applications import it; it imports no internal package
}

type pkg struct {
	ImportPath string
	Name       string
	Imports    []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func TestLayering(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		ok, known := allowed[rel]
		if !known {
			t.Errorf("package %s is not in the layer table of internal/lint: add it with its allowed imports", rel)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(imp, module+"/")
			if !slices.Contains(ok, dep) {
				t.Errorf("%s imports %s: not allowed by the layer picture (DESIGN §2, STYLE §1)", rel, dep)
			}
		}
	}
}

func TestOnlyStoreImportsPebble(t *testing.T) {
	for _, p := range listPackages(t) {
		for _, imp := range p.Imports {
			// storetest: the store's test doubles speak Pebble's vfs.FS.
			if strings.HasPrefix(imp, "github.com/cockroachdb/pebble") && p.ImportPath != module+"/internal/store" && p.ImportPath != module+"/internal/store/storetest" {
				t.Errorf("%s imports %s: only internal/store may use Pebble", p.ImportPath, imp)
			}
		}
	}
}

func TestNoGrabBagPackages(t *testing.T) {
	banned := []string{"util", "utils", "common", "helpers", "misc", "types", "models", "shared", "base"}
	for _, p := range listPackages(t) {
		if slices.Contains(banned, path.Base(p.ImportPath)) {
			t.Errorf("package %s has a grab-bag name (STYLE §2)", p.ImportPath)
		}
	}
}
