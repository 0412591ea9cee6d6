package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap/zapcore"

	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/replication"
	"github.com/partitadb/partita/internal/store"
)

// OfflineCatalog is the catalog a stopped member last knew, read from a
// copy of its etcd data: partita check of a member's data directory, whose
// catalog is in etcd, not in its store. The copy is started as a cluster
// of its own (etcd's force-new-cluster, the disaster-recovery path): it
// keeps the entries the member knew committed and drops the others, so it
// is the member's own view, which may lag the cluster's if the member was
// behind when it stopped. The member's directory is not written to, and
// the copy has no certificate, so it cannot reach the cluster's members
// (they accept only peers whose certificates chain to the cluster's CA).
type OfflineCatalog struct {
	*Backend
	e       *embed.Etcd
	cli     *clientv3.Client
	scratch string
}

// OpenOfflineCatalog copies dataDir's etcd member into a scratch
// directory under tmp, starts it alone, and returns its catalog backend.
// The member's node must be stopped (its data is copied as it is on disk).
// Close stops the copy and deletes it.
func OpenOfflineCatalog(ctx context.Context, dataDir, tmp string, log *slog.Logger) (*OfflineCatalog, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	src := filepath.Join(dataDir, etcdDir)
	if _, err := os.Stat(filepath.Join(src, "member")); err != nil {
		return nil, fmt.Errorf("cluster: %s holds no etcd member: %w", src, err)
	}
	scratch, err := os.MkdirTemp(tmp, "partita-check-etcd-")
	if err != nil {
		return nil, fmt.Errorf("cluster: offline catalog: %w", err)
	}
	oc := &OfflineCatalog{scratch: scratch}
	fail := func(err error) (*OfflineCatalog, error) {
		_ = oc.Close()
		return nil, fmt.Errorf("cluster: offline catalog of %s: %w", dataDir, err)
	}
	dir := filepath.Join(scratch, etcdDir)
	if err := copyTree(src, dir); err != nil {
		return fail(err)
	}
	sock := filepath.Join(scratch, socketName)
	if len(sock) > maxSocketPath {
		return fail(fmt.Errorf("socket path %s is longer than a Unix socket allows: set TMPDIR to a shorter directory", sock))
	}
	peer, err := freeLoopbackURL()
	if err != nil {
		return fail(err)
	}
	ec := embed.NewConfig()
	ec.Name = "partita-check"
	ec.Dir = dir
	ec.ForceNewCluster = true
	ec.ClusterState = embed.ClusterStateFlagExisting
	ec.ListenPeerUrls = []url.URL{*peer}
	ec.AdvertisePeerUrls = []url.URL{*peer}
	ec.InitialCluster = ec.Name + "=" + peer.String()
	client := url.URL{Scheme: "unix", Path: sock}
	ec.ListenClientUrls = []url.URL{client}
	ec.AdvertiseClientUrls = []url.URL{client}
	ec.MaxTxnOps = etcdMaxTxnOps
	ec.MaxRequestBytes = etcdMaxRequestSize
	ec.EnableGRPCGateway = false
	ec.LogLevel = "warn"
	stopping := new(atomic.Bool)
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zapLogger(log, zapcore.WarnLevel, stopping))
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return fail(fmt.Errorf("start: %w", err))
	}
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Server.HardStop()
		e.Close()
		return fail(fmt.Errorf("start: %w", err))
	case <-ctx.Done():
		e.Server.HardStop()
		e.Close()
		return fail(ctx.Err())
	case <-timer.C:
		e.Server.HardStop()
		e.Close()
		return fail(errors.New("the copy of the member was not ready after a minute"))
	}
	oc.e = e
	stopping.Store(true) // its stop's messages are not the user's concern
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:          []string{"unix://" + sock},
		DialTimeout:        5 * time.Second,
		MaxCallSendMsgSize: etcdMaxRequestSize + 64<<10,
		Logger:             zapLogger(log, zapcore.ErrorLevel, stopping),
	})
	if err != nil {
		return fail(fmt.Errorf("client: %w", err))
	}
	oc.cli = cli
	oc.Backend = NewBackend(cli, BackendConfig{})
	return oc, nil
}

// Close stops the copy and deletes its scratch directory.
func (oc *OfflineCatalog) Close() error {
	var err error
	if oc.cli != nil {
		err = oc.cli.Close()
		oc.cli = nil
	}
	if oc.e != nil {
		oc.e.Close()
		oc.e = nil
	}
	if oc.scratch != "" {
		err = errors.Join(err, os.RemoveAll(oc.scratch))
		oc.scratch = ""
	}
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// freeLoopbackURL returns an http URL on a loopback port free a moment ago.
func freeLoopbackURL() (*url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return nil, err
	}
	return &url.URL{Scheme: "http", Host: addr}, nil
}

// copyTree copies the directory tree src to dst (regular files and
// directories; etcd's data holds nothing else).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o700)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s: not a regular file", path)
		}
		return copyFile(path, to)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// MemberKeyspaces returns a stopped member's keyspaces for partita check:
// local's, except that a replicated keyspace's LastLSN is the largest LSN
// its group applied on the member (replication.AppliedLSN), since its LSNs
// were issued by the group's leaders, not reserved locally; and a keyspace
// of whose group the member has no replica (its replicas are on other
// members, docs/cluster.md "Placement on a subset", or the member never
// created its replica) is replica.ErrNotHeld.
func MemberKeyspaces(local *replica.Local, st *store.Store) replica.Host {
	return memberHost{local, st}
}

type memberHost struct {
	*replica.Local
	st *store.Store
}

func (h memberHost) Replica(id uint64) (replica.Replica, error) {
	r, err := h.Local.Replica(id)
	if err != nil {
		return nil, err
	}
	lsn, ok, err := replication.AppliedLSN(h.st, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("cluster: keyspace %d: %w", id, replica.ErrNotHeld)
	}
	return memberReplica{r, lsn}, nil
}

type memberReplica struct {
	replica.Replica
	last uint64
}

func (r memberReplica) LastLSN() uint64 { return r.last }
