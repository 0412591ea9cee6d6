package store

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Repr returns the batch's writes in Pebble's batch encoding: what a
// replicated store ships to its peers, which apply it with ApplyRepr. The
// slice is the caller's. A refused, committed or closed batch has none.
func (b *Batch) Repr() ([]byte, error) {
	switch {
	case b.err != nil:
		return nil, b.err
	case b.b == nil:
		return nil, errBatchDone
	}
	return append([]byte(nil), b.b.Repr()...), nil
}

// ApplyRepr adds the writes encoded in repr (Repr of another batch) to b,
// after b's own. Errors: a malformed repr, or a refused, committed or
// closed batch.
func (b *Batch) ApplyRepr(repr []byte) error {
	switch {
	case b.err != nil:
		return b.err
	case b.b == nil:
		return errBatchDone
	}
	var other pebble.Batch
	if err := other.SetRepr(repr); err != nil {
		return fmt.Errorf("store: batch encoding: %w", err)
	}
	if err := b.b.Apply(&other, nil); err != nil {
		return fmt.Errorf("store: batch encoding: %w", err)
	}
	return nil
}
