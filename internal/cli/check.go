package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/cluster"
	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/store"
)

const checkUsage = `Usage:
  partita check --data DIR

Checks the consistency of a data directory that no server is using: for
every keyspace (physical partition) it derives each item's order, index,
change, unique key and statistics entries and compares them with the stored
ones, both ways; it checks that every item lies in a range of its container,
that every keyspace belongs to a container, and that LSNs and _rids lie in
their reservations. The keyspaces of containers deleted just before a crash,
which the next start drops, are listed in the summary, not as problems. It prints one line per problem, with the key in hex, and
a summary. It repairs nothing and writes nothing.

A cluster member's directory is checked against the catalog the member
last knew: a copy of its etcd data, started alone in a temporary directory
(etcd's force-new-cluster) and deleted afterwards. Stop that node first;
the others may run on. A member that was behind when it stopped may show
problems the cluster has since resolved: start it, let it catch up, stop
it, and check again. Its keyspaces' LSNs are checked against what their
Raft groups applied on it.

Exit status: 0 no problems, 1 problems found, 2 usage error or the directory
could not be opened or read (a server running on it, a store of storage
format 6 that no server has converted yet).

Flags:
`

// checkCmd runs `partita check`.
func checkCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("partita check", checkUsage, stderr)
	dir := config.Default().Store.Dir
	fs.StringVar(&dir, "data", dir, "data directory")
	if err := parseFlags(fs, args, os.Getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "partita check: %v\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "partita check: unexpected arguments: %q\n", fs.Args())
		return 2
	}
	r, err := checkDir(ctx, dir)
	if err != nil {
		fmt.Fprintf(stderr, "partita check: %v\n", err)
		return 2
	}
	fmt.Fprint(stdout, r)
	if !r.OK() {
		return 1
	}
	return 0
}

// checkDir opens the store in dir as the server does, but without the
// repairs a start makes (engine.OpenForCheck), and checks it.
func checkDir(ctx context.Context, dir string) (*engine.CheckReport, error) {
	if err := isStore(dir); err != nil {
		return nil, err
	}
	st, err := store.Open(store.Options{Dir: dir, ReadOnly: true})
	if errors.Is(err, store.ErrInUse) {
		// Pebble locks the directory: a running server holds the lock.
		return nil, fmt.Errorf("%w (is a server running on it? stop it first: the check needs the directory to itself)", err)
	}
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := refuseFormat6(st, dir); err != nil {
		return nil, err
	}
	host, err := replica.OpenLocal(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	var (
		meta  catalog.Backend = host.Meta()
		check replica.Host    = host
	)
	if cluster.IsMember(dir) {
		// Its catalog is in the cluster's etcd: the local one is empty, so
		// every keyspace would look like a deleted container's. The
		// store's lock, taken above, keeps the member's node from starting
		// while its etcd data is copied.
		oc, err := cluster.OpenOfflineCatalog(ctx, dir, os.TempDir(), nil)
		if err != nil {
			return nil, err
		}
		defer oc.Close()
		meta = oc
		check = cluster.MemberKeyspaces(host, st)
	}
	e, err := engine.OpenForCheck(ctx, check, readOnly{meta}, nil)
	if err != nil {
		return nil, fmt.Errorf("load the catalog: %w", err)
	}
	return e.Check(ctx)
}

// isStore returns an error unless dir holds a Pebble database (store.Open
// would create one in any directory).
func isStore(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "MANIFEST-") {
			return nil
		}
	}
	return fmt.Errorf("%s holds no Partita data directory (no MANIFEST file)", dir)
}

// refuseFormat6 returns an error if st holds keys of storage format 6,
// which the server converts at its first start (replica.OpenLocal). The
// check writes nothing, so it refuses rather than converting: in format 6
// items and derived entries sat directly under kinds 0x02–0x07, where the
// current layout has nothing (docs/storage-seams.md).
func refuseFormat6(st *store.Store, dir string) error {
	it := st.NewIter(store.Span{Lower: []byte{0x02}, Upper: []byte{0x10}}, false)
	old := it.Next()
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return err
	}
	if old {
		return fmt.Errorf("%s is in storage format 6, from before keyspaces: start `partita serve --data %s` once to convert it, stop it, then check it", dir, dir)
	}
	return nil
}

// errReadOnly refuses the catalog writes of a check.
var errReadOnly = errors.New("the catalog needs an upgrade that partita check does not make: start `partita serve` on the directory once, stop it, then check it")

// readOnly is a catalog backend that refuses writes: catalog.Open writes
// only to upgrade a format 6 catalog, which a check must not do.
type readOnly struct{ catalog.Backend }

func (readOnly) Apply(map[string][]byte, []string) error { return errReadOnly }
