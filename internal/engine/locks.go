package engine

import "sync"

// lockTable hands out one mutex per logical partition, created on demand and
// dropped when unused, so a lock never covers more than one logical partition.
type lockTable struct {
	mu    sync.Mutex // guards locks
	locks map[string]*lpLock
}

type lpLock struct {
	sync.Mutex
	refs int // guarded by lockTable.mu
}

// lock acquires the lock of logical partition key and returns its release.
func (t *lockTable) lock(key string) (unlock func()) {
	t.mu.Lock()
	if t.locks == nil {
		t.locks = map[string]*lpLock{}
	}
	l := t.locks[key]
	if l == nil {
		l = &lpLock{}
		t.locks[key] = l
	}
	l.refs++
	t.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		t.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(t.locks, key)
		}
		t.mu.Unlock()
	}
}
