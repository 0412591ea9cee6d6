package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/partitadb/partita/internal/catalog"
)

// TestRetryEtcd: etcd's "no leader now" errors are retried until the
// operation succeeds; other errors end it at once; one that outlasts the
// retries is catalog.ErrUnavailable (503 for the client).
func TestRetryEtcd(t *testing.T) {
	calls := 0
	err := retryEtcd(t.Context(), func() error {
		if calls++; calls < 3 {
			return fmt.Errorf("wrapped: %w", rpctypes.ErrTimeoutDueToLeaderFail)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("retryEtcd over two leader failures: %v after %d calls, want nil after 3", err, calls)
	}
	other := errors.New("permission denied")
	calls = 0
	if err := retryEtcd(t.Context(), func() error { calls++; return other }); !errors.Is(err, other) || calls != 1 {
		t.Errorf("retryEtcd of another error: %v after %d calls, want it after 1", err, calls)
	}
	ctx, cancel := context.WithCancel(t.Context())
	calls = 0
	err = retryEtcd(ctx, func() error {
		if calls++; calls == 2 {
			cancel()
		}
		return rpctypes.ErrNoLeader
	})
	if !errors.Is(err, catalog.ErrUnavailable) || !errors.Is(err, rpctypes.ErrNoLeader) {
		t.Errorf("retryEtcd without a leader until the context ends: %v, want catalog.ErrUnavailable wrapping etcd's error", err)
	}
	if !errors.Is(ErrFenced, catalog.ErrUnavailable) {
		t.Error("ErrFenced is not catalog.ErrUnavailable")
	}
}
