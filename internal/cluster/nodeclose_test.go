package cluster

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/drain"
)

// TestCloseAnswersForwards: other nodes forwarding requests one after
// another on kept-alive HTTP/1.1 connections (the peer client) while this
// node closes: every request is answered or refused at dial, none dropped
// unanswered, which a peer could only answer 408 for (its outcome unknown).
// http.Server.Shutdown drops any request it reads once it has begun.
func TestCloseAnswersForwards(t *testing.T) {
	for _, pace := range []time.Duration{0, 120 * time.Millisecond} {
		t.Run(fmt.Sprint("pace=", pace), func(t *testing.T) { closeUnderForwards(t, pace) })
	}
}

func closeUnderForwards(t *testing.T, pace time.Duration) {
	ca := mustCA(t, secretA)
	cert, err := ca.NodeCert("127.0.0.1:0", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{log: slog.New(slog.DiscardHandler), ln: ln, runErr: make(chan error, 1)}
	n.srv = &http.Server{TLSConfig: cert.ServerTLS()}
	n.conns = drain.Track(n.srv)
	n.srv.Handler = n.conns.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(time.Millisecond)
		w.WriteHeader(http.StatusCreated)
	}))
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = n.srv.ServeTLS(ln, "", "")
	}()
	addr := ln.Addr().String()
	var mu sync.Mutex
	var cut []string
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			var c net.Conn
			var br *bufio.Reader
			for i := 0; ; i++ {
				if c == nil {
					tc := cert.ClientTLS("127.0.0.1")
					tc.NextProtos = []string{"http/1.1"}
					tcn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, tc)
					if err != nil {
						return // refused, or closed in the handshake: nothing sent
					}
					c, br = tcn, bufio.NewReader(tcn)
				}
				body := fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				_, err := fmt.Fprintf(c, "POST /forward HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
				var resp *http.Response
				if err == nil {
					resp, err = http.ReadResponse(br, nil)
				}
				if err != nil {
					mu.Lock()
					cut = append(cut, fmt.Sprintf("worker %d request %d: sent, not answered: %v", w, i, err))
					mu.Unlock()
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.Close {
					c.Close()
					c = nil
				}
				time.Sleep(pace)
			}
		})
	}
	time.Sleep(200*time.Millisecond + pace/2)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	<-served
	for _, c := range cut {
		t.Error(c)
	}
}
