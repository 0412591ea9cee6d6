package catalog

import "errors"

// Sentinel errors returned by Catalog methods.
var (
	ErrNotFound = errors.New("catalog: not found")
	ErrExists   = errors.New("catalog: already exists")
	// ErrMoving refuses to split a range that a separation is copying to a
	// keyspace of its own (RangeRecord.Moving); it may split once the move
	// is recorded or abandoned.
	ErrMoving = errors.New("catalog: the range is being moved to a keyspace of its own")
	// ErrStale is Current's error: this node's copy of a shared catalog
	// could not be confirmed current, so it may miss a change another node
	// acknowledged.
	ErrStale = errors.New("catalog: this node's copy of the catalog could not be confirmed current")
	// ErrPrecondition refuses a replace or delete whose If-Match names
	// another etag than the resource's: nothing was changed.
	ErrPrecondition = errors.New("catalog: the resource's etag does not match If-Match")
)

// InvalidError is a definition a client sent that Partita cannot accept;
// Msg names the problem and is safe to show to the client.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return "catalog: " + e.Msg }

func invalid(msg string) error { return &InvalidError{Msg: msg} }
