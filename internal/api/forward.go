package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/status"
)

// Forwarding (docs/cluster.md, "Requests"): in a cluster a write is
// evaluated only on the leader of its partition's replicas. A node that
// does not lead it gets *replica.NotLeaderError from the engine before the
// write read or changed anything; the handler then hands the whole request
// to Config.Forward, which sends it to the leader over the cluster's mutual
// TLS and copies the leader's answer back. The leader authenticates and
// authorizes the request again, from its own signature: forwarding grants
// nothing. A read of a single keyspace that this node holds no replica of
// goes the same way, to Config.ForwardRead, before it reads anything
// (forwardRead).

// Forwarder sends a request that this node cannot serve to the node that
// leads keyspace (leader: the node this node believes leads it, 0 when
// unknown) and writes that node's response to w. It returns ForwardLocal
// when this node has become the leader meanwhile (the handler then serves
// the request again here), ForwardFailed when it could not reach a leader
// (nothing was written; the client gets 503 saying there is no leader,
// and retries), ForwardUnknown when the leader took the request and
// stopped answering (another node leads now, or it answered nothing for
// long: the client gets 408, outcome unknown).
type Forwarder func(w http.ResponseWriter, r *http.Request, body []byte, keyspace, leader uint64) ForwardResult

// ForwardResult is what a Forwarder did.
type ForwardResult int

// The outcomes of a Forwarder.
const (
	ForwardFailed ForwardResult = iota
	Forwarded
	ForwardLocal
	ForwardUnknown
)

// localWait bounds how long a request is served again here after a
// Forwarder found this node leading, localPause apart: the engine refused
// it as not led here, though this node leads, settled — it is handing its
// leadership over, which completes in a round trip or is abandoned after
// an election timeout (about a second), when it takes writes again. Served
// again at once, three times, as it first was, such a write answered 503
// within microseconds (a bug hunt saw a stored procedure's).
const (
	localWait  = 5 * time.Second
	localPause = 20 * time.Millisecond
)

// ReadForwarder sends a read of keyspace to node, a voter of it (one this
// node holds no replica of, or cannot keep current), to be served there,
// and writes that node's response to w; node 0 when its leader is not
// known (the forwarder may know another voter to ask). It reports whether
// it did; if not, nothing was written and the read is served here.
type ReadForwarder func(w http.ResponseWriter, r *http.Request, body []byte, keyspace, node uint64) bool

// forwardKey holds a request's forwarding state in its context.
type forwardKey struct{}

type forwardState struct {
	orig      *http.Request // the request as it arrived
	src       io.Reader     // its body, as read by its handlers through keptBody
	body      []byte        // what of src was read, kept to send the request on
	declared  int64         // the request's ContentLength: how large body may grow (growBody)
	whole     bool          // body holds all of src
	forwarded bool          // the request came from another node: never forward again
	relayed   bool          // … unless that node relayed it (MarkRelayed): forward it once
	local     time.Time     // when a Forwarder first found this node leading (ForwardLocal)
	moved     time.Time     // when it first met a moved partition (engine.RangeMoved)
	dropped   time.Time     // when its write was first not applied (engine.NotApplied)
	behind    time.Time     // when its read first met a keyspace behind its session (engine.SessionBehind)
}

// droppedWait bounds how long a write whose replicated batch was not
// applied (its proposal dropped or refused while the partition's
// leadership changed: a leader balance transfer, an election) is served
// again; droppedPause is the pause before each time. A transfer completes
// in a round trip, an election in about a second. @azure/cosmos does not
// retry a write's 503, so without this a leadership transfer reached its
// clients (the Node change-feed test's upserts during splits saw it).
const (
	droppedWait  = 5 * time.Second
	droppedPause = 50 * time.Millisecond
)

// movedWait bounds how long a request that met a moved partition is served
// again, each time after syncing this node's catalog: the move is recorded
// in the catalog right after its fence (docs/cluster.md, "Separations in a
// cluster").
const movedWait = 5 * time.Second

// NotLeaderHeader marks the answer of a node that was forwarded a request
// but does not lead its partition's replicas (leadership moved on while
// the request travelled): its value is the leader that node knows, in
// hex (0: none). The forwarding node then sends the request on there; the
// client never sees it.
const NotLeaderHeader = "X-Partita-Not-Leader"

// MarkForwarded returns r marked as forwarded by another node of the
// cluster: a NotLeaderError then gets 503 rather than a second hop. Only
// the cluster's mutual-TLS listener calls it.
func MarkForwarded(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), forwardKey{}, &forwardState{forwarded: true}))
}

// MarkRelayed returns r marked as relayed by another node of the cluster,
// which could not reach the partition's leader itself: forwarded, except
// that a NotLeaderError hands it to the Forwarder once (which must not
// relay it again). Only the cluster's mutual-TLS listener calls it.
func MarkRelayed(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), forwardKey{}, &forwardState{forwarded: true, relayed: true}))
}

// forwardedHere reports whether another node of the cluster forwarded r
// here (MarkForwarded).
func forwardedHere(r *http.Request) bool {
	st, _ := r.Context().Value(forwardKey{}).(*forwardState)
	return st != nil && st.forwarded
}

// forwardable notes r, as it arrived, as the request a forward sends on
// when a Forwarder may need it (the state keepBody fills). It reads
// nothing: the body is read only as the request's handlers read it, after
// its route authorized it (keepBody), so a request without valid
// credentials or permission costs no more memory in a cluster than on a
// single node.
func (h *Handler) forwardable(r *http.Request) *http.Request {
	if h.cfg.Forward == nil && h.cfg.ForwardRead == nil {
		return r
	}
	st, _ := r.Context().Value(forwardKey{}).(*forwardState)
	if st == nil {
		st = &forwardState{}
		r = r.WithContext(context.WithValue(r.Context(), forwardKey{}, st))
	}
	st.orig = r
	return r
}

// keepBody returns r, authenticated, reading its body through a keptBody
// when a Forwarder may need it (forwardable noted r): what the handlers read
// is kept, so that the request can be sent on or served again, and a
// request served again reads it from the start. Nothing is read here: a
// route that refuses the request (a read-only permission's write) reads
// none of it (a security review's 16 MiB bodies, each held by a node
// before its 403).
func (h *Handler) keepBody(r *http.Request) *http.Request {
	st, _ := r.Context().Value(forwardKey{}).(*forwardState)
	if st == nil {
		return r
	}
	if st.src == nil && !st.whole {
		if r.Body == nil || r.Body == http.NoBody {
			st.whole = true
		} else {
			st.src = r.Body
			st.declared = r.ContentLength
		}
	}
	r.Body = &keptBody{st: st}
	return r
}

// keptBody reads a forwardable request's body from the start: what was
// read before from st.body, the rest from its source, keeping it.
type keptBody struct {
	st  *forwardState
	off int
}

func (k *keptBody) Read(p []byte) (int, error) {
	st := k.st
	if k.off < len(st.body) {
		n := copy(p, st.body[k.off:])
		k.off += n
		return n, nil
	}
	if st.whole {
		return 0, io.EOF
	}
	n, err := st.src.Read(p)
	st.body = append(growBody(st.body, n, st.declared), p[:n]...)
	k.off += n
	if err == io.EOF {
		st.whole = true
	}
	return n, err
}

func (k *keptBody) Close() error { return nil }

// wholeBody reads what is left of the request's body and returns all of
// it (nil when empty), to send it on.
func (st *forwardState) wholeBody() ([]byte, error) {
	if !st.whole && st.src != nil {
		if _, err := io.Copy(io.Discard, &keptBody{st: st, off: len(st.body)}); err != nil {
			return nil, bodyError(err)
		}
	}
	st.whole = true
	if len(st.body) == 0 {
		return nil, nil
	}
	return st.body, nil
}

// forwardRead serves r, a read of scope sc (a point read, a query, a read
// or change feed), on another node when it reads
// a single keyspace that this node holds no replica of (with --replicas
// below the number of members) and the keyspace's leader is known: there
// it costs one hop, where read here each of its reads would be a round
// trip to a member (engine.ReadElsewhere). It reports whether r was
// answered that way. A session read carries this node's own session
// (nodesession.go) on to the other node in its session token, so the
// writes this node answered are read there too. A request forwarded here
// is never forwarded again, and one the other node did not answer is
// served here.
func (h *Handler) forwardRead(w http.ResponseWriter, r *http.Request, sc engine.Scope) bool {
	if h.cfg.ForwardRead == nil {
		return false
	}
	st, _ := r.Context().Value(forwardKey{}).(*forwardState)
	if st == nil || st.forwarded {
		return false
	}
	keyspace, leader, ok := h.eng.ReadElsewhere(r.PathValue("db"), r.PathValue("coll"), sc)
	if !ok {
		return false
	}
	fr := st.orig
	if h.cfg.Replicated && h.readLevel(r) == consistencyStrength["session"] {
		if toks := h.nodeSession(r.PathValue("db"), r.PathValue("coll")); len(toks) > 0 {
			fr = fr.Clone(fr.Context())
			fr.Header.Set("x-ms-session-token", withTokens(fr.Header.Get("x-ms-session-token"), toks))
		}
	}
	body, err := st.wholeBody()
	if err != nil {
		h.writeError(w, r, err)
		return true
	}
	if body != nil {
		fr = fr.Clone(fr.Context())
		fr.Body = io.NopCloser(bytes.NewReader(body))
	}
	return h.cfg.ForwardRead(cosmosCaseWriter{w}, fr, body, keyspace, leader)
}

// withTokens appends toks to the session token list v.
func withTokens(v string, toks []engine.SessionToken) string {
	b := []byte(strings.TrimSpace(v))
	for _, t := range toks {
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = t.AppendTo(b)
	}
	return string(b)
}

// forward hands a request that failed with NotLeaderError to the
// Forwarder, and reports whether the response is written; if not, it
// returns the error to answer (err, or the 503 of a Forwarder that found
// no leader).
func (h *Handler) forward(w http.ResponseWriter, r *http.Request, err error) (bool, error) {
	if engine.RangeMoved(err) {
		return h.moved(w, r, err)
	}
	if engine.NotApplied(err) {
		return h.dropped(w, r, err)
	}
	if engine.SessionBehind(err) {
		return h.sessionBehind(w, r, err)
	}
	keyspace, leader, ok := engine.NotLeader(err)
	if !ok || h.cfg.Forward == nil {
		return false, err
	}
	st, _ := r.Context().Value(forwardKey{}).(*forwardState)
	if st == nil {
		return false, err
	}
	if st.forwarded && !st.relayed {
		// The sender believed this node led; tell it whom this node
		// believes leads, so it can send the request there (nothing was
		// read or written here).
		setHeader(w, NotLeaderHeader, strconv.FormatUint(leader, 16))
		return false, err
	}
	body, berr := st.wholeBody()
	if berr != nil {
		return false, berr
	}
	r = st.orig
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	switch h.cfg.Forward(cosmosCaseWriter{w}, r, body, keyspace, leader) {
	case Forwarded:
		return true, nil
	case ForwardUnknown:
		return false, status.New(http.StatusRequestTimeout, fmt.Sprintf("The write's outcome is unknown: it was forwarded to the leader of "+
			"the partition's replicas (keyspace %d), which stopped answering (its connection failed, another node took over, or it took too long). "+
			"Read the item to learn whether it was applied.", keyspace)).Wrap(err)
	case ForwardLocal:
		return h.serveAgain(w, r, err, func(st *forwardState) *time.Time { return &st.local }, localWait, localPause, nil)
	}
	// No leader was elected within the Forwarder's wait, or the one this
	// node knows could not be reached: say so, rather than that this node
	// does not lead (which reads as if another would take the write).
	if h.cfg.Unfit != nil {
		if why := h.cfg.Unfit(); why != "" {
			return false, status.Unavailable(fmt.Sprintf("no leader of the partition's replicas (keyspace %d) could be reached "+
				"from this node (%s); another node of the cluster may serve the request", keyspace, why)).Wrap(err)
		}
	}
	return false, status.Unavailable(fmt.Sprintf("no leader of the partition's replicas (keyspace %d) could be reached: "+
		"a majority of the cluster's nodes may be down or cut off, or an election is under way; retry", keyspace)).Wrap(err)
}

// moved serves again, after syncing this node's catalog, a request that
// failed because its partition was moved out of the keyspace the catalog
// mapped it to (nothing was written), for at most movedWait; then it
// returns err (503: the SDKs retry).
func (h *Handler) moved(w http.ResponseWriter, r *http.Request, err error) (bool, error) {
	return h.serveAgain(w, r, err, func(st *forwardState) *time.Time { return &st.moved }, movedWait, 20*time.Millisecond, h.eng.SyncCatalog)
}

// dropped serves again a request whose write was not applied (nothing was
// written: engine.NotApplied), after droppedPause, for at most
// droppedWait; it is evaluated afresh, and forwarded if another node leads
// now. Then it returns err (503).
func (h *Handler) dropped(w http.ResponseWriter, r *http.Request, err error) (bool, error) {
	return h.serveAgain(w, r, err, func(st *forwardState) *time.Time { return &st.dropped }, droppedWait, droppedPause, nil)
}

// sessionBehind serves again a read that failed because the keyspace it
// would read had not reached its session, though the wait before had found
// the session reached (the range moved between the two: nothing was read):
// serving it again waits for the session where the range is now. It does
// so for at most sessionWait; then it returns err (404/1002: the SDKs
// retry).
func (h *Handler) sessionBehind(w http.ResponseWriter, r *http.Request, err error) (bool, error) {
	return h.serveAgain(w, r, err, func(st *forwardState) *time.Time { return &st.behind }, sessionWait, 0, nil)
}

// serveAgain serves the request r began as again, after prepare (if set)
// and a pause, unless the time since the first failure of its kind (the
// time since returns, set on the first call) passed wait, or its client
// gave up; then it returns err for the caller to answer. Nothing of the
// failed attempt may have been written.
func (h *Handler) serveAgain(w http.ResponseWriter, r *http.Request, err error, since func(*forwardState) *time.Time,
	wait, pause time.Duration, prepare func(context.Context) error) (bool, error) {
	st, _ := r.Context().Value(forwardKey{}).(*forwardState)
	if st == nil || st.orig == nil {
		return false, err
	}
	first := since(st)
	if first.IsZero() {
		*first = time.Now()
	}
	if time.Since(*first) > wait {
		return false, err
	}
	ctx := r.Context()
	if prepare != nil {
		if perr := prepare(ctx); perr != nil {
			return false, err
		}
	}
	select {
	case <-ctx.Done():
		return false, err
	case <-time.After(pause):
	}
	h.serve(w, st.orig) // its body read again from the start (keepBody)
	return true, nil
}
