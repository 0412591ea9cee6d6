package cluster

import (
	"errors"
	"net"
	"net/http"
	"testing"
	"time"
)

// listenAs serves TLS with the cluster's certificate on a loopback port,
// offering protos, and answers HTTP requests with handler.
func listenAs(t *testing.T, cert *Cert, protos []string, handler http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tc := cert.ServerTLS()
	tc.NextProtos = protos
	srv := &http.Server{Handler: handler, TLSConfig: tc, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// TestReleaseChecks: members of releases with different data formats do
// not take part in one cluster (an upgrade hunt: a member restarted on a
// release with another entry format led partitions and rebuilt their
// entries, and queries answered wrongly through every member). A member
// starting finds a member of another release up and refuses to start; a
// request between members of two releases is refused both ways.
func TestReleaseChecks(t *testing.T) {
	ca := mustCA(t, []byte("0123456789abcdef0123456789abcdef"))
	cert := mustCert(t, ca, "127.0.0.1:1")
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	same := listenAs(t, cert, []string{RaftProto, SnapProto, "http/1.1"}, requireRelease(ok))
	older := listenAs(t, cert, []string{"partita-raft/1", "partita-snap/1", "h2", "http/1.1"}, ok) // before the data format
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	self := Member{ID: 1, Addr: "127.0.0.1:1"}
	member := func(id uint64, addr string) Member { return Member{ID: id, Addr: addr} }

	if err := checkReleases(t.Context(), cert, self, []Member{self, member(2, same), member(3, deadAddr)}, time.Second); err != nil {
		t.Errorf("members of this release, and one down: %v, want none", err)
	}
	err = checkReleases(t.Context(), cert, self, []Member{self, member(2, same), member(3, older)}, time.Second)
	if !errors.Is(err, errOtherRelease) {
		t.Errorf("a member of an older release up: %v, want errOtherRelease", err)
	}

	client := newPeerClient(cert)
	defer client.CloseIdleConnections()
	get := func(addr string, hdr string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+addr+"/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		if hdr != "" {
			req.Header.Set(dataFormatHeader, hdr)
		}
		return client.Do(req)
	}
	if resp, err := get(same, ""); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("a request between members of this release: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if _, err := get(older, ""); !errors.Is(err, errOtherRelease) {
		t.Errorf("an answer from a member of an older release: %v, want errOtherRelease", err)
	}
	// A request from another release (a plain client: no header, or
	// another format) is refused.
	rtc := cert.ClientTLS("")
	rtc.NextProtos = []string{"http/1.1"}
	raw := &http.Client{Transport: &http.Transport{TLSClientConfig: rtc}}
	defer raw.CloseIdleConnections()
	for _, hdr := range []string{"", "999"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+same+"/x", nil)
		if hdr != "" {
			req.Header.Set(dataFormatHeader, hdr)
		}
		resp, err := raw.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict || resp.Header.Get(dataFormatHeader) != dataFormat {
			t.Errorf("a request with data format %q: %d, format %q; want 409 naming %s", hdr, resp.StatusCode, resp.Header.Get(dataFormatHeader), dataFormat)
		}
	}
}
