package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/replica"
)

// Members of one cluster run one release, or at least releases of one data
// format (replica.DataFormat): a leader writes its partitions' entries in
// its own format, and a member reading them in another answers queries
// wrongly (an upgrade hunt: a member restarted on a release with another
// entry format, in a cluster of the older one, led some partitions and
// rebuilt their entries; equality and range queries on long strings then
// answered wrongly through every member, with no error). Three checks keep
// them apart:
//
//   - Raft's and snapshots' application protocols carry the data format
//     (RaftProto, SnapProto): the handshake between members of two
//     formats fails, so they never replicate to each other;
//   - every request between members (forwards, remote reads, budgets,
//     status) carries the sender's data format, and every answer the
//     answerer's (dataFormatHeader): either side refuses the other's;
//   - a member starting refuses to start while a member of another
//     release is up (checkReleases), where the first two checks would
//     leave it running but unable to take part.

// dataFormatHeader carries replica.DataFormat on every request and answer
// between members.
const dataFormatHeader = "X-Partita-Data-Format"

// dataFormat is replica.DataFormat as dataFormatHeader carries it.
var dataFormat = strconv.Itoa(replica.DataFormat)

// errOtherRelease is a member of another release (another data format).
var errOtherRelease = errors.New("cluster: the member runs another release of Partita (another data format): members must all run one release; stop every member and start them all on the same release")

// releaseTransport is the peer client's transport: it names this
// release's data format on each request and refuses an answer that names
// another, or none (a release from before the header).
type releaseTransport struct{ next http.RoundTripper }

func (t releaseTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(dataFormatHeader, dataFormat)
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if got := resp.Header.Get(dataFormatHeader); got != dataFormat {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return nil, fmt.Errorf("%w (%s answered with data format %q, this member's is %s)", errOtherRelease, req.URL.Host, got, dataFormat)
	}
	return resp, nil
}

// requireRelease serves next only requests that name this release's data
// format; it answers others with 409 and a message naming both, and names
// its own format on every answer.
func requireRelease(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(dataFormatHeader, dataFormat)
		if got := r.Header.Get(dataFormatHeader); got != dataFormat {
			http.Error(w, fmt.Sprintf("%v (the request came with data format %q, this member's is %s)", errOtherRelease, got, dataFormat), http.StatusConflict)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkReleases dials every other member's cluster listener offering this
// release's RaftProto and fails if one that answers speaks another
// (errOtherRelease): a member of another release is up. Members that do
// not answer within wait (down, or starting: a starting member's cluster
// listener does not serve yet) are not checked here; the handshakes and
// headers above keep them apart if they turn out to be.
func checkReleases(ctx context.Context, cert *Cert, self Member, members []Member, wait time.Duration) error {
	type result struct {
		m   Member
		err error
	}
	results := make(chan result, len(members))
	n := 0
	for _, m := range members {
		if m.ID == self.ID {
			continue
		}
		n++
		go func() {
			tc := cert.ClientTLS(m.Host())
			tc.NextProtos = []string{RaftProto}
			d := tls.Dialer{NetDialer: &net.Dialer{Timeout: wait}, Config: tc}
			dctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			c, err := d.DialContext(dctx, "tcp", m.Addr)
			if err == nil {
				_ = c.Close()
			}
			results <- result{m, err}
		}()
	}
	var errs []string
	for range n {
		r := <-results
		if r.err != nil && otherRelease(r.err) {
			errs = append(errs, r.m.Addr)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: the Raft protocol of this release is %s, and these members, up, answer with another: %s", errOtherRelease, RaftProto, strings.Join(errs, ", "))
	}
	return nil
}

// CloseIdleConnections closes the idle connections of the transport below
// (http.Client.CloseIdleConnections calls it).
func (t releaseTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
