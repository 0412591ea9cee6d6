package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
)

// Paths inside a node's data directory.
const (
	etcdDir    = "etcd"    // the etcd member's data
	clusterDir = "cluster" // mode 0700: the PEM files and the client socket
	socketName = "etcd.sock"
)

// maxSocketPath is the longest Unix socket path Linux accepts (sun_path
// holds 108 bytes with the terminating NUL).
const maxSocketPath = 107

// Limits of the embedded member, which the catalog backend's changes must
// fit: one catalog change is one transaction (deleting a database deletes
// all its records in one), so etcd's defaults (128 operations, 1.5 MiB)
// are raised.
const (
	etcdMaxTxnOps      = 16384
	etcdMaxRequestSize = 8 << 20 // bytes
)

// EtcdConfig configures a node's etcd member.
type EtcdConfig struct {
	// DataDir is the node's data directory: the member keeps its data in
	// DataDir/etcd, and its TLS files and client socket in DataDir/cluster.
	DataDir string
	// Self is this node's member; it must be one of Members.
	Self Member
	// Members is the --join list (Members): the cluster's initial members.
	Members []Member
	// Cert is the node's certificate: the member's peer TLS, both ways,
	// and the only certificates it accepts from peers are the CA's.
	Cert *Cert
	// StartTimeout bounds how long StartEtcd waits for the member to be
	// ready, which needs a majority of Members up (at a restart too: the
	// member publishes itself through the cluster), or, for a new cluster,
	// all of them; 0 waits until ctx ends, as a member whose peers are
	// being restarted one by one must (an operator's supervisor may start
	// them minutes apart).
	StartTimeout time.Duration
	// Logger receives etcd's messages at warn and above; nil discards
	// them.
	Logger *slog.Logger
	// refusals collects the members whose TLS handshakes with this node
	// failed on credentials, whoever found them (awaitNewMember here,
	// checkPeerCerts in StartNode): a start that fails names them. Nil:
	// StartEtcd keeps its own.
	refusals *peerRefusals
	// settings are the node's settings every member of a new cluster must
	// share besides the join list (--replicas, --consistency), as one
	// string: a member with no etcd data compares them with the others'
	// before the cluster forms (awaitNewMember). Empty: not compared.
	settings string
}

// Etcd is a running etcd member embedded in this process, and a client
// connected to it over its Unix socket.
type Etcd struct {
	cli *clientv3.Client
	// stopping is set by Close and while Restart stops the member: etcd's
	// messages are logged at debug level then (zapLogger).
	stopping *atomic.Bool
	// launch starts the member again (Restart) and waits until it is
	// ready; it returns what ends the new member's calls in progress.
	launch func(ctx context.Context) (*embed.Etcd, context.CancelFunc, error)
	// endCalls ends the running member's calls in progress (callsUntil).
	endCalls context.CancelFunc
	// errc carries the member's fatal errors, whichever start of it
	// raised them (Err); fwd counts the goroutines that pass them on.
	errc chan error
	fwd  sync.WaitGroup

	mu       sync.Mutex // serializes Restart and Close
	e        *embed.Etcd
	closed   bool
	closeErr error
}

// StartEtcd starts the node's etcd member and waits until it is ready (it
// has joined the cluster and serves), until ctx ends, or StartTimeout
// passes (when set), whichever comes first; on failure it stops the
// member. While it waits it logs, every waitLogEvery, that it does.
//
// A data directory without an etcd member directory starts a new cluster
// with Members as its initial members; one with a member directory
// restarts the member, which rejoins the cluster it was part of (the join
// list is then only checked by etcd against what it recorded).
//
// The member listens for peers on Self.PeerURL with mutual TLS (Cert,
// TLS 1.3, peers' certificates must chain to the CA) and for clients on a
// Unix socket in DataDir/cluster, reachable only through the file system.
func StartEtcd(ctx context.Context, cfg EtcdConfig) (_ *Etcd, err error) {
	if cfg.refusals == nil {
		cfg.refusals = &peerRefusals{}
	}
	defer func() {
		// The cause a probe found, rather than only the wait that ended
		// (a cluster operations hunt: a wrong --cluster-secret exited
		// with "not ready after 15s (it needs a majority…)" while two of
		// three members were up, and in a new cluster all three members
		// waited for each other saying only that; the cause was in the
		// log only, or nowhere).
		if why := cfg.refusals.String(); err != nil && why != "" {
			err = fmt.Errorf("%w; %s", err, why)
		}
	}()
	if cfg.Cert == nil {
		return nil, errors.New("cluster: etcd: no node certificate")
	}
	if m, ok := Find(cfg.Members, cfg.Self.Addr); !ok || m != cfg.Self {
		return nil, fmt.Errorf("cluster: etcd: %s is not in the join list", cfg.Self.Addr)
	}
	if cfg.StartTimeout < 0 {
		return nil, fmt.Errorf("cluster: etcd: start timeout %v: want 0 (none) or more", cfg.StartTimeout)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	data, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd: %w", err)
	}
	sock := filepath.Join(data, clusterDir, socketName)
	if len(sock) > maxSocketPath {
		return nil, fmt.Errorf("cluster: etcd: socket path %s is %d bytes, longer than the %d a Unix socket allows: use a shorter data directory path",
			sock, len(sock), maxSocketPath)
	}
	files, err := cfg.Cert.WriteFiles(filepath.Join(data, clusterDir))
	if err != nil {
		return nil, err
	}
	stopping := new(atomic.Bool)
	// launch starts the member and waits for it, at most timeout (0: no
	// bound); it returns what ends the member's calls (callsUntil).
	launch := func(ctx context.Context, timeout time.Duration) (*embed.Etcd, context.CancelFunc, error) {
		calls, endCalls := context.WithCancel(context.Background())
		ec, err := embedConfig(cfg, data, sock, files, zapLogger(log, zapcore.WarnLevel, stopping), calls)
		if err == nil {
			var m *embed.Etcd
			if m, err = launchEtcd(ctx, ec, cfg, timeout, stopping); err == nil {
				return m, endCalls, nil
			}
		}
		endCalls()
		return nil, nil, err
	}
	// A first start that etcd refuses because the cluster has this member
	// already leaves no etcd data behind: it would make the directory a
	// member's (IsMember), which a single node then refuses, though it
	// holds nothing of the cluster (a bug hunt). (Any other failure keeps
	// it: a member that timed out may have voted in etcd's Raft.)
	_, statErr := os.Stat(filepath.Join(data, etcdDir))
	fresh := errors.Is(statErr, fs.ErrNotExist)
	failed := func(err error) error {
		if !strings.Contains(err.Error(), "has already been bootstrapped") {
			return err
		}
		if fresh {
			_ = os.RemoveAll(filepath.Join(data, etcdDir))
		}
		return fmt.Errorf("%w (the cluster already has the member %s, whose data is not in this directory: a member "+
			"cannot join again with a new data directory yet; start it on its own)", err, cfg.Self.Addr)
	}
	timeout := cfg.StartTimeout
	if _, err := os.Stat(filepath.Join(data, etcdDir, "member")); errors.Is(err, fs.ErrNotExist) {
		began := time.Now()
		actx, cancel := ctx, context.CancelFunc(func() {})
		if timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, timeout)
		}
		err := awaitNewMember(actx, cfg, log)
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			return nil, fmt.Errorf("cluster: etcd: member %s holds no cluster data and could not confirm within %v that it may "+
				"start as a new member: a new cluster forms once all %d members are up with empty data directories, and a "+
				"member that holds data must be up to confirm that an empty one never started", cfg.Self.Addr, timeout, len(cfg.Members))
		case err != nil:
			if fresh {
				_ = os.RemoveAll(filepath.Join(data, etcdDir))
			}
			return nil, err
		}
		if timeout > 0 {
			timeout = max(timeout-time.Since(began), time.Second)
		}
	}
	e, endCalls, err := launch(ctx, timeout)
	if err != nil {
		return nil, failed(err)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"unix://" + sock},
		DialTimeout: 5 * time.Second,
		// Room for the largest request the member accepts.
		MaxCallSendMsgSize: etcdMaxRequestSize + 64<<10,
		Logger:             zapLogger(log, zapcore.WarnLevel, stopping),
	})
	if err != nil {
		endCalls()
		e.Close()
		return nil, fmt.Errorf("cluster: etcd: client: %w", err)
	}
	et := &Etcd{e: e, cli: cli, stopping: stopping, errc: make(chan error, 1), endCalls: endCalls}
	et.launch = func(ctx context.Context) (*embed.Etcd, context.CancelFunc, error) { return launch(ctx, 0) }
	et.forward(e)
	return et, nil
}

// launchEtcd starts a member with ec and waits until it is ready, until
// ctx ends or timeout passes (0: no bound); on failure it stops the
// member. Stopped because ctx ended (the node asked to stop while it
// waits) or timeout passed, it sets stopping first: etcd's complaints
// about the listeners closing under it are then not logged as errors.
func launchEtcd(ctx context.Context, ec *embed.Config, cfg EtcdConfig, timeout time.Duration, stopping *atomic.Bool) (*embed.Etcd, error) {
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd: start: %w", err)
	}
	// NB: embed.Etcd.Close waits for its client servers, which wait for
	// the member to be ready or stopping: a member that is not ready must
	// be stopped first, or Close hangs.
	abort := func() {
		e.Server.HardStop()
		e.Close()
	}
	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}
	began := time.Now()
	waiting := time.NewTicker(waitLogEvery)
	defer waiting.Stop()
	for {
		select {
		case <-e.Server.ReadyNotify():
			return e, nil
		case err := <-e.Err():
			abort()
			return nil, fmt.Errorf("cluster: etcd: start: %w", err)
		case <-ctx.Done():
			stopping.Store(true)
			abort()
			return nil, fmt.Errorf("cluster: etcd: start: %w", ctx.Err())
		case <-expired:
			stopping.Store(true)
			abort()
			return nil, fmt.Errorf("cluster: etcd: member %s not ready after %v (it needs a majority of the %d members up)",
				cfg.Self.Addr, timeout, len(cfg.Members))
		case <-waiting.C:
			if cfg.Logger != nil {
				cfg.Logger.Warn("waiting for a majority of the cluster's members to be up: this node serves once they are "+
					"(its API answers 503 meanwhile)", "members", len(cfg.Members), "majority", len(cfg.Members)/2+1,
					"waited", time.Since(began).Round(time.Second))
			}
		}
	}
}

// waitLogEvery is how often a member waiting to start says so (StartEtcd).
const waitLogEvery = 10 * time.Second

// forward passes m's fatal errors on to Err until m stops.
func (e *Etcd) forward(m *embed.Etcd) {
	e.fwd.Go(func() {
		for err := range m.Err() {
			select {
			case e.errc <- err:
			default: // one is enough: the node stops
			}
		}
	})
}

// callsUntil returns gRPC interceptors that end the member's calls,
// streams and unary calls alike, when calls ends, as their clients ending
// them would. Restart ends them first: closing a member waits, up to
// etcd's request timeout (7 s here), for the calls in progress, and the
// client Restart keeps holds streams open (the catalog's watch, its lock's
// lease keep-alive) that it does not end by itself.
func callsUntil(calls context.Context) []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainStreamInterceptor(streamsUntil(calls)), grpc.ChainUnaryInterceptor(unaryUntil(calls))}
}

// streamsUntil is callsUntil's interceptor of streams.
func streamsUntil(calls context.Context) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		ctx, cancel := context.WithCancel(ss.Context())
		defer cancel()
		defer context.AfterFunc(calls, cancel)()
		return handler(srv, endingStream{ServerStream: ss, ctx: ctx})
	}
}

// unaryUntil is callsUntil's interceptor of unary calls.
func unaryUntil(calls context.Context) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(calls, cancel)()
		return handler(ctx, req)
	}
}

// endingStream is a server stream whose context callsUntil ends.
type endingStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s endingStream) Context() context.Context { return s.ctx }

// bindURL returns u with its host resolved to an IP address, the first
// that net.Listen would bind for it: etcd binds only IP addresses ("expected
// IP in URL for binding"), where a member's cluster address may be a host
// name (on three machines, names are what an operator gives), which the
// member's name and advertised URL keep.
func bindURL(u url.URL) (url.URL, error) {
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return url.URL{}, fmt.Errorf("cluster: etcd: peer URL %s: %w", u.String(), err)
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return u, nil
	}
	a, err := net.ResolveTCPAddr("tcp", u.Host)
	if err != nil {
		return url.URL{}, fmt.Errorf("cluster: etcd: the host of this member's cluster address: %w", err)
	}
	u.Host = net.JoinHostPort(a.IP.String(), port)
	return u, nil
}

// embedConfig returns the embedded member's configuration; its calls end
// when calls does (callsUntil).
func embedConfig(cfg EtcdConfig, data, sock string, files CertFiles, log *zap.Logger, calls context.Context) (*embed.Config, error) {
	ec := embed.NewConfig()
	ec.Name = cfg.Self.Addr
	ec.Dir = filepath.Join(data, etcdDir)
	peer, err := url.Parse(cfg.Self.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd: peer URL: %w", err)
	}
	listen, err := bindURL(*peer)
	if err != nil {
		return nil, err
	}
	ec.ListenPeerUrls = []url.URL{listen}
	ec.AdvertisePeerUrls = []url.URL{*peer}
	client := url.URL{Scheme: "unix", Path: sock}
	ec.ListenClientUrls = []url.URL{client}
	ec.AdvertiseClientUrls = []url.URL{client}
	var ic []string
	for _, m := range cfg.Members {
		ic = append(ic, m.Addr+"="+m.PeerURL)
	}
	ec.InitialCluster = strings.Join(ic, ",")
	ec.InitialClusterToken = clusterToken(cfg.Members)
	// NB: etcd ignores the initial cluster when it restarts from its WAL;
	// "existing" says so explicitly.
	ec.ClusterState = embed.ClusterStateFlagNew
	switch _, err := os.Stat(filepath.Join(ec.Dir, "member")); {
	case err == nil:
		ec.ClusterState = embed.ClusterStateFlagExisting
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("cluster: etcd: %w", err)
	}
	ec.PeerTLSInfo = transport.TLSInfo{
		CertFile:       files.Cert,
		KeyFile:        files.Key,
		TrustedCAFile:  files.CA,
		ClientCertAuth: true,
		// The CA chain is the authentication: every holder of the
		// secret can issue any name, so checking a peer's source
		// address against its certificate's names adds no security,
		// and it would refuse a node whose connections leave from
		// another of its addresses.
		SkipClientSANVerify: true,
	}
	ec.TlsMinVersion = "TLS1.3"
	ec.MaxTxnOps = etcdMaxTxnOps
	ec.MaxRequestBytes = etcdMaxRequestSize
	ec.EnableGRPCGateway = false
	// Revisions of the catalog and elections are kept an hour, then
	// compacted; the catalog reads only the newest.
	ec.AutoCompactionMode = "periodic"
	ec.AutoCompactionRetention = "1h"
	ec.LogLevel = "warn"
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(log)
	ec.GRPCAdditionalServerOptions = callsUntil(calls)
	return ec, nil
}

// clusterToken names the etcd cluster after its initial members, so that
// members started with different join lists refuse each other instead of
// forming two clusters that believe they are one.
func clusterToken(ms []Member) string {
	h := sha256.New()
	for _, m := range ms {
		h.Write([]byte(m.Addr + "\x00"))
	}
	return "partita-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// Client returns the client connected to this member. It is safe for
// concurrent use and valid until Close.
func (e *Etcd) Client() *clientv3.Client { return e.cli }

// Err reports the member's fatal errors (it stops serving), and a Restart
// whose member did not start again; the channel is closed by Close. A
// node whose member fails must stop (docs/cluster.md).
func (e *Etcd) Err() <-chan error { return e.errc }

// Restart stops the member, ending its calls in progress (callsUntil),
// and starts it again on its data, with new connections to its peers; it
// waits until the member is ready again, however long a majority takes to
// answer (a member that cannot reach one could not serve before either),
// or until ctx ends. The client stays: its calls fail while the member is
// down, and it reconnects. Why (watchEtcd): a member's peer connections
// can stay stalled long after the network that stalled them has healed,
// and etcd offers no other way to renew them. A member that does not
// start again is reported on Err.
func (e *Etcd) Restart(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("cluster: etcd: closed")
	}
	if e.e == nil {
		return errors.New("cluster: etcd: the member is not running")
	}
	e.stopping.Store(true)
	e.endCalls()
	e.e.Close()
	e.e = nil
	e.fwd.Wait()
	e.stopping.Store(false)
	m, endCalls, err := e.launch(ctx)
	if err != nil {
		err = fmt.Errorf("cluster: etcd: the member did not start again: %w", err)
		if ctx.Err() == nil { // not the node stopping
			select {
			case e.errc <- err:
			default:
			}
		}
		return err
	}
	e.e, e.endCalls = m, endCalls
	e.forward(m)
	return nil
}

// Close closes the client, then stops the member and waits for it. Later
// calls return the first's result.
func (e *Etcd) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return e.closeErr
	}
	e.closed = true
	e.stopping.Store(true)
	err := e.cli.Close()
	e.endCalls()
	if e.e != nil {
		e.e.Close()
	}
	e.fwd.Wait()
	close(e.errc)
	if err != nil && !errors.Is(err, context.Canceled) {
		e.closeErr = fmt.Errorf("cluster: etcd: close client: %w", err)
	}
	return e.closeErr
}
