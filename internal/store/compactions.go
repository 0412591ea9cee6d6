package store

import (
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// scheduler is the store's Pebble compaction scheduler: Pebble's default
// policy (as many compactions at once as the DB allows without asking,
// pebble.DBForCompaction.GetAllowedWithoutPermission, which follows
// Options.CompactionConcurrencyRange and the backlog), except that none
// runs until Pebble's Open has returned.
//
// Why: Pebble's Open flushes the memtable it replayed from the write-ahead
// log (after a crash, or a stop that could not flush), and the end of that
// flush schedules whatever compactions the store owes. A few steps later
// Open lists the directory for obsolete files, and first waits for every
// running compaction to finish: a compaction of hundreds of megabytes,
// seconds on a busy disk, before the server is ready
// (cockroachdb/pebble#5420, fixed on Pebble's master, not in a v2 release).
// Compactions that start once Open has returned lose nothing: reads and
// writes are served meanwhile, as while any compaction runs.
//
// Pebble's own ConcurrencyLimitScheduler cannot be wrapped: Open makes it
// only when Options.Experimental.CompactionScheduler is nil, and its
// constructor is not exported. This one grants as it does: at once when
// TrySchedule finds room, and otherwise from a goroutine that asks the DB
// for its waiting compaction when poked (a compaction done, the DB's
// allowance grown, the gate opened) and every 100 ms (flushes raise the
// allowance without telling the scheduler). Delete-only and download
// compactions do not ask a scheduler (Pebble starts them itself).
//
// Lock order: the DB calls TrySchedule holding its own mutex, and
// GetWaitingCompaction and Schedule take that mutex; so mu is never held
// while calling them, and they are called from the granter goroutine only.
type scheduler struct {
	db pebble.DBForCompaction // set by Register, before any other call

	mu struct {
		sync.Mutex
		running      int  // compactions granted and not yet Done
		opened       bool // Open has returned: compactions may run
		unregistered bool
	}
	started  bool          // Register started the granter; guarded by mu
	poke     chan struct{} // wakes the granter; buffered (1)
	stop     chan struct{} // closed by Unregister or abandon
	stopOnce sync.Once
	done     chan struct{} // closed when the granter has returned (or never started)
}

var (
	_ pebble.CompactionScheduler   = (*scheduler)(nil)
	_ pebble.CompactionGrantHandle = (*scheduler)(nil)
)

// grantPeriod is how often the granter asks for a waiting compaction
// unpoked (Pebble's default scheduler samples as often).
const grantPeriod = 100 * time.Millisecond

func newScheduler() *scheduler {
	return &scheduler{poke: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// open lets compactions run from now on.
func (s *scheduler) open() {
	s.mu.Lock()
	s.mu.opened = true
	s.mu.Unlock()
	s.wake()
}

func (s *scheduler) wake() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// Register is called once by Pebble's Open, before any compaction.
func (s *scheduler) Register(_ int, db pebble.DBForCompaction) {
	s.db = db
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	go s.granter()
}

// Unregister is called once by the DB's Close, not holding its mutex; it
// returns when no grant is under way, and none follows.
func (s *scheduler) Unregister() { s.abandon() }

// abandon stops the granter: Unregister, or an Open that failed (Pebble
// does not unregister then). Before open it never called the DB.
func (s *scheduler) abandon() {
	s.mu.Lock()
	s.mu.unregistered = true
	started := s.started
	s.mu.Unlock()
	s.stopOnce.Do(func() { close(s.stop) })
	if started {
		<-s.done
	}
}

// TrySchedule grants a compaction if there is room for one.
func (s *scheduler) TrySchedule() (bool, pebble.CompactionGrantHandle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.roomLocked() {
		return false, nil
	}
	s.mu.running++
	return true, s
}

func (s *scheduler) roomLocked() bool {
	return s.mu.opened && !s.mu.unregistered && s.db.GetAllowedWithoutPermission() > s.mu.running
}

// UpdateGetAllowedWithoutPermission: the DB's allowance may have grown.
func (s *scheduler) UpdateGetAllowedWithoutPermission() { s.wake() }

// The grant handle: one per granted compaction, all the scheduler itself.

func (s *scheduler) Started()                                                {}
func (s *scheduler) MeasureCPU(pebble.CompactionGoroutineKind)               {}
func (s *scheduler) CumulativeStats(stats pebble.CompactionGrantHandleStats) {}
func (s *scheduler) Done() {
	s.mu.Lock()
	s.mu.running--
	s.mu.Unlock()
	s.wake()
}

func (s *scheduler) granter() {
	defer close(s.done)
	tick := time.NewTicker(grantPeriod)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		case <-s.poke:
		}
		s.grant()
	}
}

// grant starts the DB's waiting compactions while there is room.
func (s *scheduler) grant() {
	for {
		s.mu.Lock()
		room := s.roomLocked()
		if room {
			s.mu.running++ // reserved before Schedule: the compaction may be Done before it returns
		}
		s.mu.Unlock()
		if !room {
			return
		}
		if waiting, _ := s.db.GetWaitingCompaction(); !waiting || !s.db.Schedule(s) {
			s.mu.Lock()
			s.mu.running--
			s.mu.Unlock()
			return
		}
	}
}
