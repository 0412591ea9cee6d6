package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A member whose data directory holds no etcd member starts etcd as a new
// member of the cluster named by the join list (embedConfig). etcd lets it
// only if no reachable peer says the member started before: when none is
// reachable, it goes ahead. A member whose disk was replaced (its directory
// empty) and that was restarted while the others were down thus came back
// as the same member with no memory of its log or its votes, and with one
// other member behind the rest formed a majority that had lost writes it
// acknowledged: etcd's catalog and every partition's Raft group alike (a
// bug hunt: 48 of 48 acknowledged items 404, an acknowledged container
// gone, and the member that held them refused when it came back).
//
// So a member with no etcd data first makes sure the cluster has no state
// it could have forgotten (awaitNewMember): either a peer's etcd answers
// and its list of members shows this one never started (it never published
// its client URLs: it never voted, never acknowledged a write, never ran a
// replica), or every member answers that it is as empty as this one (the
// cluster's first start). A majority of empty members is not enough: an
// empty member may be one whose data was lost, and with a member that
// never started it made a majority while the data was on the others (a
// review: a cluster run on two of its three members, one disk replaced,
// formed a second, empty cluster, and the member holding the data later
// joined it). Meanwhile it answers its peers' same question on its etcd
// peer address ("empty"), which etcd takes over once the member starts. A
// member that started before is refused, saying so; one that can confirm
// neither waits, up to the start's bound. Both answers also say which
// members the peer was started with (its --join list, or its etcd's
// members): a member told of other members than its own list refuses to
// start, naming both, since etcd would form clusters of different members
// that never agree (errOtherJoin).
//
// Not covered: a member whose only start was while the one peer that now
// answers was down, and whose publication that peer never learned of
// (replacing a member safely, as a learner that catches up before it
// votes, is a membership change: not supported yet).

// emptyMemberHeader marks the answer of a member waiting in
// awaitNewMember: it holds no etcd data.
const emptyMemberHeader = "X-Partita-Empty-Member"

// joinHeader carries, in the answer of a member waiting in awaitNewMember,
// its --join list as joinList writes it.
const joinHeader = "X-Partita-Join"

// settingsHeader carries, in the same answer, the settings the members of
// a new cluster must share (EtcdConfig.settings).
const settingsHeader = "X-Partita-Settings"

// errOtherSettings is awaitNewMember's error for a peer of a new cluster
// started with other settings (--replicas, --consistency): the first
// member to record them would win, a minority perhaps, and the others be
// refused once the cluster had formed, leaving it without a majority (a
// bug hunt: with --replicas 3, 2 and 1, the member whose value was
// recorded waited past its start timeout in a cluster that had lost its
// quorum).
var errOtherSettings = errors.New("the members of a new cluster were not all started with the same settings")

// errOtherJoin is awaitNewMember's error for a peer whose --join list (or
// whose cluster's members) differ from this node's: etcd would form
// clusters of different members, which never agree (a review: a member
// given one address more than the others waited for ever while etcd
// logged "cluster ID mismatch" many times a second, naming no cause).
var errOtherJoin = errors.New("the members were not all started with the same --join list")

// otherJoinLinger is how long a member that refuses to start for another
// member's --join list goes on answering the others (who ask every 300
// ms) before it stops.
const otherJoinLinger = 3 * time.Second

// joinList writes members' addresses as the join header carries them:
// sorted (Members sorts them), comma-separated.
func joinList(members []Member) string {
	addrs := make([]string, len(members))
	for i, m := range members {
		addrs[i] = m.Addr
	}
	return strings.Join(addrs, ",")
}

// errStartedBefore is awaitNewMember's error for a member the cluster
// knows started before, whose directory no longer holds its data.
var errStartedBefore = errors.New("this member started before, but its data directory holds none of its data")

// peerState is what a peer answered about the cluster.
type peerState int

const (
	peerUnreachable   peerState = iota
	peerEmpty                   // waiting in awaitNewMember, no etcd data
	peerKnowsSelf               // its etcd lists this member as started
	peerSelfNew                 // its etcd lists this member as never started
	peerOtherJoin               // its --join list, or its etcd's members, differ from this node's
	peerOtherSettings           // waiting in awaitNewMember, with other settings (EtcdConfig.settings)
)

// awaitNewMember returns once member cfg.Self, whose directory holds no etcd
// data, may start as a new member (see above), errStartedBefore (wrapped)
// if the cluster knows it started before, or an error when it cannot tell
// before ctx ends.
func awaitNewMember(ctx context.Context, cfg EtcdConfig, lg *slog.Logger) error {
	peer, err := url.Parse(cfg.Self.PeerURL)
	if err != nil {
		return fmt.Errorf("cluster: etcd: peer URL: %w", err)
	}
	ln, err := net.Listen("tcp", peer.Host)
	if err != nil {
		return fmt.Errorf("cluster: etcd: listen on %s: %w", peer.Host, err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(emptyMemberHeader, "1")
			w.Header().Set(joinHeader, joinList(cfg.Members))
			w.Header().Set(settingsHeader, cfg.settings)
			http.Error(w, "this member holds no etcd data and has not started its etcd member yet", http.StatusServiceUnavailable)
		}),
		TLSConfig:         cfg.Cert.ServerTLS(),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0), // refused handshakes are expected
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.ServeTLS(ln, "", "")
	}()
	defer func() {
		_ = srv.Close()
		<-served
	}()
	began, logged := time.Now(), time.Time{}
	for {
		empty := 1 // this member
		for _, m := range cfg.Members {
			if m.ID == cfg.Self.ID {
				continue
			}
			state, other := askPeer(ctx, cfg, m, lg)
			switch state {
			case peerOtherJoin, peerOtherSettings:
				// Answer a little longer, so that the others hear this
				// member's list too and refuse as well, rather than wait
				// for a member that is gone.
				select {
				case <-ctx.Done():
				case <-time.After(otherJoinLinger):
				}
				if state == peerOtherSettings {
					return fmt.Errorf("cluster: etcd: %w: this node was started with %s; member %s with %s. Start every member "+
						"with the same settings", errOtherSettings, cfg.settings, m.Addr, other)
				}
				return fmt.Errorf("cluster: etcd: %w: this node's --join names %s; member %s's names %s. Start every member "+
					"with the same --join list (changing a cluster's members is not supported yet)",
					errOtherJoin, joinList(cfg.Members), m.Addr, other)
			case peerKnowsSelf:
				return fmt.Errorf("cluster: etcd: %w: member %s of the cluster lists %s as a member that has started, "+
					"so the cluster may hold writes that only this member's lost data had; it is refused rather than "+
					"let it vote with no memory (replacing a member is not supported yet: restore its data directory, "+
					"or recreate the cluster)", errStartedBefore, m.Addr, cfg.Self.Addr)
			case peerSelfNew:
				return nil
			case peerEmpty:
				empty++
			}
		}
		if empty == len(cfg.Members) {
			return nil
		}
		if logged.IsZero() || time.Since(logged) >= waitLogEvery {
			// Every waitLogEvery, as StartEtcd's wait does: the wait has
			// no bound by default.
			lg.Info("this member holds no cluster data: waiting for every member to start empty too (a new cluster), "+
				"or for one that holds data to confirm this member never started", "members", len(cfg.Members), "empty", empty,
				"waited", time.Since(began).Round(time.Second))
			logged = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// memberAddr returns the cluster address whose etcd peer address is
// peerHost (host:port+1), or peerHost itself when it has no port.
func memberAddr(peerHost string) string {
	host, port, err := net.SplitHostPort(peerHost)
	if err != nil {
		return peerHost
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return peerHost
	}
	return net.JoinHostPort(host, strconv.Itoa(p-1))
}

// askPeer asks member m's etcd peer address about the cluster. A
// handshake that fails on credentials (another --cluster-secret) is
// recorded in cfg.refusals, and logged, for the error of a wait that ends:
// in a new cluster with one member started with another secret, every
// member waited for the others saying only that it waited (a review).
func askPeer(ctx context.Context, cfg EtcdConfig, m Member, lg *slog.Logger) (_ peerState, other string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	tc := cfg.Cert.ClientTLS(m.Host())
	tc.NextProtos = nil // HTTP/1.1, which etcd's peer listener and ours both speak
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.PeerURL+"/members", nil)
	if err != nil {
		return peerUnreachable, ""
	}
	resp, err := client.Do(req)
	if err != nil {
		if e := explainTLS(err); e != err && cfg.refusals != nil {
			cfg.refusals.add(lg, m.Addr, e)
		}
		return peerUnreachable, ""
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case err != nil:
		return peerUnreachable, ""
	case resp.Header.Get(emptyMemberHeader) != "":
		// A release before the header sends none: not compared.
		if j := resp.Header.Get(joinHeader); j != "" && j != joinList(cfg.Members) {
			return peerOtherJoin, j
		}
		if st := resp.Header.Get(settingsHeader); st != "" && cfg.settings != "" && st != cfg.settings {
			return peerOtherSettings, st
		}
		return peerEmpty, ""
	case resp.StatusCode != http.StatusOK:
		return peerUnreachable, ""
	}
	// etcd's membership.Member as its peer handler encodes it.
	var members []struct {
		Name       string   `json:"name"`
		PeerURLs   []string `json:"peerURLs"`
		ClientURLs []string `json:"clientURLs"`
	}
	if err := json.Unmarshal(body, &members); err != nil {
		return peerUnreachable, ""
	}
	// The cluster's members are its initial ones, the join list its
	// members were started with (members are not added or removed yet):
	// by peer URL, as a member that never started has no name yet.
	var urls, want []string
	for _, pm := range members {
		urls = append(urls, pm.PeerURLs...)
	}
	for _, cm := range cfg.Members {
		want = append(want, cm.PeerURL)
	}
	slices.Sort(urls)
	slices.Sort(want)
	if !slices.Equal(urls, want) {
		var names []string
		for _, u := range urls {
			if pu, err := url.Parse(u); err == nil {
				names = append(names, memberAddr(pu.Host))
			}
		}
		slices.Sort(names)
		return peerOtherJoin, strings.Join(names, ",") + " (the members its etcd lists)"
	}
	for _, pm := range members {
		if pm.Name == cfg.Self.Addr || slices.Contains(pm.PeerURLs, cfg.Self.PeerURL) {
			if len(pm.ClientURLs) > 0 {
				return peerKnowsSelf, ""
			}
			return peerSelfNew, ""
		}
	}
	return peerUnreachable, ""
}
