package engine

import (
	"context"
	"errors"

	"github.com/partitadb/partita/internal/catalog"
)

// Users and permissions (catalog/users.go). The engine stores them; the API
// layer issues and checks the resource tokens of permissions.

func userResource(u *catalog.User) Resource { return Resource{Body: u.JSON(), ETag: u.ETag} }

// CreateUser creates a user of database db. Errors: 404 (no database), 409,
// 400 for an invalid definition.
func (e *Engine) CreateUser(db string, body []byte) (Resource, error) {
	u, err := e.cat.CreateUser(db, body)
	if err != nil {
		return Resource{}, translate(err)
	}
	return userResource(u), nil
}

// UpsertUser creates the user body defines or replaces it; created reports
// which. Errors as CreateUser.
func (e *Engine) UpsertUser(db string, body []byte) (res Resource, created bool, err error) {
	u, created, err := e.cat.UpsertUser(db, body)
	if err != nil {
		return Resource{}, false, translate(err)
	}
	return userResource(u), created, nil
}

// ReadUser returns user id of database db, or 404.
func (e *Engine) ReadUser(db, id string) (Resource, error) {
	u, err := e.cat.User(db, id)
	if err != nil {
		return Resource{}, translate(err)
	}
	return userResource(u), nil
}

// ReplaceUser replaces user id: the body's id is its new id. Errors: 404,
// 409 (the new id is taken), 400.
func (e *Engine) ReplaceUser(db, id string, body []byte, ifMatch string) (Resource, error) {
	u, err := e.cat.ReplaceUser(db, id, body, ifMatch)
	if err != nil {
		return Resource{}, translate(err)
	}
	return userResource(u), nil
}

// DeleteUser deletes user id with its permissions (revoking their tokens),
// or returns 404.
func (e *Engine) DeleteUser(db, id, ifMatch string) error {
	return translate(e.cat.DeleteUser(db, id, ifMatch))
}

// Users returns database db's user resources and the database's _rid, or
// 404.
func (e *Engine) Users(ctx context.Context, db string) (users []Resource, dbRID string, err error) {
	d, err := e.cat.Database(db)
	if err != nil {
		return nil, "", translate(err)
	}
	us, err := e.cat.Users(ctx, db)
	if err != nil {
		return nil, "", translate(err)
	}
	for _, u := range us {
		users = append(users, userResource(u))
	}
	return users, d.RID, nil
}

// Permission is a permission resource with what its resource tokens grant.
type Permission struct {
	Resource        // the permission's JSON, without _token, and its _etag
	DB       string // the database's id
	UserRID  string // the owning user's _rid
	ID, RID  string // the permission's id and _rid
	// All reports permissionMode All (reads and writes); false is Read.
	All bool
	// Container and ContainerRID are the container in scope, Item the one
	// item ("" for the whole container), PK the logical partition (canonical
	// JSON array; "" for all).
	Container, ContainerRID, Item, PK string
	// ItemRID: Item is the item's _rid (the permission named it by its
	// _self), not its id.
	ItemRID bool
}

func permissionOf(p *catalog.Permission) Permission {
	return Permission{
		Resource: Resource{Body: p.JSON(), ETag: p.ETag},
		DB:       p.DB, UserRID: p.UserRID, ID: p.ID, RID: p.RID, All: p.Mode == catalog.ModeAll,
		Container: p.Container, ContainerRID: p.ContainerRID, Item: p.Item, PK: p.PK, ItemRID: p.ItemByRID(),
	}
}

// CreatePermission creates a permission of user user. Errors: 404 (no
// database or user), 409 (the id is taken, or the user has a permission on
// the resource), 400 (an invalid definition, or a resource that is not a
// container or an item of the user's database).
func (e *Engine) CreatePermission(db, user string, body []byte) (Permission, error) {
	p, err := e.cat.CreatePermission(db, user, body)
	if err != nil {
		return Permission{}, translate(err)
	}
	return permissionOf(p), nil
}

// UpsertPermission creates or replaces the permission body defines; created
// reports which. Errors as CreatePermission.
func (e *Engine) UpsertPermission(db, user string, body []byte) (p Permission, created bool, err error) {
	cp, created, err := e.cat.UpsertPermission(db, user, body)
	if err != nil {
		return Permission{}, false, translate(err)
	}
	return permissionOf(cp), created, nil
}

// ReadPermission returns permission id of user user, or 404.
func (e *Engine) ReadPermission(db, user, id string) (Permission, error) {
	p, err := e.cat.Permission(db, user, id)
	if err != nil {
		return Permission{}, translate(err)
	}
	return permissionOf(p), nil
}

// ReplacePermission replaces permission id of user user; the tokens issued
// for it before stop working. Errors as CreatePermission.
func (e *Engine) ReplacePermission(db, user, id string, body []byte, ifMatch string) (Permission, error) {
	p, err := e.cat.ReplacePermission(db, user, id, body, ifMatch)
	if err != nil {
		return Permission{}, translate(err)
	}
	return permissionOf(p), nil
}

// DeletePermission deletes permission id of user user (its tokens stop
// working), or returns 404.
func (e *Engine) DeletePermission(db, user, id, ifMatch string) error {
	return translate(e.cat.DeletePermission(db, user, id, ifMatch))
}

// Permissions returns user user's permissions and the user's _rid, or 404.
func (e *Engine) Permissions(ctx context.Context, db, user string) (ps []Permission, userRID string, err error) {
	cps, u, err := e.cat.Permissions(ctx, db, user)
	if err != nil {
		return nil, "", translate(err)
	}
	for _, p := range cps {
		ps = append(ps, permissionOf(p))
	}
	return ps, u.RID, nil
}

// PermissionCurrent reports whether permission id of the user with _rid
// userRID of database db exists with _rid rid and _etag etag: whether a
// resource token issued for it is still backed by it (not deleted with its
// user or database, not replaced since).
func (e *Engine) PermissionCurrent(db, userRID, id, rid, etag string) (bool, error) {
	p, err := e.cat.PermissionOf(db, userRID, id)
	switch {
	case errors.Is(err, catalog.ErrNotFound):
		return false, nil
	case err != nil:
		return false, translate(err)
	}
	return p.RID == rid && p.ETag == etag, nil
}
