package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/status"
)

const (
	hdrBatchAtomic = "x-ms-cosmos-batch-atomic"
	// maxBatchBytes is Cosmos DB's limit on a batch request's size, and
	// on a stored procedure's arguments.
	maxBatchBytes = 2 << 20
)

// batchOpJSON is one operation of a batch request body (protocol doc §8.1).
type batchOpJSON struct {
	OperationType string          `json:"operationType"`
	ID            string          `json:"id"`
	ResourceBody  json.RawMessage `json:"resourceBody"`
	IfMatch       string          `json:"ifMatch"`
	IfNoneMatch   string          `json:"ifNoneMatch"`
	// PartitionKey is a JSON-encoded partition key in a string (JS bulk).
	PartitionKey *string `json:"partitionKey"`
}

// batchResultJSON is one element of a batch response.
type batchResultJSON struct {
	StatusCode    int             `json:"statusCode"`
	SubStatusCode int             `json:"subStatusCode,omitempty"`
	RequestCharge float64         `json:"requestCharge"`
	ETag          string          `json:"eTag,omitempty"`
	ResourceBody  json.RawMessage `json:"resourceBody,omitempty"`
	Message       string          `json:"message,omitempty"`
	RetryAfterMs  int             `json:"retryAfterMilliseconds,omitempty"`
}

// batch serves POST …/docs with x-ms-cosmos-is-batch-request: a
// transactional batch (x-ms-cosmos-batch-atomic: true) on the request's
// logical partition, or a bulk request of independent operations.
func (h *Handler) batch(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if len(body) > maxBatchBytes {
		return status.Newf(http.StatusRequestEntityTooLarge, "Request size is too large: the batch is %d bytes, the limit is %d", len(body), maxBatchBytes)
	}
	// Names exactly, none twice (document.UnmarshalEnvelope): an operation
	// of "operationType":"Read" then "operationType":"Delete" deleted (a
	// bug hunt).
	var raw []batchOpJSON
	if !utf8.Valid(body) {
		// The envelope's decoder reads invalid bytes of an id or a
		// partition key as U+FFFD, naming an item no request could.
		return status.BadRequest("batch body must be a JSON array of operations: invalid UTF-8")
	}
	if err := document.UnmarshalEnvelope(body, &raw); err != nil {
		return status.BadRequest("batch body must be a JSON array of operations: %s", invalidMsg(err))
	}
	minimal := preferMinimal(r)
	ops := make([]engine.BatchOp, len(raw))
	for i, o := range raw {
		op := engine.BatchOp{Type: o.OperationType, ID: o.ID, Body: o.ResourceBody, IfMatch: o.IfMatch, IfNoneMatch: o.IfNoneMatch, Minimal: minimal}
		if o.PartitionKey != nil {
			pk, err := document.ParsePKHeader(*o.PartitionKey)
			if err != nil {
				return status.BadRequest("operation %d has an invalid partitionKey %q", i, *o.PartitionKey)
			}
			op.PK = pk
		}
		if op.ID == "" && len(o.ResourceBody) > 0 {
			var idOnly struct {
				ID string `json:"id"`
			}
			_ = document.UnmarshalEnvelope(o.ResourceBody, &idOnly) // "id" exactly, not "ID"
			op.ID = idOnly.ID
		}
		ops[i] = op
	}
	var resp engine.BatchResponse
	if isTrue(r, hdrBatchAtomic) {
		pk, err := partitionKey(r)
		if err != nil {
			return err
		}
		resp, err = h.eng.ExecuteBatch(r.Context(), r.PathValue("db"), r.PathValue("coll"), pk, ops)
		if err != nil {
			return err
		}
	} else {
		pks := make([]document.PartitionKey, len(ops))
		for i, op := range ops {
			pks[i] = op.PK
		}
		if err := checkOpsPK(r, pks); err != nil {
			return err
		}
		resp, err = h.eng.ExecuteBulk(r.Context(), r.PathValue("db"), r.PathValue("coll"), ops)
		if err != nil {
			return err
		}
	}
	out := make([]batchResultJSON, len(resp.Results))
	for i, res := range resp.Results {
		out[i] = batchResultJSON{StatusCode: res.Status, SubStatusCode: res.Sub, RequestCharge: roundCharge(res.RU), ETag: res.ETag, Message: res.Message, ResourceBody: res.Body}
		if res.RetryAfter > 0 {
			// @azure/cosmos retries a throttled bulk operation after
			// this (BulkResponse: retryAfterInMs); without it the SDK
			// waited 0 ms, spent its nine retries at once and reported
			// the writes failed (a throughput hunt: 94 of 400 lost).
			out[i].RetryAfterMs = int(max(res.RetryAfter.Milliseconds(), 1))
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return err
	}
	setCharge(w, resp.RU)
	setHeader(w, "x-ms-session-token", resp.Session)
	h.setContentPath(w, r.PathValue("db"), r.PathValue("coll"))
	setHeader(w, "x-ms-cosmos-batch-operation-count", strconv.Itoa(len(out)))
	code := http.StatusOK
	if !resp.OK {
		code = http.StatusMultiStatus
	}
	return writeJSON(w, code, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}
