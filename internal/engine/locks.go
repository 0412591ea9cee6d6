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

// containerLocks hands out one reader/writer lock per container: item
// transactions hold it shared, and work that must see no writes at all (an
// index rebuild after an indexing policy change) holds it exclusively.
type containerLocks struct {
	locks sync.Map // uint64 → *sync.RWMutex; removed once the container is gone (forgetGone)
}

// ids lists the containers with a lock.
func (t *containerLocks) ids() []uint64 {
	var out []uint64
	t.locks.Range(func(k, _ any) bool {
		out = append(out, k.(uint64))
		return true
	})
	return out
}

// forget drops the lock of container c, which no longer exists.
func (t *containerLocks) forget(c uint64) { t.locks.Delete(c) }

func (t *containerLocks) get(c uint64) *sync.RWMutex {
	if l, ok := t.locks.Load(c); ok {
		return l.(*sync.RWMutex) // the hot path: no lock of its own
	}
	l, _ := t.locks.LoadOrStore(c, &sync.RWMutex{})
	return l.(*sync.RWMutex)
}

// shared locks container c for an item transaction and returns the release.
func (t *containerLocks) shared(c uint64) (unlock func()) {
	l := t.get(c)
	l.RLock()
	return l.RUnlock
}

// exclusive locks container c against every item transaction.
func (t *containerLocks) exclusive(c uint64) (unlock func()) {
	l := t.get(c)
	l.Lock()
	return l.Unlock
}
