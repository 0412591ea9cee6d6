package catalog

import (
	"errors"
	"strings"
	"testing"
)

// usersCatalog is a catalog with database db, its containers k (pk /pk)
// and h (pk /a, /b) and user u.
func usersCatalog(t *testing.T) (*Catalog, *memBackend) {
	t.Helper()
	c, st := openCatalog(t, newMemBackend())
	if _, err := c.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	for _, def := range []string{
		`{"id":"k","partitionKey":{"paths":["/pk"]}}`,
		`{"id":"h","partitionKey":{"paths":["/a","/b"],"kind":"MultiHash"}}`,
	} {
		if _, err := c.CreateContainer("db", []byte(def), Throughput{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CreateUser("db", []byte(`{"id":"u"}`)); err != nil {
		t.Fatal(err)
	}
	return c, st
}

// TestPermissionResource: a permission's resource link names a container or
// an item of the user's database, by name or _rid (a _self link), and its
// partition key is normalised to a JSON array of the container's shape.
func TestPermissionResource(t *testing.T) {
	c, _ := usersCatalog(t)
	k, _ := c.Container("db", "k")
	d, _ := c.Database("db")
	tests := []struct {
		name, resource, pk string
		wantItem, wantPK   string
		err                string // a substring of the *InvalidError's message; "" for success
	}{
		{name: "container by name", resource: "dbs/db/colls/k"},
		{name: "leading and trailing slashes", resource: "/dbs/db/colls/k/"},
		{name: "container self link", resource: k.Self()},
		{name: "database rid, container name", resource: "dbs/" + d.RID + "/colls/k"},
		{name: "item", resource: "dbs/db/colls/k/docs/i 1", wantItem: "i 1"},
		{name: "pk array", resource: "dbs/db/colls/k", pk: `["p"]`, wantPK: `["p"]`},
		{name: "pk scalar", resource: "dbs/db/colls/k", pk: `"p"`, wantPK: `["p"]`},
		{name: "pk number", resource: "dbs/db/colls/k", pk: `[7]`, wantPK: `[7]`},
		{name: "pk null means none", resource: "dbs/db/colls/k", pk: `null`},
		{name: "hierarchical pk", resource: "dbs/db/colls/h", pk: `["x",1]`, wantPK: `["x",1]`},
		{name: "hierarchical pk too short", resource: "dbs/db/colls/h", pk: `["x"]`, err: "has 1 components"},
		{name: "pk not a value", resource: "dbs/db/colls/k", pk: `{"a":1}`, err: "not a partition key"},
		{name: "other database", resource: "dbs/other/colls/k", err: "user's database"},
		{name: "unknown container", resource: "dbs/db/colls/nope", err: "names no container"},
		{name: "database", resource: "dbs/db", err: "a database are not supported"},
		{name: "stored procedure", resource: "dbs/db/colls/k/sprocs/s", err: "sprocs are not supported"},
		{name: "attachment", resource: "dbs/db/colls/k/docs/i/attachments/a", err: "not the link"},
		{name: "users", resource: "dbs/db/users/u", err: "users are not supported"},
		{name: "not a link", resource: "orders", err: "not the link"},
		{name: "empty item", resource: "dbs/db/colls/k/docs/", err: "not the link"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"id":"p` + string(rune('a'+i)) + `","permissionMode":"read","resource":` + jsonString(tt.resource)
			if tt.pk != "" {
				body += `,"resourcePartitionKey":` + tt.pk
			}
			p, err := c.CreatePermission("db", "u", []byte(body+"}"))
			if tt.err != "" {
				ie, ok := errors.AsType[*InvalidError](err)
				if !ok || !strings.Contains(ie.Msg, tt.err) {
					t.Fatalf("CreatePermission(%s) = %v, want an *InvalidError mentioning %q", body, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("CreatePermission(%s) = %v", body, err)
			}
			if p.Mode != ModeRead || p.Item != tt.wantItem || p.PK != tt.wantPK {
				t.Errorf("permission %+v: mode %s item %q pk %q, want Read %q %q", p, p.Mode, p.Item, p.PK, tt.wantItem, tt.wantPK)
			}
			if !strings.Contains(string(p.JSON()), `"resource":`+jsonString(tt.resource)) {
				t.Errorf("JSON %s does not echo the resource as sent", p.JSON())
			}
			// One permission per resource and user: free the resource again.
			if err := c.DeletePermission("db", "u", p.ID, ""); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPermissionLifecycle: create, conflicts, replace (new etag, same
// _rid), upsert, user rename (permissions follow), and the cascades of a
// user's and a database's deletion, persisted across a reopen.
func TestPermissionLifecycle(t *testing.T) {
	c, st := usersCatalog(t)
	def := func(id, mode, resource string) []byte {
		return []byte(`{"id":"` + id + `","permissionMode":"` + mode + `","resource":"` + resource + `","_token":"stale","_rid":"x"}`)
	}
	p1, err := c.CreatePermission("db", "u", def("p1", "All", "dbs/db/colls/k"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(p1.JSON()), "stale") || strings.Count(string(p1.JSON()), `"_rid"`) != 1 {
		t.Errorf("system properties sent in the body were kept: %s", p1.JSON())
	}
	if _, err := c.CreatePermission("db", "u", def("p1", "All", "dbs/db/colls/h")); !errors.Is(err, ErrExists) {
		t.Errorf("duplicate id: %v, want ErrExists", err)
	}
	_, err = c.CreatePermission("db", "u", def("p2", "Read", "dbs/db/colls/k"))
	if e, ok := errors.AsType[*ExistsError](err); !ok || !errors.Is(err, ErrExists) || !strings.Contains(e.Msg, "p1") {
		t.Errorf("second permission on the resource: %v, want an *ExistsError naming p1", err)
	}
	// The item of the container is another resource.
	if _, err := c.CreatePermission("db", "u", def("p2", "Read", "dbs/db/colls/k/docs/x")); err != nil {
		t.Errorf("permission on an item of the container: %v", err)
	}
	if _, err := c.ReplacePermission("db", "u", "p1", def("other", "All", "dbs/db/colls/k"), ""); err == nil {
		t.Error("replace with another id in the body succeeded")
	}
	r1, err := c.ReplacePermission("db", "u", "p1", def("p1", "Read", "dbs/db/colls/k"), "")
	if err != nil {
		t.Fatal(err)
	}
	if r1.RID != p1.RID || r1.ETag == p1.ETag || r1.Mode != ModeRead {
		t.Errorf("replaced: rid %s etag %s mode %s; was %s %s", r1.RID, r1.ETag, r1.Mode, p1.RID, p1.ETag)
	}
	if _, created, err := c.UpsertPermission("db", "u", def("p3", "All", "dbs/db/colls/h")); err != nil || !created {
		t.Errorf("upsert new: %v %v", created, err)
	}
	if _, created, err := c.UpsertPermission("db", "u", def("p3", "Read", "dbs/db/colls/h")); err != nil || created {
		t.Errorf("upsert existing: %v %v", created, err)
	}

	// A renamed user keeps its permissions, and its tokens' permission stays findable by
	// the user's _rid.
	u, _ := c.User("db", "u")
	if _, err := c.CreateUser("db", []byte(`{"id":"v"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReplaceUser("db", "u", []byte(`{"id":"v"}`), ""); !errors.Is(err, ErrExists) {
		t.Errorf("rename onto an existing user: %v, want ErrExists", err)
	}
	w, err := c.ReplaceUser("db", "u", []byte(`{"id":"w"}`), "")
	if err != nil || w.RID != u.RID || w.ID != "w" {
		t.Fatalf("rename: %+v, %v", w, err)
	}
	if _, err := c.User("db", "u"); !errors.Is(err, ErrNotFound) {
		t.Errorf("old name still found: %v", err)
	}
	ps, _, err := c.Permissions(t.Context(), "db", "w")
	if err != nil || len(ps) != 3 || ps[0].ID != "p1" || ps[1].ID != "p2" || ps[2].ID != "p3" {
		t.Fatalf("permissions after rename: %v, %v", ps, err)
	}
	if p, err := c.PermissionOf("db", u.RID, "p1"); err != nil || p.ETag != r1.ETag {
		t.Errorf("PermissionOf: %+v, %v", p, err)
	}

	// Reopen: all of it persisted.
	c, _ = openCatalog(t, st)
	if us, err := c.Users(t.Context(), "db"); err != nil || len(us) != 2 || us[0].ID != "w" || us[1].ID != "v" {
		t.Fatalf("users after reopen: %v, %v", us, err)
	}
	if err := c.DeleteUser("db", "w", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PermissionOf("db", u.RID, "p1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a deleted user's permission: %v, want ErrNotFound", err)
	}
	if _, err := c.CreatePermission("db", "v", def("q", "All", "dbs/db/colls/k")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteDatabase("db", ""); err != nil {
		t.Fatal(err)
	}
	for key := range st.m {
		if strings.HasPrefix(key, keyUser) || strings.HasPrefix(key, keyPerm) {
			t.Errorf("record %s survived its database", key)
		}
	}
	if _, err := c.CreateDatabase("db", Throughput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.User("db", "v"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a new database of the same name has the old users: %v", err)
	}
}

// TestPKDeleteRecords: pending partition key deletes persist, a later one
// replaces an earlier one of the same partition, removal spares a newer
// one, and a container's deletion takes them along.
func TestPKDeleteRecords(t *testing.T) {
	c, st := usersCatalog(t)
	k, _ := c.Container("db", "k")
	d1 := PKDelete{DB: "db", Container: "k", Internal: k.Internal, PK: `["a"]`, Cut: 10}
	d2 := d1
	d2.Cut = 20
	other := PKDelete{DB: "db", Container: "k", Internal: k.Internal, PK: `["b"]`, Cut: 15}
	for _, d := range []PKDelete{d1, d2, other} {
		if err := c.AddPKDelete(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.AddPKDelete(PKDelete{DB: "db", Container: "k", Internal: k.Internal + 1, PK: `["a"]`}); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete of another container's partition: %v, want ErrNotFound", err)
	}
	if err := c.RemovePKDelete(d1); err != nil { // replaced by d2: stays
		t.Fatal(err)
	}
	c, _ = openCatalog(t, st)
	got, err := c.PKDeletes(t.Context())
	if err != nil || len(got) != 2 || got[0] != d2 || got[1] != other {
		t.Fatalf("PKDeletes = %+v, %v, want d2 and other", got, err)
	}
	if err := c.RemovePKDelete(d2); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteContainer("db", "k", ""); err != nil {
		t.Fatal(err)
	}
	if got, err := c.PKDeletes(t.Context()); err != nil || len(got) != 0 {
		t.Errorf("PKDeletes after the container's deletion = %+v, %v", got, err)
	}
}
