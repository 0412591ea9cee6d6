package cluster

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// queueLock is the catalog's cluster-wide write lock: the queue of
// concurrency.Mutex (each waiter a key under the prefix named by its
// session's lease, attached to that lease; the one created first holds
// it), taken so that a waiter cut short never leaves a key behind.
//
// concurrency.Mutex.Lock sends its put into the queue under the caller's
// context. Cut short while etcd applied it, the put's answer is lost and
// the mutex does not know its key is there: kept alive by the session, the
// key held every other node's Lock behind it until this node stopped (a
// clean-clone CI run, and TestLockCutShortLeavesNoKey, which reproduced it
// under -race). Deleting the key after the error does not mend it: the
// mutex's put, conditional on the key's absence, can reach etcd after the
// delete. Here the put is made under a context only the node's stopping and
// etcd's timeout end, so its outcome is known before anything is cleaned
// up; the wait that follows only reads and watches, which a context may end
// at any point.
type queueLock struct {
	cli *clientv3.Client
	pfx string // with its trailing "/"
}

// held is a queueLock taken: the key and its create revision (the fence of
// writes under it), and the revision at which it was granted.
type held struct {
	key     string
	rev     int64
	granted int64
}

// errQueueKeyGone is lock's error when the waiter's key vanished (its
// session's lease expired) before the lock was granted.
var errQueueKeyGone = errors.New("cluster: the lock's queue lost this node's key (its session expired)")

// key is the queue key of a session's lease.
func (q queueLock) key(lease clientv3.LeaseID) string {
	return fmt.Sprintf("%s%x", q.pfx, lease)
}

// enqueue puts lease's key into the queue (if it is not there: the put is
// idempotent for the session) and returns its create revision. ctx should
// not be a request's: see queueLock.
func (q queueLock) enqueue(ctx context.Context, lease clientv3.LeaseID) (int64, error) {
	key := q.key(lease)
	resp, err := q.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, "", clientv3.WithLease(lease))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, err
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return 0, errQueueKeyGone // deleted between the compare and the get: cannot be; lease gone
	}
	return kvs[0].CreateRevision, nil
}

// wait returns once the key of create revision rev is the oldest in the
// queue: every key created before it deleted. It only reads and watches,
// so ctx may end it at any point; the key stays (drop it).
func (q queueLock) wait(ctx context.Context, lease clientv3.LeaseID, rev int64) (held, error) {
	key := q.key(lease)
	for {
		resp, err := q.cli.Get(ctx, q.pfx, append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(rev-1))...)
		if err != nil {
			return held{}, err
		}
		if len(resp.Kvs) == 0 {
			break
		}
		if err := q.waitDelete(ctx, string(resp.Kvs[0].Key), resp.Header.Revision); err != nil {
			return held{}, err
		}
	}
	// The key must still be there, as created: a key of the same name
	// created later is a new session's put, not this wait's.
	resp, err := q.cli.Get(ctx, key)
	if err != nil {
		return held{}, err
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != rev {
		return held{}, errQueueKeyGone
	}
	return held{key: key, rev: rev, granted: resp.Header.Revision}, nil
}

// waitDelete returns once key is deleted at a revision after rev.
func (q queueLock) waitDelete(ctx context.Context, key string, rev int64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var last clientv3.WatchResponse
	for last = range q.cli.Watch(ctx, key, clientv3.WithRev(rev)) {
		for _, ev := range last.Events {
			if ev.Type == mvccpb.DELETE {
				return nil
			}
		}
	}
	if err := last.Err(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.New("cluster: the watch of the lock's queue ended")
}

// drop deletes the key of create revision rev, if it is still that one (a
// retried delete whose first answer was lost must not delete the same
// session's later key).
func (q queueLock) drop(ctx context.Context, key string, rev int64) error {
	_, err := q.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).
		Then(clientv3.OpDelete(key)).
		Commit()
	return err
}
