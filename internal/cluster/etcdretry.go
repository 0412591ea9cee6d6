package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/partitadb/partita/internal/catalog"
)

// etcdRetryFor bounds how long a catalog operation retries etcd's "no
// leader now" errors: etcd elects a new leader about a second after its
// old one dies, and the member that died with a node's process was often
// etcd's leader too. TestClusterLeaderDeath saw a write's _rid reservation
// fail with "request timed out, possibly due to previous leader failure"
// when the node killed led both the partition and etcd.
const etcdRetryFor = 10 * time.Second

// etcdTransient reports whether err is etcd having no leader for the
// moment (an election, a leader's failure): the operation did not apply,
// or (a timeout) may have, and is safe to retry where it is idempotent.
func etcdTransient(err error) bool {
	for _, e := range []error{rpctypes.ErrNoLeader, rpctypes.ErrLeaderChanged, rpctypes.ErrTimeout,
		rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrTimeoutDueToConnectionLost} {
		if errors.Is(err, e) {
			return true
		}
	}
	return status.Code(err) == codes.Unavailable
}

// retryEtcd runs op until it succeeds, fails otherwise than etcdTransient,
// or etcdRetryFor (or ctx) runs out, backing off from 50 ms to 1 s. op must
// be idempotent. An error that outlasts the retries is
// catalog.ErrUnavailable.
func retryEtcd(ctx context.Context, op func() error) error {
	deadline := time.Now().Add(etcdRetryFor)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := op()
		if err == nil || !etcdTransient(err) {
			return err
		}
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("%w: %w", catalog.ErrUnavailable, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w", catalog.ErrUnavailable, err)
		case <-t.C:
		}
	}
}
