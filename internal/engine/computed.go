package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/exec"
	"github.com/partitadb/partita/internal/query/parse"
	"github.com/partitadb/partita/internal/status"
)

// Computed properties (docs/query-engine.md, "Computed properties"): a container's
// computedProperties name queries `SELECT VALUE <expr> FROM c` whose value
// a query reads as if it were a top-level property of each item (c.name);
// they are not stored, and SELECT * leaves them out. A query is rewritten
// with each reference replaced by its property's expression
// (parse.WithComputed) before it is routed, planned and compiled, so the
// planner never takes one for an indexed path; nothing about them is
// indexed, and a filter on one reads its scope. The query-plan request
// (QueryPlan) plans the query as written: the SDK's rewritten queries
// reach the server again and are rewritten then.

// maxComputed is how many computed properties a container may have
// (Cosmos DB's limit).
const maxComputed = 20

// reservedComputed are the names a computed property may not take: the
// item's system properties.
var reservedComputed = []string{"id", "_rid", "_ts", "_etag", "_self", "_attachments", "_lsn"}

// computedDef is a computedProperties entry as a definition gives it.
type computedDef struct {
	Name  *string `json:"name"`
	Query *string `json:"query"`
}

// parseComputed parses and checks the computedProperties of a container
// definition (none when absent or null), as Cosmos DB checks them: at most
// 20, each with a unique name that is not a system property's, and a query
// of the shape parse.ComputedShape allows, calling only functions of one
// item (exec.ItemFunction). Errors are 400s naming the property.
func parseComputed(body []byte) ([]parse.ComputedProperty, error) {
	var def struct {
		Computed     json.RawMessage `json:"computedProperties"`
		PartitionKey struct {
			Paths []string `json:"paths"`
		} `json:"partitionKey"`
	}
	if err := json.Unmarshal(body, &def); err != nil || len(def.Computed) == 0 || string(def.Computed) == "null" {
		return nil, nil // the catalog reports a malformed definition
	}
	var defs []computedDef
	if err := json.Unmarshal(def.Computed, &defs); err != nil {
		return nil, status.BadRequest("computedProperties must be an array of objects, each with a string name and a string query")
	}
	if len(defs) > maxComputed {
		return nil, status.BadRequest("a container may have at most %d computed properties; the definition has %d", maxComputed, len(defs))
	}
	out := make([]parse.ComputedProperty, 0, len(defs))
	seen := map[string]bool{}
	for i, d := range defs {
		if d.Name == nil || *d.Name == "" || d.Query == nil {
			return nil, status.BadRequest("computed property %d must have a non-empty string name and a string query", i)
		}
		name := *d.Name
		switch {
		case seen[name]:
			return nil, status.BadRequest("computed property %q is defined twice: names must be unique", name)
		case strings.Contains(name, "/"):
			return nil, status.BadRequest("computed property %q: a name is a top-level property name and cannot contain '/'", name)
		}
		for _, r := range reservedComputed {
			if name == r {
				return nil, status.BadRequest("computed property %q: %s is a system property's name", name, r)
			}
		}
		for _, path := range def.PartitionKey.Paths {
			// Named as the partition key's top-level property, it would
			// make c.pk in a query the computed value while the item is
			// routed, and queries on it, by its stored key.
			segs, err := document.PKPathSegments(path)
			if err == nil && name == segs[0] {
				return nil, status.BadRequest("computed property %q would hide the partition key path %s: name it otherwise", name, path)
			}
		}
		seen[name] = true
		p, err := parseComputedQuery(name, *d.Query)
		if err != nil {
			return nil, status.BadRequest("computed property %q: %v", name, err)
		}
		out = append(out, p)
	}
	// A computed property reads stored properties only (Cosmos DB: it
	// cannot rely on another computed property); its own name reads the
	// stored property it hides.
	for _, p := range out {
		var bad error
		parse.Inspect(p.Value, func(e parse.Expr) bool {
			var name string
			switch e := e.(type) {
			case *parse.Property:
				if id, ok := e.X.(*parse.Ident); ok && id.Name == p.Root {
					name = e.Name
				}
			case *parse.Index:
				if id, ok := e.X.(*parse.Ident); ok && id.Name == p.Root {
					if l, ok := e.Index.(*parse.Literal); ok && l.Kind == parse.LitString {
						name = l.Str
					}
				}
			}
			if name != "" && name != p.Name && seen[name] {
				bad = status.BadRequest("computed property %q refers to computed property %q: a computed property reads stored properties only", p.Name, name)
			}
			return bad == nil
		})
		if bad != nil {
			return nil, bad
		}
	}
	return out, nil
}

// parseComputedQuery parses and checks computed property name's query.
func parseComputedQuery(name, query string) (parse.ComputedProperty, error) {
	q, err := parse.Parse(query)
	if err != nil {
		return parse.ComputedProperty{}, fmt.Errorf("its query is invalid: %w", err)
	}
	p, err := parse.ComputedShape(name, q)
	if err != nil {
		return parse.ComputedProperty{}, err
	}
	var bad error
	parse.Inspect(p.Value, func(e parse.Expr) bool {
		if c, ok := e.(*parse.Call); ok && !exec.ItemFunction(c.Name) {
			bad = fmt.Errorf("its query cannot call %s (aggregate, spatial and non-deterministic functions are not allowed)", c.Name)
		}
		return bad == nil
	})
	if bad != nil {
		return parse.ComputedProperty{}, bad
	}
	if _, err := exec.Compile(q, nil); err != nil {
		return parse.ComputedProperty{}, fmt.Errorf("its query is invalid: %w", err)
	}
	return p, nil
}

// computedCache keeps each container's parsed computed properties, by its
// internal id, for the version of its definition (etag) they came from.
type computedCache struct {
	mu sync.Mutex
	m  map[uint64]computedEntry
}

type computedEntry struct {
	etag  string
	props []parse.ComputedProperty
}

// computedKey is how a definition with computed properties names them.
var computedKey = []byte(`"computedProperties"`)

// computed returns c's computed properties (nil for none). A definition
// stored before they were checked, whose properties do not parse now,
// has none.
func (e *Engine) computed(c *catalog.Container) []parse.ComputedProperty {
	if !bytes.Contains(c.Body, computedKey) {
		return nil
	}
	cc := &e.computedProps
	cc.mu.Lock()
	ent, ok := cc.m[c.Internal]
	cc.mu.Unlock()
	if ok && ent.etag == c.ETag {
		return ent.props
	}
	props, err := parseComputed(c.Body)
	if err != nil {
		e.log.Warn("container's computed properties are invalid: queries ignore them", "db", c.DB, "container", c.ID, "err", err)
		props = nil
	}
	cc.mu.Lock()
	if cc.m == nil || len(cc.m) >= 4096 {
		cc.m = map[uint64]computedEntry{}
	}
	cc.m[c.Internal] = computedEntry{etag: c.ETag, props: props}
	cc.mu.Unlock()
	return props
}

// withComputed returns ast rewritten with c's computed properties, and the
// text that stands for it in the query cache's program keys: the query's
// own when c has none. Errors are 400s (a form the rewrite does not
// support).
func (e *Engine) withComputed(c *catalog.Container, ast *parse.Query, text string) (*parse.Query, string, error) {
	props := e.computed(c)
	if len(props) == 0 {
		return ast, text, nil
	}
	out, err := parse.WithComputed(ast, props)
	if err != nil {
		return nil, "", status.BadRequest("%v", err)
	}
	return out, text + "\x00computed " + c.RID + " " + c.ETag, nil
}
