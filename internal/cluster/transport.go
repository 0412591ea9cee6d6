package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"golang.org/x/time/rate"
	"google.golang.org/protobuf/proto"

	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/replication"
)

// RaftProto is the TLS application protocol (ALPN) of Raft traffic on a
// node's cluster listener: a connection that negotiates it carries a
// one-way stream of frames from the dialling node to the listening one
// (Transport.Register), beside HTTP/2 for forwarded requests on the same
// port. A new frame format gets a new name, so mixed versions refuse each
// other's handshake rather than misread; so does a new data format
// (replica.DataFormat): members of releases that store entries
// differently must not replicate to each other (an upgrade hunt: a member
// restarted on a release with another entry format led some partitions,
// rebuilt their entries in its format, and queries through every member
// answered wrongly). The handshake then fails with TLS's "no application
// protocol" (explainTLS).
var RaftProto = "partita-raft/1+data" + strconv.Itoa(replica.DataFormat)

// SnapProto is the TLS application protocol of a Raft snapshot: a
// connection that negotiates it carries one snapshot stream from the
// dialling node (replication's WriteSnapshot), and the listening node
// answers with one byte once it has the snapshot (0) or has refused it
// (1). A snapshot may be as large as a partition, so it travels apart
// from the message stream, which it would hold up, and is never one
// message. Its name carries the data format, as RaftProto's does.
var SnapProto = "partita-snap/1+data" + strconv.Itoa(replica.DataFormat)

// RaftHost is the node's Raft groups as the transport serves them
// (replication.Host): it streams their snapshots both ways and reports what
// became of them, and reports a peer the transport cannot reach, so that
// the groups it leads stop streaming appends to it and probe it instead.
type RaftHost interface {
	WriteSnapshot(ctx context.Context, w io.Writer, m replication.Message) (int, error)
	ReadSnapshot(r io.Reader) error
	ReportSnapshot(group, to uint64, ok bool)
	ReportUnreachable(to uint64)
}

// Transport defaults.
const (
	// defaultQueueLen messages wait per peer before Send drops: enough for
	// a burst of every group's heartbeats and appends between two batches.
	defaultQueueLen = 4096
	// defaultBatchBytes is the size at which a batch stops taking more
	// messages (a single larger message, such as a snapshot, goes alone).
	defaultBatchBytes = 1 << 20
	// defaultMaxMessageBytes bounds one encoded message. Raft's appends
	// are at most 1 MiB of entries (replication's MaxSizePerMsg) besides
	// one entry over it; snapshots travel apart (SnapProto).
	defaultMaxMessageBytes = 256 << 20
	defaultSendTimeout     = 10 * time.Second
	// snapAckTimeout bounds the wait for a snapshot's receiver to answer
	// once the stream is written: it syncs the table it wrote it to.
	snapAckTimeout = 5 * time.Minute
	// dialTimeout bounds a connection's TCP dial and TLS handshake.
	dialTimeout = 5 * time.Second
	// unackedTimeout bounds how long what a connection this node dialled
	// sent may stay unacknowledged before the kernel ends it
	// (unackedControl): as long as a batch's write may take.
	unackedTimeout = defaultSendTimeout
	// Backoff after a failed batch, doubling up to the maximum: a peer
	// that is down is retried without spinning.
	minBackoff = 50 * time.Millisecond
	maxBackoff = time.Second
)

// TransportConfig configures a Transport.
type TransportConfig struct {
	// Self is this node's id; received messages addressed to another node
	// are dropped.
	Self uint64
	// Peers maps node ids to cluster addresses (host:port); Self may be
	// among them and is ignored. The map is copied.
	Peers map[uint64]string
	// Cert is this node's certificate: the client side of every request
	// (the server side is the listener's, Cert.ServerTLS).
	Cert *Cert
	// Deliver receives every message that arrives for this node, in the
	// order each peer sent them, from the goroutines reading the peers'
	// connections (concurrently for different peers). It should not block
	// for long: while it does, that peer's connection is not read, its
	// sender waits and its queue drops messages.
	Deliver func(replication.Message)
	// QueueLen is how many messages wait per peer; default 4096.
	QueueLen int
	// BatchBytes is the size of a batch at which it takes no more
	// messages; default 1 MiB.
	BatchBytes int
	// MaxMessageBytes bounds one encoded message, sent or received;
	// default 256 MiB. (Snapshots are not messages: SnapProto.)
	MaxMessageBytes int
	// SendTimeout bounds the write of one batch; default 10 s. A
	// connection whose write does not finish in time is closed.
	SendTimeout time.Duration
	// SnapshotRate bounds the bytes per second of the snapshots this node
	// sends, all peers together, so that a replica catching up does not
	// take the bandwidth its groups' appends need; 0 leaves them unbound.
	SnapshotRate int64
	// Logger receives the transport's messages; nil discards them.
	Logger *slog.Logger
}

// Transport carries Raft messages between nodes: it implements
// replication.Transport (Send) for the sending side, and serves the
// connections of RaftProto on the cluster listener (Register) for the
// receiving side. Each peer has a queue and a goroutine that writes its
// messages in batches to one mutual-TLS connection, dialled when needed.
// It never blocks the sender: a full queue, a peer that is down or
// refuses the connection, or a message over the size bound drops
// messages, which Raft retransmits. It is safe for concurrent use.
//
// Why not HTTP/2 requests, as the forwarded requests use: a request per
// batch cost every message a round of goroutine handoffs (the client's
// stream writer, the server's frame reader, its serve loop, a handler
// goroutine) and header encoding, and waited for its answer before the
// next batch; on a loaded machine each handoff costs a scheduling delay,
// and two messages (append, acknowledgement) lie on every write's path.
// A stream is written by the peer's goroutine and read by one goroutine
// that delivers.
type Transport struct {
	self    uint64
	deliver func(replication.Message)
	maxMsg  int
	log     *slog.Logger
	peers   map[uint64]*peer
	dropped atomic.Uint64
	closed  atomic.Bool
	host    atomic.Pointer[RaftHost]
	timeout time.Duration // SendTimeout: also a snapshot stream's bound on one read or write
	// snapRate paces the snapshots sent (SnapshotRate); nil: unbound.
	snapRate *rate.Limiter

	// in holds the connections being read, so that Close and the
	// server's Shutdown end them.
	in struct {
		sync.Mutex
		conns  map[net.Conn]struct{}
		closed bool
	}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// peer is the sending side towards one node.
type peer struct {
	id      uint64
	addr    string
	q       chan replication.Message
	dialer  *tls.Dialer
	snapper *tls.Dialer // for SnapProto
	batch   int
	timeout time.Duration
	// snapping: a snapshot is being sent to the peer (one at a time).
	snapping atomic.Bool
	// heard is when a message from the peer was last received (Unix
	// nanoseconds; 0: never).
	heard atomic.Int64
}

// NewTransport returns a transport that starts sending to cfg.Peers at
// once; Close stops it.
func NewTransport(cfg TransportConfig) (*Transport, error) {
	switch {
	case cfg.Self == 0:
		return nil, errors.New("cluster: transport: no node id")
	case cfg.Cert == nil:
		return nil, errors.New("cluster: transport: no node certificate")
	case cfg.Deliver == nil:
		return nil, errors.New("cluster: transport: no Deliver")
	}
	if cfg.QueueLen == 0 {
		cfg.QueueLen = defaultQueueLen
	}
	if cfg.BatchBytes == 0 {
		cfg.BatchBytes = defaultBatchBytes
	}
	if cfg.MaxMessageBytes == 0 {
		cfg.MaxMessageBytes = defaultMaxMessageBytes
	}
	if cfg.SendTimeout == 0 {
		cfg.SendTimeout = defaultSendTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	t := &Transport{
		self:    cfg.Self,
		deliver: cfg.Deliver,
		maxMsg:  cfg.MaxMessageBytes,
		log:     cfg.Logger,
		peers:   map[uint64]*peer{},
		timeout: cfg.SendTimeout,
	}
	if cfg.SnapshotRate > 0 {
		t.snapRate = rate.NewLimiter(rate.Limit(cfg.SnapshotRate), snapRateBurst)
	}
	t.in.conns = map[net.Conn]struct{}{}
	for id, addr := range cfg.Peers {
		if id == cfg.Self {
			continue
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("cluster: transport: peer %016x: %w", id, err)
		}
		tc := cfg.Cert.ClientTLS(host)
		tc.NextProtos = []string{RaftProto}
		sc := cfg.Cert.ClientTLS(host)
		sc.NextProtos = []string{SnapProto}
		t.peers[id] = &peer{
			id:      id,
			addr:    addr,
			q:       make(chan replication.Message, cfg.QueueLen),
			dialer:  &tls.Dialer{NetDialer: &net.Dialer{Timeout: dialTimeout, Control: unackedControl}, Config: tc},
			snapper: &tls.Dialer{NetDialer: &net.Dialer{Timeout: dialTimeout, Control: unackedControl}, Config: sc},
			batch:   cfg.BatchBytes,
			timeout: cfg.SendTimeout,
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.ctx, t.cancel = ctx, cancel
	for _, p := range t.peers {
		t.wg.Go(func() { t.run(ctx, p) })
	}
	return t, nil
}

// Send queues m for node to; it never blocks. It drops m when to is not a
// peer, its queue is full, or the transport is closed. The transport keeps
// m and encodes it later: the caller must not modify it (Raft does not).
func (t *Transport) Send(to uint64, m replication.Message) {
	p, ok := t.peers[to]
	if !ok || t.closed.Load() {
		t.dropped.Add(1)
		return
	}
	if replication.IsSnapshot(m) {
		t.sendSnapshot(p, m)
		return
	}
	select {
	case p.q <- m:
	default:
		t.dropped.Add(1)
	}
}

// HeardSince returns how many peers this node received a message from at
// or after since: which members its own connections show reachable (the
// etcd member's may not be: watchEtcd).
func (t *Transport) HeardSince(since time.Time) int {
	n := 0
	for _, p := range t.peers {
		if p.heard.Load() >= since.UnixNano() {
			n++
		}
	}
	return n
}

// Dropped returns how many messages the transport has dropped so far, on
// either side.
func (t *Transport) Dropped() uint64 { return t.dropped.Load() }

// Close stops the senders, waits for them, closes their connections and
// the connections being read. Messages still queued are dropped.
func (t *Transport) Close() error {
	t.closed.Store(true)
	t.cancel()
	t.wg.Wait()
	t.closeInbound()
	return nil
}

// run sends p's messages until ctx ends.
func (t *Transport) run(ctx context.Context, p *peer) {
	var (
		c       net.Conn // nil until dialled, and after a failure
		backoff time.Duration
	)
	defer func() {
		if c != nil {
			_ = c.Close()
		}
	}()
	for {
		var m replication.Message
		select {
		case <-ctx.Done():
			return
		case m = <-p.q:
		}
		buf, n := t.batch(p, m)
		if n == 0 {
			continue
		}
		var err error
		if c == nil {
			c, err = p.dial(ctx)
		}
		if err == nil {
			err = p.write(ctx, c, buf)
		}
		switch {
		case ctx.Err() != nil:
			return
		case err == nil && backoff != 0:
			t.log.Info("raft peer reachable again", "peer", peerAttr(p.id))
			backoff = 0
		case err == nil:
		default:
			if backoff == 0 {
				t.log.Warn("raft peer unreachable", "peer", peerAttr(p.id), "err", err)
			}
			if hp := t.host.Load(); hp != nil {
				(*hp).ReportUnreachable(p.id)
			}
			if c != nil {
				_ = c.Close()
				c = nil
			}
			t.dropped.Add(uint64(n))
			// Messages that queued while the write failed are stale:
			// drop them rather than send them after the wait.
			for drained := false; !drained; {
				select {
				case <-p.q:
					t.dropped.Add(1)
				default:
					drained = true
				}
			}
			backoff = min(max(2*backoff, minBackoff), maxBackoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
	}
}

// dial connects to p and checks that it speaks RaftProto.
func (p *peer) dial(ctx context.Context) (net.Conn, error) {
	c, err := p.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, explainTLS(err)
	}
	// NB: a server that offers no application protocol completes the
	// handshake without one: an HTTP-only listener, not a Raft peer.
	if proto := c.(*tls.Conn).ConnectionState().NegotiatedProtocol; proto != RaftProto {
		_ = c.Close()
		return nil, fmt.Errorf("peer negotiated %q, not %s: it is not a member of this release", proto, RaftProto)
	}
	return c, nil
}

// write writes buf to c within p's timeout; ctx's end interrupts it.
func (p *peer) write(ctx context.Context, c net.Conn, buf []byte) error {
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	if err := c.SetWriteDeadline(time.Now().Add(p.timeout)); err != nil {
		return err
	}
	_, err := c.Write(buf)
	return err
}

// batch encodes m and the messages queued behind it, up to p's batch
// size, and returns the bytes and how many messages they hold.
func (t *Transport) batch(p *peer, m replication.Message) ([]byte, int) {
	var buf []byte
	n := 0
	for {
		var err error
		if buf, err = t.appendFrame(buf, m); err != nil {
			t.dropped.Add(1)
			t.log.Warn("raft message not sent", "peer", peerAttr(p.id), "err", err)
		} else {
			n++
		}
		if len(buf) >= p.batch {
			return buf, n
		}
		select {
		case m = <-p.q:
		default:
			return buf, n
		}
	}
}

// peerAttr formats a node id for logs as etcd and Raft print them.
func peerAttr(id uint64) string { return fmt.Sprintf("%016x", id) }

// appendFrame appends m's frame to buf: the length of what follows
// (uvarint), the group (8 bytes, big endian), the Raft message (protobuf).
func (t *Transport) appendFrame(buf []byte, m replication.Message) ([]byte, error) {
	size := 8 + proto.Size(m.Raft)
	if size > t.maxMsg {
		return buf, fmt.Errorf("group %d: message of %d bytes, over the bound of %d", m.Group, size, t.maxMsg)
	}
	mark := len(buf)
	buf = binary.AppendUvarint(buf, uint64(size))
	buf = binary.BigEndian.AppendUint64(buf, m.Group)
	// UseCachedSize: proto.Size just computed it.
	out, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(buf, m.Raft)
	if err != nil {
		return buf[:mark], fmt.Errorf("group %d: %w", m.Group, err)
	}
	return out, nil
}

// SetHost makes h the host whose snapshots t sends and receives, and to
// which it reports unreachable peers. Until it is called, snapshots are
// dropped, and refused when they come in.
func (t *Transport) SetHost(h RaftHost) { t.host.Store(&h) }

// sendSnapshot sends snapshot m to p on a connection of its own, in the
// background, and reports the outcome to the host; one snapshot at a time
// goes to a peer (Raft sends a follower one, then waits for the report).
func (t *Transport) sendSnapshot(p *peer, m replication.Message) {
	hp := t.host.Load()
	if hp == nil {
		t.dropped.Add(1)
		return
	}
	h := *hp
	if !p.snapping.CompareAndSwap(false, true) {
		t.dropped.Add(1)
		go h.ReportSnapshot(m.Group, p.id, false) // not from Send's caller: it may hold the host
		return
	}
	t.wg.Go(func() {
		start := time.Now()
		pairs, err := t.streamSnapshot(p, h, m)
		// Free before the report: Raft may send the next snapshot at once.
		p.snapping.Store(false)
		if t.ctx.Err() != nil {
			return
		}
		if err != nil {
			t.log.Warn("raft snapshot not sent", "peer", peerAttr(p.id), "group", m.Group, "err", err)
		} else {
			t.log.Info("raft snapshot sent", "peer", peerAttr(p.id), "group", m.Group, "pairs", pairs, "took", time.Since(start).Round(time.Millisecond))
		}
		h.ReportSnapshot(m.Group, p.id, err == nil)
	})
}

// streamSnapshot dials p with SnapProto, writes snapshot m's stream and
// waits for the receiver's answer.
func (t *Transport) streamSnapshot(p *peer, h RaftHost, m replication.Message) (int, error) {
	c, err := p.snapper.DialContext(t.ctx, "tcp", p.addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	stop := context.AfterFunc(t.ctx, func() { _ = c.Close() })
	defer stop()
	if proto := c.(*tls.Conn).ConnectionState().NegotiatedProtocol; proto != SnapProto {
		return 0, fmt.Errorf("peer negotiated %q, not %s", proto, SnapProto)
	}
	var w io.Writer = deadlineConn{c, t.timeout}
	if t.snapRate != nil {
		w = pacedWriter{t.ctx, w, t.snapRate}
	}
	pairs, err := h.WriteSnapshot(t.ctx, w, m)
	if err != nil {
		return pairs, err
	}
	if err := c.SetReadDeadline(time.Now().Add(snapAckTimeout)); err != nil {
		return pairs, err
	}
	var ack [1]byte
	if _, err := io.ReadFull(c, ack[:]); err != nil {
		return pairs, fmt.Errorf("no answer from the receiver: %w", err)
	}
	if ack[0] != 0 {
		return pairs, errors.New("the receiver refused the snapshot (its log says why)")
	}
	return pairs, nil
}

// snapRateBurst is the most bytes of snapshots sent at once beyond the
// pace: a frame's worth.
const snapRateBurst = 1 << 20

// pacedWriter writes to w no faster than lim allows, in pieces of at most
// its burst; it gives up when ctx ends.
type pacedWriter struct {
	ctx context.Context
	w   io.Writer
	lim *rate.Limiter
}

func (pw pacedWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := min(len(p), pw.lim.Burst())
		if err := pw.lim.WaitN(pw.ctx, n); err != nil {
			return written, err
		}
		m, err := pw.w.Write(p[:n])
		written += m
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// deadlineConn gives every read and write of a connection its own
// deadline: a stream as long as a snapshot has no overall bound, but a
// peer that stops reading or writing ends it.
type deadlineConn struct {
	net.Conn
	d time.Duration
}

func (c deadlineConn) Write(p []byte) (int, error) {
	if err := c.SetWriteDeadline(time.Now().Add(c.d)); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

func (c deadlineConn) Read(p []byte) (int, error) {
	if err := c.SetReadDeadline(time.Now().Add(c.d)); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

// serveSnapshot reads one snapshot stream from c, hands it to the host
// and answers.
func (t *Transport) serveSnapshot(c *tls.Conn) {
	defer c.Close()
	if !t.track(c, true) {
		return
	}
	defer t.track(c, false)
	if len(c.ConnectionState().VerifiedChains) == 0 {
		t.log.Warn("raft snapshot refused: no verified client certificate", "from", c.RemoteAddr().String())
		return
	}
	hp := t.host.Load()
	if hp == nil {
		_, _ = deadlineConn{c, t.timeout}.Write([]byte{1})
		return
	}
	ack := byte(0)
	if err := (*hp).ReadSnapshot(deadlineConn{c, t.timeout}); err != nil {
		t.log.Warn("raft snapshot refused", "from", c.RemoteAddr().String(), "err", err)
		ack = 1
	}
	_, _ = deadlineConn{c, t.timeout}.Write([]byte{ack})
}

// Register makes srv, the cluster listener's server (whose TLSConfig
// requires client certificates of the cluster's CA), hand the connections
// that negotiate RaftProto to t, beside HTTP/2 for everything else, and
// end them when it shuts down. Call it before srv serves.
func (t *Transport) Register(srv *http.Server) {
	if srv.TLSNextProto == nil {
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	// NB: a TLSNextProto map without "h2" turns HTTP/2 off unless the
	// protocols are set explicitly: these are net/http's defaults.
	if srv.Protocols == nil {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetHTTP2(true)
	}
	srv.TLSNextProto[RaftProto] = func(_ *http.Server, c *tls.Conn, _ http.Handler) { t.serveConn(c) }
	srv.TLSNextProto[SnapProto] = func(_ *http.Server, c *tls.Conn, _ http.Handler) { t.serveSnapshot(c) }
	if srv.TLSConfig != nil {
		srv.TLSConfig.NextProtos = append(srv.TLSConfig.NextProtos, RaftProto, SnapProto)
	}
	// Shutdown waits for active connections, and a stream never idles.
	srv.RegisterOnShutdown(t.closeInbound)
}

// closeInbound closes the connections being read and refuses new ones.
func (t *Transport) closeInbound() {
	t.in.Lock()
	defer t.in.Unlock()
	t.in.closed = true
	for c := range t.in.conns {
		_ = c.Close()
	}
}

// track adds c to the connections being read (false: the transport is
// closed, and c is not added) or removes it.
func (t *Transport) track(c net.Conn, add bool) bool {
	t.in.Lock()
	defer t.in.Unlock()
	if !add {
		delete(t.in.conns, c)
		return true
	}
	if t.in.closed {
		return false
	}
	t.in.conns[c] = struct{}{}
	return true
}

// serveConn reads a RaftProto connection and delivers each message
// addressed to this node, until the connection ends or the transport
// closes. It refuses a connection without a verified client certificate
// (the listener should have refused it already: this guards against a
// mis-wired server). A malformed or oversized frame closes the
// connection; the messages before it have been delivered (Raft tolerates
// the loss of the rest, and the sender dials again).
func (t *Transport) serveConn(c *tls.Conn) {
	defer c.Close()
	if !t.track(c, true) {
		return
	}
	defer t.track(c, false)
	if len(c.ConnectionState().VerifiedChains) == 0 {
		t.log.Warn("raft connection refused: no verified client certificate", "from", c.RemoteAddr().String())
		return
	}
	br := bufio.NewReaderSize(c, 64<<10)
	misaddressed := false
	for {
		size, err := binary.ReadUvarint(br)
		if err != nil {
			return // the peer closed (between frames, or in a length: its loss)
		}
		if size < 8 {
			t.refuse(c, "frame shorter than its group id", fmt.Errorf("%d bytes", size))
			return
		}
		if size > uint64(t.maxMsg) {
			t.refuse(c, "frame over the size bound", fmt.Errorf("%d bytes", size))
			return
		}
		frame := make([]byte, size)
		if _, err := io.ReadFull(br, frame); err != nil {
			return // the peer closed mid-frame
		}
		m := &pb.Message{}
		if err := proto.Unmarshal(frame[8:], m); err != nil {
			t.refuse(c, "bad raft message", err)
			return
		}
		if p := t.peers[m.GetFrom()]; p != nil {
			p.heard.Store(time.Now().UnixNano())
		}
		if m.GetTo() != t.self {
			t.dropped.Add(1)
			if !misaddressed {
				// A peer whose address map disagrees with ours: worth a
				// human's look (once per connection).
				t.log.Warn("raft messages for another node dropped", "to", peerAttr(m.GetTo()), "from", c.RemoteAddr().String())
				misaddressed = true
			}
			continue
		}
		t.deliver(replication.Message{Group: binary.BigEndian.Uint64(frame[:8]), Raft: m})
	}
}

// refuse logs why it stops reading c.
func (t *Transport) refuse(c net.Conn, msg string, err error) {
	t.log.Warn("raft connection refused", "reason", msg, "from", c.RemoteAddr().String(), "err", err)
}

// explainTLS says what a failed handshake with a member most likely means:
// a certificate not from this cluster's CA comes from a node started with
// another --cluster-secret (the CA is derived from it), which otherwise
// showed only as a stream of TLS errors in both nodes' logs (a bug hunt).
func explainTLS(err error) error {
	var cve *tls.CertificateVerificationError
	var host x509.HostnameError
	switch {
	case errors.As(err, &host):
		// Signed by the CA (the name is checked after the chain), but for
		// another name: a host name and its IP address in the join list
		// are two members, and one node answered for both (a bug hunt: it
		// was reported as another --cluster-secret).
		return fmt.Errorf("%w (the member's certificate names the host it was started with, not %s: list each member once, "+
			"under the address it was started with; a host name and its IP address are different members)", err, host.Host)
	case errors.As(err, &cve):
		return fmt.Errorf("%w (the member's certificate is not signed by this cluster's CA: it was started with "+
			"another --cluster-secret, or it is not a member)", err)
	case strings.Contains(err.Error(), "remote error: tls: bad certificate"),
		strings.Contains(err.Error(), "remote error: tls: unknown certificate authority"):
		return fmt.Errorf("%w (the member refused this node's certificate: it was started with another --cluster-secret)", err)
	case otherRelease(err):
		return fmt.Errorf("%w (the member speaks another Raft protocol than %s: it runs another release of Partita, "+
			"and members must all run one release: stop every member and start them all on the same release)", err, RaftProto)
	}
	return err
}

// otherRelease reports whether err, from a TLS handshake offering this
// release's RaftProto or SnapProto, says the listener offers neither: a
// member of another release (or a listener that is no member's).
func otherRelease(err error) bool {
	return strings.Contains(err.Error(), "no application protocol")
}
