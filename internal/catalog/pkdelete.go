package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// keyPKDelete + container internal id (16 hex) + "/" + partition key (canonical JSON).
const keyPKDelete = "cat/pkdelete/"

// PKDelete is a pending "delete all items of a logical partition" (the
// partition key delete operation): the engine deletes, in the background,
// the items of logical partition PK of the container whose last write came
// before the operation, and hides them meanwhile.
type PKDelete struct {
	DB        string `json:"db"`
	Container string `json:"container"`
	Internal  uint64 `json:"internal"` // the container's internal id
	PK        string `json:"pk"`       // canonical JSON array (document.PartitionKey.String)
	// Cut is an LSN of the logical partition's keyspace taken under its
	// lock: the items whose last write has a smaller LSN are the ones to
	// delete.
	Cut uint64 `json:"cut"`
}

func pkDeletePrefix(internal uint64) string { return fmt.Sprintf("%s%016x/", keyPKDelete, internal) }

// AddPKDelete records d, replacing a pending delete of the same logical
// partition (a later one has a larger Cut). It returns ErrNotFound when the
// container is gone.
func (c *Catalog) AddPKDelete(d PKDelete) error {
	unlock, err := c.lockWrite()
	if err != nil {
		return err
	}
	defer unlock()
	k, ok := c.mu.colls[d.DB][d.Container]
	if !ok || k.Internal != d.Internal {
		return ErrNotFound
	}
	ch := newChanges()
	putJSON(ch, pkDeletePrefix(d.Internal)+d.PK, &d)
	return ch.apply(c.be)
}

// RemovePKDelete removes the record of d once its work is done, unless a
// later delete of the same logical partition replaced it.
func (c *Catalog) RemovePKDelete(d PKDelete) error {
	unlock, err := c.lockWrite()
	if err != nil {
		return err
	}
	defer unlock()
	key := pkDeletePrefix(d.Internal) + d.PK
	v, ok, err := c.be.Get(key)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	if !ok {
		return nil
	}
	var cur PKDelete
	if err := json.Unmarshal(v, &cur); err != nil {
		return fmt.Errorf("catalog: partition key delete %s: %w", key, err)
	}
	if cur.Cut != d.Cut {
		return nil
	}
	ch := newChanges()
	ch.delete(key)
	return ch.apply(c.be)
}

// ObservedPKDelete decodes a change to a shared catalog (see Observe) that
// is a partition key delete's record: ok is false for any other key. A
// deleted record (its work is done, or its container is gone) comes back
// with Internal and PK only.
func ObservedPKDelete(key string, value []byte, deleted bool) (d PKDelete, ok bool, err error) {
	rest, ok := strings.CutPrefix(key, keyPKDelete)
	if !ok {
		return PKDelete{}, false, nil
	}
	if !deleted {
		if err := json.Unmarshal(value, &d); err != nil {
			return PKDelete{}, true, fmt.Errorf("catalog: partition key delete %s: %w", key, err)
		}
		return d, true, nil
	}
	id, pk, found := strings.Cut(rest, "/")
	internal, perr := strconv.ParseUint(id, 16, 64)
	if !found || perr != nil {
		return PKDelete{}, true, fmt.Errorf("catalog: bad partition key delete key %q", key)
	}
	return PKDelete{Internal: internal, PK: pk}, true, nil
}

// PKDeletes returns every pending partition key delete, by container.
func (c *Catalog) PKDeletes(ctx context.Context) ([]PKDelete, error) {
	var out []PKDelete
	if err := c.be.Load(ctx, keyPKDelete, func(key string, v []byte) error {
		var d PKDelete
		if err := json.Unmarshal(v, &d); err != nil {
			return fmt.Errorf("partition key delete %s: %w", key, err)
		}
		out = append(out, d)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return out, nil
}
