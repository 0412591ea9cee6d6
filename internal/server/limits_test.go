package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/config"
)

// TestConnectionBounds: what a client that never authenticates can make a
// listener hold is bounded (a security hunt: 500 connections each sending
// one long header line, never finished, took the server to 1-2 GB, 2-4 MB
// each). A header block past maxHeaderBytes is refused with 431, over TLS
// and as plain HTTP to the TLS port (whose answer read up to 2 MiB of
// headers); past --max-connections a new connection is not served until
// one closes.
func TestConnectionBounds(t *testing.T) {
	cfg := config.Default()
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Store.Dir = t.TempDir()
	cfg.Server.MaxConnections = 16
	s, err := OpenWith(t.Context(), cfg, nil, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	addr := s.Addr().String()
	long := "X-A: " + strings.Repeat("x", 2*maxHeaderBytes) + "\r\n" // net/http allows 4 KiB over the limit

	// Over TLS: 431, net/http's answer to a header block past the limit.
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+addr+"\r\n"+long+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a %d-byte header over TLS: %s, want 431", len(long), resp.Status)
	}
	c.Close()

	// Plain HTTP to the TLS port: answered 400 after at most
	// maxHeaderBytes of headers, not after the whole line.
	p, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = p.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { // the client may be answered before it has written it all
		_, _ = io.WriteString(p, "GET / HTTP/1.1\r\nHost: "+addr+"\r\nX-A: "+strings.Repeat("x", 4*maxHeaderBytes))
	}()
	if resp, err := http.ReadResponse(bufio.NewReader(p), nil); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plain HTTP with an unfinished %d-byte header line: %v %v, want 400 before the line ends", 4*maxHeaderBytes, resp, err)
	}
	p.Close()

	// 16 connections held open: the 17th is accepted by the kernel but not
	// served until one of them closes.
	var held []net.Conn
	for range 16 {
		h, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, h)
	}
	extra := make(chan error, 1)
	go func() {
		h, err := tls.DialWithDialer(&net.Dialer{Timeout: 20 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err == nil {
			h.Close()
		}
		extra <- err
	}()
	select {
	case err := <-extra:
		t.Fatalf("a 17th connection's handshake ended (%v) while 16 were open", err)
	case <-time.After(300 * time.Millisecond):
	}
	held[0].Close()
	select {
	case err := <-extra:
		if err != nil {
			t.Fatalf("the 17th connection once one closed: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the 17th connection was not served after one of the 16 closed")
	}
	for _, h := range held[1:] {
		h.Close()
	}
}
