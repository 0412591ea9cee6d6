package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// consistencyKey holds the account's default consistency level, recorded
// by the first member to start, outside the catalog's prefix.
const consistencyKey = "/partita/account-consistency"

// ErrConsistencyChanged is returned by StartNode when the cluster was
// created with another default consistency level (--consistency): the
// account's level is one for every member (GET / reports it, and reads
// without the header take it), so a member started with another would
// serve the same account at two levels (a cluster hunt: a member restarted
// without --consistency Strong read at Session, and refused Strong reads
// as stronger than its default).
var ErrConsistencyChanged = errors.New("cluster: --consistency differs from the cluster's")

// recordConsistency records level as the account's default consistency if
// none is recorded yet, else checks that the recorded one is level (case
// aside). Changing a cluster's level is not supported yet.
func recordConsistency(ctx context.Context, cli *clientv3.Client, level string) error {
	got, _, err := recordFirst(ctx, cli, consistencyKey, level)
	if err != nil {
		return fmt.Errorf("cluster: record the default consistency level: %w", err)
	}
	if !strings.EqualFold(got, level) {
		return fmt.Errorf("%w: the cluster was created with the default consistency level %s; this node was started with --consistency %s "+
			"(start it with --consistency %s: changing a cluster's default level is not supported yet)", ErrConsistencyChanged, got, level, got)
	}
	return nil
}
