package engine

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/query/exec"
	"github.com/partitadb/partita/internal/query/parse"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
)

// translate turns a domain error into the *status.Error the client sees.
// Errors it does not know become a 500 that hides their text (status.From).
func translate(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*status.Error](err); ok {
		return err
	}
	if e, ok := errors.AsType[*catalog.ExistsError](err); ok {
		return status.New(http.StatusConflict, e.Msg).Wrap(err)
	}
	switch {
	case errors.Is(err, catalog.ErrNotFound):
		return status.NotFound().Wrap(err)
	case errors.Is(err, catalog.ErrExists):
		return status.Conflict().Wrap(err)
	case errors.Is(err, catalog.ErrPrecondition):
		return status.PreconditionFailed().Wrap(err)
	}
	if e, ok := errors.AsType[*catalog.InvalidError](err); ok {
		return status.New(http.StatusBadRequest, e.Msg).Wrap(err)
	}
	if e, ok := errors.AsType[*document.InvalidError](err); ok {
		return status.New(http.StatusBadRequest, e.Msg).Wrap(err)
	}
	if e, ok := errors.AsType[*document.PKError](err); ok {
		return status.New(http.StatusBadRequest, "invalid partition key: "+e.Msg).Wrap(err)
	}
	if e, ok := errors.AsType[*parse.LimitError](err); ok {
		return status.New(http.StatusBadRequest, e.Msg).Wrap(err)
	}
	if e, ok := errors.AsType[*parse.SyntaxError](err); ok {
		return status.BadRequest("Syntax error: %s", e.Msg).Wrap(err)
	}
	if e, ok := errors.AsType[*exec.Error](err); ok {
		code := http.StatusBadRequest
		if f, ok := errors.AsType[udfFailure](err); ok && f.se.Status != 0 {
			code = f.se.Status // a UDF past its time limit: 408, as a script's
		}
		return status.New(code, e.Error()).Wrap(err)
	}
	if e, ok := errors.AsType[*replica.NoSpaceError](err); ok {
		return status.InsufficientStorage(e.Free, e.ResumeAt).Wrap(err)
	}
	if e, ok := errors.AsType[*errRangeMoved](err); ok {
		return rangeMovedStatus(e)
	}
	if errors.Is(err, catalog.ErrMoving) {
		return status.Unavailable("the partition key range is being moved to replicas of its own and cannot split until that is done; retry").Wrap(err)
	}
	if errors.Is(err, catalog.ErrStale) {
		return status.Unavailable("this node could not confirm that its copy of the cluster's catalog is current " +
			"(etcd has no leader or did not answer in time: a majority of the cluster's nodes may be down or cut off); retry").Wrap(err)
	}
	if errors.Is(err, catalog.ErrLockTimeout) {
		return status.Unavailable("the cluster's catalog lock was not granted in time, so nothing was changed: other changes " +
			"hold it (a node that died holding it frees it within its etcd session's 10 s), or etcd has no majority; retry").Wrap(err)
	}
	if errors.Is(err, catalog.ErrUnavailable) {
		return status.Unavailable("the cluster's catalog (etcd) has no leader or no majority for now: " +
			"a majority of the cluster's nodes may be down, or its leader is changing; retry").Wrap(err)
	}
	if errors.Is(err, replica.ErrNoLeader) { // an ErrUnavailable too: first
		return status.Unavailable("no leader of the partition's replicas confirmed the read in time: " +
			"a majority of the cluster's nodes may be down or cut off; retry").Wrap(err)
	}
	if errors.Is(err, replica.ErrInDoubt) { // an ErrNotApplied too: first
		return status.Unavailable("an earlier write to this partition timed out and may still apply: no other write is " +
			"taken until its outcome is known (a majority of the partition's replicas are not acknowledging its leader's log); " +
			"nothing was written; retry").Wrap(err)
	}
	if errors.Is(err, replica.ErrNotApplied) { // an ErrUnavailable too: first
		return status.Unavailable("the write was not applied: the leadership of the partition's replicas changed while it " +
			"was proposed (nothing was written); retry").Wrap(err)
	}
	if errors.Is(err, replica.ErrCorrupt) {
		return status.New(http.StatusInternalServerError, "the partition's data is damaged on disk (a checksum does not match) where this request read it: "+
			"the server's log names the file; its operator must restore the data directory from a backup").Wrap(err)
	}
	if errors.Is(err, replica.ErrUnavailable) {
		return status.Unavailable("the store is recovering from a failed disk write or shutting down; retry shortly").Wrap(err)
	}
	if e, ok := errors.AsType[*replica.NotLeaderError](err); ok {
		return status.Unavailable(fmt.Sprintf("this node does not lead the replicas of the partition (keyspace %d); retry", e.Keyspace)).Wrap(err)
	}
	if errors.Is(err, replica.ErrIndeterminate) {
		return status.New(http.StatusRequestTimeout, "The write's outcome is unknown: it was proposed to the partition's replicas but not confirmed "+
			"(the leader changed, or a majority did not answer in time). "+
			"Read the item to learn whether it was applied.").Wrap(err)
	}
	if errors.Is(err, partition.ErrInvalidKey) {
		return status.BadRequest("partition key does not match the container's partition key definition").Wrap(err)
	}
	return status.From(err)
}

// NotLeader reports whether err (from an engine call) is a write that this
// node cannot evaluate because it does not lead the replicas of the
// partition (a keyspace) the write belongs to, and which node it believes
// leads them (0: none known). Nothing was read or written: the request
// belongs on that node (api forwards it).
func NotLeader(err error) (keyspace, leader uint64, ok bool) {
	e, ok := errors.AsType[*replica.NotLeaderError](err)
	if !ok {
		return 0, 0, false
	}
	return e.Keyspace, e.Leader, true
}

// NotApplied reports whether err (from an engine call) is a write whose
// replicated batch was not applied and never will be (its proposal was
// dropped or refused as the partition's leadership changed): nothing was
// written, and the request may be served again (api does, briefly).
func NotApplied(err error) bool { return errors.Is(err, replica.ErrNotApplied) }

// pkMismatch is Cosmos's answer to a body whose partition key differs from
// the header's.
func pkMismatch() *status.Error {
	return status.New(http.StatusBadRequest, "PartitionKey extracted from document doesn't match the one specified in the header").
		WithSub(status.SubBadRequestPKMismatch)
}

// rangeGone is the answer to a request addressed to a pk range that no
// longer exists (split or merged): the SDKs refresh pkranges and retry.
func rangeGone(id string) *status.Error {
	return status.Newf(http.StatusGone, "partition key range %s is gone (split or merged); refresh the partition key ranges", id).
		WithSub(status.SubGonePartitionKeyRangeGone)
}

// storeRefused reports whether err is an expected refusal that the
// engine's background work need not log: the store refusing work for want
// of disk space or while it recovers (it logs that once itself), a
// replicated keyspace this node does not lead (its leader does the work),
// or a range being moved refusing to split (it may once moved).
func storeRefused(err error) bool {
	_, full := errors.AsType[*replica.NoSpaceError](err)
	_, follower := errors.AsType[*replica.NotLeaderError](err)
	return full || follower || errors.Is(err, replica.ErrUnavailable) || errors.Is(err, catalog.ErrMoving) || RangeMoved(err)
}
