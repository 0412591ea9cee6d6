package cluster

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// send sends r (body: its body), which arrived on the listener named
// listener, to member to's cluster listener, to be served there as that
// listener serves it and never sent on (the cluster listener marks it
// forwarded). The client's headers go with it, signature included: the
// member authenticates and authorizes it again.
func (n *Node) send(ctx context.Context, to Member, r *http.Request, listener string, body []byte) (*http.Response, error) {
	return n.sendAs(ctx, to, r, listener, body, false)
}

// sendAs is send, the request marked relayed (RelayHeader) or not: a
// client's own header of that name is never sent on.
func (n *Node) sendAs(ctx context.Context, to Member, r *http.Request, listener string, body []byte, relay bool) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	u := "https://" + to.Addr + ForwardPath + "/" + listener + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header = r.Header.Clone()
	req.Header.Del(RelayHeader)
	if relay {
		req.Header.Set(RelayHeader, "1")
	}
	req.Header.Set(forwardHostHeader, r.Host)
	req.ContentLength = int64(len(body))
	return n.client.Do(req)
}

// Answer is one member's response to a gathered request.
type Answer struct {
	Node   string // the member's node id, 16 hex digits
	Addr   string // its cluster address
	Status int    // its HTTP status; 0 when it could not be reached
	Body   []byte
	Err    error // why it could not be reached, or its body not read
}

// gatherTimeout bounds how long Gather waits for the other members.
const gatherTimeout = 5 * time.Second

// maxGatherBody bounds one member's answer to a gathered request.
const maxGatherBody = 64 << 20

// Gather sends r (a request without a body, such as a report's GET), which
// arrived on the listener named listener, to every other member, each to
// serve it locally, and returns their answers in member order: the
// cluster-wide view of what each node counts on its own (request units
// charged on it, its 429s). A member that does not answer within 5 s is
// reported with its error.
func (n *Node) Gather(r *http.Request, listener string) []Answer {
	ctx, cancel := context.WithTimeout(r.Context(), gatherTimeout)
	defer cancel()
	var out []Answer
	for _, m := range n.members {
		if m.ID != n.self.ID {
			out = append(out, Answer{Node: nodeHex(m.ID), Addr: m.Addr})
		}
	}
	var wg sync.WaitGroup
	i := 0
	for _, m := range n.members {
		if m.ID == n.self.ID {
			continue
		}
		a := &out[i]
		i++
		wg.Go(func() {
			resp, err := n.send(ctx, m, r, listener, nil)
			if err != nil {
				a.Err = err
				return
			}
			defer resp.Body.Close()
			a.Status = resp.StatusCode
			a.Body, a.Err = io.ReadAll(io.LimitReader(resp.Body, maxGatherBody))
		})
	}
	wg.Wait()
	return out
}
