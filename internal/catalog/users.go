package catalog

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/partitadb/partita/internal/document"
)

// Users and permissions (Cosmos DB's access control by resource tokens). A
// user belongs to a database and has permissions; a permission gives Read or
// All access to one container, or one item of it, optionally only within one
// logical partition (resourcePartitionKey). Issuing and checking the
// resource tokens of permissions is package auth's; the catalog keeps the
// records.
//
// Users are keyed by name within their database, permissions by their user's
// _rid (a user can be renamed without touching its permissions) and name.
// Both keys start with the database's _rid, so a database takes them along
// when it is deleted, and a database created later with the same name does
// not see them.

// Backend keys: keyUser + dbKey + "/" + user id, and
// keyPerm + dbKey + "/" + user key + "/" + permission id, where dbKey is the
// database _rid's 4 bytes in hex and the user key the user _rid's 8.
const (
	keyUser = "cat/user/"
	keyPerm = "cat/perm/"
)

// User is a database user.
type User struct {
	DB    string `json:"db"`
	ID    string `json:"id"`
	RID   string `json:"rid"`
	DBRID string `json:"dbRid"`
	Seq   uint64 `json:"seq"` // creation order
	TS    int64  `json:"ts"`
	ETag  string `json:"etag"`
}

// Self is the user's _self link.
func (u *User) Self() string { return "dbs/" + u.DBRID + "/users/" + u.RID + "/" }

// JSON returns the user resource as the wire protocol returns it.
func (u *User) JSON() []byte {
	b, _ := json.Marshal(map[string]any{
		"id": u.ID, "_rid": u.RID, "_self": u.Self(), "_etag": u.ETag, "_ts": u.TS, "_permissions": "permissions/",
	})
	return b
}

func (u *User) recordID() string   { return u.ID }
func (u *User) recordSeq() uint64  { return u.Seq }
func (u *User) recordETag() string { return u.ETag }

// The permission modes, as canonical names.
const (
	ModeAll  = "All"
	ModeRead = "Read"
)

// Permission is a user's permission on a container or an item.
type Permission struct {
	DB      string          `json:"db"`
	UserRID string          `json:"user"` // the owning user's _rid
	ID      string          `json:"id"`
	RID     string          `json:"rid"`
	Self    string          `json:"self"`
	Seq     uint64          `json:"seq"` // creation order
	Def     json.RawMessage `json:"def"` // the definition as sent, without system properties
	// Mode is ModeAll or ModeRead.
	Mode string `json:"mode"`
	// Container and ContainerRID are the container the resource link named,
	// resolved when the permission was written.
	Container    string `json:"container"`
	ContainerRID string `json:"containerRid"`
	// Item is the item id the resource link named; "" for a container.
	Item string `json:"item,omitempty"`
	// PK is resourcePartitionKey in canonical JSON array form; "" when
	// absent (every logical partition).
	PK   string `json:"pk,omitempty"`
	TS   int64  `json:"ts"`
	ETag string `json:"etag"`
}

// ItemByRID reports whether the permission's resource link names its item
// by _rid (a _self link: its database is named by _rid too) rather than by
// id. It is read from the definition as sent, so permissions written
// before it was asked answer too.
func (p *Permission) ItemByRID() bool {
	if p.Item == "" {
		return false
	}
	var jp fastjson.Parser
	v, err := jp.ParseBytes(p.Def)
	if err != nil {
		return false
	}
	segs := strings.Split(strings.Trim(string(v.GetStringBytes("resource")), "/"), "/")
	return len(segs) == 6 && segs[1] != p.DB
}

// JSON returns the permission resource as the wire protocol returns it,
// without _token (which the API layer issues per response).
func (p *Permission) JSON() []byte {
	return withSystem(p.Def, fmt.Sprintf(`"_rid":%q,"_ts":%d,"_self":%q,"_etag":%s`, p.RID, p.TS, p.Self, jsonString(p.ETag)))
}

func (p *Permission) recordID() string   { return p.ID }
func (p *Permission) recordSeq() uint64  { return p.Seq }
func (p *Permission) recordETag() string { return p.ETag }

// dbKey is the part of user and permission keys that names database d.
func dbKey(d *Database) string {
	rid, _ := document.DecodeRID(d.RID)
	return fmt.Sprintf("%08x", rid)
}

// userPrefix is the prefix of the keys of database d's users.
func userPrefix(d *Database) string { return keyUser + dbKey(d) + "/" }

// permPrefix is the prefix of the keys of the permissions of user userRID.
func permPrefix(d *Database, userRID string) string {
	rid, _ := document.DecodeRID(userRID)
	return fmt.Sprintf("%s%s/%016x/", keyPerm, dbKey(d), rid)
}

// parseUser validates a user definition: an object with a valid string id
// and nothing the catalog must understand besides.
func parseUser(body []byte) (string, error) {
	var p fastjson.Parser
	v, err := parseJSON(&p, "user definition", body)
	if err != nil {
		return "", err
	}
	id := v.Get("id")
	if v.Type() != fastjson.TypeObject || id == nil || id.Type() != fastjson.TypeString {
		return "", invalid("user definition must be a JSON object with a string id")
	}
	s := string(id.GetStringBytes())
	if err := validID(s); err != nil {
		return "", err
	}
	return s, nil
}

// users are the records of users (records.go), under their database. A
// user's definition is its id, the only property a replace changes (so a
// replace renames it); its permissions go with it when it is deleted.
var users = recordKind[*Database, string, User, *User]{
	what:         "user",
	parentLocked: func(c *Catalog, at parentID) (*Database, error) { return c.databaseLocked(at.db) },
	prefix:       userPrefix,
	parse:        parseUser,
	defID:        func(id string) string { return id },
	renames:      true,
	buildLocked:  buildUserLocked,
	cascadeLocked: func(c *Catalog, ch *changes, d *Database, u *User) error {
		return c.deletePrefixLocked(ch, permPrefix(d, u.RID))
	},
}

// buildUserLocked returns user id of database d: a new one (old nil), or
// old, renamed to id, with a new _etag and _ts.
func buildUserLocked(c *Catalog, d *Database, id string, old *User) (*User, error) {
	seq := c.nextLocked()
	if old == nil {
		dbRID, _ := document.DecodeRID(d.RID)
		return &User{
			DB: d.ID, ID: id, DBRID: d.RID, RID: document.EncodeRID(binary.BigEndian.AppendUint32(dbRID, uint32(seq))),
			Seq: seq, TS: c.now().Unix(), ETag: document.ETag(seq),
		}, nil
	}
	u := *old
	u.ID, u.TS, u.ETag = id, c.now().Unix(), document.ETag(seq)
	return &u, nil
}

// CreateUser creates a user of database db from its definition. It returns
// ErrNotFound (no database), ErrExists, or an *InvalidError.
func (c *Catalog) CreateUser(db string, body []byte) (*User, error) {
	return users.create(c, parentID{db: db}, body)
}

// UpsertUser creates the user body defines, or replaces it when it exists
// (which changes only its _etag and _ts); created reports which. Errors as
// CreateUser.
func (c *Catalog) UpsertUser(db string, body []byte) (u *User, created bool, err error) {
	return users.upsert(c, parentID{db: db}, body)
}

// User returns user id of database db, or ErrNotFound.
func (c *Catalog) User(db, id string) (*User, error) {
	return users.read(c, parentID{db: db}, id)
}

// Users returns database db's users in creation order, or ErrNotFound.
func (c *Catalog) Users(ctx context.Context, db string) ([]*User, error) {
	// NB: unlike Permissions, the scan runs without c.mu (Database takes it
	// only to find the database).
	d, err := c.Database(db)
	if err != nil {
		return nil, err
	}
	return users.list(ctx, c, d)
}

// ReplaceUser replaces user id of database db: the body's id is the user's
// new id (Cosmos DB's only replaceable property of a user); its permissions
// stay with it. It returns ErrNotFound, ErrExists (the new id is taken), or
// an *InvalidError, or ErrPrecondition when ifMatch ("" for none) names
// another etag.
func (c *Catalog) ReplaceUser(db, id string, body []byte, ifMatch string) (*User, error) {
	return users.replace(c, parentID{db: db}, id, body, ifMatch)
}

// DeleteUser deletes user id of database db with all its permissions, or
// returns ErrNotFound, or ErrPrecondition when ifMatch ("" for none) names
// another etag.
func (c *Catalog) DeleteUser(db, id, ifMatch string) error {
	return users.delete(c, parentID{db: db}, id, ifMatch)
}

// ExistsError is ErrExists with a message that says which constraint the
// write broke (errors.Is(err, ErrExists) holds).
type ExistsError struct{ Msg string }

func (e *ExistsError) Error() string { return "catalog: " + e.Msg }

// Is reports whether target is ErrExists.
func (e *ExistsError) Is(target error) bool { return target == ErrExists }

// permDef is a parsed permission definition.
type permDef struct {
	id, mode string
	resource string
	pk       []byte // resourcePartitionKey as sent; nil when absent or null
	def      []byte // the definition without system properties
}

// parsePermission validates a permission definition: id, permissionMode
// (All or Read, any case) and resource are required strings;
// resourcePartitionKey is optional.
func parsePermission(body []byte) (permDef, error) {
	var p fastjson.Parser
	v, err := parseJSON(&p, "permission definition", body)
	if err != nil {
		return permDef{}, err
	}
	obj, err := v.Object()
	if err != nil {
		return permDef{}, invalid("permission definition must be a JSON object")
	}
	str := func(name string) (string, error) {
		f := obj.Get(name)
		if f == nil || f.Type() != fastjson.TypeString {
			return "", invalid(fmt.Sprintf("permission definition needs a string %s (id, permissionMode and resource are required)", name))
		}
		return string(f.GetStringBytes()), nil
	}
	var d permDef
	if d.id, err = str("id"); err != nil {
		return permDef{}, err
	}
	if err := validID(d.id); err != nil {
		return permDef{}, err
	}
	mode, err := str("permissionMode")
	if err != nil {
		return permDef{}, err
	}
	if d.mode = canonical(mode, ModeAll, ModeRead); d.mode == "" {
		return permDef{}, invalid(fmt.Sprintf("permissionMode %q: want All or Read", mode))
	}
	if d.resource, err = str("resource"); err != nil {
		return permDef{}, err
	}
	if pk := obj.Get("resourcePartitionKey"); pk != nil && pk.Type() != fastjson.TypeNull {
		d.pk = document.AppendJSON(nil, pk)
	}
	for _, name := range []string{"_rid", "_self", "_etag", "_ts", "_token"} {
		obj.Del(name)
	}
	d.def = document.AppendJSON(nil, v)
	return d, nil
}

// resolveLocked fills in p's scope from def: the container (and item) its
// resource link names in database d, by name or by _rid (a container's
// _self link), and its partition key, checked against the container's
// definition. It returns an *InvalidError naming what is wrong.
func (c *Catalog) resolveLocked(d *Database, def permDef, p *Permission) error {
	link := strings.Trim(def.resource, "/")
	segs := strings.Split(link, "/")
	bad := func(why string) error {
		return invalid(fmt.Sprintf("permission resource %q %s", def.resource, why))
	}
	unsupported := func(what string) error {
		return invalid(fmt.Sprintf("permission resource %q: permissions on %s are not supported by Partita; give one on a container or an item", def.resource, what))
	}
	switch {
	case len(segs) < 2 || segs[0] != "dbs":
		return bad("is not the link of a container (dbs/{db}/colls/{container}) or of an item (dbs/{db}/colls/{container}/docs/{id})")
	case segs[1] != d.ID && segs[1] != d.RID:
		return bad(fmt.Sprintf("is not in the user's database %s", d.ID))
	case len(segs) == 2:
		return unsupported("a database")
	case segs[2] != "colls":
		return unsupported(segs[2])
	case len(segs) == 4, len(segs) == 6 && segs[4] == "docs":
	case len(segs) >= 5 && segs[4] != "docs":
		return unsupported(segs[4])
	default:
		return bad("is not the link of a container (dbs/{db}/colls/{container}) or of an item (dbs/{db}/colls/{container}/docs/{id})")
	}
	k, ok := c.mu.colls[d.ID][segs[3]]
	if !ok {
		for _, kk := range c.mu.colls[d.ID] {
			if kk.RID == segs[3] {
				k, ok = kk, true
				break
			}
		}
	}
	if !ok {
		return bad("names no container of database " + d.ID)
	}
	p.Container, p.ContainerRID, p.Item, p.PK = k.ID, k.RID, "", ""
	if len(segs) == 6 {
		if segs[5] == "" {
			return bad("has an empty item id")
		}
		p.Item = segs[5]
	}
	if def.pk != nil {
		raw := strings.TrimSpace(string(def.pk))
		if !strings.HasPrefix(raw, "[") {
			raw = "[" + raw + "]" // a single value, as @azure/cosmos lets callers pass it
		}
		pk, err := document.ParsePKHeader(raw)
		if err != nil {
			return invalid(fmt.Sprintf("permission resourcePartitionKey %s is not a partition key value", def.pk))
		}
		if len(pk) != len(k.PK.Paths) {
			return invalid(fmt.Sprintf("permission resourcePartitionKey %s has %d components; container %s's partition key has %d paths",
				def.pk, len(pk), k.ID, len(k.PK.Paths)))
		}
		p.PK = pk.String()
	}
	return nil
}

// owner is a permission's parent: its user and the user's database.
type owner struct {
	d *Database
	u *User
}

// permissions are the records of permissions (records.go), under their
// user. A replace keeps a permission's id and _rid.
var permissions = recordKind[owner, permDef, Permission, *Permission]{
	what: "permission",
	parentLocked: func(c *Catalog, at parentID) (owner, error) {
		d, err := c.databaseLocked(at.db)
		if err != nil {
			return owner{}, err
		}
		u, err := users.getLocked(c, d, at.user)
		return owner{d: d, u: u}, err
	},
	prefix:      func(o owner) string { return permPrefix(o.d, o.u.RID) },
	parse:       parsePermission,
	defID:       func(def permDef) string { return def.id },
	buildLocked: buildPermissionLocked,
}

// buildPermissionLocked validates def for user o.u of database o.d and
// returns it as a new permission (old nil) or as old's replacement. A user
// has at most one permission per resource (Cosmos DB's rule): another
// permission on the same container or item is an *ExistsError.
func buildPermissionLocked(c *Catalog, o owner, def permDef, old *Permission) (*Permission, error) {
	d, u := o.d, o.u
	p := &Permission{DB: d.ID, UserRID: u.RID, ID: def.id, Def: def.def, Mode: def.mode}
	if err := c.resolveLocked(d, def, p); err != nil {
		return nil, err
	}
	// NB: not permissions.list, which would make the initialisation of
	// permissions refer to itself.
	others, err := inCreationOrder[Permission](context.Background(), c.be, permPrefix(d, u.RID))
	if err != nil {
		return nil, err
	}
	for _, other := range others {
		if other.ID != def.id && other.ContainerRID == p.ContainerRID && other.Item == p.Item {
			return nil, &ExistsError{Msg: fmt.Sprintf("user %s already has permission %s on resource %s: a user has at most one permission per resource",
				u.ID, other.ID, def.resource)}
		}
	}
	seq := c.nextLocked()
	if old != nil {
		p.RID, p.Self, p.Seq = old.RID, old.Self, old.Seq
	} else {
		userRID, _ := document.DecodeRID(u.RID)
		p.RID = document.EncodeRID(binary.BigEndian.AppendUint64(userRID, seq))
		p.Self = u.Self() + "permissions/" + p.RID + "/"
		p.Seq = seq
	}
	p.TS, p.ETag = c.now().Unix(), document.ETag(seq)
	return p, nil
}

// CreatePermission creates a permission of user user of database db from
// its definition. It returns ErrNotFound (no database or user), ErrExists
// (the id is taken, or an *ExistsError: the user has a permission on the
// resource), or an *InvalidError.
func (c *Catalog) CreatePermission(db, user string, body []byte) (*Permission, error) {
	return permissions.create(c, parentID{db: db, user: user}, body)
}

// UpsertPermission creates or replaces the permission body defines; created
// reports which. Errors as CreatePermission.
func (c *Catalog) UpsertPermission(db, user string, body []byte) (p *Permission, created bool, err error) {
	return permissions.upsert(c, parentID{db: db, user: user}, body)
}

// Permission returns permission id of user user of database db, or
// ErrNotFound.
func (c *Catalog) Permission(db, user, id string) (*Permission, error) {
	return permissions.read(c, parentID{db: db, user: user}, id)
}

// PermissionOf returns permission id of the user with _rid userRID of
// database db (what a resource token names), or ErrNotFound.
func (c *Catalog) PermissionOf(db, userRID, id string) (*Permission, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, err := c.databaseLocked(db)
	if err != nil {
		return nil, err
	}
	if _, err := document.DecodeRID(userRID); err != nil {
		return nil, ErrNotFound
	}
	return getRecord[Permission](c.be, permissions.what, permPrefix(d, userRID), id)
}

// Permissions returns user user's permissions in creation order, with the
// user, or ErrNotFound.
func (c *Catalog) Permissions(ctx context.Context, db, user string) ([]*Permission, *User, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	o, err := permissions.parentLocked(c, parentID{db: db, user: user})
	if err != nil {
		return nil, nil, err
	}
	ps, err := permissions.list(ctx, c, o)
	return ps, o.u, err
}

// ReplacePermission replaces permission id of user user; the body's id must
// be id. A replaced permission gets a new _etag, which revokes the tokens
// issued for it before. Errors as CreatePermission, and ErrNotFound when the
// permission does not exist, ErrPrecondition when ifMatch ("" for none)
// names another etag.
func (c *Catalog) ReplacePermission(db, user, id string, body []byte, ifMatch string) (*Permission, error) {
	return permissions.replace(c, parentID{db: db, user: user}, id, body, ifMatch)
}

// DeletePermission deletes permission id of user user, or returns
// ErrNotFound, or ErrPrecondition when ifMatch ("" for none) names another
// etag.
func (c *Catalog) DeletePermission(db, user, id, ifMatch string) error {
	return permissions.delete(c, parentID{db: db, user: user}, id, ifMatch)
}
