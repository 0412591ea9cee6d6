package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxPatchOperations is the most operations one patch request may carry.
const MaxPatchOperations = 10

// Patch operation names, as sent on the wire.
const (
	PatchAdd     = "add"
	PatchSet     = "set"
	PatchReplace = "replace"
	PatchRemove  = "remove"
	PatchIncr    = "incr"
	PatchMove    = "move"
)

// PatchOp is one patch operation as sent on the wire:
// {"op":"add|set|replace|remove|incr|move","path":"/a/b/0","value":<json>,"from":"/x"}.
type PatchOp struct {
	Op    string          `json:"op"`              // operation name; any case is accepted
	Path  string          `json:"path"`            // JSON pointer of the target, e.g. "/a/b/0"
	From  string          `json:"from,omitempty"`  // JSON pointer of the source (move only)
	Value json.RawMessage `json:"value,omitempty"` // nil when absent; unused by remove and move
}

// PatchRequest is the body of a PATCH request on an item.
type PatchRequest struct {
	Condition  string    `json:"condition,omitempty"` // optional filter, e.g. "from c where c.n > 0"
	Operations []PatchOp `json:"operations"`
}

// ParsePatchRequest parses a PATCH body in either of its two forms: an object
// {"condition":"from c where ...","operations":[...]} (condition optional), or
// a bare array of operations (the JavaScript SDK). Each returned operation's
// Op is lower-cased, and a JSON null value is kept as the literal null (only
// an absent value is nil).
//
// Errors are *InvalidError: the body is not valid JSON or has the wrong shape
// or names a member twice in one object,
// it has no operations or more than MaxPatchOperations, or an operation is
// malformed (unknown op, path missing or not starting with '/', value missing
// for add, set, replace or incr, from missing for move). Whether the
// operations fit the item is checked by ApplyPatch.
func ParsePatchRequest(body []byte) (PatchRequest, error) {
	var req PatchRequest
	if !utf8.Valid(body) {
		// As an item's body: the envelope's decoder would read a path's
		// invalid bytes as U+FFFD and set a member no create could (a patch
		// hunt: "/k\xff" stored "k\uFFFD").
		return PatchRequest{}, &InvalidError{Msg: "patch request is not valid: invalid UTF-8"}
	}
	i := skipWS(body, 0)
	// Read as an envelope (UnmarshalEnvelope): names exactly, none twice.
	// An operation naming a member twice ({"op":"set","path":"/a","path":"/b"})
	// is as ambiguous as a document doing so, and so is "condition" beside
	// "Condition" (a bug hunt: the second was applied). Values are checked
	// again where they are placed (newValue), with their depth.
	var err error
	switch {
	case i < len(body) && !strings.ContainsRune("[{n", rune(body[i])) && Validate(body) == nil: // null: no operations
		return PatchRequest{}, &InvalidError{Msg: "patch request is not valid: body must be an object or an array of operations"}
	case i < len(body) && body[i] == '[':
		err = UnmarshalEnvelope(body, &req.Operations)
	default:
		var wire struct {
			Condition  *string   `json:"condition"`
			Operations []PatchOp `json:"operations"`
		}
		err = UnmarshalEnvelope(body, &wire)
		if wire.Condition != nil {
			req.Condition = *wire.Condition
		}
		req.Operations = wire.Operations
	}
	if err != nil {
		return PatchRequest{}, &InvalidError{Msg: "patch request is not valid: " + err.(*InvalidError).Msg}
	}
	if len(req.Operations) == 0 {
		return PatchRequest{}, &InvalidError{Msg: "a patch request must contain at least one operation"}
	}
	if len(req.Operations) > MaxPatchOperations {
		return PatchRequest{}, &InvalidError{Msg: fmt.Sprintf("a patch request may contain at most %d operations", MaxPatchOperations)}
	}
	for k := range req.Operations {
		op := &req.Operations[k]
		op.Op = strings.ToLower(op.Op)
		// The Go SDK omits "value" when it is nil: for add, set and replace
		// that means JSON null, as the service reads it.
		if len(op.Value) == 0 && (op.Op == PatchAdd || op.Op == PatchSet || op.Op == PatchReplace) {
			op.Value = json.RawMessage("null")
		}
		if _, _, err := checkOp(k, *op); err != nil {
			return PatchRequest{}, err
		}
	}
	return req, nil
}

// checkOp validates operation k on its own and returns its decoded path and
// from (nil unless move).
func checkOp(k int, op PatchOp) (path, from []string, err error) {
	name := strings.ToLower(op.Op)
	switch name {
	case PatchAdd, PatchSet, PatchReplace, PatchIncr:
		if len(op.Value) == 0 {
			return nil, nil, opErr(k, op, "value is required")
		}
	case PatchRemove:
	case PatchMove:
		if op.From == "" {
			return nil, nil, opErr(k, op, "from is required for move")
		}
		if from, err = parsePointer(op.From); err != nil {
			return nil, nil, opErr(k, op, "from "+err.Error())
		}
		if err := checkWritable(from); err != nil {
			return nil, nil, opErr(k, op, err.Error())
		}
	case "":
		return nil, nil, opErr(k, op, "op is required")
	default:
		return nil, nil, opErr(k, op, fmt.Sprintf("unknown op %q (want add, set, replace, remove, incr or move)", op.Op))
	}
	if op.Path == "" {
		return nil, nil, opErr(k, op, "path is required")
	}
	if path, err = parsePointer(op.Path); err != nil {
		return nil, nil, opErr(k, op, "path "+err.Error())
	}
	if err := checkWritable(path); err != nil {
		return nil, nil, opErr(k, op, err.Error())
	}
	return path, from, nil
}

// opErr reports problem why with operation k.
func opErr(k int, op PatchOp, why string) error {
	name := strings.ToLower(op.Op)
	if name == "" {
		name = "?"
	}
	path := op.Path
	if len(path) > 256 {
		path = path[:256] + "..."
	}
	return &InvalidError{Msg: fmt.Sprintf("patch operation %d (%s %q): %s", k, name, path, why)}
}

// pathError is a problem with a patch path; opErr turns it into an
// *InvalidError.
type pathError string

func (e pathError) Error() string { return string(e) }

// parsePointer splits a JSON pointer ("/a/b~1c/0") into its decoded segments
// ("a", "b/c", "0"). It refuses the root pointer, empty segments, invalid
// '~' escapes and invalid UTF-8.
func parsePointer(p string) ([]string, error) {
	if p == "" || p[0] != '/' {
		return nil, pathError("must start with '/'")
	}
	if !utf8.ValidString(p) {
		return nil, pathError("is not valid UTF-8")
	}
	segs := strings.Split(p[1:], "/")
	for j, s := range segs {
		if s == "" {
			return nil, pathError("has an empty segment")
		}
		if strings.IndexByte(s, '~') < 0 {
			continue
		}
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if s[i] != '~' {
				b.WriteByte(s[i])
				continue
			}
			if i+1 == len(s) || (s[i+1] != '0' && s[i+1] != '1') {
				return nil, pathError("has '~' not followed by 0 or 1")
			}
			if s[i+1] == '0' {
				b.WriteByte('~')
			} else {
				b.WriteByte('/')
			}
			i++
		}
		segs[j] = b.String()
	}
	return segs, nil
}

// checkWritable refuses paths into id and the system properties.
func checkWritable(segs []string) error {
	switch {
	case segs[0] == "id":
		return pathError("cannot patch id")
	case isSystemName(segs[0]):
		return pathError("cannot patch system property " + segs[0])
	}
	return nil
}

// ApplyPatch applies ops in order to doc, a JSON object (an item as stored or
// as sent), and returns the patched item as compact JSON in a new slice; doc is
// not modified. Members keep their order and their text (numbers and string
// escapes verbatim) where unchanged; new members go at the end of their
// object. Operation names are matched in any case. Paths are JSON pointers
// whose segments decode "~1" to '/' and "~0" to '~'; an array index is a
// decimal number without leading zeros, or "-" for the end of the array.
//
//   - add: creates or replaces an object member; in an array it inserts before
//     the index (the array's length or "-" appends).
//   - set: like add, except that in an array it replaces the element at the
//     index (the length or "-" appends).
//   - replace: replaces a member or element that must exist.
//   - remove: removes a member or element that must exist.
//   - incr: adds a number to the number at path, or creates it there; an
//     integer plus an integer stays an integer (unless it overflows int64),
//     anything else is summed as a double.
//   - move: removes the value at from, then adds it at path as add does; from
//     must exist and must not be a prefix of path.
//
// The parent of every path must exist and be an object or an array, and no
// path may name id or a system property (_rid, _self, _etag, _ts,
// _attachments). Errors are *InvalidError naming the operation's index, op
// and path and the problem; doc not being a valid JSON object is an
// *InvalidError too, and so is a result nested deeper than 128 levels.
// ApplyPatch does not limit the number of operations (ParsePatchRequest does).
func ApplyPatch(doc []byte, ops []PatchOp) ([]byte, error) {
	ms := make([]member, 0, min(len(doc)/16+8, 1024)) // a guess that avoids regrowing
	// The stored item: an older release may have stored duplicate names, so
	// it is scanned leniently (the engine parses the result as a new item).
	if _, err := scanRoot(doc, &ms, false); err != nil {
		return nil, err
	}
	root := &jnode{container: &container{obj: true}}
	root.setMembers(doc, ms)
	for k, op := range ops {
		path, from, err := checkOp(k, op)
		if err != nil {
			return nil, err
		}
		if err := applyOp(root, strings.ToLower(op.Op), path, from, op.Value); err != nil {
			return nil, opErr(k, op, err.Error())
		}
	}
	return root.appendJSON(make([]byte, 0, len(doc)+64)), nil
}

// jnode is a JSON value of an item being patched. A value the patch has not
// looked inside is kept as its validated text (raw); an object or array is
// expanded into members on first access. An object may hold a key more than
// once (as stored items may); the last occurrence counts, and writing or
// removing a key drops the other occurrences.
type jnode struct {
	raw        []byte // validated JSON text (possibly with whitespace); nil once expanded
	*container        // set once expanded
}

// container is an expanded object or array.
type container struct {
	obj  bool     // an object (else an array)
	lits [][]byte // object member names as JSON string literals, quotes included
	vals []*jnode // object member values or array elements
}

// setMembers fills the expanded object n from members ms of b.
func (n *jnode) setMembers(b []byte, ms []member) {
	slab := make([]jnode, len(ms))
	n.lits = make([][]byte, len(ms), len(ms)+4) // room for a few new members
	n.vals = make([]*jnode, len(ms), len(ms)+4)
	for j, m := range ms {
		slab[j].raw = b[m.vs:m.ve]
		n.lits[j] = b[m.ks:m.ke]
		n.vals[j] = &slab[j]
	}
}

// expand turns n, if still raw, into an expanded object or array. It reports
// whether n is a container.
func (n *jnode) expand() bool {
	if n.raw == nil {
		return true
	}
	b := n.raw
	switch b[0] {
	case '{':
		var ms []member
		for i := skipWS(b, 1); i < len(b) && b[i] == '"'; {
			ke := skipString(b, i)
			m := member{ks: i, ke: ke}
			m.vs = skipWS(b, skipWS(b, ke)+1) // past ':'
			m.ve = skipValue(b, m.vs)
			ms = append(ms, m)
			i = skipWS(b, m.ve)
			if i < len(b) && b[i] == ',' {
				i = skipWS(b, i+1)
			}
		}
		n.container = &container{obj: true}
		n.setMembers(b, ms)
	case '[':
		var slab []jnode
		for i := skipWS(b, 1); i < len(b) && b[i] != ']'; {
			ve := skipValue(b, i)
			slab = append(slab, jnode{raw: b[i:ve]})
			i = skipWS(b, ve)
			if i < len(b) && b[i] == ',' {
				i = skipWS(b, i+1)
			}
		}
		n.container = &container{vals: make([]*jnode, len(slab))}
		for j := range slab {
			n.vals[j] = &slab[j]
		}
	default:
		return false
	}
	n.raw = nil
	return true
}

// litIs reports whether the validated string literal lit decodes to key.
func litIs(lit []byte, key string) bool {
	raw := lit[1 : len(lit)-1]
	// Each escape decodes to fewer bytes than it takes, so only a longer
	// literal with an escape can match other than byte for byte.
	switch {
	case len(raw) < len(key):
		return false
	case len(raw) == len(key):
		return string(raw) == key && !hasEscape(raw)
	case !hasEscape(raw):
		return false
	}
	var buf [64]byte
	return string(appendUnescaped(buf[:0], raw)) == key
}

// find returns the index of the last member key of the expanded object n, or
// -1.
func (n *jnode) find(key string) int {
	for j := len(n.lits) - 1; j >= 0; j-- {
		if litIs(n.lits[j], key) {
			return j
		}
	}
	return -1
}

// dropEarlier removes the members named key before index j of the expanded
// object n and returns j's new index.
func (n *jnode) dropEarlier(key string, j int) int {
	if !slices.ContainsFunc(n.lits[:j], func(lit []byte) bool { return litIs(lit, key) }) {
		return j
	}
	k := 0
	for i := range n.lits {
		if i < j && litIs(n.lits[i], key) {
			continue
		}
		if i == j {
			j = k
		}
		n.lits[k], n.vals[k] = n.lits[i], n.vals[i]
		k++
	}
	clear(n.vals[k:])
	n.lits, n.vals = n.lits[:k], n.vals[:k]
	return j
}

// put sets member key of the expanded object n to v, in place if it exists.
func (n *jnode) put(key string, v *jnode) {
	if j := n.find(key); j >= 0 {
		n.vals[n.dropEarlier(key, j)] = v
		return
	}
	n.lits = append(n.lits, appendJSONString(nil, key))
	n.vals = append(n.vals, v)
}

// depth returns how many containers deep n is: 0 for a scalar, 1 for an
// array or object of scalars.
func (n *jnode) depth() int {
	if n.raw != nil {
		d, most := 0, 0
		for i := 0; i < len(n.raw); i++ {
			switch n.raw[i] {
			case '"':
				i = skipString(n.raw, i) - 1
			case '{', '[':
				d++
				most = max(most, d)
			case '}', ']':
				d--
			}
		}
		return most
	}
	most := 0
	for _, v := range n.vals {
		most = max(most, v.depth())
	}
	return most + 1
}

// appendJSON appends n as compact JSON.
func (n *jnode) appendJSON(dst []byte) []byte {
	if n.raw != nil {
		return appendCompact(dst, n.raw)
	}
	if n.obj {
		dst = append(dst, '{')
		for j, v := range n.vals {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, n.lits[j]...)
			dst = append(dst, ':')
			dst = v.appendJSON(dst)
		}
		return append(dst, '}')
	}
	dst = append(dst, '[')
	for j, v := range n.vals {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = v.appendJSON(dst)
	}
	return append(dst, ']')
}

// isNumber reports whether n is a JSON number.
func (n *jnode) isNumber() bool {
	if n.raw == nil {
		return false
	}
	c := n.raw[0]
	return c == '-' || c >= '0' && c <= '9'
}

// pointerText formats segs back into a JSON pointer for messages.
func pointerText(segs []string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		s = strings.ReplaceAll(s, "~", "~0")
		b.WriteString(strings.ReplaceAll(s, "/", "~1"))
	}
	return b.String()
}

// parent walks root to the container holding the last segment of segs.
func parent(root *jnode, segs []string) (*jnode, error) {
	n := root
	for j, s := range segs[:len(segs)-1] {
		if !n.expand() {
			return nil, pathError(fmt.Sprintf("%s is not an object or array", pointerText(segs[:j])))
		}
		var next *jnode
		if n.obj {
			if x := n.find(s); x >= 0 {
				next = n.vals[x]
			}
		} else if x, ok := arrayIndex(s); ok && x < len(n.vals) {
			next = n.vals[x]
		}
		if next == nil {
			return nil, pathError(fmt.Sprintf("%s does not exist", pointerText(segs[:j+1])))
		}
		n = next
	}
	if !n.expand() {
		return nil, pathError(fmt.Sprintf("parent %s is not an object or array", pointerText(segs[:len(segs)-1])))
	}
	return n, nil
}

// arrayIndex parses a decimal array index without leading zeros.
func arrayIndex(s string) (int, bool) {
	if s == "" || len(s) > 9 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	x := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		x = x*10 + int(c-'0')
	}
	return x, true
}

// index resolves the last segment s for the array a: an index in [0, len]
// ("-" is len). It errors for anything else.
func index(a *jnode, s string, allowEnd bool) (int, error) {
	if s == "-" && allowEnd {
		return len(a.vals), nil
	}
	x, ok := arrayIndex(s)
	if !ok {
		return 0, pathError(fmt.Sprintf("%q is not a valid array index", s))
	}
	limit := len(a.vals)
	if allowEnd {
		limit++
	}
	if x >= limit {
		return 0, pathError(fmt.Sprintf("array index %d is out of range (length %d)", x, len(a.vals)))
	}
	return x, nil
}

// newValue validates an operation's value, to be placed depth containers
// below the root, and returns it as a node.
func newValue(v json.RawMessage, depth int) (*jnode, error) {
	i := skipWS(v, 0)
	end, err := scanValue(v, i, depth, true)
	if de, ok := errors.AsType[*DuplicateNameError](err); ok {
		return nil, pathError("value has a " + de.Error())
	}
	if err == nil {
		if j := skipWS(v, end); j != len(v) {
			err = synErr(j, "%s after the value", describe(v, j))
		}
	}
	if err != nil {
		return nil, pathError("value is not valid JSON: " + err.Error())
	}
	return &jnode{raw: v[i:end]}, nil // appendJSON compacts it
}

// applyOp applies one checked operation to root.
func applyOp(root *jnode, name string, path, from []string, value json.RawMessage) error {
	var v *jnode
	switch name {
	case PatchAdd, PatchSet, PatchReplace, PatchIncr:
		var err error
		if v, err = newValue(value, len(path)-1); err != nil {
			return err
		}
	case PatchMove:
		if len(from) < len(path) && equalSegs(from, path[:len(from)]) {
			return pathError("cannot move a value into one of its own children")
		}
		if equalSegs(from, path) {
			_, err := lookup(root, from) // a no-op, if from exists
			return err
		}
		var err error
		if v, err = take(root, from); err != nil {
			return err
		}
		if len(path)-1+v.depth() > maxDepth {
			return pathError(fmt.Sprintf("the moved value would be nested deeper than %d levels", maxDepth))
		}
		name = PatchAdd
	}
	if name == PatchRemove {
		_, err := take(root, path)
		return err
	}
	p, err := parent(root, path)
	if err != nil {
		return err
	}
	last := path[len(path)-1]
	if p.obj {
		j := p.find(last)
		switch {
		case name == PatchReplace && j < 0:
			return pathError(pointerText(path) + " does not exist")
		case name == PatchIncr && j >= 0:
			sum, err := incr(p.vals[j], v)
			if err != nil {
				return err
			}
			v = sum
		case name == PatchIncr:
			if !v.isNumber() {
				return pathError("value must be a number")
			}
		}
		p.put(last, v)
		return nil
	}
	switch name {
	case PatchAdd:
		x, err := index(p, last, true)
		if err != nil {
			return err
		}
		p.vals = append(p.vals, nil)
		copy(p.vals[x+1:], p.vals[x:])
		p.vals[x] = v
		return nil
	case PatchSet:
		x, err := index(p, last, true)
		if err != nil {
			return err
		}
		if x == len(p.vals) {
			p.vals = append(p.vals, v)
		} else {
			p.vals[x] = v
		}
		return nil
	default: // replace, incr
		x, err := index(p, last, false)
		if err != nil {
			return err
		}
		if name == PatchIncr {
			if v, err = incr(p.vals[x], v); err != nil {
				return err
			}
		}
		p.vals[x] = v
		return nil
	}
}

// lookup returns the value at segs, which must exist.
func lookup(root *jnode, segs []string) (*jnode, error) {
	p, err := parent(root, segs)
	if err != nil {
		return nil, err
	}
	last := segs[len(segs)-1]
	if p.obj {
		j := p.find(last)
		if j < 0 {
			return nil, pathError(pointerText(segs) + " does not exist")
		}
		return p.vals[j], nil
	}
	x, err := index(p, last, false)
	if err != nil {
		return nil, err
	}
	return p.vals[x], nil
}

// take removes and returns the value at segs, which must exist.
func take(root *jnode, segs []string) (*jnode, error) {
	p, err := parent(root, segs)
	if err != nil {
		return nil, err
	}
	last := segs[len(segs)-1]
	if p.obj {
		j := p.find(last)
		if j < 0 {
			return nil, pathError(pointerText(segs) + " does not exist")
		}
		v := p.vals[j]
		j = p.dropEarlier(last, j)
		p.lits = slices.Delete(p.lits, j, j+1)
		p.vals = slices.Delete(p.vals, j, j+1)
		return v, nil
	}
	x, err := index(p, last, false)
	if err != nil {
		return nil, err
	}
	v := p.vals[x]
	p.vals = slices.Delete(p.vals, x, x+1)
	return v, nil
}

func equalSegs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for j := range a {
		if a[j] != b[j] {
			return false
		}
	}
	return true
}

// incr returns cur + by for two JSON numbers.
func incr(cur, by *jnode) (*jnode, error) {
	if !by.isNumber() {
		return nil, pathError("value must be a number")
	}
	if !cur.isNumber() {
		return nil, pathError("the current value is not a number")
	}
	a, b := bytes.TrimSpace(cur.raw), by.raw
	if isIntLiteral(a) && isIntLiteral(b) {
		x, errA := strconv.ParseInt(string(a), 10, 64)
		y, errB := strconv.ParseInt(string(b), 10, 64)
		s := x + y
		overflow := x > 0 && y > 0 && s < 0 || x < 0 && y < 0 && s >= 0
		if errA == nil && errB == nil && !overflow {
			return &jnode{raw: strconv.AppendInt(nil, s, 10)}, nil
		}
	}
	x, okA := parseNumber(a)
	y, okB := parseNumber(b)
	if !okA || !okB {
		return nil, pathError("number is out of the range of a double")
	}
	s := x + y
	if math.IsInf(s, 0) {
		return nil, pathError("the sum is out of the range of a double")
	}
	return &jnode{raw: appendNumber(nil, s)}, nil
}

// isIntLiteral reports whether the number literal lit has no fraction or
// exponent.
func isIntLiteral(lit []byte) bool {
	return !bytes.ContainsAny(lit, ".eE")
}
