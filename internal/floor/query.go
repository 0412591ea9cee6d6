package floor

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/status"
)

// filter is a parsed floor query: SELECT * FROM alias WHERE paths[i] =
// values[i] for every i (no WHERE: no paths).
type filter struct {
	paths  []string // partition-key-style paths, e.g. "/grp"
	values document.PartitionKey
}

// matches reports whether the stored item satisfies every equality: the
// property exists (is not undefined) and equals the value.
func (f *filter) matches(body []byte) bool {
	if len(f.paths) == 0 {
		return true
	}
	got, err := document.ExtractPK(body, f.paths)
	if err != nil {
		return false
	}
	for i, v := range got {
		if v.Kind == document.Undefined || !v.Equal(f.values[i]) {
			return false
		}
	}
	return true
}

// querySpec is the body of a query request.
type querySpec struct {
	Query      *string `json:"query"`
	Parameters []struct {
		Name  string          `json:"name"`
		Value json.RawMessage `json:"value"`
	} `json:"parameters"`
}

// parseFilter parses the floor's query subset,
// SELECT * FROM a [WHERE a.p = v [AND a.q = w …]], with v a @parameter or a
// string (without escapes), number, true, false or null literal.
// Keywords are case-insensitive. Anything else is a 400 that says the
// floor does not support it.
func parseFilter(text string, params map[string]json.RawMessage) (*filter, error) {
	toks, err := tokenize(text)
	if err != nil {
		return nil, err
	}
	unsupported := func() error {
		return notSupported(fmt.Sprintf("the query %.200q (the floor serves SELECT * FROM c [WHERE c.p = @v [AND …]])", text))
	}
	kw := func(i int, want string) bool { return i < len(toks) && strings.EqualFold(toks[i], want) }
	if len(toks) < 4 || !kw(0, "SELECT") || toks[1] != "*" || !kw(2, "FROM") || !isIdent(toks[3]) {
		return nil, unsupported()
	}
	alias := toks[3]
	f := &filter{}
	i := 4
	if i == len(toks) {
		return f, nil
	}
	if !kw(i, "WHERE") {
		return nil, unsupported()
	}
	i++
	for {
		if i+3 > len(toks) || toks[i+1] != "=" {
			return nil, unsupported()
		}
		lhs, rhs := toks[i], toks[i+2]
		if !strings.HasPrefix(lhs, alias+".") {
			lhs, rhs = rhs, lhs
		}
		path, ok := propertyPath(lhs, alias)
		if !ok {
			return nil, unsupported()
		}
		v, err := value(rhs, params)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return nil, unsupported()
		}
		f.paths = append(f.paths, path)
		f.values = append(f.values, v[0])
		i += 3
		if i == len(toks) {
			return f, nil
		}
		if !kw(i, "AND") {
			return nil, unsupported()
		}
		i++
	}
}

// tokenize splits a query into identifiers and paths (a.b.c), @names,
// literals, "=" and "*".
func tokenize(s string) ([]string, error) {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '=' || c == '*':
			toks = append(toks, s[i:i+1])
			i++
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, status.BadRequest("unterminated string literal in the query")
			}
			toks = append(toks, s[i:i+j+2])
			i += j + 2
		default:
			j := i
			for j < len(s) && (isWordByte(s[j]) || s[j] == '.' || s[j] == '@' || s[j] == '-' || s[j] == '+') {
				j++
			}
			if j == i {
				return nil, notSupported(fmt.Sprintf("the character %q in a query", c))
			}
			toks = append(toks, s[i:j])
			i = j
		}
	}
	return toks, nil
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isIdent(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := range len(s) {
		if !isWordByte(s[i]) {
			return false
		}
	}
	return true
}

// propertyPath turns alias.a.b into the path /a/b.
func propertyPath(tok, alias string) (string, bool) {
	rest, ok := strings.CutPrefix(tok, alias+".")
	if !ok {
		return "", false
	}
	var b strings.Builder
	for seg := range strings.SplitSeq(rest, ".") {
		if !isIdent(seg) {
			return "", false
		}
		b.WriteByte('/')
		b.WriteString(seg)
	}
	return b.String(), true
}

// value returns the one-component key of a @parameter or literal token;
// nil when the token is neither.
func value(tok string, params map[string]json.RawMessage) (document.PartitionKey, error) {
	var raw string
	switch {
	case strings.HasPrefix(tok, "@"):
		p, ok := params[tok]
		if !ok {
			return nil, status.BadRequest("the query parameter %s is not defined", tok)
		}
		raw = string(p)
	case tok[0] == '\'' || tok[0] == '"':
		if strings.ContainsRune(tok, '\\') {
			return nil, notSupported("a string literal with escapes")
		}
		raw = strconv.Quote(tok[1 : len(tok)-1])
	case strings.EqualFold(tok, "true") || strings.EqualFold(tok, "false") || strings.EqualFold(tok, "null"):
		raw = strings.ToLower(tok)
	case tok[0] == '-' || tok[0] >= '0' && tok[0] <= '9':
		raw = tok
	default:
		return nil, nil
	}
	pk, err := document.ParsePKHeader("[" + raw + "]")
	if err != nil || len(pk) != 1 {
		return nil, notSupported("comparing with " + tok + " (the floor compares with strings, numbers, booleans and null)")
	}
	return pk, nil
}

// continuation is a floor query's position: the logical partition (an
// index into container.parts; 0 for a single-partition query) and the
// position in its items of the next item to look at.
type continuation struct{ part, pos int }

func (c continuation) String() string { return "floor:" + itoa(c.part) + ":" + itoa(c.pos) }

func parseContinuation(s string) (continuation, error) {
	bad := status.BadRequest("invalid x-ms-continuation %.100q: not a continuation this floor server returned", s)
	rest, ok := strings.CutPrefix(s, "floor:")
	if !ok {
		return continuation{}, bad
	}
	a, b, ok := strings.Cut(rest, ":")
	part, err1 := strconv.Atoi(a)
	pos, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || part < 0 || pos < 0 {
		return continuation{}, bad
	}
	return continuation{part, pos}, nil
}

// defaultPageSize is the page size when the client sets none, as Partita's
// engine (engine.Config.DefaultPageSize).
const defaultPageSize = 100

// query serves a query on POST …/docs: one page of the items that match,
// in creation order, from the continuation on.
func (h *Handler) query(w http.ResponseWriter, r *http.Request) error {
	c, err := h.acct.lookup(r.PathValue("db"), r.PathValue("coll"))
	if err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var spec querySpec
	if err := json.Unmarshal(body, &spec); err != nil || spec.Query == nil {
		return status.BadRequest("query body is not a valid query specification")
	}
	params := map[string]json.RawMessage{}
	for _, p := range spec.Parameters {
		params[p.Name] = p.Value
	}
	f, err := parseFilter(*spec.Query, params)
	if err != nil {
		return err
	}
	limit := defaultPageSize
	if v := strings.TrimSpace(r.Header.Get("x-ms-max-item-count")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < -1 || n == 0 {
			return status.BadRequest("invalid x-ms-max-item-count header %q: it must be a positive integer or -1", v)
		}
		limit = n
	}
	var from continuation
	if v := r.Header.Get("x-ms-continuation"); v != "" {
		if from, err = parseContinuation(v); err != nil {
			return err
		}
	}
	if id := r.Header.Get("x-ms-documentdb-partitionkeyrangeid"); id != "" && id != "0" && !strings.HasSuffix(id, ",0") {
		return notSupported("partition key range " + id + " (the floor has the one range 0)")
	}
	var parts []*logical
	if len(r.Header.Values("x-ms-documentdb-partitionkey")) > 0 {
		pk, err := partitionKey(r, c)
		if err != nil {
			return err
		}
		c.mu.RLock()
		if l := c.partitionLocked(pk, false); l != nil {
			parts = []*logical{l}
		}
		c.mu.RUnlock()
	} else if !isTrue(r, "x-ms-documentdb-query-enablecrosspartition") {
		return status.BadRequest("Cross partition query is required but disabled. Please set x-ms-documentdb-query-enablecrosspartition to true, specify x-ms-documentdb-partitionkey, or revise your query to avoid this exception.")
	}
	items, next := c.scan(parts, parts == nil, f, from, limit)
	setHeader(w, "x-ms-session-token", c.session())
	setHeader(w, "x-ms-content-path", c.rid)
	cont := ""
	if next != nil {
		cont = next.String()
	}
	return writeFeed(w, c.rid, "Documents", items, cont)
}

// scan returns up to limit (-1: no limit) matching items from the
// position from on, over parts (or every logical partition when all), and
// the continuation of the next page, nil when there are no more items to
// look at.
func (c *container) scan(parts []*logical, all bool, f *filter, from continuation, limit int) ([][]byte, *continuation) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if all {
		parts = c.parts
	}
	var out [][]byte
	for p := from.part; p < len(parts); p++ {
		items := parts[p].items
		pos := 0
		if p == from.part {
			pos = from.pos
		}
		for ; pos < len(items); pos++ {
			it := items[pos]
			if it.deleted || !f.matches(it.body) {
				continue
			}
			out = append(out, it.body)
			if len(out) == limit {
				switch {
				case pos+1 < len(items):
					return out, &continuation{p, pos + 1}
				case p+1 < len(parts):
					return out, &continuation{p + 1, 0}
				}
				return out, nil
			}
		}
	}
	return out, nil
}
