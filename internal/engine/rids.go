package engine

import (
	"bytes"
	"context"
	"errors"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/replica"
	"github.com/partitadb/partita/internal/status"
)

// Resources are addressed by name (dbs/{db}/colls/{coll}/docs/{id}) or by
// resource id, the _rid each carries (dbs/{db _rid}/colls/{coll _rid}/…):
// the links in every resource's _self, which SDKs such as Python's 3.x pass
// back as they are (docs/rid-links.md). The api turns the second form into
// the first with these lookups before it routes a request.

// RIDPair is one (type, id) pair of a resource path, as RIDNames takes and
// returns it.
type RIDPair struct {
	Type string // "dbs", "colls", "docs", "sprocs", …
	ID   string
}

// RIDNames returns path, whose ids are resource ids, with each id of a
// database, container, script, user or permission replaced by its name.
// An item's id is left as it is (ItemIDByRID resolves it, where the
// request's partition key and consistency are known), as is any id of a
// type without names (partition key ranges, conflicts). ok is false when
// the first pair is not a database whose _rid is its id: the path is then
// not one of resource ids, and the caller reads it as names. Errors: 404
// naming the first resource id that names nothing.
func (e *Engine) RIDNames(path []RIDPair) (_ []RIDPair, ok bool, err error) {
	if len(path) == 0 || path[0].Type != "dbs" {
		return nil, false, nil
	}
	out := make([]RIDPair, len(path))
	copy(out, path)
	var db *catalog.Database
	for _, d := range e.cat.Databases() {
		if d.RID == path[0].ID {
			db = d
		}
	}
	if db == nil {
		return nil, false, nil
	}
	out[0].ID = db.ID
	var coll, user string
	for i := 1; i < len(path); i++ {
		p := path[i]
		name := ""
		switch {
		case p.Type == "colls" && i == 1:
			cs, err := e.cat.Containers(db.ID)
			if err != nil {
				return nil, false, translate(err)
			}
			for _, c := range cs {
				if c.RID == p.ID {
					name = c.ID
				}
			}
			coll = name
		case p.Type == "users" && i == 1:
			us, err := e.cat.Users(context.Background(), db.ID)
			if err != nil {
				return nil, false, translate(err)
			}
			for _, u := range us {
				if u.RID == p.ID {
					name = u.ID
				}
			}
			user = name
		case p.Type == "permissions" && i == 2 && user != "":
			ps, _, err := e.cat.Permissions(context.Background(), db.ID, user)
			if err != nil {
				return nil, false, translate(err)
			}
			for _, pm := range ps {
				if pm.RID == p.ID {
					name = pm.ID
				}
			}
		case i == 2 && coll != "" && (p.Type == string(StoredProcedures) || p.Type == string(Triggers) || p.Type == string(UDFs)):
			scs, err := e.cat.Scripts(context.Background(), db.ID, coll, ScriptKind(p.Type))
			if err != nil {
				return nil, false, translate(err)
			}
			for _, sc := range scs {
				if sc.RID == p.ID {
					name = sc.ID
				}
			}
		default:
			continue // an item, a range, a conflict: its id as it is
		}
		if name == "" {
			return nil, false, status.NotFound()
		}
		out[i].ID = name
	}
	return out, true, nil
}

// ItemIDByRID returns the id of the item of ref's container whose _rid is
// rid, in logical partition pk: the keyspace's entry of the _rid's
// sequence number names its key. A read looks where a read of the item by
// its id would (after the same session wait, synced when linearizable); a
// write (write true) only on the partition's leader, which answers
// NotLeaderError elsewhere, so that the request goes to the replica the
// write would. Errors: 404 when no live item of that partition has the
// _rid.
func (e *Engine) ItemIDByRID(ctx context.Context, db, coll string, pk document.PartitionKey, rid string, write bool) (string, error) {
	c, release, err := e.readContainer(ctx, db, coll, "")
	if err != nil {
		return "", err
	}
	defer release()
	collRID, err := document.DecodeRID(c.RID)
	if err != nil {
		return "", translate(err)
	}
	b, err := document.DecodeRID(rid)
	if err != nil || len(b) != len(collRID)+8 || !bytes.HasPrefix(b, collRID) {
		return "", status.NotFound()
	}
	seq, err := ridSeq(rid)
	if err != nil {
		return "", status.NotFound()
	}
	pk = pointKey(c, pk)
	loc, err := locate(c, pk, "")
	if err != nil {
		return "", err
	}
	rep, err := e.replicaOf(c, loc.rng)
	switch {
	case err != nil:
	case write:
		err = translate(rep.Lead())
	case linearizable(ctx):
		err = translate(rep.Sync(ctx))
	}
	if err != nil {
		return "", err
	}
	key, err := rep.Get(orderKey(seq))
	if errors.Is(err, replica.ErrNotFound) {
		return "", status.NotFound()
	}
	if err != nil {
		return "", translate(err)
	}
	k, err := decodeItemKey(key)
	if err != nil {
		return "", translate(err)
	}
	if !bytes.Equal(k.PK, loc.pkEnc) {
		return "", status.NotFound() // the _rid of an item of another logical partition
	}
	return k.ID, nil
}
