package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"golang.org/x/time/rate"
	"google.golang.org/protobuf/proto"

	"github.com/partitadb/partita/internal/replication"
)

// testNode is a transport and the mTLS server that receives for it.
type testNode struct {
	id   uint64
	addr string
	tr   *Transport
	got  chan replication.Message
}

// pingPath is a route of every test node's server: HTTP/2 requests still
// reach the mux beside the Raft protocol.
const pingPath = "/ping"

// receiveBuffer is how many delivered messages a test node holds: more
// than any test sends.
const receiveBuffer = 1 << 14

// startNodes starts a node on a loopback listener for each cert; every
// node knows every other as a peer. Cleanup stops them.
func startNodes(t *testing.T, certs ...*Cert) []*testNode {
	t.Helper()
	nodes := make([]*testNode, len(certs))
	lns := make([]net.Listener, len(certs))
	peers := map[uint64]string{}
	for i := range certs {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		id, err := NodeID(ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = &testNode{id: id, addr: ln.Addr().String(), got: make(chan replication.Message, receiveBuffer)}
		peers[id] = nodes[i].addr
	}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait) // last: after every server's Close (cleanups run last in, first out)
	for i, n := range nodes {
		tr, err := NewTransport(TransportConfig{
			Self:    n.id,
			Peers:   peers,
			Cert:    certs[i],
			Deliver: func(m replication.Message) { n.got <- m },
		})
		if err != nil {
			t.Fatal(err)
		}
		n.tr = tr
		mux := http.NewServeMux()
		mux.HandleFunc("GET "+pingPath, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Proto", r.Proto)
		})
		srv := &http.Server{
			Handler:           requireRelease(mux),
			TLSConfig:         certs[i].ServerTLS(),
			ReadHeaderTimeout: 5 * time.Second,
			ErrorLog:          log.New(io.Discard, "", 0), // refused handshakes are expected
		}
		tr.Register(srv)
		wg.Go(func() { _ = srv.ServeTLS(lns[i], "", "") })
		t.Cleanup(func() {
			tr.Close()
			srv.Close()
		})
	}
	return nodes
}

func raftMsg(from, to, index uint64, data []byte) *pb.Message {
	m := &pb.Message{
		Type:  pb.MessageType_MsgApp.Enum(),
		From:  new(from),
		To:    new(to),
		Term:  new(uint64(3)),
		Index: new(index),
	}
	if data != nil {
		m.Entries = []*pb.Entry{{Term: new(uint64(3)), Index: new(index + 1), Data: data}}
	}
	return m
}

// receive returns the next n messages node n got, failing after 20 s.
func (n *testNode) receive(t *testing.T, count int) []replication.Message {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	var out []replication.Message
	for len(out) < count {
		select {
		case m := <-n.got:
			out = append(out, m)
		case <-timeout.C:
			t.Fatalf("node %x received %d messages in 20 s, want %d (dropped by the sender: see its Dropped)", n.id, len(out), count)
		}
	}
	return out
}

// waitDropped waits until tr has dropped at least count messages, failing
// after 20 s.
func waitDropped(t *testing.T, tr *Transport, count uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for tr.Dropped() < count {
		if time.Now().After(deadline) {
			t.Fatalf("dropped %d messages in 20 s, want %d", tr.Dropped(), count)
		}
		time.Sleep(10 * time.Millisecond) // polls a counter the senders update
	}
}

func TestTransportExchange(t *testing.T) {
	ca := mustCA(t, secretA)
	nodes := startNodes(t, mustCert(t, ca, "a"), mustCert(t, mustCA(t, secretA), "b"))
	a, b := nodes[0], nodes[1]

	// Many small messages in several groups, and one over the batch size
	// (a snapshot-sized message goes alone).
	var sent []replication.Message
	for i := range 300 {
		data := []byte{byte(i)}
		if i == 150 {
			data = bytes.Repeat([]byte{7}, 3*defaultBatchBytes)
		}
		sent = append(sent, replication.Message{Group: uint64(i%3 + 1), Raft: raftMsg(a.id, b.id, uint64(i), data)})
	}
	start := time.Now()
	for _, m := range sent {
		a.tr.Send(b.id, m)
	}
	got := b.receive(t, len(sent))
	if h, h2 := b.tr.HeardSince(start), a.tr.HeardSince(start); h != 1 || h2 != 0 {
		t.Errorf("b heard from %d peers, a from %d; want 1 and 0 (only a sent)", h, h2)
	}
	if h := b.tr.HeardSince(time.Now().Add(time.Minute)); h != 0 {
		t.Errorf("b heard from %d peers a minute from now", h)
	}
	for i := range sent {
		if got[i].Group != sent[i].Group || !proto.Equal(got[i].Raft, sent[i].Raft) {
			t.Fatalf("message %d: got group %d %v, want group %d %v", i, got[i].Group, got[i].Raft.GetIndex(), sent[i].Group, sent[i].Raft.GetIndex())
		}
	}

	// And back.
	back := replication.Message{Group: 9, Raft: raftMsg(b.id, a.id, 1, nil)}
	b.tr.Send(a.id, back)
	if m := a.receive(t, 1)[0]; m.Group != 9 || !proto.Equal(m.Raft, back.Raft) {
		t.Errorf("a received group %d %v, want group 9 %v", m.Group, m.Raft, back.Raft)
	}
	if a.tr.Dropped() != 0 || b.tr.Dropped() != 0 {
		t.Errorf("dropped %d and %d messages, want none", a.tr.Dropped(), b.tr.Dropped())
	}

	// Misaddressed (a peer map that disagrees): dropped by the receiver.
	a.tr.Send(b.id, replication.Message{Group: 1, Raft: raftMsg(a.id, a.id, 1, nil)})
	a.tr.Send(b.id, replication.Message{Group: 1, Raft: raftMsg(a.id, b.id, 2, nil)})
	if m := b.receive(t, 1)[0]; m.Raft.GetIndex() != 2 {
		t.Errorf("b received a message for another node: %v", m.Raft)
	}
	if b.tr.Dropped() != 1 {
		t.Errorf("b dropped %d messages, want 1 (the misaddressed one)", b.tr.Dropped())
	}
}

// TestTransportRegisterKeepsHTTP2: the cluster listener's HTTP/2 requests
// (forwarded requests) are served beside the Raft protocol.
func TestTransportRegisterKeepsHTTP2(t *testing.T) {
	cert := mustCert(t, mustCA(t, secretA), "a")
	n := startNodes(t, cert)[0]
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: cert.ClientTLS(""), ForceAttemptHTTP2: true}}
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+n.addr+pingPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(dataFormatHeader, dataFormat)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Proto") != "HTTP/2.0" {
		t.Errorf("GET %s: %s over %s, want 200 over HTTP/2.0", pingPath, resp.Status, resp.Header.Get("X-Proto"))
	}
}

// TestTransportHTTPOnlyPeer: a peer whose listener does not speak the Raft
// protocol (another version, or not a node) gets nothing: the handshake
// fails and the messages are dropped.
func TestTransportHTTPOnlyPeer(t *testing.T) {
	cert := mustCert(t, mustCA(t, secretA), "a")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NewServeMux(), TLSConfig: cert.ServerTLS(), ReadHeaderTimeout: 5 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.ServeTLS(ln, "", "") })
	defer wg.Wait()
	defer srv.Close()
	tr, err := NewTransport(TransportConfig{Self: 1, Peers: map[uint64]string{2: ln.Addr().String()}, Cert: cert,
		Deliver: func(replication.Message) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.Send(2, replication.Message{Group: 1, Raft: raftMsg(1, 2, 1, nil)})
	waitDropped(t, tr, 1)
}

// TestTransportForeignPeer: nodes with another secret's certificate reach
// nothing, both ways.
func TestTransportForeignPeer(t *testing.T) {
	nodes := startNodes(t, mustCert(t, mustCA(t, secretA), "a"), mustCert(t, mustCA(t, secretB), "intruder"))
	a, x := nodes[0], nodes[1]
	const n = 20
	for i := range n {
		a.tr.Send(x.id, replication.Message{Group: 1, Raft: raftMsg(a.id, x.id, uint64(i), nil)})
		x.tr.Send(a.id, replication.Message{Group: 1, Raft: raftMsg(x.id, a.id, uint64(i), nil)})
	}
	waitDropped(t, a.tr, n)
	waitDropped(t, x.tr, n)
	if len(a.got) != 0 || len(x.got) != 0 {
		t.Errorf("delivered %d and %d messages across CAs, want none", len(a.got), len(x.got))
	}
}

// TestTransportDownPeer: messages to a peer that is down are dropped,
// Send never blocks, the host hears that the peer is unreachable, and
// Close stops the sender (TestMain checks that no goroutine is left).
func TestTransportDownPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	cert := mustCert(t, mustCA(t, secretA), "a")
	tr, err := NewTransport(TransportConfig{
		Self:     1,
		Peers:    map[uint64]string{2: down},
		Cert:     cert,
		Deliver:  func(replication.Message) { t.Error("delivered without a server") },
		QueueLen: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	host := &fakeSnaps{unreachable: make(chan uint64, 1024)}
	tr.SetHost(host)
	const n = 10 * 64 // ten queues' worth: Send must drop, not wait
	for i := range n {
		tr.Send(2, replication.Message{Group: 1, Raft: raftMsg(1, 2, uint64(i), nil)})
	}
	tr.Send(3, replication.Message{Group: 1, Raft: raftMsg(1, 3, 0, nil)}) // not a peer
	waitDropped(t, tr, n+1)
	select {
	case id := <-host.unreachable:
		if id != 2 {
			t.Errorf("reported node %d unreachable, want 2", id)
		}
	case <-time.After(20 * time.Second):
		t.Error("the down peer was never reported unreachable")
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	tr.Send(2, replication.Message{Group: 1, Raft: raftMsg(1, 2, 0, nil)}) // after Close: dropped
	if got := tr.Dropped(); got != n+2 {
		t.Errorf("Dropped() = %d, want %d", got, n+2)
	}
}

// TestTransportServeConnRefuses: what the receiving side of a Raft
// connection refuses, and what it delivered before.
func TestTransportServeConnRefuses(t *testing.T) {
	cert := mustCert(t, mustCA(t, secretA), "a")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan replication.Message, 16)
	tr, err := NewTransport(TransportConfig{
		Self:            1,
		Cert:            cert,
		Deliver:         func(m replication.Message) { got <- m },
		MaxMessageBytes: 1 << 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NewServeMux(), TLSConfig: cert.ServerTLS(), ReadHeaderTimeout: 5 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
	tr.Register(srv)
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.ServeTLS(ln, "", "") })
	defer wg.Wait()
	defer srv.Close()
	defer tr.Close()

	frame := func(group uint64, m *pb.Message) []byte {
		b, err := tr.appendFrame(nil, replication.Message{Group: group, Raft: m})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := frame(4, raftMsg(2, 1, 1, nil))
	tests := []struct {
		name      string
		body      []byte
		closes    bool // the receiver closes the connection
		delivered int
		dropped   uint64
	}{
		{"ok", good, false, 1, 0},
		{"misaddressed", frame(4, raftMsg(2, 3, 1, nil)), false, 0, 1},
		{"short frame", append(binary.AppendUvarint(nil, 3), 1, 2, 3), true, 0, 0},
		{"oversized frame", binary.AppendUvarint(nil, 1<<20), true, 0, 0},
		{"not protobuf", append(binary.AppendUvarint(nil, 10), 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff), true, 0, 0},
		{"bad frame after a good one", append(bytes.Clone(good), binary.AppendUvarint(nil, 3)...), true, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tc := cert.ClientTLS("127.0.0.1")
			tc.NextProtos = []string{RaftProto}
			c, err := tls.Dial("tcp", ln.Addr().String(), tc)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			dropped := tr.Dropped()
			if _, err := c.Write(tt.body); err != nil {
				t.Fatal(err)
			}
			if tt.closes {
				// The receiver closes: a read ends (it never writes).
				_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
				if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("read: %v, want the connection closed by the receiver", err)
				}
			} else {
				// A control message after the case's: the receiver is still
				// reading, and has handled the case's frame.
				if _, err := c.Write(frame(5, raftMsg(2, 1, 9, nil))); err != nil {
					t.Fatal(err)
				}
			}
			want := tt.delivered
			if !tt.closes {
				want++
			}
			var ms []replication.Message
			timeout := time.After(20 * time.Second)
			for len(ms) < want {
				select {
				case m := <-got:
					ms = append(ms, m)
				case <-timeout:
					t.Fatalf("%d delivered in 20 s, want %d", len(ms), want)
				}
			}
			if !tt.closes && ms[len(ms)-1].Group != 5 {
				t.Fatalf("last delivered group %d, want the control message's 5", ms[len(ms)-1].Group)
			}
			if tt.delivered > 0 && (ms[0].Group != 4 || ms[0].Raft.GetIndex() != 1) {
				t.Errorf("delivered group %d %v, want group 4 index 1", ms[0].Group, ms[0].Raft)
			}
			if len(got) != 0 {
				t.Errorf("%d more delivered", len(got))
			}
			if d := tr.Dropped() - dropped; d != tt.dropped {
				t.Errorf("dropped %d, want %d", d, tt.dropped)
			}
		})
	}

	// A connection without a client certificate fails its handshake.
	tc := cert.ClientTLS("127.0.0.1")
	tc.NextProtos = []string{RaftProto}
	tc.Certificates = nil
	if c, err := tls.Dial("tcp", ln.Addr().String(), tc); err == nil {
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err = c.Read(make([]byte, 1)) // TLS 1.3: the server's refusal arrives after the client's handshake
		c.Close()
		if err == nil {
			t.Errorf("a connection without a client certificate was accepted")
		}
	}

	// A message over the bound is not sent.
	if _, err := tr.appendFrame(nil, replication.Message{Group: 1, Raft: raftMsg(1, 2, 1, make([]byte, 2<<10))}); err == nil {
		t.Errorf("appendFrame accepted a message over MaxMessageBytes")
	}
}

// TestTransportServeConnUnverified: a connection that reaches serveConn
// without a verified client certificate (a mis-wired listener) is closed
// unread.
func TestTransportServeConnUnverified(t *testing.T) {
	cert := mustCert(t, mustCA(t, secretA), "a")
	tr, err := NewTransport(TransportConfig{Self: 1, Cert: cert,
		Deliver: func(replication.Message) { t.Error("delivered from an unverified connection") }})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	sc, cc := net.Pipe()
	server := tls.Server(sc, &tls.Config{Certificates: cert.ServerTLS().Certificates, MinVersion: tls.VersionTLS13, NextProtos: []string{RaftProto}})
	ctc := cert.ClientTLS("127.0.0.1")
	ctc.Certificates, ctc.NextProtos = nil, []string{RaftProto}
	client := tls.Client(cc, ctc)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := server.Handshake(); err != nil {
			t.Error(err)
			return
		}
		tr.serveConn(server)
	})
	if err := client.Handshake(); err != nil {
		t.Fatal(err)
	}
	// net.Pipe has no buffer: read what the server writes (its
	// close_notify) so that its Close does not wait.
	wg.Go(func() { _, _ = io.Copy(io.Discard, client) })
	b, err := tr.appendFrame(nil, replication.Message{Group: 1, Raft: raftMsg(2, 1, 1, nil)})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = client.Write(b) // fails once serveConn has closed the pipe
	client.Close()
	wg.Wait()
}

// TestNewTransportRefuses: a transport needs an id, a certificate, a
// Deliver, and peer addresses with ports.
func TestNewTransportRefuses(t *testing.T) {
	cert := mustCert(t, mustCA(t, secretA), "a")
	deliver := func(replication.Message) {}
	for name, cfg := range map[string]TransportConfig{
		"no id":       {Cert: cert, Deliver: deliver},
		"no cert":     {Self: 1, Deliver: deliver},
		"no deliver":  {Self: 1, Cert: cert},
		"bad address": {Self: 1, Cert: cert, Deliver: deliver, Peers: map[uint64]string{2: "nowhere"}},
	} {
		if tr, err := NewTransport(cfg); err == nil {
			tr.Close()
			t.Errorf("%s: NewTransport succeeded", name)
		}
	}
}

// fakeSnaps is a RaftHost whose snapshots are size bytes of a pattern.
type fakeSnaps struct {
	size    int
	refuse  atomic.Bool
	got     chan int       // receiver: the bytes of each snapshot read
	reports chan [3]uint64 // sender: group, to, ok (1) or not (0)
	// unreachable receives the peers reported unreachable, when not nil.
	unreachable chan uint64
}

func (f *fakeSnaps) ReportUnreachable(to uint64) {
	if f.unreachable != nil {
		select {
		case f.unreachable <- to:
		default:
		}
	}
}

func (f *fakeSnaps) WriteSnapshot(_ context.Context, w io.Writer, _ replication.Message) (int, error) {
	buf := bytes.Repeat([]byte("snapshot"), 8<<10)
	for n := 0; n < f.size; n += len(buf) {
		if _, err := w.Write(buf[:min(len(buf), f.size-n)]); err != nil {
			return 0, err
		}
	}
	return 1, nil
}

func (f *fakeSnaps) ReadSnapshot(r io.Reader) error {
	var lr io.Reader = r
	if f.size > 0 {
		lr = io.LimitReader(r, int64(f.size))
	}
	n, err := io.Copy(io.Discard, lr)
	f.got <- int(n)
	if err != nil {
		return err
	}
	if f.refuse.Load() {
		return errors.New("refused")
	}
	return nil
}

func (f *fakeSnaps) ReportSnapshot(group, to uint64, ok bool) {
	v := uint64(0)
	if ok {
		v = 1
	}
	f.reports <- [3]uint64{group, to, v}
}

// TestTransportSnapshot: a snapshot goes as a stream of its own, however
// much larger than a message may be, and the sender reports whether the
// receiver took it; one refused, or sent to a node without a host, is
// reported failed.
func TestTransportSnapshot(t *testing.T) {
	ca := mustCA(t, secretA)
	nodes := startNodes(t, mustCert(t, ca, "a"), mustCert(t, ca, "b"))
	a, b := nodes[0], nodes[1]
	const size = 3<<20 + 17 // three times the largest batch of messages
	send := &fakeSnaps{size: size, reports: make(chan [3]uint64, 4), got: make(chan int, 4)}
	recv := &fakeSnaps{size: size, reports: make(chan [3]uint64, 4), got: make(chan int, 4)}
	snap := func() replication.Message {
		return replication.Message{Group: 7, Raft: &pb.Message{Type: pb.MsgSnap.Enum(), From: new(a.id), To: new(b.id), Term: new(uint64(2))}}
	}
	report := func() [3]uint64 {
		t.Helper()
		select {
		case r := <-send.reports:
			return r
		case <-time.After(20 * time.Second):
			t.Fatal("no snapshot report in 20 s")
		}
		return [3]uint64{}
	}

	// Without a host on either side: dropped at once, nothing reported.
	a.tr.Send(b.id, snap())
	waitDropped(t, a.tr, 1)

	a.tr.SetHost(send)
	// The receiver has no host yet: refused.
	a.tr.Send(b.id, snap())
	if r := report(); r != [3]uint64{7, b.id, 0} {
		t.Errorf("snapshot to a node without a host: report %v, want failed", r)
	}
	b.tr.SetHost(recv)
	a.tr.Send(b.id, snap())
	if r := report(); r != [3]uint64{7, b.id, 1} {
		t.Errorf("snapshot: report %v, want succeeded", r)
	}
	if n := <-recv.got; n != size {
		t.Errorf("receiver read %d bytes, want %d", n, size)
	}
	recv.refuse.Store(true)
	a.tr.Send(b.id, snap())
	if r := report(); r != [3]uint64{7, b.id, 0} {
		t.Errorf("refused snapshot: report %v, want failed", r)
	}
	<-recv.got
	// Messages still flow beside snapshots.
	a.tr.Send(b.id, replication.Message{Group: 7, Raft: raftMsg(a.id, b.id, 1, []byte("x"))})
	if m := b.receive(t, 1)[0]; m.Raft.GetType() != pb.MsgApp {
		t.Errorf("received %v, want the append", m.Raft.GetType())
	}
}

// TestPacedWriter: snapshots are written no faster than the rate (a lower
// bound on time, which a slow machine only exceeds), in pieces no larger
// than the burst, and the write stops when its context ends.
func TestPacedWriter(t *testing.T) {
	var got bytes.Buffer
	lim := rate.NewLimiter(4<<20, 1<<20) // 4 MiB/s, a burst of 1 MiB
	pw := pacedWriter{t.Context(), &got, lim}
	data := bytes.Repeat([]byte("x"), 3<<20)
	start := time.Now()
	if n, err := pw.Write(data); err != nil || n != len(data) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	// The burst goes at once, the other 2 MiB at 4 MiB/s.
	if took := time.Since(start); took < 450*time.Millisecond {
		t.Errorf("3 MiB at 4 MiB/s with a 1 MiB burst took %v, want 0.5 s at least", took)
	}
	if got.Len() != len(data) {
		t.Errorf("wrote %d bytes, want %d", got.Len(), len(data))
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := (pacedWriter{ctx, &got, lim}).Write(data); err == nil {
		t.Error("a write after its context ended succeeded")
	}
}
