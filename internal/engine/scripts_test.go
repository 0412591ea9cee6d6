package engine

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestScriptProgramsReplaced: a replaced script's program takes the place of
// the old version's (which is never run again) rather than adding to it.
func TestScriptProgramsReplaced(t *testing.T) {
	e := testEngine(t)
	if _, err := e.CreateScript("db", "k", UDFs, []byte(`{"id":"f","body":"function f(x){return x}"}`)); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		body := fmt.Sprintf(`{"id":"f","body":"function f(x){return x+%d}"}`, i)
		if _, err := e.ReplaceScript("db", "k", UDFs, "f", []byte(body), ""); err != nil {
			t.Fatal(err)
		}
		q := Query{Text: "SELECT VALUE udf.f(1)"}
		p, err := e.QueryItems(t.Context(), "db", "k", Scope{PK: pkN(1)}, q)
		if err != nil || len(p.Items) != 1 || string(p.Items[0]) != fmt.Sprint(1+i) {
			t.Fatalf("after replace %d: %q, %v; want %d", i, p.Items, err, 1+i)
		}
	}
	if n := e.progs.len(); n != 1 {
		t.Errorf("%d programs kept for one script replaced 20 times, want 1", n)
	}
}

// TestScriptProgramsBounded: the programs of scripts that are gone do not
// accumulate (the map keeps at most its limit), and a script whose program
// was dropped runs again, compiled afresh.
func TestScriptProgramsBounded(t *testing.T) {
	var m map[string]int
	for i := range 10 * maxScriptPrograms {
		m = keep(m, fmt.Sprint(i), i, maxScriptPrograms)
		if len(m) > maxScriptPrograms {
			t.Fatalf("%d entries after %d added, limit %d", len(m), i+1, maxScriptPrograms)
		}
	}
	m = keep(m, "last", 1, maxScriptPrograms)
	for range maxScriptPrograms { // replacing a kept key drops nothing
		m = keep(m, "last", 2, maxScriptPrograms)
	}
	if m["last"] != 2 || len(m) < maxScriptPrograms/2 {
		t.Errorf("after replacing one key: %d entries, last=%d", len(m), m["last"])
	}

	e := testEngine(t)
	if _, err := e.CreateScript("db", "k", UDFs, []byte(`{"id":"f","body":"function f(x){return x*5}"}`)); err != nil {
		t.Fatal(err)
	}
	run := func() {
		t.Helper()
		p, err := e.QueryItems(t.Context(), "db", "k", Scope{PK: pkN(1)}, Query{Text: "SELECT VALUE udf.f(2)"})
		if err != nil || len(p.Items) != 1 || string(p.Items[0]) != "10" {
			t.Fatalf("udf.f(2): %q, %v", p.Items, err)
		}
	}
	run()
	e.progs.mu.Lock()
	clear(e.progs.m) // as a full map's drop would
	e.progs.mu.Unlock()
	run()
	if n := e.progs.len(); n != 1 {
		t.Errorf("%d programs after a run, want 1", n)
	}
}

// TestScriptDefinitionControlCharacters: a definition whose strings hold
// control characters is stored and read back as JSON (the catalog wrote
// fastjson's Go escapes, \a and \x00, which no SDK can parse).
func TestScriptDefinitionControlCharacters(t *testing.T) {
	e := testEngine(t)
	body := []byte(`{"id":"f\u0007","body":"function f(x){return x + '\u0000\u0007\udb40\udc01'}"}`)
	created, err := e.CreateScript("db", "k", UDFs, body)
	if err != nil {
		t.Fatal(err)
	}
	read, err := e.ReadScript("db", "k", UDFs, "f\u0007")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{created.Body, read.Body} {
		var v struct{ ID, Body string }
		if err := json.Unmarshal(b, &v); err != nil || v.ID != "f\u0007" || v.Body != "function f(x){return x + '\x00\x07\U000e0001'}" {
			t.Errorf("read back %s: %v, %+v", b, err, v)
		}
	}
}
