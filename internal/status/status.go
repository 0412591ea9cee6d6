package status

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Substatus values, named with the status they belong to: a substatus means
// something only together with its HTTP status.
const (
	SubNone                            = 0
	SubBadRequestPKMismatch            = 1001 // 400: partition key in body and header differ
	SubBadRequestCrossPartitionGateway = 1004 // 400: cross-partition query the gateway can't serve
	SubForbiddenPKQuotaOverLimit       = 1014 // 403: logical partition full
	SubNotFoundReadSessionNotAvailable = 1002 // 404
	SubNotFoundOwnerResource           = 1003 // 404: parent resource missing
	SubGoneNameCacheStale              = 1000 // 410
	SubGonePartitionKeyRangeGone       = 1002 // 410
	SubGoneCompletingSplit             = 1007 // 410
	SubTooManyRUBudgetExceeded         = 3200 // 429
	SubRequestEntityTooLargeBatch      = 3402 // 413: batch response too large
)

// Error is a failure that becomes exactly one HTTP response. The wrapped cause
// is for logs and errors.Is; it is never sent to the client.
type Error struct {
	Code       int           // HTTP status, e.g. http.StatusNotFound
	Sub        int           // x-ms-substatus; SubNone when absent
	Message    string        // client-visible; no internal detail
	RetryAfter time.Duration // 429 only; sent as x-ms-retry-after-ms
	// Extra is an optional additionalErrorInfo string (400/1004 carries the query plan).
	Extra string
	cause error
}

// Error returns the status, substatus and message.
func (e *Error) Error() string {
	if e.Sub != SubNone {
		return fmt.Sprintf("%d/%d %s", e.Code, e.Sub, e.Message)
	}
	return fmt.Sprintf("%d %s", e.Code, e.Message)
}

// Unwrap returns the internal cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// CodeName returns Cosmos's canonical name for an HTTP status, used as the
// "code" field of error bodies (e.g. "NotFound").
func CodeName(code int) string {
	switch code {
	case http.StatusBadRequest:
		return "BadRequest"
	case http.StatusUnauthorized:
		return "Unauthorized"
	case http.StatusForbidden:
		return "Forbidden"
	case http.StatusNotFound:
		return "NotFound"
	case http.StatusMethodNotAllowed:
		return "MethodNotAllowed"
	case http.StatusRequestTimeout:
		return "RequestTimeout"
	case http.StatusConflict:
		return "Conflict"
	case http.StatusGone:
		return "Gone"
	case http.StatusPreconditionFailed:
		return "PreconditionFailed"
	case http.StatusRequestEntityTooLarge:
		return "RequestEntityTooLarge"
	case http.StatusFailedDependency:
		return "FailedDependency"
	case http.StatusTooManyRequests:
		return "TooManyRequests"
	case 449:
		return "RetryWith"
	case http.StatusNotImplemented:
		return "NotImplemented"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailable"
	case http.StatusInsufficientStorage:
		return "InsufficientStorage"
	default:
		return "InternalServerError"
	}
}

// SubName returns the name of a (status, substatus) pair, or "" when the pair
// has no well-known name.
func SubName(code, sub int) string {
	type pair struct{ code, sub int }
	switch (pair{code, sub}) {
	case pair{http.StatusBadRequest, SubBadRequestPKMismatch}:
		return "PartitionKeyMismatch"
	case pair{http.StatusBadRequest, SubBadRequestCrossPartitionGateway}:
		return "CrossPartitionQueryNotServable"
	case pair{http.StatusForbidden, SubForbiddenPKQuotaOverLimit}:
		return "PartitionKeyQuotaOverLimit"
	case pair{http.StatusNotFound, SubNotFoundReadSessionNotAvailable}:
		return "ReadSessionNotAvailable"
	case pair{http.StatusNotFound, SubNotFoundOwnerResource}:
		return "OwnerResourceNotFound"
	case pair{http.StatusGone, SubGoneNameCacheStale}:
		return "NameCacheIsStale"
	case pair{http.StatusGone, SubGonePartitionKeyRangeGone}:
		return "PartitionKeyRangeGone"
	case pair{http.StatusGone, SubGoneCompletingSplit}:
		return "CompletingSplit"
	case pair{http.StatusTooManyRequests, SubTooManyRUBudgetExceeded}:
		return "RUBudgetExceeded"
	case pair{http.StatusRequestEntityTooLarge, SubRequestEntityTooLargeBatch}:
		return "BatchResponseTooLarge"
	}
	return ""
}

// New returns an error with the given status and client-visible message.
func New(code int, msg string) *Error { return &Error{Code: code, Message: msg} }

// Newf is New with a formatted message.
func Newf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithSub returns e with substatus sub.
func (e *Error) WithSub(sub int) *Error { e.Sub = sub; return e }

// Wrap returns e carrying cause for logs and errors.Is; cause is never sent.
func (e *Error) Wrap(cause error) *Error { e.cause = cause; return e }

// BadRequest returns a 400 with a formatted message.
func BadRequest(format string, args ...any) *Error {
	return Newf(http.StatusBadRequest, format, args...)
}

// NotFound returns a 404 with the message Cosmos DB sends for a missing resource.
func NotFound() *Error {
	return New(http.StatusNotFound, "Entity with the specified id does not exist in the system.")
}

// Conflict returns a 409 with the message Cosmos DB sends for a duplicate id.
func Conflict() *Error {
	return New(http.StatusConflict, "Entity with the specified id already exists in the system.")
}

// PreconditionFailed returns a 412 for a failed If-Match / If-None-Match check.
func PreconditionFailed() *Error {
	return New(http.StatusPreconditionFailed, "Operation cannot be performed because one of the specified precondition is not met.")
}

// Throttled returns a 429 telling the client to retry after d.
func Throttled(d time.Duration) *Error {
	return &Error{Code: http.StatusTooManyRequests, Sub: SubTooManyRUBudgetExceeded,
		Message: "Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later.", RetryAfter: d}
}

// InsufficientStorage returns the 507 that refuses a write while the data
// directory's disk is short of space: free is the space available then, and
// writes resume once more than resumeAt bytes are free. Reads go on.
func InsufficientStorage(free, resumeAt int64) *Error {
	return Newf(http.StatusInsufficientStorage, "the data directory's disk is short of space (full, or under the --min-free-bytes floor): %d bytes free, writes resume above %d bytes free", max(free, 0), resumeAt)
}

// Unavailable returns a 503 for a node that cannot serve now but expects to
// shortly (clients retry); msg says why.
func Unavailable(msg string) *Error {
	return New(http.StatusServiceUnavailable, msg)
}

// NotSupported returns a 400 for a request Partita understands but does not
// implement; what names the feature.
func NotSupported(what string) *Error {
	return Newf(http.StatusBadRequest, "%s is not supported by Partita", what)
}

// From returns the *Error in err's chain, or a 500 that hides err's text.
func From(err error) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	return &Error{Code: http.StatusInternalServerError, Message: "internal error", cause: err}
}
