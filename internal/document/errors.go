package document

import "errors"

// PKError reports a malformed x-ms-documentdb-partitionkey header. Msg names
// the problem and is safe to show to the client.
type PKError struct {
	Msg string
}

func (e *PKError) Error() string { return "document: bad partition key header: " + e.Msg }

// InvalidError reports an item body, id or partition key path that breaks the
// rules of the protocol. Msg names the problem and is safe to show to the
// client (it never quotes more than the offending id or path).
type InvalidError struct {
	Msg string
}

func (e *InvalidError) Error() string { return "document: " + e.Msg }

// ErrCorrupt is returned (wrapped, with detail) when bytes this package wrote
// earlier — a stored item or an encoded partition key — cannot be read back.
// It means a bug or on-disk corruption, never a client mistake.
var ErrCorrupt = errors.New("document: corrupt stored data")
