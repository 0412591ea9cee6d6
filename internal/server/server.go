// Package server wires Partita's components from a config.Config and owns
// their lifecycle: it opens the store and engine, binds the listeners (the
// API, TLS with a generated self-signed certificate by default; optionally
// the compute gateway; optionally plain-HTTP Prometheus metrics), serves
// them, and on shutdown drains requests and closes the store. The
// listeners are bound first and answer 503 "starting" until the rest is
// open (starting.go). In a cluster
// (--cluster-addr, --join) it starts the node (package cluster) and gives
// the engine its shared catalog and Raft-replicated keyspaces. (The
// --pprof-addr listener is the command's: package cli.) OpenFloor
// runs the floor server (package floor) on the same listener, TLS and
// authentication instead, with no store: the measuring stick of the
// benchmarks.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/netutil"

	"github.com/partitadb/partita/internal/api"
	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/cluster"
	"github.com/partitadb/partita/internal/config"
	"github.com/partitadb/partita/internal/drain"
	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/floor"
	"github.com/partitadb/partita/internal/metrics"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/store"
)

// Server is a running Partita node. Open binds it; Run serves until its
// context ends.
type Server struct {
	cfg  config.Config
	log  *slog.Logger
	st   *store.Store
	ln   net.Listener
	http *http.Server
	// extra is the compute-gateway listener, if configured.
	extraLn   net.Listener
	extraHTTP *http.Server
	// metrics is the Prometheus listener, if configured.
	metricsLn   net.Listener
	metricsHTTP *http.Server
	certPEM     []byte
	eng         *engine.Engine
	// node is this server's part of a cluster; nil on a single node.
	node *cluster.Node
	// starting answer on the listeners while Open runs (none for a
	// listener that cannot be duplicated); Run and Close wait for them to
	// stop.
	starting []*starting
}

// Hooks adjust how Open builds the server's components beyond what
// configuration says; tests use them to inject faults. The zero value
// changes nothing.
type Hooks struct {
	// Store, if set, adjusts the store's options before it opens (a test
	// gives it a filesystem that runs out of space).
	Store func(*store.Options)
	// Now, if set, is the node's clock (default time.Now): tests pass a
	// fake one to make time-based behaviour (throughput budgets, TTL)
	// deterministic.
	Now func() time.Time
	// Listening, if set, is told the API listener's address as soon as it
	// is bound, before anything else opens.
	Listening func(net.Addr)
}

// Open validates cfg, opens the store and engine and binds the listener.
// The caller must call Run (which closes everything) or Close.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (*Server, error) {
	return OpenWith(ctx, cfg, log, Hooks{})
}

// OpenWith is Open with hooks.
func OpenWith(ctx context.Context, cfg config.Config, log *slog.Logger, hooks Hooks) (_ *Server, err error) {
	now := hooks.Now
	if now == nil {
		now = time.Now
	}
	warnFileLimit(log, cfg.Server.MaxConnections)
	if err := store.CheckDir(cfg.Store.Dir); err != nil {
		return nil, err // before the certificate is written there
	}
	s, verifier, tlsConf, err := begin(cfg, log)
	if err != nil {
		return nil, err
	}
	log = s.log
	// The listeners are bound first: a port in use is refused before
	// anything opens, and each answers 503 while the rest does (a cluster
	// member may wait long for its peers: starting).
	msg := "This node is starting: it opens its data directory; retry shortly."
	if cfg.Cluster.Addr != "" {
		msg = "This node is starting: it waits for a majority of its cluster's members to be up (for a new cluster, every member), " +
			"and serves once they are; retry, or send the request to another member."
	}
	var lns []net.Listener
	defer func() {
		if err != nil {
			for _, st := range s.starting {
				st.wait()
			}
			for _, ln := range lns {
				_ = ln.Close()
			}
		}
	}()
	listen := func(addr string, tc *tls.Config) (net.Listener, error) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listen on %s: %w", addr, err)
		}
		if st := serveStarting(ln, tc, msg, log); st != nil {
			s.starting = append(s.starting, st)
		}
		ln = netutil.LimitListener(ln, cfg.Server.MaxConnections)
		lns = append(lns, ln)
		return ln, nil
	}
	if s.ln, err = listen(cfg.Server.Addr, tlsConf); err != nil {
		return nil, err
	}
	if addr := cfg.Server.ComputeGatewayAddr; addr != "" {
		if s.extraLn, err = listen(addr, tlsConf); err != nil {
			return nil, err
		}
	}
	if addr := cfg.Server.MetricsAddr; addr != "" {
		if s.metricsLn, err = listen(addr, nil); err != nil {
			return nil, err
		}
	}
	if hooks.Listening != nil {
		hooks.Listening(s.ln.Addr())
	}
	so := store.Options{Dir: cfg.Store.Dir, Sync: cfg.Store.Durability == "sync", Logger: log, CacheBytes: int64(cfg.Store.CacheMB) << 20,
		MinFreeBytes: cfg.Store.MinFreeBytes, BallastBytes: cfg.Store.BallastBytes, CloseTimeout: cfg.Server.ShutdownTimeout}
	if hooks.Store != nil {
		hooks.Store(&so)
	}
	st, err := store.Open(so)
	if err != nil {
		return nil, err
	}
	s.st = st
	compat := cfg.API.EmulatorCompat
	local, err := replica.OpenLocal(ctx, st, log)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	var host replica.Host = local
	var meta catalog.Backend = local.Meta()
	if cfg.Cluster.Addr == "" && cluster.IsMember(cfg.Store.Dir) {
		_ = st.Close()
		return nil, fmt.Errorf("the data directory %s belongs to a member of a cluster: start it with --cluster-addr, --join and --cluster-secret as before", cfg.Store.Dir)
	}
	if cfg.Cluster.Addr != "" {
		s.node, err = cluster.StartNode(ctx, cluster.NodeConfig{DataDir: cfg.Store.Dir, Addr: cfg.Cluster.Addr, Join: cfg.Cluster.Join,
			Secret: []byte(cfg.Cluster.Secret), Store: st, Local: local, LogKeep: uint64(cfg.Cluster.RaftLogKeep),
			SnapshotRate: int64(cfg.Cluster.SnapshotRateMB) << 20, Replicas: cfg.Cluster.Replicas, Consistency: cfg.API.Consistency, Logger: log, StartTimeout: cfg.Cluster.StartTimeout,
			KeysFingerprint: cluster.KeysFingerprint([]byte(cfg.Cluster.Secret), cfg.Auth.Key, cfg.Auth.ReadOnlyKey)})
		if err != nil {
			_ = st.Close()
			return nil, err
		}
		host, meta = s.node.Keyspaces(), s.node.Catalog()
	}
	var budgets engine.SharedBudgets // nil interface on a single node
	if s.node != nil {
		budgets = s.node.Budgets()
	}
	eng, err := engine.New(ctx, host, meta, engine.Config{Replicated: s.node != nil, Budgets: budgets, GatewayQueryFull: cfg.Engine.GatewayQuery == "full", LenientIDs: compat, RateLimit: cfg.RateLimited(),
		LogicalPartitionMaxBytes: cfg.Engine.LogicalPartitionMaxBytes, PartitionMaxBytes: cfg.Engine.PartitionMaxBytes,
		PartitionMaxRU: cfg.Engine.PartitionMaxRU, AdaptiveCapacity: cfg.Engine.AdaptiveCapacity, LoadSplits: cfg.Engine.LoadSplits,
		BurstCapacity: cfg.Engine.BurstCapacity, QueryMemoBytes: queryMemoBytes(cfg.Engine.QueryMemoMB)}, now, log)
	if err != nil {
		s.closeNode()
		_ = st.Close()
		return nil, err
	}
	s.eng = eng
	if s.node != nil {
		s.node.SetDebit(eng.DebitRemote)
	}
	consistency := cfg.API.Consistency
	accountID := ""
	if compat {
		if consistency == "Session" {
			consistency = "Strong" // the emulator the SDK suites run against is started with /consistency=Strong
		}
		accountID = "localhost" // the emulator's account id
	}
	limits := new(api.Budgets) // the API's and the compute gateway's requests share the node's limits
	acfg := api.Config{
		AccountID: accountID, AdvertiseEndpoint: cfg.API.AdvertiseEndpoint, Consistency: consistency,
		EmulatorIDQuirks: compat, TLS: cfg.Server.TLS, Shared: limits,
	}
	if s.node != nil {
		acfg.Forward, acfg.ForwardRead, acfg.Replicated = forwarder(s.node, "api"), readForwarder(s.node, "api"), true
		acfg.Unfit = s.node.Unfit
		node := s.node
		acfg.ClusterStatus = func(ctx context.Context, digest, all bool) (any, error) {
			if all {
				return node.ClusterStatus(ctx, digest)
			}
			return node.Status(ctx, digest)
		}
		acfg.Gather = gatherer(node, "api")
	}
	handler := api.New(acfg, eng, verifier, now, log)
	if s.node != nil {
		s.node.SetForwarded("api", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			handler.ServeHTTP(w, markForwarded(r))
		}))
		s.node.SetReconcile(eng.Reconcile)
		s.node.SetPinned(eng.Moving)
		if err := s.node.Catalog().Follow(eng.Observe); err != nil {
			s.closeNode()
			_ = st.Close()
			return nil, err
		}
	}
	s.http = newHTTPServer(withExplorer(handler, s.certPEM), tlsConf, log)
	// The compute gateway's handler addresses ids exactly. In a cluster every
	// node has one, for the requests other nodes' compute listeners forward.
	var compute *api.Handler
	if cfg.Server.ComputeGatewayAddr != "" || s.node != nil {
		ccfg := api.Config{AccountID: accountID, Consistency: consistency, TLS: cfg.Server.TLS, Shared: limits}
		if s.node != nil {
			ccfg.Forward, ccfg.ForwardRead, ccfg.Replicated = forwarder(s.node, "compute"), readForwarder(s.node, "compute"), true
			ccfg.Unfit = s.node.Unfit
		}
		compute = api.New(ccfg, eng, verifier, now, log)
		if s.node != nil {
			s.node.SetForwarded("compute", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				compute.ServeHTTP(w, markForwarded(r))
			}))
		}
	}
	if s.extraLn != nil {
		s.extraHTTP = newHTTPServer(withExplorer(compute, s.certPEM), tlsConf, log)
	}
	if s.metricsLn != nil {
		s.metricsHTTP = newMetricsServer(eng, s.node, processState(s.st, limits), log)
	}
	// The real servers take the ports over from here (Run).
	for _, st := range s.starting {
		st.end()
	}
	return s, nil
}

// begin is what Open and OpenFloor do first: validate cfg, and build the
// Server, its authenticator and its TLS configuration (nil without TLS).
// A nil log discards.
func begin(cfg config.Config, log *slog.Logger) (*Server, *auth.Verifier, *tls.Config, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, nil, fmt.Errorf("invalid configuration: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	verifier, err := newVerifier(cfg, log)
	if err != nil {
		return nil, nil, nil, err
	}
	s := &Server{cfg: cfg, log: log}
	tlsConf, err := s.loadTLS()
	if err != nil {
		return nil, nil, nil, err
	}
	return s, verifier, tlsConf, nil
}

// newVerifier returns the request authenticator cfg.Auth describes.
func newVerifier(cfg config.Config, log *slog.Logger) (*auth.Verifier, error) {
	master, err := auth.DecodeKey(cfg.Auth.Key)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	var readOnly []byte
	if cfg.Auth.ReadOnlyKey != "" {
		if readOnly, err = auth.DecodeKey(cfg.Auth.ReadOnlyKey); err != nil {
			return nil, fmt.Errorf("read-only key: %w", err)
		}
	}
	aad, err := aadConfig(cfg)
	if err != nil {
		return nil, err
	}
	log.Info("aad tokens", "mode", aad.Mode.String())
	return auth.NewVerifier(auth.Config{MasterKey: master, ReadOnlyKey: readOnly, MaxSkew: cfg.Auth.MaxClockSkew, AAD: aad})
}

// loadTLS returns the TLS configuration of the API listeners (nil without
// TLS), loading or generating the certificate (kept in s.certPEM).
func (s *Server) loadTLS() (*tls.Config, error) {
	if !s.cfg.Server.TLS {
		if s.cfg.Auth.Key == config.EmulatorKey && s.log != nil {
			s.log.Warn("plain HTTP with the emulator's published key: a web page this machine's browser opens could reach the server " +
				"(DNS rebinding) and sign requests with that key; set --key, or serve only where no browser runs")
		}
		return nil, nil
	}
	cert, pem, missing, err := loadOrCreateCert(s.cfg.Server, s.cfg.Store.Dir)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 && s.log != nil {
		s.log.Warn("the generated TLS certificate does not cover an address the server listens on, so clients that verify it cannot connect there; "+
			"remove the data directory's tls/ to have one generated that does (clients must then trust the new one), or give --tls-cert and --tls-key",
			"missing", missing, "certificate", filepath.Join(s.cfg.Store.Dir, "tls", "cert.pem"))
	}
	s.certPEM = pem
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}, nil
}

// OpenFloor validates cfg and binds a floor server (package floor): a null
// Cosmos DB server on the same listener, TLS, HTTP/2 server settings and
// authentication as Open's, answering from memory with no store or engine.
// cfg.Store.Dir holds only its generated TLS certificate; the compute
// gateway and metrics listeners are not opened. The caller must call Run
// or Close.
func OpenFloor(cfg config.Config, log *slog.Logger) (*Server, error) {
	s, verifier, tlsConf, err := begin(cfg, log)
	if err != nil {
		return nil, err
	}
	log = s.log
	handler := floor.New(floor.Config{AdvertiseEndpoint: cfg.API.AdvertiseEndpoint, Consistency: cfg.API.Consistency, TLS: cfg.Server.TLS},
		verifier, time.Now, log)
	if s.ln, err = net.Listen("tcp", cfg.Server.Addr); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Server.Addr, err)
	}
	s.ln = netutil.LimitListener(s.ln, cfg.Server.MaxConnections)
	s.http = newHTTPServer(handler, tlsConf, log)
	return s, nil
}

// aadConfig returns how the verifier treats type=aad tokens: verified against
// the keys of cfg.Auth.AADJWKS (read here, once) when that is set; accepted
// unsigned, as the Cosmos DB emulator does, under --emulator-compat; refused
// otherwise. An explicit key set wins over --emulator-compat: it asks for
// verification, and compat's other behaviours do not depend on AAD.
func aadConfig(cfg config.Config) (auth.AADConfig, error) {
	a := cfg.Auth
	switch {
	case a.AADJWKS != "":
		data, err := os.ReadFile(a.AADJWKS)
		if err != nil {
			return auth.AADConfig{}, fmt.Errorf("aad-jwks: %w", err)
		}
		keys, err := auth.ParseJWKS(data)
		if err != nil {
			return auth.AADConfig{}, fmt.Errorf("aad-jwks %s: %w", a.AADJWKS, err)
		}
		return auth.AADConfig{Mode: auth.AADVerified, Keys: keys, Issuers: a.AADIssuers, Audiences: a.AADAudiences,
			ReadWriteRoles: a.AADReadWriteRoles, ReadOnlyRoles: a.AADReadOnlyRoles}, nil
	case cfg.API.EmulatorCompat:
		return auth.AADConfig{Mode: auth.AADEmulator}, nil
	}
	return auth.AADConfig{Mode: auth.AADOff}, nil
}

// maxHeaderBytes bounds a request's header block (431 past it): four
// times what Cosmos DB's gateway takes (about 16 KB: its 400 "The size of
// the request headers is too long" met a 15.8 KB session token), where
// net/http's default, 1 MiB, let each connection that never authenticated
// hold 2–4 MB while it sent one header line (a security hunt: 500 such
// connections took the server to 1–2 GB).
const maxHeaderBytes = 64 << 10

// newHTTPServer returns the HTTP server of one listener serving handler
// (for the API listeners, the API behind the Data Explorer: withExplorer).
func newHTTPServer(handler http.Handler, tlsConf *tls.Config, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          httpErrorLog(log),
		TLSConfig:         tlsConf,
	}
}

// processState is the metrics' view of this node: st's free space and
// whether it refuses writes, and the error responses counted in limits
// (shared by the node's API listeners).
func processState(st *store.Store, limits *api.Budgets) func() metrics.Process {
	return func() metrics.Process {
		free, floor := st.Space()
		p := metrics.Process{FreeBytes: free, FloorBytes: floor, WritesRefused: st.Full()}
		for code, n := range limits.ErrorResponses() {
			p.Errors = append(p.Errors, metrics.StatusCount{Status: code, Count: n})
		}
		slices.SortFunc(p.Errors, func(a, b metrics.StatusCount) int { return a.Status - b.Status })
		return p
	}
}

// newMetricsServer returns the plain-HTTP server of the metrics listener,
// which serves GET /metrics and nothing else. Prometheus scrapers cannot sign
// Cosmos DB requests, so it has no authentication: the metrics show no key
// values but do name databases and containers and their sizes, which is why
// they have a listener of their own (bind it to loopback or a private
// network) rather than a path on the API's.
func newMetricsServer(eng *engine.Engine, node *cluster.Node, process func() metrics.Process, log *slog.Logger) *http.Server {
	mux := http.NewServeMux()
	var replicas metrics.Replicas
	if node != nil {
		replicas = func() []metrics.Replica {
			var out []metrics.Replica
			st, _ := node.Status(context.Background(), false) // without digests it cannot fail
			for _, k := range st.Keyspaces {
				r := metrics.Replica{Keyspace: k.ID, Leading: k.Leading, Term: k.Term, Applied: k.Applied, LeaderKnown: k.Leader != ""}
				for _, p := range k.Progress {
					r.Followers = append(r.Followers, metrics.Follower{Node: p.Node, Lag: p.Lag, Known: p.Known, Active: p.Active})
				}
				out = append(out, r)
			}
			return out
		}
	}
	mux.Handle("GET /metrics", metrics.NewHandler(eng, replicas, process))
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      time.Minute, // a scrape reads every partition's report
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          httpErrorLog(log),
	}
}

// Addr is the bound listen address (useful with port 0).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// ComputeGatewayAddr is the bound compute-gateway listen address, or nil
// when there is none.
func (s *Server) ComputeGatewayAddr() net.Addr {
	if s.extraLn == nil {
		return nil
	}
	return s.extraLn.Addr()
}

// MetricsAddr is the bound metrics listen address, or nil when there is
// none.
func (s *Server) MetricsAddr() net.Addr {
	if s.metricsLn == nil {
		return nil
	}
	return s.metricsLn.Addr()
}

// Endpoint is the URL clients connect to.
func (s *Server) Endpoint() string {
	scheme := "http"
	if s.cfg.Server.TLS {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s/", scheme, s.ln.Addr())
}

// CertPEM is the server's TLS certificate in PEM form (nil without TLS), for
// clients that want to trust it rather than skip verification.
func (s *Server) CertPEM() []byte { return s.certPEM }

// Run serves until ctx is done, then shuts down gracefully within
// Server.ShutdownTimeout: three quarters of it for requests to drain, the
// rest (at least) for background work to stop and the store to close, so
// that the process exits in time even when the disk is full or stuck. It
// returns nil on a clean shutdown.
//
// Run also stops, with an error, when the store gives up after a failed
// disk write it cannot recover from in-process (store.Store.Done): only a
// restart helps then, and a supervisor restarts the process.
func (s *Server) Run(ctx context.Context) error {
	if s.st == nil { // a floor server: one listener, nothing else to stop
		return s.cutOff(serve(ctx, s.http, s.ln, s.cfg.Server.ShutdownTimeout))
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var nodeErr <-chan error
	if s.node != nil {
		nodeErr = s.node.Err()
	}
	var stopErr error // why the node stopped serving, when not asked to
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		select {
		case <-s.st.Done():
			cancel()
		case err := <-nodeErr:
			stopErr = err
			cancel()
		case <-runCtx.Done():
		}
	}()
	bg, stopBG := context.WithCancel(runCtx)
	bgDone := make(chan struct{})
	go func() {
		defer close(bgDone)
		s.eng.Run(bg) // splits, TTL purges
	}()
	total := s.cfg.Server.ShutdownTimeout
	// A cluster node asked to stop first hands its leaderships to the
	// other members (cluster.Node.HandOff), serving meanwhile: writes then
	// go to the new leaders rather than meet a dead one. At most a fifth of
	// the shutdown's time, 2 s at most.
	var handOff time.Duration // a single node has no one to hand off to
	if s.node != nil {
		handOff = min(total/5, 2*time.Second)
	}
	serving, stopServing := context.WithCancel(context.Background())
	defer stopServing()
	node := s.node
	var stopBegan time.Time          // when the stop began: its deadline is total after it
	handedOff := make(chan struct{}) // closed once stopBegan is set and serving ends
	go func() {
		defer close(handedOff)
		<-runCtx.Done()
		stopBegan = time.Now()
		if node != nil && ctx.Err() != nil { // asked to stop, not failed
			hctx, done := context.WithTimeout(context.Background(), handOff)
			node.HandOff(hctx)
			done()
		}
		stopServing()
	}()
	drain := (total - handOff) * 3 / 4
	// Any listener failing stops them all; they shut down together, each
	// draining within three quarters of ShutdownTimeout (the rest is for
	// background work and the store).
	type listener struct {
		srv *http.Server
		ln  net.Listener
	}
	lns := []listener{{s.http, s.ln}}
	if s.extraHTTP != nil {
		lns = append(lns, listener{s.extraHTTP, s.extraLn})
	}
	if s.metricsHTTP != nil {
		lns = append(lns, listener{s.metricsHTTP, s.metricsLn})
	}
	sctx, stop := context.WithCancel(serving)
	errs := make([]error, len(lns)) // one slot per listener: no lock needed
	var wg sync.WaitGroup
	for i, l := range lns {
		wg.Go(func() {
			defer stop()
			errs[i] = serve(sctx, l.srv, l.ln, drain)
		})
	}
	wg.Wait()
	stop()
	for i, err := range errs {
		errs[i] = s.cutOff(err)
	}
	serveErr := errors.Join(errs...)
	cancel()
	<-handedOff
	// The whole stop within total, the hand-off and the listeners' drain
	// included (a review: each took its time on top of it).
	deadline := stopBegan.Add(total)
	<-watchDone
	stopBG()
	if s.node != nil {
		s.node.Stopping()
	}
	// Before the store closes under it, unless it is stuck in the store:
	// the store's shutdown then gives up on the database too.
	bgTimer := time.NewTimer(time.Until(deadline))
	select {
	case <-bgDone:
	case <-bgTimer.C:
		s.log.Error("background work did not stop in time; closing the store anyway")
	}
	bgTimer.Stop()
	s.closeNode()
	// Stopping a cluster node (its etcd member) takes its own time: the
	// store still gets a moment to close cleanly.
	if least := time.Now().Add(time.Second); deadline.Before(least) {
		deadline = least
	}
	sctx, cancelClose := context.WithDeadline(context.Background(), deadline)
	defer cancelClose()
	for _, st := range s.starting {
		st.wait() // long since stopped: they took the first moments only
	}
	err := errors.Join(serveErr, s.st.Shutdown(sctx))
	if serr := s.st.Err(); serr != nil {
		err = errors.Join(fmt.Errorf("the store failed and needs a restart: %w", serr), err)
	}
	if stopErr != nil {
		err = errors.Join(fmt.Errorf("the cluster node failed and needs a restart: %w", stopErr), err)
	}
	return err
}

// serve serves ln until ctx is done, then shuts srv down gracefully within
// timeout. It returns nil on a clean shutdown.
//
// A graceful shutdown waits for every connection to go idle, and a
// connection that negotiated HTTP/2 but has not sent its preface yet (a
// browser's preconnect: a Data Explorer tab, or one that has been open)
// goes idle only when it does, or after HTTP/2's 10 s: the shutdown took the
// whole timeout and failed (found by the explorer's browser test under
// load). So once no request has been served for quietBeforeClose, the
// connections left are closed.
func serve(ctx context.Context, srv *http.Server, ln net.Listener, timeout time.Duration) error {
	var active atomic.Int64 // requests in their handlers
	conns := drain.Track(srv)
	if h := srv.Handler; h != nil {
		srv.Handler = conns.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			active.Add(1)
			defer active.Add(-1)
			h.ServeHTTP(w, r)
		}))
	}
	errc := make(chan error, 1) // one send: Serve's result
	go func() {
		if srv.TLSConfig != nil {
			// Certificates come from TLSConfig; ServeTLS enables HTTP/2.
			errc <- srv.ServeTLS(plainHTTPListener{ln}, "", "")
			return
		}
		errc <- srv.Serve(ln)
	}()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		// The whole stop, the wait for connections to close included,
		// within timeout.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
		// Before Shutdown, which drops unanswered any request it reads
		// from then on: no new connection, and the open HTTP/1.1 ones
		// answered and told to close (package drain).
		conns.Begin()
		_ = ln.Close()
		if serr := <-errc; !errors.Is(serr, net.ErrClosed) && !errors.Is(serr, http.ErrServerClosed) {
			err = serr
		}
		conns.AwaitClosed(min(timeout/4, closeGrace))
		done := make(chan error, 1) // one send: Shutdown's result
		go func() { done <- srv.Shutdown(sctx) }()
		if serr := awaitShutdown(srv, done, &active); err == nil {
			err = serr
		}
		if errors.Is(err, context.DeadlineExceeded) {
			// Requests still running (stuck on a disk that does not
			// answer, or a client still sending its body) must not hold
			// the process: drop their connections.
			err = &drainCut{requests: active.Load(), after: timeout}
			_ = srv.Close()
		}
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// cutOff returns serve's err, except that requests cut off at the
// drain's end (drainCut) are not a failure of the stop: logged as a
// warning, not returned (a bug hunt: clients still uploading bodies at a
// SIGTERM made the process exit 1 with only "context deadline exceeded"
// logged, though it had stopped cleanly).
func (s *Server) cutOff(err error) error {
	cut, ok := errors.AsType[*drainCut](err)
	if !ok {
		return err
	}
	s.log.Warn("requests still in flight when the shutdown's drain ended were cut off; their clients got no answer", "requests", cut.requests, "drain", cut.after)
	return nil
}

// drainCut is serve's answer when its drain ran out of time: requests
// still in their handlers then (a client still sending its body, a disk
// that does not answer) had their connections closed.
type drainCut struct {
	requests int64
	after    time.Duration
}

func (d *drainCut) Error() string {
	return fmt.Sprintf("%d requests still in flight after %v were cut off", d.requests, d.after)
}

// closeGrace bounds how long a stopping listener waits for its HTTP/1.1
// connections to close (drain.Conns.AwaitClosed).
const closeGrace = time.Second

// quietBeforeClose is how long a shutting-down listener serves no request
// before it closes the connections left (serve).
const quietBeforeClose = 500 * time.Millisecond

// awaitShutdown returns Shutdown's result from done, closing srv's
// connections once no request has been in a handler for quietBeforeClose
// (see serve).
func awaitShutdown(srv *http.Server, done <-chan error, active *atomic.Int64) error {
	tick := time.NewTicker(quietBeforeClose / 10)
	defer tick.Stop()
	var quietSince time.Time
	for {
		select {
		case err := <-done:
			return err
		case now := <-tick.C:
			if active.Load() > 0 {
				quietSince = time.Time{}
				continue
			}
			if quietSince.IsZero() {
				quietSince = now
				continue
			}
			if now.Sub(quietSince) >= quietBeforeClose {
				_ = srv.Close()
				return <-done
			}
		}
	}
}

// forwarder is the API's Forwarder over node, for the API listener named
// listener (the leader serves the request as its listener of that name).
// gatherer is api.Config.Gather over node: listener's requests sent to
// every other member.
func gatherer(node *cluster.Node, listener string) func(*http.Request) []api.PeerAnswer {
	return func(r *http.Request) []api.PeerAnswer {
		var out []api.PeerAnswer
		for _, a := range node.Gather(r, listener) {
			out = append(out, api.PeerAnswer{Node: a.Node, Addr: a.Addr, Status: a.Status, Body: a.Body, Err: a.Err})
		}
		return out
	}
}

// readForwarder is the api.ReadForwarder of listener through node.
func readForwarder(node *cluster.Node, listener string) api.ReadForwarder {
	return func(w http.ResponseWriter, r *http.Request, body []byte, keyspace, to uint64) bool {
		return node.ForwardRead(w, r, listener, body, keyspace, to)
	}
}

// markForwarded marks a request another member sent to this node's
// cluster listener for the API: forwarded (served here, never sent on), or
// relayed (sent on once, to the partition's leader: cluster.Relayed).
func markForwarded(r *http.Request) *http.Request {
	if cluster.Relayed(r) {
		return api.MarkRelayed(r)
	}
	return api.MarkForwarded(r)
}

func forwarder(node *cluster.Node, listener string) api.Forwarder {
	return func(w http.ResponseWriter, r *http.Request, body []byte, keyspace, leader uint64) api.ForwardResult {
		switch forwarded, local, unknown := node.Forward(w, r, listener, body, keyspace, leader); {
		case forwarded:
			return api.Forwarded
		case local:
			return api.ForwardLocal
		case unknown:
			return api.ForwardUnknown
		}
		return api.ForwardFailed
	}
}

// closeNode stops the server's cluster node, if any.
func (s *Server) closeNode() {
	if s.node == nil {
		return
	}
	if err := s.node.Close(); err != nil {
		s.log.Warn("stop the cluster node", "err", err)
	}
	s.node = nil
}

// Close releases a server that was opened but never run.
func (s *Server) Close() error {
	s.closeNode()
	for _, st := range s.starting {
		st.wait()
	}
	err := s.ln.Close()
	if s.extraLn != nil {
		err = errors.Join(err, s.extraLn.Close())
	}
	if s.metricsLn != nil {
		err = errors.Join(err, s.metricsLn.Close())
	}
	if s.st == nil {
		return err
	}
	return errors.Join(err, s.st.Close())
}

// queryMemoBytes is engine.Config.QueryMemoBytes for --query-memo-mb mb:
// 0 keeps none (the engine's negative budget).
func queryMemoBytes(mb int) int {
	if mb == 0 {
		return -1
	}
	return mb << 20
}
