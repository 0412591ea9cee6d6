package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/partitadb/partita/internal/catalog"
)

// A node's catalog is a copy that follows etcd through a watch, so it can
// be behind: a container deleted through another node is still in it for
// the watch's delay. Two rules keep writes and linearizable reads from
// acting on such a copy (docs/cluster.md, "Catalog changes every node has
// seen"):
//
//   - a node's catalog is *current* for CatalogLease after a confirmation
//     began (a linearizable read of the revision of the catalog's last
//     write, then the watch passing it); keep confirms it every quarter
//     lease, and Current confirms it first when it has lapsed;
//   - a client's catalog change is acknowledged once every member has
//     reported (under its key of the seen prefix) that its catalog passed
//     the change, or CatalogLease and a margin have gone by since it was
//     written (Propagated): by then any copy that missed it has lapsed,
//     since a confirmation that began before the change keeps a copy
//     current for at most a lease from its start.
//
// So a request that needs a current catalog, begun after the change was
// acknowledged, runs on a copy that has it. The bound holds whatever the
// members' clocks read; it needs only that their rates agree within the
// margin (a tenth).

// confirmCall is one confirmation under way, which callers that arrive
// after it began share.
type confirmCall struct {
	began time.Duration // since epoch
	done  chan struct{}
	err   error
}

// confirmTimeout bounds one confirmation.
const confirmTimeout = 5 * time.Second

// revisionKey is where Backend notes the revision of the catalog's last
// write (every Apply puts it), outside the catalog's prefix.
func revisionKey(prefix string) string { return strings.TrimSuffix(prefix, "/") + "-revision" }

// seenPrefix is where members report the catalog revision they applied,
// outside the catalog's prefix.
func seenPrefix(prefix string) string { return strings.TrimSuffix(prefix, "/") + "-seen/" }

func (s *SharedCatalog) since() time.Duration { return time.Since(s.epoch) }

// Current returns nil while this node's catalog is current (a confirmation
// began within the lease), and otherwise confirms it first; an error
// wrapping catalog.ErrStale when it cannot be confirmed (etcd unreachable).
// It first joins a confirmation under way, whenever it began (its lease
// counts from its own start), and only if that leaves the catalog lapsed
// waits for one that begins after the call: at most two confirmations are
// ever under way, however many requests find the lease lapsed.
//
// A node whose last confirmation failed and whose catalog lapsed more than
// a lease ago answers at once (etcd has been unreachable that long: a
// majority of the cluster is down or cut off), rather than have every
// request wait out a confirmation of its own (about 2.5 s each, a bug hunt
// found, with two of three nodes down); the confirmations made every
// quarter lease in the background (keep) notice when etcd is back.
func (s *SharedCatalog) Current(ctx context.Context) error {
	if s.isCurrent() {
		return nil
	}
	if lapsed := s.Lapsed(); lapsed > s.lease {
		s.confirms.Lock()
		failed := s.confirms.failed
		s.confirms.Unlock()
		if failed != nil {
			return fmt.Errorf("%w: not confirmed current for %v: %w", catalog.ErrStale, lapsed.Round(time.Millisecond), failed)
		}
	}
	asked := s.since()
	err := s.confirm(ctx, 0)
	if err == nil && s.isCurrent() {
		return nil
	}
	if err == nil {
		err = s.confirm(ctx, asked)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", catalog.ErrStale, err)
	}
	return nil
}

func (s *SharedCatalog) isCurrent() bool { return s.since() < time.Duration(s.current.Load()) }

// Lapsed returns how long ago this node's catalog stopped being current
// (0 while it is): since its last confirmation's lease ran out, or since
// the node started when none has been made.
func (s *SharedCatalog) Lapsed() time.Duration {
	return max(0, s.since()-time.Duration(s.current.Load()))
}

// confirm returns once a confirmation that began at or after after (since
// epoch) has completed: the catalog then holds every change written before
// it began, and is current for a lease from its start. A confirmation under
// way that began late enough is joined; otherwise the caller waits for the
// next, which starts when it ends and which every such caller shares.
func (s *SharedCatalog) confirm(ctx context.Context, after time.Duration) error {
	s.confirms.Lock()
	var c *confirmCall
	switch cur := s.confirms.cur; {
	case cur == nil:
		c = &confirmCall{began: s.since(), done: make(chan struct{})}
		s.confirms.cur = c
		go s.confirmOnce(c)
	case cur.began >= after:
		c = cur
	default:
		if s.confirms.next == nil {
			s.confirms.next = &confirmCall{done: make(chan struct{})}
		}
		c = s.confirms.next
	}
	s.confirms.Unlock()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// confirmOnce runs confirmation c, on its own context: one caller's
// cancellation does not fail the others. Then it starts the next, if
// callers wait for one.
func (s *SharedCatalog) confirmOnce(c *confirmCall) {
	c.err = s.confirmation(c.began)
	s.confirms.Lock()
	s.confirms.failed = c.err
	s.confirms.cur = s.confirms.next
	s.confirms.next = nil
	if n := s.confirms.cur; n != nil {
		n.began = s.since()
		go s.confirmOnce(n)
	}
	s.confirms.Unlock()
	close(c.done)
}

// confirmation reads the revision of the catalog's last write, waits until
// the watch has passed it, and makes the catalog current until began plus
// a lease.
func (s *SharedCatalog) confirmation(began time.Duration) error {
	ctx, cancel := context.WithTimeout(s.ctx, confirmTimeout)
	defer cancel()
	s.mu.Lock()
	err, following := s.mu.err, s.mu.observe != nil
	s.mu.Unlock()
	switch {
	case err != nil:
		return err
	case !following:
		return errors.New("cluster: the catalog is not following etcd yet")
	}
	resp, err := s.cli.Get(ctx, revisionKey(s.base.prefix))
	if err != nil {
		return fmt.Errorf("cluster: catalog revision: %w", err)
	}
	var rev int64
	if len(resp.Kvs) > 0 {
		rev = resp.Kvs[0].ModRevision
	}
	if err := s.caughtUp(ctx, rev); err != nil {
		return err
	}
	until := int64(began + s.lease)
	for {
		cur := s.current.Load()
		if cur >= until || s.current.CompareAndSwap(cur, until) {
			return nil
		}
	}
}

// keep confirms the catalog every quarter lease and reports the revision
// it applied (under the seen prefix) whenever the watch passes changes,
// until Close.
func (s *SharedCatalog) keep() {
	defer close(s.kept)
	t := time.NewTicker(s.lease / 4)
	defer t.Stop()
	var reported int64
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			if err := s.confirm(s.ctx, s.since()); err != nil && s.ctx.Err() == nil {
				s.log.Debug("catalog not confirmed current", "err", err)
			}
		case <-s.kick:
		}
		s.mu.Lock()
		applied := s.mu.applied
		s.mu.Unlock()
		if applied <= reported {
			continue
		}
		// No lease: a member's catalog never goes back below what it
		// reported (a restarted member loads the newest), so a report
		// stays true after the member stops.
		ctx, cancel := context.WithTimeout(s.ctx, s.base.timeout)
		_, err := s.cli.Put(ctx, seenPrefix(s.base.prefix)+memberKey(s.self), strconv.FormatInt(applied, 10))
		cancel()
		if err == nil {
			reported = applied
		}
	}
}

func memberKey(id uint64) string { return fmt.Sprintf("%016x", id) }

// propagationRetry spaces Propagated's reads of the members' reports when
// etcd does not answer or its watch ends.
const propagationRetry = 50 * time.Millisecond

// Written returns the revision of this node's last catalog write (0: none
// yet), a mark for Propagated.
func (s *SharedCatalog) Written() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.written
}

// Propagated returns at once when this node has written nothing to the
// catalog since mark (Written); otherwise once its last write is in every
// member's catalog, or can no longer be missed by any member's current
// catalog: every member reported a revision at or past it, or a lease and a
// margin have gone by. It fails only when ctx ends.
//
// It reads the reports once and then watches them from the revision it
// read, so a member that is down or slow costs one watch, not a read every
// few milliseconds until the lease has gone by.
func (s *SharedCatalog) Propagated(parent context.Context, mark int64) error {
	rev := s.Written()
	if rev <= mark {
		return nil
	}
	ctx, cancel := context.WithDeadline(parent, time.Now().Add(s.lease+s.lease/10+50*time.Millisecond))
	defer cancel()
	prefix := seenPrefix(s.base.prefix)
	seen := map[string]int64{}
	note := func(key, value []byte) {
		v, _ := strconv.ParseInt(string(value), 10, 64)
		seen[string(key[len(prefix):])] = v
	}
	behind := func() []string {
		var out []string
		for _, id := range s.members {
			if k := memberKey(id); id != s.self && seen[k] < rev {
				out = append(out, k)
			}
		}
		return out
	}
	var err error
	for ctx.Err() == nil {
		var resp *clientv3.GetResponse
		resp, err = s.cli.Get(ctx, prefix, clientv3.WithPrefix())
		if err == nil {
			for _, kv := range resp.Kvs {
				note(kv.Key, kv.Value)
			}
			if len(behind()) == 0 {
				return nil
			}
			wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
			for wr := range s.cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
				if err = wr.Err(); err != nil {
					break
				}
				for _, ev := range wr.Events {
					if ev.Type == clientv3.EventTypePut {
						note(ev.Kv.Key, ev.Kv.Value)
					}
				}
				if len(behind()) == 0 {
					wcancel()
					return nil
				}
			}
			wcancel()
		}
		// etcd did not answer, or the watch ended (no leader, compacted):
		// read the reports again shortly.
		t := time.NewTimer(propagationRetry)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	if err := parent.Err(); err != nil {
		return err
	}
	s.log.Info("catalog change acknowledged after the catalog lease: members did not report it (down or slow)",
		"revision", rev, "members", strings.Join(behind(), ","), "read_err", err)
	return nil
}
