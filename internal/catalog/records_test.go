package catalog

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/records from the test's output")

// TestRecordsFormat pins the records of users, permissions and scripts: the
// keys and JSON values stored, the resources returned and the errors of a
// fixed sequence of operations, and what a reopened catalog lists. Stored
// records must stay loadable, so testdata/records changes only with a
// storage format change (regenerate with go test -run TestRecordsFormat
// -rewrite, and review the diff).
func TestRecordsFormat(t *testing.T) {
	c, st := usersCatalog(t) // user u
	var out strings.Builder
	res := func(op string, r interface{ JSON() []byte }, err error) {
		t.Helper()
		if err != nil {
			fmt.Fprintf(&out, "%s: error: %v\n", op, err)
			return
		}
		fmt.Fprintf(&out, "%s: %s\n", op, r.JSON())
	}
	created := func(op string, r interface{ JSON() []byte }, created bool, err error) {
		t.Helper()
		res(fmt.Sprintf("%s (created %v)", op, created), r, err)
	}
	outcome := func(op string, err error) {
		if err == nil {
			fmt.Fprintf(&out, "%s: ok\n", op)
			return
		}
		fmt.Fprintf(&out, "%s: error: %v\n", op, err)
	}

	u, err := c.CreateUser("db", []byte(`{"id":"v","_rid":"ignored"}`))
	res("create user v", u, err)
	_, err = c.CreateUser("db", []byte(`{"id":"v"}`))
	outcome("create user v again", err)
	_, err = c.CreateUser("nodb", []byte(`{"id":"v"}`))
	outcome("create user in no database", err)
	_, err = c.CreateUser("db", []byte(`{"id":"a/b"}`))
	outcome("create user with a bad id", err)
	_, err = c.CreateUser("db", []byte(`[]`))
	outcome("create user from an array", err)
	u, ok, err := c.UpsertUser("db", []byte(`{"id":"u"}`))
	created("upsert user u", u, ok, err)
	u, ok, err = c.UpsertUser("db", []byte(`{"id":"x"}`))
	created("upsert user x", u, ok, err)
	_, err = c.ReplaceUser("db", "v", []byte(`{"id":"u"}`), "")
	outcome("rename v onto u", err)
	_, err = c.ReplaceUser("db", "nope", []byte(`{"id":"z"}`), "")
	outcome("replace missing user", err)
	u, err = c.ReplaceUser("db", "v", []byte(`{"id":"w"}`), "")
	res("rename v to w", u, err)
	u, err = c.ReplaceUser("db", "w", []byte(`{"id":"w"}`), "")
	res("replace w", u, err)
	u, err = c.User("db", "w")
	res("read user w", u, err)
	_, err = c.User("db", "v")
	outcome("read user v", err)

	p, err := c.CreatePermission("db", "u", []byte(`{"id":"p1","permissionMode":"all","resource":"dbs/db/colls/k","resourcePartitionKey":"a","_token":"x"}`))
	res("create permission p1", p, err)
	_, err = c.CreatePermission("db", "u", []byte(`{"id":"p1","permissionMode":"All","resource":"dbs/db/colls/h"}`))
	outcome("create permission p1 again", err)
	_, err = c.CreatePermission("db", "u", []byte(`{"id":"p9","permissionMode":"All","resource":"dbs/db/colls/k"}`))
	outcome("create a second permission on k", err)
	_, err = c.CreatePermission("db", "nobody", []byte(`{"id":"p9","permissionMode":"All","resource":"dbs/db/colls/k"}`))
	outcome("create permission of no user", err)
	_, err = c.CreatePermission("db", "u", []byte(`{"id":"p9","permissionMode":"Write","resource":"dbs/db/colls/k"}`))
	outcome("create permission with a bad mode", err)
	p, ok, err = c.UpsertPermission("db", "u", []byte(`{"id":"p2","permissionMode":"Read","resource":"dbs/db/colls/k/docs/i"}`))
	created("upsert permission p2", p, ok, err)
	p, ok, err = c.UpsertPermission("db", "u", []byte(`{"id":"p2","permissionMode":"All","resource":"dbs/db/colls/k/docs/i"}`))
	created("upsert permission p2 again", p, ok, err)
	_, err = c.ReplacePermission("db", "u", "p1", []byte(`{"id":"p2","permissionMode":"Read","resource":"dbs/db/colls/k"}`), "")
	outcome("replace p1 with another id", err)
	_, err = c.ReplacePermission("db", "u", "p3", []byte(`{"id":"p3","permissionMode":"Read","resource":"dbs/db/colls/h"}`), "")
	outcome("replace missing permission", err)
	p, err = c.ReplacePermission("db", "u", "p1", []byte(`{"id":"p1","permissionMode":"Read","resource":"dbs/db/colls/k"}`), "")
	res("replace p1", p, err)
	p, err = c.CreatePermission("db", "w", []byte(`{"id":"q","permissionMode":"All","resource":"dbs/db/colls/h","resourcePartitionKey":["x",1]}`))
	res("create permission q of w", p, err)
	p, err = c.CreatePermission("db", "x", []byte(`{"id":"r","permissionMode":"All","resource":"dbs/db/colls/h"}`))
	res("create permission r of x", p, err)
	p, err = c.Permission("db", "u", "p2")
	res("read permission p2", p, err)
	outcome("delete permission p2", c.DeletePermission("db", "u", "p2", ""))
	outcome("delete permission p2 again", c.DeletePermission("db", "u", "p2", ""))
	outcome("delete user x", c.DeleteUser("db", "x", ""))
	outcome("delete user x again", c.DeleteUser("db", "x", ""))

	s, err := c.CreateScript("db", "k", StoredProcedures, []byte(`{"id":"s","body":"function () {}","_etag":"x"}`))
	res("create sproc s", s, err)
	_, err = c.CreateScript("db", "k", StoredProcedures, []byte(`{"id":"s","body":"function () {}"}`))
	outcome("create sproc s again", err)
	s, err = c.CreateScript("db", "k", Triggers, []byte(`{"id":"t","body":"function () {}","triggerType":"pre","triggerOperation":"create"}`))
	res("create trigger t", s, err)
	s, err = c.CreateScript("db", "k", UDFs, []byte(`{"id":"f","body":"function (x) { return x }"}`))
	res("create udf f", s, err)
	s, err = c.ReplaceScript("db", "k", StoredProcedures, "s", []byte(`{"id":"s","body":"function () { return 1 }"}`), "")
	res("replace sproc s", s, err)
	_, err = c.ReplaceScript("db", "k", StoredProcedures, "s", []byte(`{"id":"z","body":""}`), "")
	outcome("replace sproc s with another id", err)
	s, err = c.Script("db", "k", Triggers, "t")
	res("read trigger t", s, err)
	outcome("delete udf f", c.DeleteScript("db", "k", UDFs, "f", ""))
	outcome("delete udf f again", c.DeleteScript("db", "k", UDFs, "f", ""))

	out.WriteString("\nstored:\n")
	for _, key := range slices.Sorted(func(yield func(string) bool) {
		for key := range st.m {
			if !yield(key) {
				return
			}
		}
	}) {
		if strings.HasPrefix(key, keyUser) || strings.HasPrefix(key, keyPerm) || strings.HasPrefix(key, keyScript) || key == keySeq {
			fmt.Fprintf(&out, "%q = %q\n", key, st.m[key])
		}
	}

	out.WriteString("\nreopened:\n")
	c, _ = openCatalog(t, st)
	us, err := c.Users(t.Context(), "db")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range us {
		res("user", u, nil)
		ps, owner, err := c.Permissions(t.Context(), "db", u.ID)
		if err != nil || owner.RID != u.RID {
			t.Fatalf("Permissions(%s) = %v, %v", u.ID, owner, err)
		}
		for _, p := range ps {
			res("  permission", p, nil)
			if q, err := c.PermissionOf("db", u.RID, p.ID); err != nil || string(q.JSON()) != string(p.JSON()) {
				t.Errorf("PermissionOf(%s, %s) = %v, %v", u.RID, p.ID, q, err)
			}
		}
	}
	_, err = c.PermissionOf("db", "not a rid", "p1")
	outcome("permission of a bad user rid", err)
	for _, kind := range []ScriptKind{StoredProcedures, Triggers, UDFs} {
		scs, err := c.Scripts(t.Context(), "db", "k", kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range scs {
			res(string(kind), s, nil)
		}
	}

	path := filepath.Join("testdata", "records")
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(want) {
		t.Errorf("records differ from %s (-rewrite rewrites it):\n%s", path, got)
	}
}
