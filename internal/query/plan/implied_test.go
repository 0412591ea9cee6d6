package plan_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/exec"
	"github.com/partitadb/partita/internal/query/parse"
	"github.com/partitadb/partita/internal/query/plan"
)

// TestImpliedRest checks the filter Implied leaves: the implied conjuncts
// gone, the others in their order.
func TestImpliedRest(t *testing.T) {
	sc := plan.Scope{Logical: true, KeyPaths: []string{"/pk"}, Key: document.PartitionKey{{Kind: document.String, String: "a"}}}
	params := map[string][]byte{"@pk": []byte(`"a"`), "@other": []byte(`"b"`)}
	tests := []struct {
		query, rest string // rest "": nothing left
		implied     int
	}{
		{"SELECT * FROM c WHERE c.pk = @pk", "", 1},
		{"SELECT * FROM c WHERE c.x = 1 AND c.pk = 'a' AND c.y = 2", "(c.x = 1) AND (c.y = 2)", 1},
		{"SELECT * FROM c WHERE (c.pk = 'a' AND c.x = 1) AND (c.y = 2 AND @pk = c.pk)", "(c.x = 1) AND (c.y = 2)", 2},
		{"SELECT * FROM c WHERE c.pk = @other", "c.pk = @other", 0},
		{"SELECT * FROM c WHERE c.pk = 'a' OR c.x = 1", `(c.pk = "a") OR (c.x = 1)`, 0},
		{"SELECT * FROM c WHERE NOT (c.pk != 'a')", `NOT (c.pk != "a")`, 0},
		{"SELECT * FROM c WHERE c.pk = @missing", "c.pk = @missing", 0},
		{"SELECT * FROM x IN c.kids WHERE x.pk = 'a'", `x.pk = "a"`, 0},
		{"SELECT * FROM c WHERE c.pk.sub = 'a'", `c.pk.sub = "a"`, 0},
	}
	for _, tt := range tests {
		q, err := parse.Parse(tt.query)
		if err != nil {
			t.Fatal(err)
		}
		rest, implied := plan.Implied(q, params, sc)
		got := ""
		if rest != nil {
			got = parse.ExprString(rest)
		}
		if got != tt.rest || len(implied) != tt.implied {
			t.Errorf("%s: rest %q, %d implied; want %q, %d", tt.query, got, len(implied), tt.rest, tt.implied)
		}
		if len(implied) == 0 && rest != q.Where {
			t.Errorf("%s: nothing implied, but the WHERE clause was rebuilt", tt.query)
		}
	}
	// Outside one logical partition, or without its key, nothing is implied.
	q, _ := parse.Parse("SELECT * FROM c WHERE c.pk = 'a'")
	for _, s := range []plan.Scope{{KeyPaths: []string{"/pk"}, Key: sc.Key}, {Logical: true, KeyPaths: []string{"/pk"}}} {
		if rest, implied := plan.Implied(q, nil, s); rest != q.Where || implied != nil {
			t.Errorf("scope %+v: %d implied", s, len(implied))
		}
	}
}

// TestImpliedKeepsResults compares, on the documents a logical partition
// can hold, the filter as written with the filter Implied leaves: random
// keys of every kind, random documents with that key (and with the
// partition key's value spelled in other ways: 1 as 1.0, -0 as 0), random
// filters mixing key conjuncts with others.
func TestImpliedKeepsResults(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 15))
	keys := []string{`"a"`, `""`, `"é😀"`, `1`, `-0`, `0`, `2.5`, `null`, `true`, `false`}
	spellings := map[string][]string{`1`: {`1`, `1.0`, `1e0`}, `-0`: {`-0`, `0`, `0.0`}, `0`: {`0`, `-0`}, `2.5`: {`2.5`, `25e-1`}}
	others := []string{`"a"`, `"b"`, `1`, `2`, `null`, `true`, `"1"`, `{}`}
	for round := 0; round < 300; round++ {
		keyJSON := keys[rng.IntN(len(keys))]
		key, err := document.ParsePKHeader("[" + keyJSON + "]")
		if err != nil {
			t.Fatal(err)
		}
		sc := plan.Scope{Logical: true, KeyPaths: []string{"/pk"}, Key: key}
		var conj []string
		params := map[string][]byte{}
		for i := range 1 + rng.IntN(4) {
			v := others[rng.IntN(len(others))]
			if rng.IntN(2) == 0 {
				v = keyJSON
			}
			if v == `{}` {
				v = `"x"`
			}
			switch rng.IntN(4) {
			case 0:
				conj = append(conj, "c.pk = "+v)
			case 1:
				name := fmt.Sprintf("@p%d", i)
				params[name] = []byte(v)
				conj = append(conj, name+" = c.pk")
			case 2:
				conj = append(conj, "c.n > "+fmt.Sprint(rng.IntN(3)))
			default:
				conj = append(conj, "c.pk != "+v)
			}
		}
		text := "SELECT * FROM c WHERE " + strings.Join(conj, " AND ")
		q, err := parse.Parse(text)
		if err != nil {
			t.Fatal(text, err)
		}
		whole, err := exec.Compile(q, params)
		if err != nil {
			t.Fatal(text, err)
		}
		rest, _ := plan.Implied(q, params, sc)
		reduced := *q
		reduced.Where = rest
		part, err := exec.Compile(&reduced, params)
		if err != nil {
			t.Fatal(text, err)
		}
		for n := range 3 {
			sp := keyJSON
			if alt := spellings[keyJSON]; alt != nil {
				sp = alt[rng.IntN(len(alt))]
			}
			doc := fmt.Sprintf(`{"id":"d","pk":%s,"n":%d}`, sp, n)
			// The document belongs to this logical partition.
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatal(err)
			}
			got, err1 := part.Match(t.Context(), []byte(doc))
			want, err2 := whole.Match(t.Context(), []byte(doc))
			if got != want || err1 != nil || err2 != nil {
				t.Fatalf("key %s, %s on %s: %v, %v with the implied conjuncts left out; %v, %v as written", keyJSON, text, doc, got, err1, want, err2)
			}
		}
	}
}
