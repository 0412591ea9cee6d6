package engine

import (
	"github.com/partitadb/partita/internal/status"
)

// Conflicts returns a container's conflicts feed: always empty, since a
// single-region account with one write region never has conflicting writes
// to record (Cosmos DB's conflicts feed holds those of multi-region writes
// that the container's resolution policy left to the application), and
// the container's _rid for the feed envelope. Errors: 404 for a missing
// database or container.
func (e *Engine) Conflicts(db, coll string) ([][]byte, string, error) {
	c, err := e.owner(db, coll)
	if err != nil {
		return nil, "", err
	}
	return [][]byte{}, c.RID, nil
}

// Conflict returns the error of reading or deleting conflict id: always a
// 404, as there are no conflicts (see Conflicts), also for a missing
// database or container.
func (e *Engine) Conflict(db, coll, id string) error {
	if _, err := e.owner(db, coll); err != nil {
		return err
	}
	return status.NotFound()
}
