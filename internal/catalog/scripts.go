package catalog

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/partitadb/partita/internal/document"
)

// ScriptKind is a kind of server-side script resource, named as in URLs.
type ScriptKind string

// The kinds of script.
const (
	StoredProcedures ScriptKind = "sprocs"
	Triggers         ScriptKind = "triggers"
	UDFs             ScriptKind = "udfs"
)

// keyScript + container internal id (16 hex) + "/" + kind + "/" + id.
const keyScript = "cat/script/"

// Script is a stored procedure, trigger or user-defined function of a
// container.
type Script struct {
	Kind      ScriptKind      `json:"kind"`
	Container uint64          `json:"container"` // the container's internal id
	ID        string          `json:"id"`
	RID       string          `json:"rid"`
	Self      string          `json:"self"`
	Def       json.RawMessage `json:"def"` // the definition without system properties
	Body      string          `json:"body"`
	// TriggerType is "Pre" or "Post" and TriggerOperation one of All,
	// Create, Update, Delete, Replace, for triggers (normalised case).
	TriggerType      string `json:"triggerType,omitempty"`
	TriggerOperation string `json:"triggerOperation,omitempty"`
	TS               int64  `json:"ts"`
	ETag             string `json:"etag"`
}

// JSON returns the script resource as the wire protocol returns it.
func (s *Script) JSON() []byte {
	return withSystem(s.Def, fmt.Sprintf(`"_rid":%q,"_self":%q,"_etag":%s,"_ts":%d`, s.RID, s.Self, jsonString(s.ETag), s.TS))
}

func scriptPrefix(container uint64) string {
	return fmt.Sprintf("%s%016x/", keyScript, container)
}

// scriptKindPrefix is the prefix of the keys of a container's scripts of
// one kind.
func scriptKindPrefix(container uint64, kind ScriptKind) string {
	return scriptPrefix(container) + string(kind) + "/"
}

func scriptKey(container uint64, kind ScriptKind, id string) string {
	return scriptKindPrefix(container, kind) + id
}

// parseScript validates a script definition: an object with a string id and
// a string body; triggers also need triggerType and triggerOperation.
func parseScript(kind ScriptKind, body []byte) (*Script, error) {
	var p fastjson.Parser
	v, err := parseJSON(&p, fmt.Sprintf("%s definition", kind), body)
	if err != nil {
		return nil, err
	}
	obj, err := v.Object()
	if err != nil {
		return nil, invalid(fmt.Sprintf("%s definition must be a JSON object", kind))
	}
	sc := &Script{Kind: kind}
	id := obj.Get("id")
	if id == nil || id.Type() != fastjson.TypeString {
		return nil, invalid(fmt.Sprintf("%s definition needs a string id", kind))
	}
	sc.ID = string(id.GetStringBytes())
	if err := validID(sc.ID); err != nil {
		return nil, err
	}
	b := obj.Get("body")
	if b == nil || b.Type() != fastjson.TypeString {
		return nil, invalid(fmt.Sprintf("%s definition needs a string body with the JavaScript function", kind))
	}
	sc.Body = string(b.GetStringBytes())
	if kind == Triggers {
		tt, to := obj.Get("triggerType"), obj.Get("triggerOperation")
		if tt == nil || tt.Type() != fastjson.TypeString || to == nil || to.Type() != fastjson.TypeString {
			return nil, invalid("trigger definition needs string triggerType (Pre or Post) and triggerOperation (All, Create, Update, Delete, Replace or Upsert)")
		}
		if sc.TriggerType = canonical(string(tt.GetStringBytes()), "Pre", "Post"); sc.TriggerType == "" {
			return nil, invalid(fmt.Sprintf("triggerType %q: want Pre or Post", tt.GetStringBytes()))
		}
		if sc.TriggerOperation = canonical(string(to.GetStringBytes()), "All", "Create", "Update", "Delete", "Replace", "Upsert"); sc.TriggerOperation == "" {
			// Upsert as the .NET SDK's TriggerOperation has it (5, upsert
			// operations only); @azure/cosmos's enum lacks it.
			return nil, invalid(fmt.Sprintf("triggerOperation %q: want All, Create, Update, Delete, Replace or Upsert", to.GetStringBytes()))
		}
	}
	for _, name := range []string{"_rid", "_self", "_etag", "_ts"} {
		obj.Del(name)
	}
	sc.Def = document.AppendJSON(nil, v)
	return sc, nil
}

// canonical returns the element of names equal to s ignoring case, or "".
func canonical(s string, names ...string) string {
	for _, n := range names {
		if strings.EqualFold(s, n) {
			return n
		}
	}
	return ""
}

// CreateScript adds a script to container k. It returns ErrNotFound (no
// container), ErrExists, or an *InvalidError.
func (c *Catalog) CreateScript(db, coll string, kind ScriptKind, body []byte) (*Script, error) {
	sc, _, err := c.writeScript(db, coll, kind, body, false)
	return sc, err
}

// UpsertScript creates a script, or replaces the one of the body's id (the
// x-ms-documentdb-is-upsert of a POST); created says which.
func (c *Catalog) UpsertScript(db, coll string, kind ScriptKind, body []byte) (sc *Script, created bool, err error) {
	return c.writeScript(db, coll, kind, body, true)
}

// ParseScript parses and validates a script definition, as CreateScript
// does before it stores one.
func ParseScript(kind ScriptKind, body []byte) (*Script, error) { return parseScript(kind, body) }

// writeScript creates a script, or with upsert replaces the one of its id.
func (c *Catalog) writeScript(db, coll string, kind ScriptKind, body []byte, upsert bool) (*Script, bool, error) {
	sc, err := parseScript(kind, body)
	if err != nil {
		return nil, false, err
	}
	unlock, err := c.lockWrite()
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	k, ok := c.mu.colls[db][coll]
	if !ok {
		return nil, false, ErrNotFound
	}
	key := scriptKey(k.Internal, kind, sc.ID)
	if upsert {
		old, err := c.scriptLocked(db, coll, kind, sc.ID, "")
		switch {
		case err == nil:
			seq := c.nextLocked()
			sc.Container, sc.RID, sc.Self = old.Container, old.RID, old.Self
			sc.TS, sc.ETag = c.now().Unix(), document.ETag(seq)
			return sc, false, c.putScriptLocked(key, sc)
		case !errors.Is(err, ErrNotFound):
			return nil, false, err
		}
	} else if _, ok, err := c.be.Get(key); err != nil {
		return nil, false, fmt.Errorf("catalog: %w", err)
	} else if ok {
		return nil, false, ErrExists
	}
	seq := c.nextLocked()
	collRID, _ := document.DecodeRID(k.RID)
	sc.Container = k.Internal
	sc.RID = document.EncodeRID(binary.BigEndian.AppendUint64(collRID, seq))
	sc.Self = k.Self() + string(kind) + "/" + sc.RID + "/"
	sc.TS, sc.ETag = c.now().Unix(), document.ETag(seq)
	return sc, true, c.putScriptLocked(key, sc)
}

func (c *Catalog) putScriptLocked(key string, sc *Script) error {
	ch := newChanges()
	putJSON(ch, key, sc)
	c.putSeqLocked(ch)
	return ch.apply(c.be)
}

// Script returns a script of container db/coll, or ErrNotFound.
func (c *Catalog) Script(db, coll string, kind ScriptKind, id string) (*Script, error) {
	k, err := c.Container(db, coll)
	if err != nil {
		return nil, err
	}
	return getRecord[Script](c.be, "script", scriptKindPrefix(k.Internal, kind), id)
}

// scriptLocked returns script id of kind in container db/coll, or
// ErrNotFound, or ErrPrecondition when ifMatch ("" for none) names another
// etag. c.mu is held.
func (c *Catalog) scriptLocked(db, coll string, kind ScriptKind, id, ifMatch string) (*Script, error) {
	k, ok := c.mu.colls[db][coll]
	if !ok {
		return nil, ErrNotFound
	}
	sc, err := getRecord[Script](c.be, "script", scriptKindPrefix(k.Internal, kind), id)
	if err != nil {
		return nil, err
	}
	if document.IfMatchFails(ifMatch, sc.ETag) {
		return nil, ErrPrecondition
	}
	return sc, nil
}

// Scripts returns a container's scripts of one kind, in id order.
func (c *Catalog) Scripts(ctx context.Context, db, coll string, kind ScriptKind) ([]*Script, error) {
	k, err := c.Container(db, coll)
	if err != nil {
		return nil, err
	}
	out, err := loadRecords[Script](ctx, c.be, scriptKindPrefix(k.Internal, kind))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b *Script) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// ReplaceScript replaces a script's definition; the id in body must match.
// ErrPrecondition when ifMatch ("" for none) names another etag.
func (c *Catalog) ReplaceScript(db, coll string, kind ScriptKind, id string, body []byte, ifMatch string) (*Script, error) {
	sc, err := parseScript(kind, body)
	if err != nil {
		return nil, err
	}
	if sc.ID != id {
		return nil, invalid(fmt.Sprintf("the id %q in the body does not match %q in the URL", sc.ID, id))
	}
	unlock, err := c.lockWrite()
	if err != nil {
		return nil, err
	}
	defer unlock()
	old, err := c.scriptLocked(db, coll, kind, id, ifMatch)
	if err != nil {
		return nil, err
	}
	seq := c.nextLocked()
	sc.Container, sc.RID, sc.Self = old.Container, old.RID, old.Self
	sc.TS, sc.ETag = c.now().Unix(), document.ETag(seq)
	return sc, c.putScriptLocked(scriptKey(old.Container, kind, id), sc)
}

// DeleteScript removes a script, or returns ErrNotFound, or ErrPrecondition
// when ifMatch ("" for none) names another etag.
func (c *Catalog) DeleteScript(db, coll string, kind ScriptKind, id, ifMatch string) error {
	unlock, err := c.lockWrite()
	if err != nil {
		return err
	}
	defer unlock()
	old, err := c.scriptLocked(db, coll, kind, id, ifMatch)
	if err != nil {
		return err
	}
	ch := newChanges()
	ch.delete(scriptKey(old.Container, kind, id))
	return ch.apply(c.be)
}
