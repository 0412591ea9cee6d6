package catalog

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
)

// memBackend is a Backend in memory; reopening a catalog on the same one
// is a restart.
type memBackend struct {
	mu sync.Mutex
	m  map[string][]byte
}

func newMemBackend() *memBackend { return &memBackend{m: map[string][]byte{}} }

func (b *memBackend) Get(key string) ([]byte, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[key]
	return slices.Clone(v), ok, nil
}

func (b *memBackend) Load(_ context.Context, prefix string, fn func(string, []byte) error) error {
	b.mu.Lock()
	keys := slices.Sorted(maps.Keys(b.m))
	m := maps.Clone(b.m)
	b.mu.Unlock()
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			if err := fn(k, m[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *memBackend) Apply(set map[string][]byte, del []string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range del {
		delete(b.m, k)
	}
	for k, v := range set {
		b.m[k] = slices.Clone(v)
	}
	return nil
}

// Close does nothing: the backend lives as long as the test.
func (b *memBackend) Close() error { return nil }
