package engine

import (
	"strconv"
	"strings"
	"time"
)

// forgetInterval is how often the engine drops what it keeps in memory of
// containers that no longer exist (forgetGone).
const forgetInterval = time.Minute

// forgetGone drops what the engine keeps in memory per physical partition
// (request charges and hot keys, size estimates, throughput buckets) and
// per container (its lock) for containers that no longer exist, whether
// this node deleted them or learned of their deletion from the cluster's
// catalog. Each deleted container left about 4 KB behind for good before,
// for every partition it had (a soak hunt: 20,000 containers created and
// deleted, +90 MB of heap that never came back).
//
// The keys are listed before the catalog is read, its containers at once
// (catalog.Internals: a cluster's catalog may apply a container before its
// database): an entry is only made for a container the catalog already
// had, so one listed and then missing from the catalog was deleted, never
// created since (a container's lock must not be dropped while a
// transaction of a live container holds it). A shared database's budget
// goes with its database.
func (e *Engine) forgetGone() {
	hotKeys := e.hot.keys()
	sizeKeys := e.sizes.keys()
	var bucketKeys []string
	if e.limit != nil {
		bucketKeys = e.limit.Keys()
	}
	lockIDs := e.colls.ids()
	live := e.cat.Internals()
	dbs := map[string]bool{}
	for _, d := range e.cat.Databases() {
		dbs[d.RID] = true
	}
	gone := func(key string) bool {
		if rid, _, ok := parseSharedBudgetKey(key); ok {
			return !dbs[rid] // a shared database's budget
		}
		id, ok := rangeKeyContainer(key)
		return ok && !live[id]
	}
	for _, k := range hotKeys {
		if gone(k) {
			e.hot.forget(k)
		}
	}
	for _, k := range sizeKeys {
		if gone(k) {
			e.sizes.forget(k)
		}
	}
	for _, k := range bucketKeys {
		if gone(k) {
			e.limit.Forget(k)
		}
	}
	for _, id := range lockIDs {
		if !live[id] {
			e.colls.forget(id)
		}
	}
}

// rangeKeyContainer returns the internal id of the container a rangeKey
// names; false for a key of another form.
func rangeKeyContainer(key string) (uint64, bool) {
	hex, _, ok := strings.Cut(key, "/")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseUint(hex, 16, 64)
	return id, err == nil
}
