package engine

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
)

// TestTranslateReplicaErrors: the replicas' refusals become the statuses
// and messages a client can act on; a linearizable read that no leader
// confirmed says so, not that the store is recovering.
func TestTranslateReplicaErrors(t *testing.T) {
	tests := []struct {
		err  error
		code int
		msg  string
	}{
		{fmt.Errorf("keyspace 3: within 10s: %w: %w", replica.ErrNoLeader, replica.ErrUnavailable), http.StatusServiceUnavailable, "no leader"},
		{fmt.Errorf("keyspace 3: %w", replica.ErrUnavailable), http.StatusServiceUnavailable, "store is recovering"},
		{&replica.NotLeaderError{Keyspace: 3, Leader: 7}, http.StatusServiceUnavailable, "does not lead"},
		{fmt.Errorf("keyspace 3: %w", replica.ErrIndeterminate), http.StatusRequestTimeout, "outcome is unknown"},
		// The catalog's lock not had in time: 503 saying nothing was
		// changed (it was a 500 with the bare context error).
		{fmt.Errorf("catalog: the cluster-wide write lock: %w: %w", catalog.ErrLockTimeout, context.DeadlineExceeded), http.StatusServiceUnavailable, "nothing was changed"},
		{fmt.Errorf("catalog: %w", catalog.ErrUnavailable), http.StatusServiceUnavailable, "no leader or no majority"},
	}
	for _, tt := range tests {
		se := status.From(translate(tt.err))
		if se.Code != tt.code || !strings.Contains(se.Message, tt.msg) {
			t.Errorf("translate(%v) = %d %q, want %d with %q", tt.err, se.Code, se.Message, tt.code, tt.msg)
		}
	}
}
