package parse

import "testing"

func mustComputed(t *testing.T, name, query string) ComputedProperty {
	t.Helper()
	q, err := Parse(query)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ComputedShape(name, q)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWithComputed: references through the root alias, in every clause and
// in subqueries, become the property's expression over the query's alias;
// an unaliased SELECT item keeps the property's name; what does not refer
// to a computed property, or refers through another alias, is left alone.
func TestWithComputed(t *testing.T) {
	props := []ComputedProperty{
		mustComputed(t, "cp_lower", "SELECT VALUE LOWER(x.name) FROM x"),
		mustComputed(t, "cp_tags", "SELECT VALUE ARRAY_CONCAT(root.a, root.b) FROM root"),
		mustComputed(t, "name", "SELECT VALUE UPPER(c.name) FROM c"), // shadows a stored property
	}
	tests := []struct{ in, want string }{
		{"SELECT c.cp_lower FROM c", "SELECT LOWER(c.name) AS cp_lower FROM c"},
		{"SELECT c.cp_lower AS l FROM c", "SELECT LOWER(c.name) AS l FROM c"},
		{`SELECT VALUE d["cp_lower"] FROM d`, "SELECT VALUE LOWER(d.name) FROM d"},
		{"SELECT * FROM c WHERE c.cp_lower = 'a' ORDER BY c.cp_lower DESC",
			`SELECT * FROM c WHERE LOWER(c.name) = "a" ORDER BY LOWER(c.name) DESC`},
		{"SELECT c.cp_lower, COUNT(1) AS n FROM c GROUP BY c.cp_lower",
			"SELECT LOWER(c.name) AS cp_lower, COUNT(1) AS n FROM c GROUP BY LOWER(c.name)"},
		{"SELECT t FROM c JOIN t IN c.cp_tags", "SELECT t FROM c JOIN t IN ARRAY_CONCAT(c.a, c.b)"},
		{"SELECT VALUE EXISTS(SELECT VALUE t FROM t IN c.cp_tags WHERE t = c.cp_lower) FROM c",
			"SELECT VALUE EXISTS(SELECT VALUE t FROM t IN ARRAY_CONCAT(c.a, c.b) WHERE t = LOWER(c.name)) FROM c"},
		// The stored property of the same name is not read: the computed one is.
		{"SELECT VALUE c.name FROM c", "SELECT VALUE UPPER(c.name) FROM c"},
		// A subquery binding the alias again is its own scope.
		{"SELECT VALUE ARRAY(SELECT VALUE c.cp_lower FROM c IN c.kids) FROM c",
			"SELECT VALUE ARRAY(SELECT VALUE c.cp_lower FROM c IN c.kids) FROM c"},
		// Not through the root alias, or not a computed name: unchanged.
		{"SELECT VALUE c.x.cp_lower FROM c", "SELECT VALUE c.x.cp_lower FROM c"},
		{"SELECT VALUE t.cp_lower FROM t IN c.kids", "SELECT VALUE t.cp_lower FROM t IN c.kids"},
		// Over a computed array: the same rows through a JOIN.
		{"SELECT VALUE t FROM t IN c.cp_tags WHERE t = 'x'", `SELECT VALUE t FROM c JOIN t IN ARRAY_CONCAT(c.a, c.b) WHERE t = "x"`},
		{"SELECT c.other FROM c", "SELECT c.other FROM c"},
		// A FROM subquery reads the items: rewritten as a query of its own,
		// with or without an alias, nested too.
		{"SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE c.cp_lower FROM c)",
			"SELECT VALUE COUNT(1) FROM (SELECT DISTINCT VALUE LOWER(c.name) FROM c)"},
		{"SELECT VALUE x.cp_lower FROM (SELECT c.cp_lower FROM c) x ORDER BY x.cp_lower",
			"SELECT VALUE x.cp_lower FROM (SELECT LOWER(c.name) AS cp_lower FROM c) AS x ORDER BY x.cp_lower ASC"},
		{"SELECT * FROM (SELECT * FROM (SELECT VALUE d.cp_lower FROM d) y) z",
			"SELECT * FROM (SELECT * FROM (SELECT VALUE LOWER(d.name) FROM d) AS y) AS z"},
	}
	for _, tc := range tests {
		q, err := Parse(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		before := q.String()
		w, err := WithComputed(q, props)
		if err != nil {
			t.Errorf("WithComputed(%s): %v", tc.in, err)
			continue
		}
		got := w.String()
		if got != tc.want {
			t.Errorf("WithComputed(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
		if q.String() != before {
			t.Errorf("WithComputed(%s) changed its argument: %s", tc.in, q.String())
		}
	}
	if props[0].Value.(*Call).Args[0].(*Property).X.(*Ident).Name != "x" {
		t.Errorf("WithComputed changed a property's own expression")
	}
}

// TestWithComputedUnsupported: a computed property in a FROM path other
// than FROM x IN c.cp (with SELECT * over it, or FROM c.cp x) is an error,
// not the stored property read in silence.
func TestWithComputedUnsupported(t *testing.T) {
	props := []ComputedProperty{mustComputed(t, "cp_tags", "SELECT VALUE ARRAY_CONCAT(c.a, c.b) FROM c")}
	for _, s := range []string{"SELECT * FROM t IN c.cp_tags", "SELECT VALUE x FROM c.cp_tags x", "SELECT VALUE c FROM c IN c.cp_tags"} {
		q, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := WithComputed(q, props); err == nil {
			t.Errorf("WithComputed(%s): no error", s)
		}
	}
}

// TestComputedShape: the query constraints Cosmos DB documents.
func TestComputedShape(t *testing.T) {
	bad := []string{
		"SELECT LOWER(c.name) FROM c",
		"SELECT * FROM c",
		"SELECT VALUE t FROM t IN c.tags",
		"SELECT VALUE c.a FROM c.kids c",
		"SELECT VALUE c.a FROM c JOIN t IN c.tags",
		"SELECT VALUE c.a FROM c WHERE c.b = 1",
		"SELECT VALUE c.a FROM c GROUP BY c.a",
		"SELECT VALUE c.a FROM c ORDER BY c.a",
		"SELECT TOP 1 VALUE c.a FROM c",
		"SELECT DISTINCT VALUE c.a FROM c",
		"SELECT VALUE c.a FROM c OFFSET 1 LIMIT 1",
		"SELECT VALUE EXISTS(SELECT VALUE 1 FROM t IN c.tags) FROM c",
		"SELECT VALUE (SELECT VALUE 1) FROM c",
		"SELECT VALUE c.a = @p FROM c",
		"SELECT VALUE udf.f(c.a) FROM c",
		"SELECT VALUE d.a FROM c",
		"SELECT VALUE 1",
	}
	for _, s := range bad {
		q, err := Parse(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if _, err := ComputedShape("cp", q); err == nil {
			t.Errorf("ComputedShape(%s) accepted it", s)
		}
	}
	for _, s := range []string{"SELECT VALUE LOWER(c.name) FROM c", "SELECT VALUE {\"a\": r.a, \"n\": LENGTH(r.b)} FROM root r", "SELECT VALUE 1 FROM MyContainer c"} {
		q, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ComputedShape("cp", q); err != nil {
			t.Errorf("ComputedShape(%s): %v", s, err)
		}
	}
}
