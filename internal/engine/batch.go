package engine

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/throughput"
)

// MaxBatchOperations is the most operations one batch may hold, as in Cosmos DB.
const MaxBatchOperations = 100

// MaxBatchResponseBytes bounds the items a batch or bulk response carries
// (Cosmos DB's 4 MB response limit): 100 reads of 2 MB items built a 200 MB
// response in memory. Past it, a transactional batch fails whole, and the
// operations of a bulk request not yet run are answered 413/3402 without
// running, which the SDKs split and send again. A stored procedure's
// response body is held to it too (413, its writes rolled back).
const MaxBatchResponseBytes = 4 << 20

// responseFull is the failure of an operation whose result would take a
// batch response past MaxBatchResponseBytes.
func responseFull() *status.Error {
	return status.Newf(http.StatusRequestEntityTooLarge, "the batch's response would exceed %d bytes: send fewer operations", MaxBatchResponseBytes).
		WithSub(status.SubRequestEntityTooLargeBatch)
}

// BatchOp is one operation of a transactional batch or a bulk request.
type BatchOp struct {
	// Type is Create, Upsert, Read, Delete, Replace or Patch (any case).
	Type string
	// ID addresses Read, Delete, Replace and Patch.
	ID string
	// PK is the operation's own partition key (bulk requests carry one per
	// operation); nil means the request's.
	PK document.PartitionKey
	// Body is the item (Create, Upsert, Replace) or patch request (Patch).
	Body                 []byte
	IfMatch, IfNoneMatch string
	// Minimal leaves a write's item out of its result (Prefer:
	// return=minimal, the Go SDK's default), and so out of the response's
	// size: a batch of patches of large items answered 413 for bodies it
	// would not send (a bug hunt).
	Minimal bool
}

// BatchResult is the outcome of one operation.
type BatchResult struct {
	Status  int
	Sub     int
	RU      float64
	ETag    string
	Body    []byte // the item, for reads and writes; nil for deletes and failures
	Message string // for failures
	Write   bool   // the operation writes (its body is left out under BatchOp.Minimal)
	// RetryAfter is, for an operation refused for throughput (429), how
	// long to wait before it is sent again.
	RetryAfter time.Duration
}

// BatchResponse is the outcome of a batch or bulk request.
type BatchResponse struct {
	Results []BatchResult
	// OK reports whether every operation succeeded (HTTP 200; else 207).
	OK      bool
	RU      float64
	Session string
}

// ExecuteBatch runs ops as one transaction on logical partition pk: all of
// them apply or none does, and no other writer of the partition sees a state
// in between. On the first failure the batch stops: that operation carries
// its status and every other one 424 (Failed Dependency), and nothing is
// written. An operation naming another partition key fails with 400.
//
// Errors (the whole request fails): 404 for an unknown container, 400 for no
// or too many operations or a missing partition key.
func (e *Engine) ExecuteBatch(ctx context.Context, db, coll string, pk document.PartitionKey, ops []BatchOp) (BatchResponse, error) {
	if err := checkBatchSize(ops); err != nil {
		return BatchResponse{}, err
	}
	c, err := e.owner(db, coll)
	if err != nil {
		return BatchResponse{}, err
	}
	if pk = pointKey(c, pk); pk == nil {
		return BatchResponse{}, status.BadRequest("a transactional batch needs the x-ms-documentdb-partitionkey header")
	}
	t, err := e.begin(ctx, c, pk)
	if err != nil {
		return BatchResponse{}, err
	}
	defer t.close()
	resp := BatchResponse{Results: make([]BatchResult, len(ops)), OK: true}
	size := 0
	for i, op := range ops {
		if err := ctx.Err(); err != nil {
			return BatchResponse{}, err
		}
		var r BatchResult
		if op.PK != nil && !pointKey(c, op.PK).Equal(pk) {
			err = status.BadRequest("operation %d names partition key %s; a transactional batch is scoped to %s", i, op.PK, pk)
		} else {
			if testHookBatchOp != nil {
				testHookBatchOp(i)
			}
			r, err = t.apply(ctx, op)
		}
		if op.Minimal && r.Write {
			r.Body = nil
		}
		if size += len(r.Body); err == nil && size > MaxBatchResponseBytes {
			err = responseFull()
		}
		if _, _, ok := NotLeader(err); ok || NotApplied(err) {
			// The partition's leadership moved while the batch ran
			// (t.close rolls back: nothing was written): the whole
			// request belongs to the new leader, which the API forwards
			// it to, not a 207 whose 503 no SDK retries.
			return BatchResponse{}, err
		}
		if err != nil && e.containerGone(c) {
			// The container was deleted (or deleted and recreated) while
			// the batch ran: the whole request fails as a point write
			// does, not as a 207 whose upsert answers "Entity … does not
			// exist" (a concurrency hunt: 95 such answers in one run).
			return BatchResponse{}, status.Newf(http.StatusNotFound, "Owner resource does not exist: the container %s was deleted while the batch ran", c.Link()).
				WithSub(status.SubNotFoundOwnerResource).Wrap(err)
		}
		if err != nil {
			resp.OK = false
			for j := range resp.Results {
				resp.Results[j] = BatchResult{Status: http.StatusFailedDependency, RU: throughput.MinimumCost(),
					Message: "Failed Dependency: another operation of the transactional batch failed"}
			}
			resp.Results[i] = failed(err)
			resp.RU = t.ru + throughput.MinimumCost()
			resp.Session = t.session()
			return resp, nil // t.close rolls back
		}
		resp.Results[i] = r
	}
	resp.RU, resp.Session = t.ru, t.session()
	if err := t.commit(); err != nil {
		return BatchResponse{}, err
	}
	return resp, nil
}

// ExecuteBulk runs ops independently, each in its own transaction on its own
// partition key (op.PK, required): a failure affects only its operation.
//
// In a cluster, an operation whose partition another node leads fails
// alone (503), except when that is true of every operation and they all
// belong to one keyspace or name one leader: then nothing was evaluated
// here, and ExecuteBulk returns that *replica.NotLeaderError (NotLeader)
// so that the whole request goes to the leader. The SDKs send each bulk
// request to one partition key range, hence one keyspace, and
// @azure/cosmos does not retry an operation's 503.
func (e *Engine) ExecuteBulk(ctx context.Context, db, coll string, ops []BatchOp) (BatchResponse, error) {
	if err := checkBatchSize(ops); err != nil {
		return BatchResponse{}, err
	}
	c, err := e.owner(db, coll)
	if err != nil {
		return BatchResponse{}, err
	}
	resp := BatchResponse{Results: make([]BatchResult, len(ops)), OK: true}
	var sessions []string
	var away error // while every operation failed with one leader's NotLeaderError: the last
	size := 0
	var spent time.Duration // the time the operations' patch conditions took (lpTxn.condSpent)
	for i, op := range ops {
		if err := ctx.Err(); err != nil {
			return BatchResponse{}, err
		}
		if size > MaxBatchResponseBytes {
			resp.Results[i], resp.OK = failed(responseFull()), false
			away = nil // this node ran operations
			continue
		}
		r, session, err := e.bulkOne(ctx, c, op, &spent)
		if op.Minimal && r.Write {
			r.Body = nil
		}
		size += len(r.Body)
		if i == 0 || away != nil {
			away = sameLeader(away, err)
		}
		if err != nil {
			r = failed(err)
			resp.OK = false
		}
		resp.Results[i] = r
		resp.RU += r.RU
		if session != "" {
			sessions = append(sessions, session)
		}
	}
	if away != nil {
		return BatchResponse{}, away
	}
	if len(sessions) > 0 {
		resp.Session = sessions[len(sessions)-1]
	}
	return resp, nil
}

// sameLeader returns err if it is a NotLeaderError (NotLeader) for the
// keyspace or the known leader that prev's names (any, when prev is nil),
// and nil otherwise.
func sameLeader(prev, err error) error {
	ks, leader, ok := NotLeader(err)
	if !ok {
		return nil
	}
	if prev == nil {
		return err
	}
	pks, pleader, _ := NotLeader(prev)
	if ks == pks || (leader != 0 && leader == pleader) {
		return err
	}
	return nil
}

// bulkOne runs one bulk operation in a transaction of its own. The
// operations of a request share one time for their patch conditions: spent
// is what they took so far.
func (e *Engine) bulkOne(ctx context.Context, c *catalog.Container, op BatchOp, spent *time.Duration) (BatchResult, string, error) {
	if op.PK = pointKey(c, op.PK); op.PK == nil {
		return BatchResult{}, "", status.BadRequest("a bulk operation needs its partitionKey")
	}
	t, err := e.begin(ctx, c, op.PK)
	if err != nil {
		return BatchResult{}, "", err
	}
	defer t.close()
	t.condSpent = *spent
	r, err := t.apply(ctx, op)
	*spent = t.condSpent
	if err != nil {
		return BatchResult{}, "", err
	}
	return r, t.session(), t.commit()
}

func checkBatchSize(ops []BatchOp) error {
	switch {
	case len(ops) == 0:
		return status.BadRequest("the batch request has no operations")
	case len(ops) > MaxBatchOperations:
		return status.BadRequest("the batch request has %d operations; at most %d are allowed", len(ops), MaxBatchOperations)
	}
	return nil
}

// failed turns an operation's error into its result.
func failed(err error) BatchResult {
	se := status.From(err)
	r := BatchResult{Status: se.Code, Sub: se.Sub, RU: Charge(err), Message: se.Message, RetryAfter: se.RetryAfter}
	if se.Code == http.StatusTooManyRequests {
		// Refused before any work, as a 429 answered whole is: it costs
		// nothing (docs/request-units.md); a bulk request's throttled
		// operations were each charged 1 RU.
		r.RU = 0
	}
	return r
}

// apply runs one batch operation in the transaction.
func (t *lpTxn) apply(ctx context.Context, op BatchOp) (BatchResult, error) {
	var (
		res   Result
		err   error
		code  int
		write = true
	)
	switch typ := strings.ToLower(op.Type); {
	case op.ID == "" && (typ == "replace" || typ == "delete" || typ == "read" || typ == "patch"):
		// Found nothing by the empty id: 404 said the item did not exist
		// (a bug hunt).
		err = status.BadRequest("the batch's %s operation names no item: it needs an id", op.Type)
	case typ == "create":
		res, err = t.write(Create, "", op.Body, op.IfMatch)
		code = http.StatusCreated
	case typ == "upsert":
		res, err = t.write(Upsert, "", op.Body, op.IfMatch)
		code = http.StatusOK
		if res.Created {
			code = http.StatusCreated
		}
	case typ == "replace":
		res, err = t.write(Replace, op.ID, op.Body, op.IfMatch)
		code = http.StatusOK
	case typ == "delete":
		res, err = t.remove(op.ID, op.IfMatch)
		code = http.StatusNoContent
	case typ == "read":
		write = false
		res, err = t.read(op.ID)
		code = http.StatusOK
		if err == nil && op.IfNoneMatch != "" && (op.IfNoneMatch == "*" || op.IfNoneMatch == res.ETag) {
			code, res.Body = http.StatusNotModified, nil
		}
	case typ == "patch":
		var req document.PatchRequest
		if req, err = document.ParsePatchRequest(op.Body); err != nil {
			err = translate(err)
			break
		}
		res, err = t.patch(ctx, op.ID, req, op.IfMatch)
		code = http.StatusOK
	default:
		err = status.BadRequest("unknown batch operationType %q: want Create, Upsert, Read, Delete, Replace or Patch", op.Type)
	}
	if err != nil {
		return BatchResult{}, err
	}
	if code == http.StatusNoContent {
		res.Body = nil
	}
	return BatchResult{Status: code, RU: res.RU, ETag: res.ETag, Body: res.Body, Write: write}, nil
}

// containerGone reports whether c is no longer the container of its name
// (deleted, or deleted and recreated).
func (e *Engine) containerGone(c *catalog.Container) bool {
	cur, err := e.cat.Container(c.DB, c.ID)
	return err != nil || cur.Internal != c.Internal
}

// testHookBatchOp, when set (by tests), runs before a transactional
// batch's operation i is applied.
var testHookBatchOp func(i int)
