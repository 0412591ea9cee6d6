package cluster

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/partitadb/partita/internal/replication"
)

// testNode is a transport and the mTLS server that receives for it.
type testNode struct {
	id   uint64
	addr string
	tr   *Transport
	got  chan replication.Message
	h2   atomic.Bool // every request it received was HTTP/2
}

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
		nodes[i].h2.Store(true)
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
		mux.HandleFunc("POST "+RaftPath, func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor != 2 {
				n.h2.Store(false)
			}
			tr.ServeHTTP(w, r)
		})
		srv := &http.Server{
			Handler:           mux,
			TLSConfig:         certs[i].ServerTLS(),
			ReadHeaderTimeout: 5 * time.Second,
			ErrorLog:          log.New(io.Discard, "", 0), // refused handshakes are expected
		}
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
	for _, m := range sent {
		a.tr.Send(b.id, m)
	}
	got := b.receive(t, len(sent))
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
	if !a.h2.Load() || !b.h2.Load() {
		t.Errorf("a request arrived over HTTP/1")
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
// Send never blocks, and Close stops the sender (TestMain checks that no
// goroutine is left).
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
	const n = 10 * 64 // ten queues' worth: Send must drop, not wait
	for i := range n {
		tr.Send(2, replication.Message{Group: 1, Raft: raftMsg(1, 2, uint64(i), nil)})
	}
	tr.Send(3, replication.Message{Group: 1, Raft: raftMsg(1, 3, 0, nil)}) // not a peer
	waitDropped(t, tr, n+1)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	tr.Send(2, replication.Message{Group: 1, Raft: raftMsg(1, 2, 0, nil)}) // after Close: dropped
	if got := tr.Dropped(); got != n+2 {
		t.Errorf("Dropped() = %d, want %d", got, n+2)
	}
}

// TestTransportHandlerRefuses: what the receiving side refuses.
func TestTransportHandlerRefuses(t *testing.T) {
	cert := mustCert(t, mustCA(t, secretA), "a")
	var delivered []replication.Message
	tr, err := NewTransport(TransportConfig{
		Self:            1,
		Cert:            cert,
		Deliver:         func(m replication.Message) { delivered = append(delivered, m) },
		MaxMessageBytes: 1 << 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	verified := &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{cert.leaf.Leaf}}}

	frame := func(group uint64, m *pb.Message) []byte {
		b, err := tr.appendFrame(nil, replication.Message{Group: group, Raft: m})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := frame(4, raftMsg(2, 1, 1, nil))
	tests := []struct {
		name        string
		method      string
		tls         *tls.ConnectionState
		contentType string
		body        []byte
		want        int
		delivered   int
	}{
		{"ok", "POST", verified, raftContentType, good, http.StatusNoContent, 1},
		{"empty batch", "POST", verified, raftContentType, nil, http.StatusNoContent, 0},
		{"not POST", "GET", verified, raftContentType, nil, http.StatusMethodNotAllowed, 0},
		{"without TLS", "POST", nil, raftContentType, good, http.StatusForbidden, 0},
		{"without client certificate", "POST", &tls.ConnectionState{}, raftContentType, good, http.StatusForbidden, 0},
		{"other format", "POST", verified, "application/octet-stream", good, http.StatusUnsupportedMediaType, 0},
		{"truncated", "POST", verified, raftContentType, append(bytes.Clone(good), good[:len(good)-1]...), http.StatusBadRequest, 1},
		{"short frame", "POST", verified, raftContentType, append(binary.AppendUvarint(nil, 3), 1, 2, 3), http.StatusBadRequest, 0},
		{"oversized frame", "POST", verified, raftContentType, binary.AppendUvarint(nil, 1<<20), http.StatusRequestEntityTooLarge, 0},
		{"not protobuf", "POST", verified, raftContentType, append(binary.AppendUvarint(nil, 10), 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff), http.StatusBadRequest, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			delivered = nil
			req := httptest.NewRequestWithContext(t.Context(), tt.method, RaftPath, bytes.NewReader(tt.body))
			req.TLS = tt.tls
			req.Header.Set("Content-Type", tt.contentType)
			rec := httptest.NewRecorder()
			tr.ServeHTTP(rec, req)
			if rec.Code != tt.want || len(delivered) != tt.delivered {
				t.Errorf("status %d, %d delivered; want %d, %d", rec.Code, len(delivered), tt.want, tt.delivered)
			}
		})
	}
	if len(delivered) == 0 {
		return
	}
	// The "truncated" case delivered the whole first frame.
	if m := delivered[0]; m.Group != 4 || m.Raft.GetIndex() != 1 {
		t.Errorf("delivered group %d %v, want group 4 index 1", m.Group, m.Raft)
	}

	// A message over the bound is not sent.
	if _, err := tr.appendFrame(nil, replication.Message{Group: 1, Raft: raftMsg(1, 2, 1, make([]byte, 2<<10))}); err == nil {
		t.Errorf("appendFrame accepted a message over MaxMessageBytes")
	}
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
