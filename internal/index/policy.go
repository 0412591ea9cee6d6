package index

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/valyala/fastjson"
)

// PolicyError reports an invalid indexing policy. Msg names the problem in
// words fit for a client (the engine answers it with 400 Bad Request).
type PolicyError struct {
	Msg string
}

func (e *PolicyError) Error() string { return "index: invalid indexing policy: " + e.Msg }

func policyErrorf(format string, args ...any) *PolicyError {
	return &PolicyError{Msg: fmt.Sprintf(format, args...)}
}

// pattern is one parsed included or excluded path.
type pattern struct {
	segs     []patSeg
	exact    bool // ends in "/?": the scalar at exactly segs; else "/*": segs and below
	excluded bool
	named    int // number of named (non-"[]") segments, for precedence
}

// patSeg is one segment of a pattern: a property name, or "[]" (any array
// element).
type patSeg struct {
	name string
	any  bool
}

// Policy is a parsed indexing policy. It is immutable and safe for
// concurrent use; it must not be copied after first use (it holds a pool of
// scratch buffers for Terms).
type Policy struct {
	none       bool
	automatic  bool
	patterns   []pattern // most specific first; see matchPath
	composites [][]compositePath

	pool sync.Pool // of *scratch
}

// compositePath is one path of a composite index.
type compositePath struct {
	path []string
	desc bool
}

// defaultPolicyJSON is what Cosmos DB assigns a container created without an
// indexing policy.
const defaultPolicyJSON = `{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/\"_etag\"/?"}]}`

// DefaultPolicy returns Cosmos DB's default policy: consistent, automatic,
// every path included except /"_etag"/?.
func DefaultPolicy() *Policy {
	p, err := ParsePolicy([]byte(defaultPolicyJSON))
	if err != nil {
		panic("index: default policy does not parse: " + err.Error()) // a bug, not input
	}
	return p
}

// None reports whether the policy's indexingMode is "none": then nothing is
// indexed and Terms emits no term.
func (p *Policy) None() bool { return p.none }

// Automatic reports the policy's "automatic" flag (default true), kept to
// be returned as it was sent. Nothing indexes by it: Cosmos DB deprecated
// automatic: false (every item is indexed), and the api refuses the
// x-ms-indexing-directive: Exclude that would keep an item out.
func (p *Policy) Automatic() bool { return p.automatic }

// ParsePolicy parses the JSON of a container's indexingPolicy. Empty or nil
// raw, or the JSON null, yields the default policy. Errors are *PolicyError.
//
// Accepted, following Cosmos DB:
//   - indexingMode "consistent", "lazy" (indexed like consistent; a policy
//     stored by an earlier version, as CheckNew refuses it) or "none",
//     case-insensitive; default "consistent". With "none" the paths are
//     still syntax-checked but otherwise ignored.
//   - automatic: a boolean, default true.
//   - includedPaths / excludedPaths: arrays of {"path": …} objects. A path
//     is "/" followed by segments separated by "/", ending in "?" (the
//     scalar at exactly that path) or "*" (that path and everything below
//     it). A segment is a property name, a double-quoted name ("/\"a b\"/?",
//     with \" and \\ escapes), or "[]" (any array element). "/*" is the
//     root; so is "/", its name in the legacy policy form.
//   - the legacy per-path "indexes" array ([{"kind": "Hash"|"Range"|"Spatial",
//     "dataType": …, "precision": n}]): checked (kind and dataType known,
//     case-insensitive, and matching: Spatial takes Point, Polygon,
//     LineString or MultiPolygon, Hash and Range take String or Number;
//     precision an integer) and otherwise ignored, as Cosmos DB now builds a
//     range index at full precision on every included path.
//     When includedPaths is non-empty, "/*" must be in one of the two lists
//     (Cosmos DB: "the special mandatory indexing path \"/\" is not
//     provided"). When neither list is given, "/*" is included.
//   - compositeIndexes: an array of arrays of {"path": "/a/b", "order":
//     "ascending"|"descending"} (order case-insensitive, default ascending),
//     each with at least two paths without wildcards (CheckNew: none
//     named twice).
//   - spatialIndexes, vectorIndexes, fullTextIndexes and unknown members are
//     accepted and ignored (spatial functions are evaluated on each item);
//     CheckNew checks spatialIndexes further. A member whose value is null counts as absent.
func ParsePolicy(raw []byte) (*Policy, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = []byte(defaultPolicyJSON)
	}
	var jp fastjson.Parser
	root, err := jp.ParseBytes(raw)
	if err != nil {
		return nil, policyErrorf("not valid JSON")
	}
	if root.Type() == fastjson.TypeNull {
		return ParsePolicy(nil)
	}
	if root.Type() != fastjson.TypeObject {
		return nil, policyErrorf("indexingPolicy must be a JSON object")
	}
	p := &Policy{automatic: true}

	if v := member(root, "indexingMode"); v != nil {
		s, err := v.StringBytes()
		if err != nil {
			return nil, policyErrorf("indexingMode must be a string")
		}
		switch strings.ToLower(string(s)) {
		case "consistent", "lazy":
		case "none":
			p.none = true
		default:
			return nil, policyErrorf("unknown indexingMode %q (want consistent, lazy or none)", s)
		}
	}
	if v := member(root, "automatic"); v != nil {
		switch v.Type() {
		case fastjson.TypeTrue:
		case fastjson.TypeFalse:
			p.automatic = false
		default:
			return nil, policyErrorf("automatic must be a boolean")
		}
	}

	nIncluded := 0
	root0 := false
	for _, list := range []struct {
		name     string
		excluded bool
	}{{"includedPaths", false}, {"excludedPaths", true}} {
		items, err := arrayMember(root, list.name)
		if err != nil {
			return nil, err
		}
		for i, it := range items {
			if it.Type() != fastjson.TypeObject {
				return nil, policyErrorf("%s[%d] must be an object", list.name, i)
			}
			pv := member(it, "path")
			if pv == nil {
				return nil, policyErrorf("%s[%d] has no path", list.name, i)
			}
			s, err := pv.StringBytes()
			if err != nil {
				return nil, policyErrorf("%s[%d].path must be a string", list.name, i)
			}
			if err := checkLegacyIndexes(it, fmt.Sprintf("%s[%d]", list.name, i)); err != nil {
				return nil, err
			}
			pat, err := parsePattern(string(s))
			if err != nil {
				return nil, err
			}
			pat.excluded = list.excluded
			if len(pat.segs) == 0 && !pat.exact {
				root0 = true
			}
			if !list.excluded {
				nIncluded++
			}
			p.patterns = append(p.patterns, pat)
		}
	}
	if !root0 {
		if nIncluded > 0 && !p.none {
			return nil, policyErrorf(`the mandatory root path "/*" must be in includedPaths or excludedPaths`)
		}
		// Lenient where Cosmos DB fills in defaults: no included paths at
		// all means everything not excluded is indexed.
		p.patterns = append(p.patterns, pattern{})
	}
	// Most specific first; on a tie, excluded first (see matchPath).
	slices.SortStableFunc(p.patterns, func(a, b pattern) int {
		if c := len(b.segs) - len(a.segs); c != 0 {
			return c
		}
		if a.exact != b.exact {
			if a.exact {
				return -1
			}
			return 1
		}
		if c := b.named - a.named; c != 0 {
			return c
		}
		if a.excluded != b.excluded {
			if a.excluded {
				return -1
			}
			return 1
		}
		return 0
	})

	comps, err := arrayMember(root, "compositeIndexes")
	if err != nil {
		return nil, err
	}
	for i, c := range comps {
		paths, err := c.Array()
		if err != nil {
			return nil, policyErrorf("compositeIndexes[%d] must be an array", i)
		}
		if len(paths) < 2 {
			return nil, policyErrorf("compositeIndexes[%d] must have at least two paths", i)
		}
		var comp []compositePath
		for j, cp := range paths {
			cpath, err := parseCompositePath(cp, i, j)
			if err != nil {
				return nil, err
			}
			comp = append(comp, cpath)
		}
		p.composites = append(p.composites, comp)
	}
	for _, name := range []string{"spatialIndexes", "vectorIndexes", "fullTextIndexes"} {
		if _, err := arrayMember(root, name); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// CheckNew checks what ParsePolicy does not need to use a policy but
// Cosmos DB refuses: the lazy mode, the mode none with automatic true, a
// composite index naming a path twice, a spatial index of an unknown type or
// without a path pattern. It is for a policy a
// request brings (a container created or replaced), not for one already
// stored, which an earlier version accepted and must still load. raw must
// have passed ParsePolicy.
func CheckNew(raw []byte) error {
	var jp fastjson.Parser
	root, err := jp.ParseBytes(raw)
	if err != nil || root.Type() != fastjson.TypeObject {
		return nil // ParsePolicy's to refuse, or the default
	}
	if m := member(root, "indexingMode"); m != nil {
		switch strings.ToLower(string(m.GetStringBytes())) {
		case "lazy":
			// Cosmos DB has taken no new lazy policy since 2020.
			return policyErrorf("indexingMode lazy is not supported for a new indexing policy: use consistent or none")
		case "none":
			if a := member(root, "automatic"); a != nil && a.Type() == fastjson.TypeTrue {
				return policyErrorf("Indexing mode value cannot be 'none' when automatic indexing is specified as 'true'.")
			}
		}
	}
	composites, _ := arrayMember(root, "compositeIndexes")
	for i, c := range composites {
		paths, _ := c.Array()
		var seen [][]string
		for j, cp := range paths {
			cpath, err := parseCompositePath(cp, i, j)
			if err != nil {
				return err
			}
			for _, prev := range seen {
				if slices.Equal(prev, cpath.path) {
					return policyErrorf("compositeIndexes[%d] names the path %q twice", i, member(cp, "path").GetStringBytes())
				}
			}
			seen = append(seen, cpath.path)
		}
	}
	spatial, err := arrayMember(root, "spatialIndexes")
	if err != nil {
		return err
	}
	for i, sp := range spatial {
		if err := checkSpatialIndex(sp, i); err != nil {
			return err
		}
	}
	return nil
}

// spatialTypes are the data types a spatial index names (lower-cased).
var spatialTypes = map[string]bool{"point": true, "polygon": true, "linestring": true, "multipolygon": true}

// checkSpatialIndex checks spatialIndexes[i]: a path pattern and the
// spatial types it indexes. Partita evaluates spatial functions on each
// item, so the index is otherwise not used; but one Cosmos DB would refuse
// (an unknown type such as Circle, a path that is not a pattern) is
// refused here too rather than kept.
func checkSpatialIndex(v *fastjson.Value, i int) error {
	if v.Type() != fastjson.TypeObject {
		return policyErrorf("spatialIndexes[%d] must be an object", i)
	}
	pv := member(v, "path")
	if pv == nil {
		return policyErrorf("spatialIndexes[%d] has no path", i)
	}
	path, err := pv.StringBytes()
	if err != nil {
		return policyErrorf("spatialIndexes[%d].path must be a string", i)
	}
	if _, err := parsePattern(string(path)); err != nil {
		return err
	}
	types, err := arrayMember(v, "types")
	if err != nil {
		return policyErrorf("spatialIndexes[%d].types must be an array", i)
	}
	for j, tv := range types {
		t, err := tv.StringBytes()
		if err != nil {
			return policyErrorf("spatialIndexes[%d].types[%d] must be a string", i, j)
		}
		if !spatialTypes[strings.ToLower(string(t))] {
			return policyErrorf("spatialIndexes[%d]: unknown spatial type %q (want Point, Polygon, LineString or MultiPolygon)", i, t)
		}
	}
	return nil
}

// legacyKinds maps the index kinds of the legacy "indexes" array
// (lower-cased) to whether they index spatial data types.
var legacyKinds = map[string]bool{"hash": false, "range": false, "spatial": true}

// legacyDataTypes maps the data types of the legacy "indexes" array
// (lower-cased) to whether they are spatial.
var legacyDataTypes = map[string]bool{
	"string": false, "number": false, "point": true, "polygon": true, "linestring": true, "multipolygon": true,
}

// checkLegacyIndexes checks the legacy "indexes" array of an included or
// excluded path it, named where in errors.
func checkLegacyIndexes(it *fastjson.Value, where string) error {
	idx, err := arrayMember(it, "indexes")
	if err != nil {
		return policyErrorf("%s.indexes must be an array", where)
	}
	for j, ix := range idx {
		at := fmt.Sprintf("%s.indexes[%d]", where, j)
		if ix.Type() != fastjson.TypeObject {
			return policyErrorf("%s must be an object", at)
		}
		kv, dv := member(ix, "kind"), member(ix, "dataType")
		if kv == nil || dv == nil {
			return policyErrorf("%s needs a kind and a dataType", at)
		}
		kind, kerr := kv.StringBytes()
		dataType, derr := dv.StringBytes()
		if kerr != nil || derr != nil {
			return policyErrorf("%s: kind and dataType must be strings", at)
		}
		spatialKind, ok := legacyKinds[strings.ToLower(string(kind))]
		if !ok {
			return policyErrorf("%s: unknown index kind %q (want Hash, Range or Spatial)", at, kind)
		}
		spatialType, ok := legacyDataTypes[strings.ToLower(string(dataType))]
		if !ok {
			return policyErrorf("%s: unknown dataType %q (want String, Number, Point, Polygon, LineString or MultiPolygon)", at, dataType)
		}
		if spatialKind != spatialType {
			return policyErrorf("%s: an index of kind %s cannot have dataType %s", at, kind, dataType)
		}
		if pv := member(ix, "precision"); pv != nil {
			if _, err := pv.Int(); err != nil {
				return policyErrorf("%s.precision must be an integer", at)
			}
		}
	}
	return nil
}

// member returns the member key of object v, or nil when it is absent or
// null.
func member(v *fastjson.Value, key string) *fastjson.Value {
	m := v.Get(key)
	if m == nil || m.Type() == fastjson.TypeNull {
		return nil
	}
	return m
}

// arrayMember returns the elements of the array member key of object v (nil
// when absent or null), or a *PolicyError when it is not an array.
func arrayMember(v *fastjson.Value, key string) ([]*fastjson.Value, error) {
	m := member(v, key)
	if m == nil {
		return nil, nil
	}
	a, err := m.Array()
	if err != nil {
		return nil, policyErrorf("%s must be an array", key)
	}
	return a, nil
}

// parseCompositePath parses compositeIndexes[i][j].
func parseCompositePath(v *fastjson.Value, i, j int) (compositePath, error) {
	if v.Type() != fastjson.TypeObject {
		return compositePath{}, policyErrorf("compositeIndexes[%d][%d] must be an object", i, j)
	}
	pv := member(v, "path")
	if pv == nil {
		return compositePath{}, policyErrorf("compositeIndexes[%d][%d] has no path", i, j)
	}
	s, err := pv.StringBytes()
	if err != nil {
		return compositePath{}, policyErrorf("compositeIndexes[%d][%d].path must be a string", i, j)
	}
	segs, err := splitPath(string(s))
	if err != nil {
		return compositePath{}, err
	}
	if len(segs) == 0 {
		return compositePath{}, policyErrorf("composite index path %q names no property", s)
	}
	var out compositePath
	for _, sg := range segs {
		if !sg.quoted && (sg.name == "*" || sg.name == "?" || sg.name == "[]") {
			return compositePath{}, policyErrorf("composite index path %q must not contain wildcards", s)
		}
		out.path = append(out.path, sg.name)
	}
	if ov := member(v, "order"); ov != nil {
		o, err := ov.StringBytes()
		if err != nil {
			return compositePath{}, policyErrorf("compositeIndexes[%d][%d].order must be a string", i, j)
		}
		switch strings.ToLower(string(o)) {
		case "ascending":
		case "descending":
			out.desc = true
		default:
			return compositePath{}, policyErrorf("unknown composite index order %q (want ascending or descending)", o)
		}
	}
	return out, nil
}

// rawSeg is one segment of a path as written.
type rawSeg struct {
	name   string
	quoted bool
}

// splitPath splits an index path into its segments, unquoting quoted ones.
func splitPath(s string) ([]rawSeg, error) {
	if !strings.HasPrefix(s, "/") {
		return nil, policyErrorf("path %q must start with /", s)
	}
	var segs []rawSeg
	i := 1
	for {
		if i >= len(s) {
			return nil, policyErrorf("path %q has an empty segment", s)
		}
		var sg rawSeg
		if s[i] == '"' {
			var b strings.Builder
			j := i + 1
			closed := false
			for j < len(s) {
				c := s[j]
				if c == '\\' && j+1 < len(s) && (s[j+1] == '"' || s[j+1] == '\\') {
					b.WriteByte(s[j+1])
					j += 2
					continue
				}
				if c == '"' {
					closed = true
					j++
					break
				}
				b.WriteByte(c)
				j++
			}
			if !closed {
				return nil, policyErrorf("path %q has an unterminated quoted segment", s)
			}
			sg = rawSeg{name: b.String(), quoted: true}
			i = j
			if i < len(s) && s[i] != '/' {
				return nil, policyErrorf("path %q has text after a quoted segment", s)
			}
		} else {
			j := strings.IndexByte(s[i:], '/')
			if j < 0 {
				j = len(s) - i
			}
			sg = rawSeg{name: s[i : i+j]}
			if sg.name == "" {
				return nil, policyErrorf("path %q has an empty segment", s)
			}
			if strings.ContainsRune(sg.name, '"') {
				return nil, policyErrorf("path %q has a stray quote", s)
			}
			i += j
		}
		segs = append(segs, sg)
		if i >= len(s) {
			return segs, nil
		}
		i++ // the '/'
	}
}

// parsePattern parses an included or excluded path.
func parsePattern(s string) (pattern, error) {
	if s == "/" {
		return pattern{}, nil // the root, as the legacy form names it: same as "/*"
	}
	raw, err := splitPath(s)
	if err != nil {
		return pattern{}, err
	}
	last := raw[len(raw)-1]
	if last.quoted || (last.name != "?" && last.name != "*") {
		return pattern{}, policyErrorf(`path %q must end in "/?" or "/*"`, s)
	}
	pat := pattern{exact: last.name == "?"}
	for _, sg := range raw[:len(raw)-1] {
		switch {
		case sg.quoted:
			pat.segs = append(pat.segs, patSeg{name: sg.name})
			pat.named++
		case sg.name == "[]":
			pat.segs = append(pat.segs, patSeg{any: true})
		case sg.name == "?" || sg.name == "*":
			return pattern{}, policyErrorf("path %q has a wildcard before its end", s)
		case strings.ContainsAny(sg.name, "[]"):
			return pattern{}, policyErrorf(`path %q has a bracket outside "[]" (quote the name)`, s)
		default:
			pat.segs = append(pat.segs, patSeg{name: sg.name})
			pat.named++
		}
	}
	return pat, nil
}

// isSystem reports whether name is a top-level system property that is never
// indexed. id and _ts are indexed like user properties.
func isSystem[S ~string | ~[]byte](name S) bool {
	switch string(name) {
	case "_rid", "_self", "_etag", "_attachments":
		return true
	}
	return false
}

// isPosition reports whether seg is a concrete path segment that can be an
// array position (decimal digits) or the wildcard "[]".
func isPosition[S ~string | ~[]byte](seg S) bool {
	if len(seg) == 0 {
		return false
	}
	if string(seg) == "[]" {
		return true
	}
	for i := 0; i < len(seg); i++ {
		if seg[i] < '0' || seg[i] > '9' {
			return false
		}
	}
	return true
}

// Indexed reports whether the scalar at the concrete path is indexed: false
// in mode none and for the top-level system properties _rid, _self, _etag,
// _attachments; otherwise the most specific matching included or excluded
// path decides (see the package comment). Segments are unescaped property
// names, array positions as decimal strings, or "[]" for any element. The
// empty path (the document itself, an object) is never indexed.
func (p *Policy) Indexed(path []string) bool {
	if p.none || len(path) == 0 || isSystem(path[0]) {
		return false
	}
	return match(p.patterns, path)
}

// match reports whether the concrete path segs is indexed by the first (most
// specific) matching pattern of pats. It is generic so that Terms can match
// the []byte keys of a parsed document without converting them to strings.
func match[S ~string | ~[]byte](pats []pattern, segs []S) bool {
	for i := range pats {
		pat := &pats[i]
		if pat.exact && len(pat.segs) != len(segs) || len(pat.segs) > len(segs) {
			continue
		}
		ok := true
		for j, ps := range pat.segs {
			if ps.any && !isPosition(segs[j]) || !ps.any && ps.name != string(segs[j]) {
				ok = false
				break
			}
		}
		if ok {
			return !pat.excluded
		}
	}
	return false
}

// HasComposite reports whether a composite index serves ORDER BY on paths
// (concrete property paths, unescaped) with the directions desc (true for
// DESC): Cosmos DB uses a composite index whose paths are exactly these, in
// this order, with every direction either as declared or every one
// inverted. A composite index with more or fewer paths does not serve it.
func (p *Policy) HasComposite(paths [][]string, desc []bool) bool {
	_, _, ok := p.CompositeIndex(paths, desc)
	return ok
}

// CompositeMatch is a composite index that serves an ORDER BY
// (CompositeLedBy): its number (position in compositeIndexes), its paths
// and their declared directions, how many of its paths lead the ORDER BY's
// (pinned to one value each by the query), and whether it serves the
// ORDER BY inverted (read backwards).
type CompositeMatch struct {
	Number   int
	Paths    [][]string
	Desc     []bool
	Lead     int
	Inverted bool
}

// CompositeLedBy returns the first composite index that serves ORDER BY on
// paths with the directions desc once the paths that lead it are each
// pinned to one value (pinned reports which paths a query pins): its
// paths are zero or more pinned paths, then exactly paths, with every
// direction of those as declared or every one inverted (the pinned paths'
// directions do not matter: each holds one value). An index with no
// leading path (CompositeIndex's) is preferred; an ORDER BY on one path is
// served only by an index with leading paths (a composite has two paths
// or more).
func (p *Policy) CompositeLedBy(paths [][]string, desc []bool, pinned func(path []string) bool) (CompositeMatch, bool) {
	if len(paths) != len(desc) || len(paths) == 0 {
		return CompositeMatch{}, false
	}
	if n, inverted, ok := p.CompositeIndex(paths, desc); ok {
		return p.match(n, 0, inverted), true
	}
	for n, comp := range p.composites {
		lead := len(comp) - len(paths)
		if lead < 1 {
			continue
		}
		ok := true
		for _, cp := range comp[:lead] {
			if !pinned(cp.path) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		same, inv := true, true
		for i, cp := range comp[lead:] {
			if !slices.Equal(cp.path, paths[i]) {
				same, inv = false, false
				break
			}
			if cp.desc != desc[i] {
				same = false
			} else {
				inv = false
			}
		}
		if same || inv {
			return p.match(n, lead, !same), true
		}
	}
	return CompositeMatch{}, false
}

func (p *Policy) match(n, lead int, inverted bool) CompositeMatch {
	m := CompositeMatch{Number: n, Lead: lead, Inverted: inverted}
	for _, cp := range p.composites[n] {
		m.Paths = append(m.Paths, slices.Clone(cp.path))
		m.Desc = append(m.Desc, cp.desc)
	}
	return m
}

// CompositeIndex returns the number (its position in compositeIndexes) of
// the first composite index that serves ORDER BY on paths with the
// directions desc (HasComposite), and whether it serves it inverted: its
// every direction is the opposite of desc's, so that its entries are read
// backwards. ok is false when none does.
func (p *Policy) CompositeIndex(paths [][]string, desc []bool) (number int, inverted, ok bool) {
	if len(paths) != len(desc) || len(paths) == 0 {
		return 0, false, false
	}
	for n, comp := range p.composites {
		if len(comp) != len(paths) {
			continue
		}
		same, inv := true, true
		for i, cp := range comp {
			if !slices.Equal(cp.path, paths[i]) {
				same, inv = false, false
				break
			}
			if cp.desc != desc[i] {
				same = false
			} else {
				inv = false
			}
		}
		if same || inv {
			return n, !same, true
		}
	}
	return 0, false, false
}
