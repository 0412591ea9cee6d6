package engine

import (
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
		if _, err := e.ReplaceScript("db", "k", UDFs, "f", []byte(body)); err != nil {
			t.Fatal(err)
		}
		q := Query{Text: "SELECT VALUE udf.f(1)"}
		p, err := e.QueryItems(t.Context(), "db", "k", Scope{PK: pkN(1)}, q)
		if err != nil || len(p.Items) != 1 || string(p.Items[0]) != fmt.Sprint(1+i) {
			t.Fatalf("after replace %d: %q, %v; want %d", i, p.Items, err, 1+i)
		}
	}
	n := 0
	e.progs.m.Range(func(any, any) bool { n++; return true })
	if n != 1 {
		t.Errorf("%d programs kept for one script replaced 20 times, want 1", n)
	}
}
