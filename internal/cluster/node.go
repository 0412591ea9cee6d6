package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partitadb/partita/internal/drain"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/replication"
	"github.com/partitadb/partita/internal/store"
)

// ForwardPath prefixes a client request one node forwards to another on
// the cluster listener: ForwardPath/<listener>/<the request's own path>,
// where listener names the API listener it arrived on ("api", "compute").
const ForwardPath = "/forward"

// NodeConfig configures a node of a cluster.
type NodeConfig struct {
	// DataDir is the node's data directory (etcd's data and the node's
	// credentials live under it).
	DataDir string
	// Addr is this node's cluster address (host:port): its mutual-TLS
	// listener for Raft and forwarded requests; etcd's peers use port+1.
	Addr string
	// Join lists every member's cluster address, this node's among them.
	Join []string
	// Secret is the cluster secret every member shares (at least 16
	// bytes): the cluster's CA derives from it.
	Secret []byte
	// Store is the node's store: the groups' logs and keyspaces.
	Store *store.Store
	// Local is the store's keyspaces (replica.OpenLocal).
	Local *replica.Local
	// Tick is the Raft tick (default 100 ms; elections take 10 ticks).
	Tick time.Duration
	// Wait bounds how long a write waits for its group to apply it, and a
	// linearizable read for its group's leader (default 10 s).
	Wait time.Duration
	// LogKeep is how many applied entries a group's log keeps before it
	// is truncated (replication.Config.LogKeep; default 4096).
	LogKeep uint64
	// SnapshotRate bounds the bytes per second of the snapshots the node
	// sends (TransportConfig.SnapshotRate); 0: unbound.
	SnapshotRate int64
	// Replicas is how many members hold each keyspace's replicas
	// (Placement); 0, or as many as the members or more: every member.
	Replicas int
	// StartTimeout bounds how long the node waits for its etcd member to
	// join the cluster (EtcdConfig.StartTimeout), and again for the steps
	// after it that need the cluster's quorum (joined); 0 waits until ctx
	// ends.
	StartTimeout time.Duration
	// Consistency is the account's default consistency level
	// (--consistency), the same on every member: the first member to
	// start records it, and a member started with another is refused.
	// Empty: not checked.
	Consistency string
	// KeysFingerprint identifies the account keys this node runs with
	// (KeysFingerprint); members whose keys differ are logged at start.
	// Empty: not checked.
	KeysFingerprint string
	// Logger receives the node's messages; nil discards them.
	Logger *slog.Logger
}

// Node is a running member of a cluster: its etcd member and shared
// catalog, its Raft host, driver and transport, and its cluster listener.
type Node struct {
	cfg NodeConfig
	log *slog.Logger
	// relaying maps a keyspace whose leader a forward could not reach from
	// here to a relayedAt: until when its forwards go by relay first
	// (relayFor).
	relaying sync.Map
	self     Member
	members  []Member
	cert     *Cert
	etcd     *Etcd
	shared   *SharedCatalog
	tr       *Transport
	host     *replication.Host
	ks       *Keyspaces
	// placement names each keyspace's voters; kv serves the remote reads
	// of the keyspaces this node holds (kvserve.go).
	placement Placement
	kv        *kvServer
	ln        net.Listener
	// handingOff: the node is stopping (HandOff): it drains its
	// leaderships and refuses new ones.
	handingOff atomic.Bool
	// conns are the cluster listener's connections, drained when it
	// closes (quietBeforeShutdown).
	conns  *drain.Conns
	srv    *http.Server
	client *http.Client

	// forwarded serves requests other nodes forward, by the name of the
	// listener they arrived on (SetForwarded).
	forwarded sync.Map // string → http.Handler
	// reconcile is told when the node's replicas should be reconciled
	// with the catalog (SetReconcile).
	reconcile atomic.Pointer[func()]
	// pinned tells which groups leader balance must leave where they are
	// (SetPinned).
	pinned atomic.Pointer[func(uint64) bool]
	// budgets are the charges to report to partitions' leaders and what
	// they answered (budgets.go); debit serves the reports of other nodes
	// (SetDebit).
	budgets *Budgets
	debit   atomic.Pointer[func(string, float64) (spent, low time.Duration)]
	// bal is leader balance's memory (balance.go).
	bal balancing

	stop   context.CancelFunc
	wg     sync.WaitGroup
	runErr chan error
}

// StartNode starts this node's part of the cluster: it binds the cluster
// listener, starts the etcd member (which waits for a majority of the
// members), the shared catalog and the Raft host. The caller opens the
// engine over Keyspaces and Catalog, then calls Follow; Close stops it all
// (not the store).
func StartNode(ctx context.Context, cfg NodeConfig) (n *Node, err error) {
	if cfg.Tick <= 0 {
		cfg.Tick = 100 * time.Millisecond
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 10 * time.Second
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	members, err := Members(cfg.Join)
	if err != nil {
		return nil, err
	}
	self, ok := Find(members, cfg.Addr)
	if !ok {
		return nil, fmt.Errorf("cluster: --cluster-addr %s is not in the --join list", cfg.Addr)
	}
	if err := checkEmpty(ctx, cfg); err != nil {
		return nil, err
	}
	claimed, err := claimDataDir(cfg.DataDir, self)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil && claimed {
			unclaimDataDir(cfg.DataDir)
		}
	}()
	ca, err := NewCA(cfg.Secret)
	if err != nil {
		return nil, err
	}
	cert, err := ca.NodeCert(self.Addr, []string{self.Host()})
	if err != nil {
		return nil, err
	}
	n = &Node{cfg: cfg, log: lg, self: self, members: members, cert: cert, runErr: make(chan error, 1), budgets: NewBudgets(nil)}
	started := n // n is nil once a failing return has set it
	defer func() {
		if err != nil {
			_ = started.Close()
		}
	}()
	if n.ln, err = net.Listen("tcp", self.Addr); err != nil {
		return nil, fmt.Errorf("cluster: listen on %s: %w", self.Addr, err)
	}
	if err := checkReleases(ctx, cert, self, members, 2*time.Second); err != nil {
		return nil, err
	}
	probeCtx, stopProbe := context.WithCancel(ctx)
	refusals := &peerRefusals{}
	go checkPeerCerts(probeCtx, lg, cert, self, members, refusals)
	n.placement = NewPlacement(memberIDs(members), cfg.Replicas)
	settings := fmt.Sprintf("--replicas %d", n.placement.replicas)
	if cfg.Consistency != "" {
		settings += " --consistency " + strings.ToLower(cfg.Consistency)
	}
	n.etcd, err = StartEtcd(ctx, EtcdConfig{DataDir: cfg.DataDir, Self: self, Members: members, Cert: cert, Logger: lg,
		StartTimeout: cfg.StartTimeout, refusals: refusals, settings: settings})
	stopProbe()
	if err != nil {
		return nil, err // naming the members that refused this node's credentials (refusals)
	}
	if err := joined(ctx, cfg.StartTimeout, func(ctx context.Context) error {
		if err := recordPlacement(ctx, n.etcd.Client(), n.placement, members); err != nil {
			return err
		}
		if cfg.Consistency != "" {
			if err := recordConsistency(ctx, n.etcd.Client(), cfg.Consistency); err != nil {
				return err
			}
		}
		if cfg.KeysFingerprint != "" {
			if err := checkKeys(ctx, n.etcd.Client(), self.ID, cfg.KeysFingerprint, lg); err != nil {
				return fmt.Errorf("cluster: record the account keys' fingerprint: %w", err)
			}
		}
		n.shared, err = NewSharedCatalog(ctx, n.etcd.Client(), SharedConfig{Log: lg, Self: self.ID, Members: memberIDs(members)})
		return err
	}); err != nil {
		return nil, err
	}
	inbox := make(chan replication.Message, 4096)
	peers := map[uint64]string{}
	for _, m := range members {
		peers[m.ID] = m.Addr
	}
	n.tr, err = NewTransport(TransportConfig{Self: self.ID, Peers: peers, Cert: cert, Logger: lg, SnapshotRate: cfg.SnapshotRate,
		Deliver: func(m replication.Message) {
			if n.refuses(m) {
				return
			}
			select {
			case inbox <- m:
			default: // Raft retries what is dropped
			}
		}})
	if err != nil {
		return nil, err
	}
	wake := func(uint64) {
		if f := n.reconcile.Load(); f != nil {
			(*f)()
		}
	}
	n.host, err = replication.Open(cfg.Store, self.ID, n.tr, replication.Config{Logger: lg, LogKeep: cfg.LogKeep, Unknown: wake, Settled: wake})
	if err != nil {
		return nil, err
	}
	n.tr.SetHost(n.host)
	n.client = newPeerClient(cert)
	n.ks = NewKeyspaces(n.host, cfg.Local, self.ID, n.placement, cfg.Wait, &remoteNet{self: self.ID, client: n.client, wait: cfg.Wait,
		addr: func(id uint64) (string, bool) { m, ok := n.member(id); return m.Addr, ok }})
	mux := http.NewServeMux()
	mux.HandleFunc(ForwardPath+"/{listener}/", n.serveForwarded)
	n.kv = &kvServer{self: self.ID, src: nodeKV{n}}
	n.kv.register(mux)
	mux.HandleFunc("POST "+BudgetPath, n.serveBudget)
	mux.HandleFunc("GET "+StatusPath, n.serveStatus)
	n.srv = &http.Server{Handler: requireRelease(mux), TLSConfig: cert.ServerTLS(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)} // refused handshakes are expected
	n.tr.Register(n.srv) // Raft's own protocol on the same listener
	n.conns = drain.Track(n.srv)
	n.srv.Handler = n.conns.Handler(n.srv.Handler)
	runCtx, stop := context.WithCancel(context.Background())
	n.stop = stop
	n.wg.Go(func() {
		if err := n.srv.ServeTLS(n.ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			lg.Error("cluster listener", "err", err)
		}
	})
	n.wg.Go(func() {
		if err := n.host.Run(runCtx, cfg.Tick, inbox); err != nil {
			lg.Error("replication stopped: the store failed; restart the node", "err", err)
			n.runErr <- err
		}
	})
	// runCtx: Close stops the driver that would decide a mark in flight,
	// and waits for this loop.
	n.wg.Go(func() { every(runCtx, stableInterval, func() { n.ks.PublishStable(runCtx) }) })
	n.wg.Go(func() { every(runCtx, balanceInterval, func() { n.balanceLeaders() }) })
	n.wg.Go(func() { every(runCtx, budgetInterval, func() { n.reportBudgets(runCtx) }) })
	n.wg.Go(func() { every(runCtx, kvSnapIdle/4, func() { n.kv.snaps.expire(false) }) })
	n.wg.Go(func() { n.watchEtcd(runCtx) })
	lg.Info("cluster node started", "node", fmt.Sprintf("%016x", self.ID), "addr", self.Addr, "members", len(members))
	return n, nil
}

// joined runs the steps of a start that follow the etcd member's joining
// (each needs the etcd cluster's quorum) under timeout (0: until ctx
// ends), so that --cluster-start-timeout bounds them too: a majority lost
// just after the member joined left the node waiting, silent, until it was
// stopped. Past the timeout the error says so.
func joined(ctx context.Context, timeout time.Duration, steps func(context.Context) error) error {
	if timeout <= 0 {
		return steps(ctx)
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := steps(sctx)
	if err != nil && sctx.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("cluster: the etcd cluster did not answer within --cluster-start-timeout %v after this member "+
			"joined it (a majority of the members must be up): %w", timeout, err)
	}
	return err
}

// checkPeerCerts, while this node waits for its etcd member to join the
// others, shakes hands with each other member's cluster listener every 10 s
// and logs, once per member, a handshake that failed on a certificate: with
// another --cluster-secret a node waited for a minute while etcd logged
// hundreds of TLS errors that named no cause (a bug hunt). Members not up
// yet, or not serving yet, are not reported.
func checkPeerCerts(ctx context.Context, lg *slog.Logger, cert *Cert, self Member, members []Member, refusals *peerRefusals) {
	reported := map[uint64]bool{}
	for {
		for _, m := range members {
			if m.ID == self.ID || reported[m.ID] {
				continue
			}
			d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 2 * time.Second}, Config: cert.ClientTLS(m.Host())}
			c, err := d.DialContext(ctx, "tcp", m.Addr)
			if err == nil {
				_ = c.Close()
				continue
			}
			if e := explainTLS(err); e != err {
				reported[m.ID] = true
				refusals.add(lg, m.Addr, e)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Second):
		}
	}
}

// peerRefusals are the members whose TLS handshake with this node failed
// on credentials (checkPeerCerts, awaitNewMember), for the error of a
// start that fails.
type peerRefusals struct {
	mu    sync.Mutex
	addrs []string
	errs  []string
}

// add records that member addr refused (err), the first time for addr, and
// logs it then.
func (r *peerRefusals) add(lg *slog.Logger, addr string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if slices.Contains(r.addrs, addr) {
		return
	}
	lg.Error("cannot join a member: its credentials and this node's disagree", "member", addr, "err", err)
	r.addrs = append(r.addrs, addr)
	r.errs = append(r.errs, fmt.Sprintf("member %s: %v", addr, err))
}

// String says which members refused, or "" for none.
func (r *peerRefusals) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) == 0 {
		return ""
	}
	return "credentials disagree with " + strings.Join(r.errs, "; ")
}

// newPeerClient returns the client that sends requests to other members
// (forwarded requests, gathered reports): HTTP/1.1 over the cluster's
// mutual TLS, each connection kept alive for the next request (up to 64
// idle per member, closed after a minute idle).
//
// Why not HTTP/2, as it first was: a request then crossed more goroutines
// on the leader (the connection's frame reader, its serve loop, then a
// handler goroutine; HTTP/1.1 reads and serves a connection's requests
// on one), and on a loaded machine each handoff waits for a core.
// Measured from the forwarding node (a scratch build, ycsb-a through a
// follower of a loopback cluster, 4 workers): the time a forward took
// beyond the leader's handling of it was 0.63–0.72 ms p50 (1.4–1.6 ms
// p90) over HTTP/2, 0.43–0.47 ms (1.04–1.27 ms) over HTTP/1.1. What
// HTTP/2 offers here, multiplexing, buys nothing on a network between a
// few nodes; concurrent forwards take a connection each.
//
// Its connections are closed abortively (dialPeer).
func newPeerClient(cert *Cert) *http.Client {
	tc := cert.ClientTLS("")
	tc.NextProtos = []string{"http/1.1"}
	protos := new(http.Protocols)
	protos.SetHTTP1(true)
	return &http.Client{Transport: releaseTransport{&http.Transport{TLSClientConfig: tc, Protocols: protos,
		DialContext: dialPeer, MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}}}
}

// dialPeer dials another member for the peer client, with SO_LINGER 0:
// closing the connection discards whatever the kernel has not yet sent and
// resets it. A forward given up on (its outcome unknown: 408, "read the
// item to learn whether it was applied") is cancelled, which closes its
// connection; closed the ordinary way, the request stayed in the kernel's
// send queue and was retransmitted until the leader was reachable again.
// A network cut healed half a minute later delivered it whole to a leader
// that had kept its leadership, which applied it then — after the client
// had read the item, found the write missing, and written a newer
// version, which the late write overwrote (a partition hunt with iptables,
// three of three runs). With the reset, what the leader has not received
// when the forward gives up never arrives; what it has received it serves
// at once, and a write it proposed then is in doubt until applied
// (docs/cluster.md, invariant 6). For the same reason, and so that a
// kept-alive connection does not outlive a network cut, a request left
// unacknowledged for unackedTimeout ends its connection (unackedControl).
func dialPeer(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Control: unackedControl, Timeout: peerDialTimeout}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		if err := tc.SetLinger(0); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// peerDialTimeout bounds a connection to another member: a member cut off
// from this one drops the connection's first packets and the kernel goes
// on retrying them for minutes, where a member's answer takes
// milliseconds. A forward whose connection was not made was not sent
// (notSent), so it may go another way (relay).
const peerDialTimeout = 2 * time.Second

// peerCall sends req to another member with client (the cluster's mutual
// TLS) and returns the headers and body, at most limit bytes, of its 200
// answer; any other status is an error carrying the answer's text.
func peerCall(client *http.Client, req *http.Request, limit int64) (http.Header, []byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(data))
	}
	return resp.Header, data, nil
}

// IsMember reports whether dataDir belongs to a member of a cluster (it
// holds an etcd member's data): such a directory must not be opened as a
// single node, whose catalog is elsewhere and which would drop the
// cluster's keyspaces as orphans.
func IsMember(dataDir string) bool {
	_, err := os.Stat(filepath.Join(dataDir, etcdDir))
	return err == nil
}

// ErrNotEmpty is returned by StartNode for a data directory that holds a
// single node's data: a new member starts empty.
var ErrNotEmpty = errors.New("cluster: the data directory holds a single node's data; a new member of a cluster starts with an empty one (moving a single node's data into a cluster is not supported yet)")

// checkEmpty refuses to make a member of a data directory that already
// holds a single node's catalog or keyspaces: the cluster's catalog would
// not know them, and the engine would drop them as orphans.
//
// It also refuses a member's directory that lost part of what it held: its
// store (etcd data and identity left, the store new: each partition's Raft
// group would find its log gone and panic on the first append, after the
// node said it served), or its etcd data (the identity left). A member's
// data cannot be rebuilt from the others yet (a membership change), so
// both name what is gone (a cluster operations hunt).
func checkEmpty(ctx context.Context, cfg NodeConfig) error {
	ks, err := cfg.Local.Keyspaces(ctx)
	if err != nil {
		return err
	}
	_, idErr := os.Stat(filepath.Join(cfg.DataDir, clusterDir, identityName))
	claimed := idErr == nil
	if IsMember(cfg.DataDir) {
		if claimed && cfg.Local.Fresh() && len(ks) == 0 {
			return fmt.Errorf("cluster: the data directory %s holds this member's etcd data (%s) and identity (%s/%s) but a new, empty store: "+
				"the store's files were lost or removed, and with them every partition's replica and Raft log here. A member's data cannot be "+
				"rebuilt from the others yet (replacing a member is not supported): put back the directory as it was when the member stopped, "+
				"or recreate the cluster", cfg.DataDir, etcdDir, clusterDir, identityName)
		}
		return nil
	}
	if claimed && len(ks) > 0 {
		return fmt.Errorf("cluster: the data directory %s holds a member's identity (%s/%s) and data, but its etcd data (%s) is gone: "+
			"the member's votes and its view of the catalog were lost with it, and a member's data cannot be rebuilt from the others yet "+
			"(replacing a member is not supported): put back the directory as it was when the member stopped, or recreate the cluster",
			cfg.DataDir, clusterDir, identityName, etcdDir)
	}
	records := 0
	if err := cfg.Local.Meta().Load(ctx, "", func(string, []byte) error { records++; return nil }); err != nil {
		return err
	}
	if len(ks) > 0 || records > 0 {
		return fmt.Errorf("%w: %s (%d keyspaces, %d catalog records)", ErrNotEmpty, cfg.DataDir, len(ks), records)
	}
	return nil
}

// ID is this node's id.
func (n *Node) ID() uint64 { return n.self.ID }

// Members returns the cluster's members.
func (n *Node) Members() []Member { return n.members }

// Keyspaces is the node's replica.Host.
func (n *Node) Keyspaces() *Keyspaces { return n.ks }

// nodeStopWait bounds how long Close waits for the node's goroutines.
const nodeStopWait = 5 * time.Second

// Stopping ends the node's catalog writes in progress and fails those that
// follow (SharedCatalog.Stopping): the server calls it once it serves no
// more requests and has asked its background work to stop, which then
// does not wait out an etcd without a quorum. Close follows.
func (n *Node) Stopping() {
	if n.shared != nil {
		n.shared.Stopping()
	}
}

// Catalog is the catalog's shared backend.
func (n *Node) Catalog() *SharedCatalog { return n.shared }

// Err reports a failure after which the node must stop: the store failed
// under replication, or etcd stopped.
func (n *Node) Err() <-chan error {
	out := make(chan error, 1)
	go func() {
		select {
		case err := <-n.runErr:
			out <- err
		case err := <-n.etcd.Err():
			out <- fmt.Errorf("cluster: etcd stopped: %w", err)
		}
	}()
	return out
}

// SetForwarded sets the handler of the requests other nodes forward here
// that arrived there on the listener named listener (the API handler of
// the same listener here, marking them forwarded).
func (n *Node) SetForwarded(listener string, h http.Handler) { n.forwarded.Store(listener, h) }

// SetReconcile sets what is told when this node's replicas should be
// reconciled with the catalog: another node sent messages for a group this
// node has no replica of (it may have to create it), or this node became a
// group's settled leader (a new keyspace's format record, an index rebuild
// are its leader's to do). f must not block.
func (n *Node) SetReconcile(f func()) { n.reconcile.Store(&f) }

// SetPinned sets which groups leader balance leaves alone: those of a
// separation under way, which one node must lead through its cut-over
// (docs/cluster.md, "Separations in a cluster").
func (n *Node) SetPinned(f func(group uint64) bool) { n.pinned.Store(&f) }

// serveForwarded serves a request another node forwarded: the listener
// admitted only members (mutual TLS), so the request's path after
// ForwardPath is served as the client sent it.
func (n *Node) serveForwarded(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("listener")
	v, ok := n.forwarded.Load(name)
	if !ok || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		http.Error(w, "not serving forwarded requests for listener "+name, http.StatusServiceUnavailable)
		return
	}
	prefix := ForwardPath + "/" + name
	r2 := r.Clone(r.Context())
	r2.URL.Path = strings.TrimPrefix(r.URL.Path, prefix)
	r2.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, prefix)
	r2.RequestURI = r2.URL.RequestURI()
	if h := r.Header.Get(forwardHostHeader); h != "" {
		r2.Host = h
		r2.Header.Del(forwardHostHeader)
	}
	if r2.Header.Get(RelayHeader) != "" {
		r2.Header.Del(RelayHeader)
		r2 = r2.WithContext(context.WithValue(r2.Context(), relayKey{}, true))
	}
	v.(http.Handler).ServeHTTP(w, r2)
}

// relayKey marks, in its context, a request another member relayed here.
type relayKey struct{}

// Relayed reports whether another member relayed r here (RelayHeader,
// which only the cluster's mutual-TLS listener reads): this node may
// forward it once to the partition's leader, but not relay it again.
func Relayed(r *http.Request) bool {
	v, _ := r.Context().Value(relayKey{}).(bool)
	return v
}

// forwardHostHeader carries the client's Host to the leader (the request's
// own Host is the leader's cluster address), which the account resource
// advertises as the endpoint.
const forwardHostHeader = "X-Partita-Forwarded-Host"

// stableInterval is how often the keyspaces this node leads publish their
// stable marks when idle: a follower's change feed shows the last write of
// a burst at most that much (and a round trip) later than its leader's.
const stableInterval = 50 * time.Millisecond

// leaderWait bounds how long a request waits for its group to elect a
// leader before it is forwarded (an election takes about 10 ticks).
const leaderWait = 5 * time.Second

// Forward sends r (body: its body), which arrived on the listener named
// listener, to the leader of keyspace's group, to be served there as that
// listener serves it, and copies the response to w. leader is the node the
// engine saw leading (0: none); when it is unknown or this node, Forward
// waits for the group to elect one. A leader that cannot be reached (its
// connection refused: the request was not sent) or that answers it no
// longer leads (NotLeaderHeader: nothing was evaluated) is passed over
// until this node learns of another, or for passAgain (passing), so a
// leader's death or a leadership transfer costs the client a wait, not an
// error. Forward returns whether
// it wrote a response (forwarded), or that this node leads now (local), or
// neither within leaderWait (failed: the caller answers 503), or, with
// unknown set, that a leader took the request and stopped answering: this
// node learned of another leader before the answer began, or
// forwardAnswerWait passed (a leader paused with SIGSTOP, or cut off, holds
// the connection open and never answers; the write hung for the whole
// pause), or the connection failed after the request may have been sent (a
// leader killed: EOF). Whether such a write was applied is unknown (the
// caller answers 408), nothing was written to w. (A GET is failed instead:
// it wrote nothing.)
func (n *Node) Forward(w http.ResponseWriter, r *http.Request, listener string, body []byte, keyspace, leader uint64) (forwarded, local, unknown bool) {
	start := time.Now()
	deadline := start.Add(leaderWait)
	var passed uint64 // a leader that could not take the request
	var passedAt time.Time
	pass := func(l uint64) { passed, passedAt = l, time.Now() }
	tried := 0 // other voters tried while this node's disk is full
	// A relay is tried once, unless the request came relayed; first, while
	// a relay of the keyspace's requests worked lately.
	relayed := Relayed(r)
	if v, ok := n.relaying.Load(keyspace); ok && !relayed && time.Now().Before(v.(relayedAt).until) {
		relayed = true
		if sent, fwd, unk := n.relay(w, r, listener, body, keyspace, v.(relayedAt).unreachable); sent {
			return fwd, false, unk
		}
	}
	for {
		for leader == 0 || leader == n.self.ID || passing(leader, passed, time.Since(passedAt)) {
			if leader == 0 && !relayed && time.Since(start) >= relayAfter {
				relayed = true
				if sent, fwd, unk := n.relay(w, r, listener, body, keyspace, 0); sent {
					return fwd, false, unk
				}
			}
			if leader == n.self.ID {
				if rep, err := n.ks.Replica(keyspace); err == nil && rep.Lead() == nil {
					return false, true, false
				}
				if v := n.otherVoter(keyspace, tried); v != 0 {
					// This node's disk is full: whatever it believes it
					// leads (its driver may be stalled, its view stale),
					// another voter leads or knows who does.
					if tried > 0 {
						if time.Now().After(deadline) || r.Context().Err() != nil {
							return false, false, false
						}
						time.Sleep(20 * time.Millisecond)
					}
					leader, tried = v, tried+1
					continue
				}
			}
			if time.Now().After(deadline) || r.Context().Err() != nil {
				return false, false, false
			}
			time.Sleep(20 * time.Millisecond)
			leader = n.ks.Leader(keyspace)
		}
		to, ok := n.member(leader)
		if !ok {
			return false, false, false
		}
		resp, release, gaveUp, err := n.sendWatched(r, to, listener, body, keyspace, leader)
		if err != nil {
			passOver, unknown := sendFailure(err, gaveUp, r.Method)
			switch {
			case passOver:
				if !relayed {
					relayed = true
					if sent, fwd, unk := n.relay(w, r, listener, body, keyspace, leader); sent {
						return fwd, false, unk
					}
				}
				pass(leader)
				continue
			case gaveUp:
				n.log.Warn("a forwarded request's leader stopped answering: its outcome is unknown", "leader", to.Addr, "keyspace", keyspace)
			default:
				n.log.Warn("forward a request to the partition's leader", "leader", to.Addr, "keyspace", keyspace, "unknown", unknown, "err", err)
			}
			return false, false, unknown
		}
		if v := resp.Header.Get(notLeaderHeader); v != "" {
			resp.Body.Close()
			release()
			named, _ := strconv.ParseUint(v, 16, 64)
			next, nextPassed, again := afterNotLeader(leader, passed, named)
			if !again {
				pass(nextPassed) // the leader that answered, passed over from now
			}
			if leader = next; again {
				if time.Now().After(deadline) || r.Context().Err() != nil {
					return false, false, false
				}
				time.Sleep(20 * time.Millisecond)
				if l := n.ks.Leader(keyspace); l != 0 {
					leader = l
				}
			}
			continue
		}
		defer release()
		defer resp.Body.Close()
		copyResponse(w, resp)
		return true, false, false
	}
}

// RelayHeader marks a request that another member relays (Node.relay):
// the member receiving it forwards it, once, to the partition's leader it
// knows, where a request forwarded to it is never sent on (Relayed).
// Requests carry it only between members: send removes any a client set,
// and only the cluster listener reads it.
const RelayHeader = "X-Partita-Relay"

// relayFor is how long, after a relay of a keyspace's request, its next
// forwards are relayed first rather than wait to learn again that the
// leader cannot be reached from here (a connection's timeout, or a second
// without a leader, each request). A forward after it tries the leader
// again.
const relayFor = 10 * time.Second

// relayedAt is what Node.relaying keeps of a keyspace: until when its
// forwards are relayed first, and the leader they could not reach (0: none
// was known), whom the relay passes over.
type relayedAt struct {
	until       time.Time
	unreachable uint64
}

// relayAfter is how long a forward waits for this node to learn of a
// leader before it relays the request (an election takes 1–2 s; a member
// cut off from the leader alone learns of none, as its campaigns fail).
const relayAfter = time.Second

// relay sends r to another member to be forwarded from there to the
// partition's leader (RelayHeader), when this node could not reach the
// leader it knows (unreachable: the connection was not made, so nothing
// was sent) or knows none: a member cut off from the leader by a broken
// link, while the others reach it, sent its writes nowhere and answered
// 503 for as long as the link was down (a bug hunt, network namespaces:
// 24 writes of a member in 46 s, each 503 after 5 s). The voters of
// keyspace come first (they know the leader), then the other members;
// a member that cannot be reached either is passed over. It reports
// whether a member took the request (sent), and then whether its answer
// was written to w (forwarded) or the request's outcome is unknown (the
// relay stopped answering after it was sent); not sent, nothing was sent
// and Forward goes on as before.
func (n *Node) relay(w http.ResponseWriter, r *http.Request, listener string, body []byte, keyspace, unreachable uint64) (sent, forwarded, unknown bool) {
	var via []Member
	add := func(id uint64) {
		if id == n.self.ID || id == unreachable || slices.ContainsFunc(via, func(m Member) bool { return m.ID == id }) {
			return
		}
		if m, ok := n.member(id); ok {
			via = append(via, m)
		}
	}
	for _, v := range n.placement.Voters(keyspace) {
		add(v)
	}
	for _, m := range n.members {
		add(m.ID)
	}
	for _, m := range via {
		ctx, cancel := context.WithTimeout(r.Context(), forwardAnswerWait)
		resp, err := n.sendAs(ctx, m, r, listener, body, true)
		if err != nil {
			cancel()
			if notSent(err) {
				if unreachable == 0 {
					unreachable = m.ID // passed over first next time
				}
				continue
			}
			n.log.Warn("a request relayed to reach its partition's leader: the relaying member stopped answering", "via", m.Addr, "keyspace", keyspace, "err", err)
			return true, false, r.Method != http.MethodGet && r.Method != http.MethodHead
		}
		n.log.Debug("relayed a request to reach its partition's leader", "via", m.Addr, "keyspace", keyspace, "unreachable", unreachable)
		n.relaying.Store(keyspace, relayedAt{until: time.Now().Add(relayFor), unreachable: unreachable})
		copyResponse(w, resp)
		resp.Body.Close()
		cancel()
		return true, true, false
	}
	return false, false, false
}

// otherVoter returns, while this node's disk is full, the voter of
// keyspace after the tried other ones (in turn); 0 otherwise, or when the
// keyspace has no other voter.
func (n *Node) otherVoter(keyspace uint64, tried int) uint64 {
	if n.cfg.Store == nil || !n.cfg.Store.Full() {
		return 0
	}
	var others []uint64
	for _, v := range n.placement.Voters(keyspace) {
		if v != n.self.ID {
			others = append(others, v)
		}
	}
	if len(others) == 0 {
		return 0
	}
	return others[tried%len(others)]
}

// passAgain is how long a forward passes over a leader that could not take
// its request (refused the connection, or answered that it leads no more)
// while this node sees no other: the same node may win the next election
// (a leader that lost its quorum for a moment, with --replicas 2 a
// follower paused for 2 s), and was passed over until the forward's 5 s
// ran out while this node acknowledged hundreds of writes to it (a bug
// hunt: 503s).
const passAgain = 250 * time.Millisecond

// passing reports whether a forward waits rather than send to leader: it
// is the leader passed over, since passAgain has not gone by.
func passing(leader, passed uint64, since time.Duration) bool {
	return leader != 0 && leader == passed && since < passAgain
}

// afterNotLeader decides where a forward goes after leader answered that
// it does not lead (NotLeaderHeader), naming named (0: none known), and
// which node it passes over (passed, the one passed over before): to
// named, passing leader over, when named is another node; to leader again
// after a pause (again) when it names itself — it leads but takes no
// write now, handing its leadership over, and a transfer its target
// refuses leaves it leading after an election timeout. Passing it over
// then made the forward wait its whole 5 s for another leader that never
// came, and answer 503 (a bug hunt, during a drain).
func afterNotLeader(leader, passed, named uint64) (next, nextPassed uint64, again bool) {
	if named == leader {
		return leader, passed, true
	}
	if named != 0 {
		return named, leader, false
	}
	return leader, leader, false
}

// forwardAnswerWait bounds how long a forwarded request waits for its
// leader's answer to begin when this node learns of no other leader
// meanwhile (a node holding no replica of the keyspace learns of none):
// past every wait a leader's own handling has (a proposal's, a stored
// procedure's, a script slot's).
const forwardAnswerWait = 30 * time.Second

// sendWatched sends r to leader to, as n.send does, and gives up (gaveUp,
// with ctx's error) when this node learns that another node leads keyspace
// before the answer begins, or after forwardAnswerWait. The caller calls
// release once it has read the answer's body.
func (n *Node) sendWatched(r *http.Request, to Member, listener string, body []byte, keyspace, leader uint64) (resp *http.Response, release func(), gaveUp bool, err error) {
	ctx, cancel := context.WithCancel(r.Context())
	var mu sync.Mutex
	answered, stopped := false, false
	stop := func() {
		mu.Lock()
		defer mu.Unlock()
		if !answered {
			stopped = true
			cancel()
		}
	}
	timer := time.AfterFunc(forwardAnswerWait, stop)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if l := n.ks.Leader(keyspace); l != 0 && l != leader {
					stop()
					return
				}
			}
		}
	}()
	resp, err = n.send(ctx, to, r, listener, body)
	timer.Stop()
	close(done)
	mu.Lock()
	answered = true
	gaveUp = stopped && r.Context().Err() == nil
	mu.Unlock()
	switch {
	case err == nil && !gaveUp:
		return resp, cancel, false, nil
	case err == nil: // answered just as this node gave up: its body is lost
		resp.Body.Close()
		err = context.Canceled
	}
	cancel()
	return nil, nil, gaveUp, err
}

// copyResponse writes resp, another node's answer, to w as this node's.
func copyResponse(w http.ResponseWriter, resp *http.Response) {
	for k := range w.Header() {
		delete(w.Header(), k)
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// readForwardWait bounds how long a forwarded read waits for the other
// node's answer to begin before it is served here instead (a member
// stopped or cut off; a remote read moves on to another member after the
// same time).
const readForwardWait = 3 * time.Second

// ForwardRead sends r (body: its body), a read that arrived on the
// listener named listener, to member to, to be served there as that
// listener serves it, and copies the answer to w; when to is 0 or this
// node while this node's disk is full, to another voter of keyspace
// (otherVoter). It reports whether it did: not when to is this node or no
// member, could not be reached, or
// did not begin to answer within readForwardWait, and then nothing was
// written (a read may be served again elsewhere: it changes nothing). A
// member that failed to answer is not forwarded reads for a while, and
// this node's remote reads ask it last (slowMembers).
func (n *Node) ForwardRead(w http.ResponseWriter, r *http.Request, listener string, body []byte, keyspace, to uint64) bool {
	if to == 0 || to == n.self.ID {
		// A leader not known, or this node, whose disk is full (its
		// replica stalls): another voter serves it (otherVoter).
		to = n.otherVoter(keyspace, 0)
	}
	m, ok := n.member(to)
	slow := &n.ks.net.slow
	if !ok || to == n.self.ID || slow.is(to) {
		return false
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	timer := time.AfterFunc(readForwardWait, cancel)
	resp, err := n.send(ctx, m, r, listener, body)
	if err != nil {
		timer.Stop()
		if r.Context().Err() == nil { // not the client giving up: the member
			n.log.Debug("forward a read: served here instead", "to", m.Addr, "err", err)
			slow.failed(to)
		}
		return false
	}
	defer resp.Body.Close()
	if !timer.Stop() {
		slow.failed(to)
		return false
	}
	if resp.Header.Get(notLeaderHeader) != "" {
		return false
	}
	slow.answered(to)
	copyResponse(w, resp)
	return true
}

// every calls fn every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// notLeaderHeader is api.NotLeaderHeader (cluster does not import api).
const notLeaderHeader = "X-Partita-Not-Leader"

// member returns the member whose node id is id.
func (n *Node) member(id uint64) (Member, bool) {
	for _, m := range n.members {
		if m.ID == id {
			return m, true
		}
	}
	return Member{}, false
}

// notSent reports whether err, from sending a request to another node,
// means the request never left this node (the connection was refused or
// could not be made), so sending it elsewhere cannot apply it twice.
// sendFailure tells what a forward's failed send means: passOver, the
// request was not sent (its connection refused: try the next leader), or,
// with unknown, that the leader may have applied it — it stopped
// answering (gaveUp), or the connection failed once the request may have
// been sent (EOF, reset: the leader killed while serving it; a 503,
// "retry", made clients apply a write twice: a bug hunt found 3 of 54 such
// patches applied). A GET or HEAD wrote nothing either way: neither.
func sendFailure(err error, gaveUp bool, method string) (passOver, unknown bool) {
	switch {
	case notSent(err):
		return true, false
	case method == http.MethodGet || method == http.MethodHead:
		return false, false
	}
	return false, true
}

func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// quietBeforeShutdown closes the cluster listener, then lets the requests
// other nodes forward here on open HTTP/1.1 connections finish, each answer
// saying Connection: close, until those connections have closed (1 s at
// most): Shutdown drops any request it reads, and a peer whose forwarded
// write met that could only answer 408, its outcome unknown (package
// drain).
func (n *Node) quietBeforeShutdown() {
	n.conns.Begin()
	_ = n.ln.Close()
	n.conns.AwaitClosed(time.Second)
}

// Close stops the node: the listener, the Raft host's driver, the
// transport, the shared catalog and the etcd member. The store stays
// open.
func (n *Node) Close() error {
	var errs []error
	if n.srv != nil {
		n.quietBeforeShutdown()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = n.srv.Shutdown(ctx)
		cancel()
	} else if n.ln != nil {
		_ = n.ln.Close()
	}
	if n.stop != nil {
		n.stop()
	}
	// Bounded: the Raft driver can be stuck in the store (Pebble stalls
	// writes while a flush fails on a full disk, --min-free-bytes 0), and a
	// node that waited for it never stopped, SIGTERM or not (a bug hunt:
	// still up 45 s after it). The store's own close then gives up on the
	// database too, and the process exits with the error.
	stopped := make(chan struct{})
	go func() { n.wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(nodeStopWait):
		errs = append(errs, fmt.Errorf("cluster: the node's background work did not stop within %v (its store is stuck?); stopping without it", nodeStopWait))
	}
	if n.kv != nil {
		n.kv.snaps.expire(true)
	}
	if n.tr != nil {
		errs = append(errs, n.tr.Close())
	}
	if n.shared != nil {
		errs = append(errs, n.shared.Close())
	}
	if n.etcd != nil {
		errs = append(errs, n.etcd.Close())
	}
	if n.client != nil {
		n.client.CloseIdleConnections()
	}
	return errors.Join(errs...)
}
