package catalog

import (
	"context"
	"fmt"
)

// Backend persists the catalog's records: a map from string keys to byte
// values, read by key or by prefix and changed atomically. It uses Go's own
// types only, so the catalog depends on no storage package: the node's
// Pebble store implements it today (replica.Meta), a replicated store
// (etcd) will tomorrow.
type Backend interface {
	// Get returns key's value and whether it exists.
	Get(key string) ([]byte, bool, error)
	// Load calls fn with every key that has prefix and its value, in key
	// order, stopping at fn's first error, which it returns.
	Load(ctx context.Context, prefix string, fn func(key string, value []byte) error) error
	// Apply sets the keys of set and deletes the keys of del, atomically.
	Apply(set map[string][]byte, del []string) error
}

// changes collects one atomic change of the catalog's records.
type changes struct {
	set map[string][]byte
	del []string
}

func newChanges() *changes { return &changes{set: map[string][]byte{}} }

func (ch *changes) put(key string, v []byte) { ch.set[key] = v }

func (ch *changes) delete(key string) {
	delete(ch.set, key)
	ch.del = append(ch.del, key)
}

func (ch *changes) apply(b Backend) error {
	if err := b.Apply(ch.set, ch.del); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	return nil
}
