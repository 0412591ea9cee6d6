package engine

import (
	"strconv"
	"strings"
	"sync"

	"github.com/partitadb/partita/internal/query/exec"
	"github.com/partitadb/partita/internal/query/parse"
)

// queryCache keeps parsed queries and compiled programs, so that the pages
// of a query, and the same query sent again, are not parsed and compiled
// each time (5% of a server's CPU under the single-partition query
// benchmark, docs/performance.md). Both are immutable once made: the
// planner, the router and exec read a parsed query and never change it
// (plan.Build rewrites a shallow copy; TestChooseIsPure), and a Program is
// safe for concurrent use.
//
// A parsed query is keyed by its text alone. A program is keyed by the
// text, the conjuncts left out of its filter (plan.Implied), by their
// positions in the text, and the values of the parameters the rest of the
// query refers to (parse.ParamNames): the query by partition key, whose
// only parameter is the key its scope implies, compiles once for every
// key. A program that calls
// user-defined functions is not kept (it binds the container's functions as
// they were), nor is anything for a query whose text and parameters pass
// maxQueryCacheKey bytes. Each map holds at most maxQueryCacheEntries; a
// full map drops about half its entries, whichever they are.
//
// keyOf names a kept program by its key: the query memo (queryMemo) keys
// evaluations by it rather than by the program, which it must not keep
// alive.
type queryCache struct {
	mu    sync.Mutex
	asts  map[string]*parse.Query
	progs map[string]*exec.Program
	keys  map[*exec.Program]string // progs' keys
}

const (
	maxQueryCacheEntries = 512
	maxQueryCacheKey     = 16 << 10
)

// parse returns text parsed, from the cache when it is there.
func (qc *queryCache) parse(text string) (*parse.Query, error) {
	if len(text) > maxQueryCacheKey {
		return parse.Parse(text)
	}
	qc.mu.Lock()
	ast, ok := qc.asts[text]
	qc.mu.Unlock()
	if ok {
		return ast, nil
	}
	ast, err := parse.Parse(text)
	if err != nil {
		return nil, err
	}
	qc.mu.Lock()
	qc.asts = keep(qc.asts, text, ast, maxQueryCacheEntries)
	qc.mu.Unlock()
	return ast, nil
}

// compile returns the program of q (whose text is text) with its filter
// replaced by rest when implied names conjuncts left out, from the cache
// when it is there.
func (qc *queryCache) compile(text string, q *parse.Query, params exec.Params, rest parse.Expr, implied []parse.Expr, opts ...exec.Option) (*exec.Program, error) {
	run := q
	if implied != nil {
		reduced := *q
		reduced.Where = rest
		run = &reduced
	}
	key, ok := programKey(text, parse.ParamNames(run), params, implied)
	if !ok {
		return exec.Compile(run, params, opts...)
	}
	qc.mu.Lock()
	prog, ok := qc.progs[key]
	qc.mu.Unlock()
	if ok {
		return prog, nil
	}
	prog, err := exec.Compile(run, params, opts...)
	if err != nil || prog.CallsUDFs() {
		return prog, err
	}
	qc.mu.Lock()
	if qc.keys == nil {
		qc.keys = map[*exec.Program]string{}
	}
	if old, ok := qc.progs[key]; ok {
		delete(qc.keys, old) // a concurrent compile's, replaced
	}
	qc.progs = keep(qc.progs, key, prog, maxQueryCacheEntries)
	if len(qc.keys) >= len(qc.progs) { // keep dropped some
		for p, k := range qc.keys {
			if qc.progs[k] != p {
				delete(qc.keys, p)
			}
		}
	}
	qc.keys[prog] = key
	qc.mu.Unlock()
	return prog, nil
}

// keyOf returns the key of prog while the cache keeps it; false for a
// program it does not keep (dropped, or never kept: one calling
// user-defined functions, or of a query past maxQueryCacheKey).
func (qc *queryCache) keyOf(prog *exec.Program) (string, bool) {
	qc.mu.Lock()
	defer qc.mu.Unlock()
	k, ok := qc.keys[prog]
	return k, ok
}

// programKey is the cache key of a program: the text, the positions of the
// implied conjuncts (byte offsets: two conjuncts of a WHERE clause never
// start at the same one), and the JSON of each parameter in names (length
// prefixed; one not given is marked so); false when it would pass
// maxQueryCacheKey, or a conjunct has no position.
func programKey(text string, names []string, params exec.Params, implied []parse.Expr) (string, bool) {
	n := len(text) + 2 + 12*len(implied)
	for _, k := range names {
		n += len(k) + len(params[k]) + 12
	}
	if n > maxQueryCacheKey {
		return "", false
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(text)
	b.WriteByte(0)
	for _, c := range implied {
		p := c.Pos()
		if p.Line == 0 {
			return "", false // no position: not told apart from another
		}
		b.WriteString(strconv.Itoa(p.Offset))
		b.WriteByte(' ')
	}
	b.WriteByte(0)
	for _, k := range names {
		b.WriteString(k)
		v, ok := params[k]
		if !ok {
			b.WriteString("\x00-")
			continue
		}
		b.WriteByte(0)
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.Write(v)
	}
	return b.String(), true
}

// keep adds key to m (made when nil), first dropping about half of m's
// entries when it holds limit.
func keep[V any](m map[string]V, key string, v V, limit int) map[string]V {
	if m == nil {
		m = make(map[string]V)
	}
	if _, ok := m[key]; !ok && len(m) >= limit {
		drop := len(m) / 2
		for k := range m { // Go's map order is random: a random half
			if drop == 0 {
				break
			}
			delete(m, k)
			drop--
		}
	}
	m[key] = v
	return m
}
