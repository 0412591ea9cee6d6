package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/partitadb/partita/internal/replication"
)

// RaftPath is the path of the Raft endpoint on a node's cluster listener:
// the server mounts Transport there (POST only).
const RaftPath = "/raft"

// raftContentType names the body format of RaftPath; a new format gets a
// new version, so mixed versions refuse each other (415) rather than
// misread.
const raftContentType = "application/x-partita-raft; v=1"

// Transport defaults.
const (
	// defaultQueueLen messages wait per peer before Send drops: enough for
	// a burst of every group's heartbeats and appends between two batches.
	defaultQueueLen = 4096
	// defaultBatchBytes is the size at which a batch stops taking more
	// messages (a single larger message, such as a snapshot, goes alone).
	defaultBatchBytes = 1 << 20
	// defaultMaxMessageBytes bounds one encoded message: snapshots are one
	// message holding a whole keyspace in this stage (replication's
	// snapshot.go), so the bound is generous.
	defaultMaxMessageBytes = 256 << 20
	defaultSendTimeout     = 10 * time.Second
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
	// order each peer sent them, from the HTTP handlers' goroutines
	// (concurrently for different peers). It should not block for long: while it does, that peer's sender waits
	// and its queue drops messages.
	Deliver func(replication.Message)
	// QueueLen is how many messages wait per peer; default 4096.
	QueueLen int
	// BatchBytes is the size of a batch at which it takes no more
	// messages; default 1 MiB.
	BatchBytes int
	// MaxMessageBytes bounds one encoded message, sent or received, and so
	// the snapshot a message may carry; default 256 MiB.
	MaxMessageBytes int
	// SendTimeout bounds one batch's request; default 10 s.
	SendTimeout time.Duration
	// Logger receives the transport's messages; nil discards them.
	Logger *slog.Logger
}

// Transport carries Raft messages between nodes: it implements
// replication.Transport (Send) for the sending side, and is the
// http.Handler of RaftPath for the receiving side. Each peer has a queue
// and a goroutine that sends its messages in batches, one HTTP/2 POST per
// batch over mutual TLS. It never blocks the sender: a full queue, a peer
// that is down or refuses the request, or a message over the size bound
// drops messages, which Raft retransmits. It is safe for concurrent use.
type Transport struct {
	self    uint64
	deliver func(replication.Message)
	maxMsg  int
	maxBody int64 // a batch: up to BatchBytes, plus one message, plus its frame header
	log     *slog.Logger
	peers   map[uint64]*peer
	dropped atomic.Uint64
	closed  atomic.Bool

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// peer is the sending side towards one node.
type peer struct {
	id      uint64
	url     string
	q       chan replication.Message
	client  *http.Client
	h2      *http.Transport
	batch   int
	timeout time.Duration
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
		maxBody: int64(cfg.BatchBytes) + int64(cfg.MaxMessageBytes) + binary.MaxVarintLen64 + 8,
		log:     cfg.Logger,
		peers:   map[uint64]*peer{},
	}
	for id, addr := range cfg.Peers {
		if id == cfg.Self {
			continue
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("cluster: transport: peer %016x: %w", id, err)
		}
		var protos http.Protocols
		protos.SetHTTP2(true) // HTTP/2 only: no fallback to HTTP/1.1
		h2 := &http.Transport{
			TLSClientConfig:     cfg.Cert.ClientTLS(host),
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			TLSHandshakeTimeout: 5 * time.Second,
			IdleConnTimeout:     time.Minute,
			Protocols:           &protos,
			// Pings find a dead connection in seconds instead of at the
			// next request's timeout.
			HTTP2: &http.HTTP2Config{SendPingTimeout: 10 * time.Second, PingTimeout: 5 * time.Second},
		}
		t.peers[id] = &peer{
			id:      id,
			url:     "https://" + addr + RaftPath,
			q:       make(chan replication.Message, cfg.QueueLen),
			client:  &http.Client{Transport: h2},
			h2:      h2,
			batch:   cfg.BatchBytes,
			timeout: cfg.SendTimeout,
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
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
	select {
	case p.q <- m:
	default:
		t.dropped.Add(1)
	}
}

// Dropped returns how many messages the transport has dropped so far, on
// either side.
func (t *Transport) Dropped() uint64 { return t.dropped.Load() }

// Close stops the senders, waits for them, and closes their connections.
// Messages still queued are dropped. The handler side stops with the
// server that mounts it.
func (t *Transport) Close() error {
	t.closed.Store(true)
	t.cancel()
	t.wg.Wait()
	for _, p := range t.peers {
		p.h2.CloseIdleConnections()
	}
	return nil
}

// run sends p's messages until ctx ends.
func (t *Transport) run(ctx context.Context, p *peer) {
	var backoff time.Duration // 0 while the peer answers
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
		err := p.post(ctx, buf)
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
			t.dropped.Add(uint64(n))
			// Messages that queued while the request failed are stale:
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

// batch encodes m and the messages queued behind it, up to p's batch
// size, and returns the body and how many messages it holds.
func (t *Transport) batch(p *peer, m replication.Message) ([]byte, int) {
	// NB: a new buffer for every batch: the HTTP transport may still read
	// a request's body after Do returns (when the peer answers before
	// reading it all).
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

// post sends one batch; anything but 204 No Content is an error.
func (p *peer) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", raftContentType)
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("peer answered %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// ServeHTTP receives a batch of Raft messages (POST RaftPath) and delivers
// each one addressed to this node. It refuses requests that did not come
// over mutual TLS with a verified client certificate (403): the listener
// should have refused them already, so this guards against a mis-wired
// server. A malformed or oversized frame ends the batch with 400 or 413;
// the messages before it have been delivered (Raft tolerates the loss of
// the rest).
func (t *Transport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	case r.TLS == nil || len(r.TLS.VerifiedChains) == 0:
		http.Error(w, "mutual TLS required", http.StatusForbidden)
		return
	case r.Header.Get("Content-Type") != raftContentType:
		http.Error(w, "unsupported content type", http.StatusUnsupportedMediaType)
		return
	}
	br := bufio.NewReader(http.MaxBytesReader(w, r.Body, t.maxBody))
	var misaddressed int
	for {
		size, err := binary.ReadUvarint(br)
		if errors.Is(err, io.EOF) {
			break // between frames: the batch is complete
		}
		if err != nil {
			code := http.StatusBadRequest
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				code = http.StatusRequestEntityTooLarge
			}
			t.refuse(w, code, "bad frame length", err)
			return
		}
		if size < 8 {
			t.refuse(w, http.StatusBadRequest, "frame shorter than its group id", fmt.Errorf("%d bytes", size))
			return
		}
		if size > uint64(t.maxMsg) {
			t.refuse(w, http.StatusRequestEntityTooLarge, "frame over the size bound", fmt.Errorf("%d bytes", size))
			return
		}
		frame := make([]byte, size)
		if _, err := io.ReadFull(br, frame); err != nil {
			code := http.StatusBadRequest
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				code = http.StatusRequestEntityTooLarge
			}
			t.refuse(w, code, "truncated frame", err)
			return
		}
		m := &pb.Message{}
		if err := proto.Unmarshal(frame[8:], m); err != nil {
			t.refuse(w, http.StatusBadRequest, "bad raft message", err)
			return
		}
		if m.GetTo() != t.self {
			misaddressed++
			t.dropped.Add(1)
			continue
		}
		t.deliver(replication.Message{Group: binary.BigEndian.Uint64(frame[:8]), Raft: m})
	}
	if misaddressed > 0 {
		// A peer whose address map disagrees with ours: worth a human's look.
		t.log.Warn("raft messages for another node dropped", "messages", misaddressed, "from", r.RemoteAddr)
	}
	w.WriteHeader(http.StatusNoContent)
}

// refuse answers a batch it stopped reading.
func (t *Transport) refuse(w http.ResponseWriter, code int, msg string, err error) {
	t.log.Warn("raft batch refused", "reason", msg, "err", err)
	http.Error(w, msg, code)
}
