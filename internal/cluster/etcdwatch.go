package cluster

import (
	"context"
	"time"
)

// Renewing a stalled etcd member (docs/cluster.md, "A member whose peer
// connections stalled"). etcd's Raft streams between members are long-lived
// TCP connections, and etcd 3.7's reads of them have no timeout (its
// NewTimeoutTransport sets http.Transport.Dial, which the DialContext
// NewTransport set beside it takes precedence over, so the read deadlines
// are never applied). A network that drops one node's packets for a
// while leaves the senders' unacknowledged data in TCP's retransmission
// backoff (doubling, up to two minutes); once the network heals, nothing
// moves on those connections until the next retransmission, and nobody
// reads a timeout and dials again. A bug hunt with iptables: a node whose
// outgoing packets were dropped for 30 s answered 503 ("could not confirm
// that its copy of the cluster's catalog is current") for 24 s after the
// network healed, for 47 s after a 60 s cut. (Its own Raft connections
// stalled the same way, their writes succeeding into the kernel's buffer,
// until they got a bound on unacknowledged data: unackedControl.)
//
// So a node whose catalog has been unconfirmed for stalledAfter, while it
// has heard peers making a majority with it over its own Raft connections
// (each within heardWithin) for hearingFor, restarts its etcd member: the
// network is up, and the member had time to recover by itself (a node
// resumed after a pause, whose catalog lapsed meanwhile, is confirmed
// again within a second). The new member's connections are new, and its
// closed ones end the stalled streams on the peers' side. A restart waits
// restartWait before the next one, doubling up to restartWaitMax, back to
// restartWait once the catalog is confirmed again.
const (
	stalledAfter   = 10 * time.Second
	heardWithin    = 3 * time.Second
	hearingFor     = 3 * time.Second
	restartWait    = 15 * time.Second
	restartWaitMax = 10 * time.Minute
	watchInterval  = time.Second
)

// etcdWatch is watchEtcd's memory.
type etcdWatch struct {
	hearing time.Time     // since when a majority has been heard (zero: not now)
	last    time.Time     // the last restart
	wait    time.Duration // before the next
}

// watchEtcd restarts this node's etcd member when its peer connections
// seem stalled (above), until ctx ends.
func (n *Node) watchEtcd(ctx context.Context) {
	w := etcdWatch{wait: restartWait}
	every(ctx, watchInterval, func() {
		now := time.Now()
		lapsed := n.shared.Lapsed()
		heard := n.tr.HeardSince(now.Add(-heardWithin))
		if !w.due(now, lapsed, heard+1 >= len(n.members)/2+1) {
			return
		}
		n.log.Warn("this node's etcd member has not confirmed the catalog for a while, though this node hears a majority of the "+
			"members over its own connections: its peer connections are presumably stalled; restarting the member",
			"unconfirmed", lapsed.Round(time.Second), "heard", heard)
		err := n.etcd.Restart(ctx)
		// The wait runs from the restart's end: one that waited long for
		// a majority (a cut of etcd's traffic alone) is not followed at
		// once by another, before the new member could confirm anything.
		w.last = time.Now()
		if err != nil {
			n.log.Error("restart the etcd member", "err", err)
			return
		}
		n.log.Info("the etcd member restarted", "took", w.last.Sub(now).Round(time.Millisecond))
	})
}

// due reports whether the member is to be restarted now (majority: peers
// making a majority with this node were heard within heardWithin): the
// catalog has been unconfirmed for stalledAfter, a majority heard for
// hearingFor, and the wait since the last restart is over; it notes the
// restart. A confirmed catalog resets the wait.
func (w *etcdWatch) due(now time.Time, lapsed time.Duration, majority bool) bool {
	switch {
	case !majority:
		w.hearing = time.Time{}
	case w.hearing.IsZero():
		w.hearing = now
	}
	if lapsed == 0 {
		w.wait = restartWait
		return false
	}
	if lapsed < stalledAfter || !majority || now.Sub(w.hearing) < hearingFor || !w.last.IsZero() && now.Sub(w.last) < w.wait {
		return false
	}
	if !w.last.IsZero() {
		w.wait = min(2*w.wait, restartWaitMax)
	}
	w.last = now
	return true
}
