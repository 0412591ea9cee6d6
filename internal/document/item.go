package document

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxIDLength is the longest id, in characters (Unicode code points), that
// ValidateID accepts.
const MaxIDLength = 255

// ValidateID checks an item or resource id: a non-empty string of valid UTF-8
// of at most MaxIDLength characters, none of which is '/', '\\', '?' or '#'
// (protocol §4.2), and not "." or "..". It returns nil or an *InvalidError
// naming the problem.
func ValidateID(id string) error {
	if err := validateIDBasics(id); err != nil {
		return err
	}
	if i := strings.IndexAny(id, `/\?#`); i >= 0 {
		return &InvalidError{Msg: fmt.Sprintf("id %q contains '%c'", id, id[i])}
	}
	return nil
}

// validateIDBasics checks what every id must be: non-empty valid UTF-8 of at
// most MaxIDLength characters, and not "." or "..", which a URL cannot name
// (its path rules remove such segments: RFC 3986 §5.2.4).
func validateIDBasics(id string) error {
	if id == "" {
		return &InvalidError{Msg: "id is empty"}
	}
	if id == "." || id == ".." {
		return &InvalidError{Msg: fmt.Sprintf("id %q cannot be named in a URL (a path segment %q is removed by URL rules)", id, id)}
	}
	if !utf8.ValidString(id) {
		return &InvalidError{Msg: "id is not valid UTF-8"}
	}
	if utf8.RuneCountInString(id) > MaxIDLength {
		return &InvalidError{Msg: fmt.Sprintf("id is longer than %d characters", MaxIDLength)}
	}
	return nil
}

// Item is an item body that ParseItem accepted. It keeps the body it was
// parsed from (without copying it), so the caller must not modify that
// slice while the Item is in use. An Item is immutable and safe for
// concurrent use.
type Item struct {
	ID string       // the item's id, unescaped; passes ValidateID
	PK PartitionKey // value at the container's partition key paths; Undefined where absent

	body    []byte   // the client's JSON
	members []member // top-level members of body, in order
}

// ParseItem parses and validates an item body against the container's
// partition key paths (e.g. ["/pk"], ["/tenant","/user"], ["/a/b"]; a segment
// may be a JSON string, as in /"my-field"). The body must be strict JSON
// (RFC 8259, valid UTF-8, at most 128 levels of nesting below the root), a
// JSON object, with an "id" that is a string passing ValidateID. No object in
// it, at any depth, may have two members of one name (see
// DuplicateNameError): readers disagree on which one counts.
//
// PK has one component per path: the value there, Null for a JSON null, and
// Undefined if the property is absent, a value on the way is not an object,
// or the value is an object or an array ({} included). Cosmos DB's service
// extracts partition key values leniently (PartitionKeyInternal.FromObjectArray
// with strict=false): a value that is not a string, number, boolean or null
// becomes the Undefined component, and the @azure/cosmos SDK sends {} for it.
// Numbers are decoded as doubles; a literal beyond the double range is
// refused. Strings decode lone UTF-16 surrogate escapes to U+FFFD, and the
// Item's body has them replaced by \ufffd (FixLoneSurrogates).
//
// Errors are *InvalidError, e.g. "request body is not valid JSON: ...", "item
// must be a JSON object", "item has no id", "id must be a string", the
// ValidateID errors, or a malformed path. The returned Item retains body.
func ParseItem(body []byte, pkPaths []string) (*Item, error) {
	return ParseItemWith(body, pkPaths, StrictIDs)
}

// IDRule selects how ParseItemWith checks an item's id.
type IDRule int

const (
	// StrictIDs applies ValidateID: ids with '/', '\\', '?' or '#' are
	// refused, since no client can address them reliably in a URL.
	StrictIDs IDRule = iota
	// LenientIDs accepts any non-empty valid UTF-8 id of at most MaxIDLength
	// characters, as the Cosmos DB emulator does on create.
	LenientIDs
)

// ParseItemWith is ParseItem with a choice of id rule.
func ParseItemWith(body []byte, pkPaths []string, rule IDRule) (*Item, error) {
	return parseItem(body, pkPaths, rule, true)
}

// ParseStoredItem parses an item as stored (Marshal's output) by the rules of
// ParseItemWith with LenientIDs, except that duplicate names are tolerated
// (the last occurrence counts): releases before duplicates were refused may
// have stored such items, and they must stay readable and deletable.
func ParseStoredItem(stored []byte, pkPaths []string) (*Item, error) {
	return parseItem(stored, pkPaths, LenientIDs, false)
}

func parseItem(body []byte, pkPaths []string, rule IDRule, strict bool) (*Item, error) {
	if strict {
		body = FixLoneSurrogates(body) // the Item stores what every reader decodes alike
	}
	it := &Item{body: body, members: make([]member, 0, 16)}
	root, err := scanRoot(body, &it.members, strict)
	if err != nil {
		return nil, err
	}
	idm := -1
	for j, m := range it.members {
		if keyIs(body, m, "id") {
			idm = j
		}
	}
	if idm < 0 {
		return nil, &InvalidError{Msg: "item has no id"}
	}
	m := it.members[idm]
	if body[m.vs] != '"' {
		return nil, &InvalidError{Msg: "id must be a string"}
	}
	it.ID = decodeString(body[m.vs+1:m.ve-1], hasEscape(body[m.vs+1:m.ve-1]))
	check := ValidateID
	if rule == LenientIDs {
		check = validateIDBasics
	}
	if err := check(it.ID); err != nil {
		return nil, err
	}
	it.PK, err = extract(body, root, it.members, pkPaths)
	if err != nil {
		return nil, err
	}
	return it, nil
}

// ExtractPK returns the partition key value of the item JSON stored (as
// Marshal produced it, or any item body) at pkPaths, by the rules of
// ParseItem; the id is not checked. Errors are *InvalidError.
func ExtractPK(stored []byte, pkPaths []string) (PartitionKey, error) {
	root, err := scanRoot(stored, nil, false)
	if err != nil {
		return nil, err
	}
	return extract(stored, root, nil, pkPaths)
}

// scanRoot validates b as a JSON object and returns the offset of its '{'. If
// ms is not nil, the top-level members are appended to it. strict refuses
// duplicate member names (scanValue).
func scanRoot(b []byte, ms *[]member, strict bool) (int, error) {
	root := skipWS(b, 0)
	var end int
	var err error
	isObj := root < len(b) && b[root] == '{'
	if isObj {
		end, err = scanObject(b, root, 0, ms, strict)
	} else {
		end, err = scanValue(b, root, 0, strict)
	}
	if err == nil {
		if i := skipWS(b, end); i != len(b) {
			err = synErr(i, "%s after the top-level value", describe(b, i))
		}
	}
	if err != nil {
		if se, ok := errors.AsType[*syntaxError](err); ok {
			return 0, &InvalidError{Msg: "request body is not valid JSON: " + se.Error()}
		}
		if de, ok := errors.AsType[*DuplicateNameError](err); ok {
			return 0, &InvalidError{Msg: de.Error()}
		}
		return 0, err
	}
	if !isObj {
		return 0, &InvalidError{Msg: "item must be a JSON object"}
	}
	return root, nil
}

func hasEscape(raw []byte) bool { return bytes.IndexByte(raw, '\\') >= 0 }

// extract returns the partition key at paths of the validated object at
// b[root]; ms, if not nil, are its top-level members.
func extract(b []byte, root int, ms []member, paths []string) (PartitionKey, error) {
	pk := make(PartitionKey, len(paths))
	for j, p := range paths {
		v, err := valueAt(b, root, ms, p)
		if err != nil {
			return nil, err
		}
		pk[j] = v
	}
	return pk, nil
}

// valueAt returns the partition key component at path in the validated
// object at b[root].
func valueAt(b []byte, root int, ms []member, path string) (PKValue, error) {
	if path == "" {
		return PKValue{}, pathErr(path, "it is empty")
	}
	obj := root // the object the next segment looks in; -1 once the walk has left objects
	vs, ve := -1, -1
	for i := 0; i < len(path); {
		seg, next, err := nextSegment(path, i)
		if err != nil {
			return PKValue{}, err
		}
		i = next
		if obj < 0 {
			vs = -1 // keep going only to check the path's syntax
			continue
		}
		found := false
		if obj == root && ms != nil {
			for _, m := range ms {
				if keyIs(b, m, seg) {
					vs, ve, found = m.vs, m.ve, true
				}
			}
		} else {
			vs, ve, found = findMember(b, obj, seg)
		}
		switch {
		case !found:
			obj, vs = -1, -1
		case b[vs] == '{':
			obj = vs
		default:
			obj = -1
		}
	}
	if vs < 0 {
		return PKValue{Kind: Undefined}, nil
	}
	switch c := b[vs]; {
	case c == '"':
		raw := b[vs+1 : ve-1]
		return PKValue{Kind: String, String: decodeString(raw, hasEscape(raw))}, nil
	case c == 'n':
		return PKValue{Kind: Null}, nil
	case c == 't':
		return PKValue{Kind: Bool, Bool: true}, nil
	case c == 'f':
		return PKValue{Kind: Bool}, nil
	case c == '{' || c == '[':
		return PKValue{Kind: Undefined}, nil
	default:
		f, ok := parseNumber(b[vs:ve])
		if !ok {
			return PKValue{}, &InvalidError{Msg: "partition key value at " + path + " is out of the range of a double"}
		}
		return PKValue{Kind: Number, Number: f}, nil
	}
}

// nextSegment parses the segment of path starting at path[i] == '/' and
// returns it unquoted with the offset of the next segment.
func nextSegment(path string, i int) (seg string, next int, err error) {
	if path[i] != '/' {
		return "", 0, pathErr(path, "it must start with '/'")
	}
	i++
	if i < len(path) && (path[i] == '"' || path[i] == '\'') {
		seg, next, ok := quotedSegment(path, i)
		if !ok {
			return "", 0, pathErr(path, "a quoted segment has no closing quote")
		}
		if next < len(path) && path[next] != '/' {
			return "", 0, pathErr(path, "a quoted segment must be followed by '/' or the end")
		}
		return seg, next, nil
	}
	j := strings.IndexByte(path[i:], '/')
	if j < 0 {
		j = len(path) - i
	}
	seg = path[i : i+j]
	if seg == "" {
		return "", 0, pathErr(path, "it has an empty segment")
	}
	if strings.IndexByte(seg, '"') >= 0 {
		return "", 0, pathErr(path, "a segment with '\"' must be a quoted JSON string")
	}
	return seg, i + j, nil
}

// PKPathSegments returns the property names of partition key path path
// ("/a/b", "/\"a b\"", "/'c/d'"), read as ExtractPK reads them; an
// *InvalidError when path is not one.
func PKPathSegments(path string) ([]string, error) {
	if path == "" {
		return nil, pathErr(path, "it is empty")
	}
	var segs []string
	for i := 0; i < len(path); {
		seg, next, err := nextSegment(path, i)
		if err != nil {
			return nil, err
		}
		segs = append(segs, seg)
		i = next
	}
	return segs, nil
}

// quotedSegment reads the quoted segment of path starting at path[i], a
// double or single quote, as the SDKs' path parsers read it (.NET's and
// Java's PathParser, @azure/cosmos's parsePath), which the service's
// extraction of a partition key must agree with: it ends at the next
// quote of the same kind that does not follow a backslash, and its name is
// the text between the quotes as written, escapes included (/"q\"x"
// names the property q\"x). It returns the name and the offset after the
// closing quote, or false when there is none. Partita decoded the text as
// a JSON string before (q"x), so @azure/cosmos, which sends the value of
// q\"x, had every write of such a container refused (a partition key hunt).
func quotedSegment(path string, i int) (seg string, end int, ok bool) {
	q := path[i]
	j := i + 1
	for {
		k := strings.IndexByte(path[j:], q)
		if k < 0 {
			return "", 0, false
		}
		j += k
		if path[j-1] != '\\' || j == i+1 {
			return path[i+1 : j], j + 1, true
		}
		j++
	}
}

func pathErr(path, why string) error {
	return &InvalidError{Msg: fmt.Sprintf("invalid partition key path %q: %s", path, why)}
}

// ValidatePKPath checks a partition key path of a container definition, as
// Cosmos DB does: "/" followed by '/'-separated segments, each a name of
// letters, digits and '_' or a quoted name (/"my-field", /'my-field':
// quotedSegment), with no
// trailing slash and no wildcard. Its first segment may not be a system
// property the server overwrites (_rid, _self, _etag, _ts, _attachments).
// It returns nil or an *InvalidError with Cosmos DB's message, which names
// the path and the position (in bytes) where it stopped being valid:
//
//	The partition key component definition path '/a/*' could not be
//	accepted, failed near position '3'. Partition key paths must contain only
//	valid characters and not contain a trailing slash or wildcard character.
//
// Whitespace never belongs to a name; the position given is that of the
// first character after it, as the service reports it (for
// '/asdwqr31 @#$#$WRadf' it names position 10).
func ValidatePKPath(path string) error {
	for i, first := 0, true; ; first = false {
		if i >= len(path) || path[i] != '/' {
			return pkPathErr(path, skipWS([]byte(path), i))
		}
		i++
		start := i
		var seg string
		if i < len(path) && (path[i] == '"' || path[i] == '\'') {
			var ok bool
			if seg, i, ok = quotedSegment(path, i); !ok {
				return pkPathErr(path, len(path))
			}
		} else {
			for i < len(path) {
				r, n := utf8.DecodeRuneInString(path[i:])
				if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				i += n
			}
			seg = path[start:i]
		}
		if i == start {
			return pkPathErr(path, skipWS([]byte(path), i))
		}
		if first && isSystemName(seg) {
			return pathErr(path, "it names system property "+seg)
		}
		if i == len(path) {
			return nil
		}
	}
}

// pkPathErr is Cosmos DB's error for a partition key path that fails near
// byte pos.
func pkPathErr(path string, pos int) error {
	return &InvalidError{Msg: fmt.Sprintf("The partition key component definition path '%s' could not be accepted, "+
		"failed near position '%d'. Partition key paths must contain only valid characters and not contain a "+
		"trailing slash or wildcard character.", path, pos)}
}

// systemNames are the properties the server owns on an item, in the order
// Marshal appends them.
const (
	propRID         = "_rid"
	propSelf        = "_self"
	propETag        = "_etag"
	propTS          = "_ts"
	propAttachments = "_attachments"
)

func isSystemName(s string) bool {
	switch s {
	case propRID, propSelf, propETag, propTS, propAttachments:
		return true
	}
	return false
}

// isSystemMember reports whether m's key is a system property.
func isSystemMember(b []byte, m member) bool {
	if !m.kesc && (m.ke-m.ks < 2+3 || b[m.ks+1] != '_') {
		return false // fast path: too short, or not starting with '_'
	}
	if !m.kesc {
		return isSystemName(string(b[m.ks+1 : m.ke-1]))
	}
	var buf [64]byte
	return isSystemName(string(appendUnescaped(buf[:0], b[m.ks+1:m.ke-1])))
}

// SystemProps are the server-assigned properties of a stored item.
type SystemProps struct {
	RID  string // base64 RID with '-' for '/', e.g. "2Ro5AKZvbAABAAAAAAAAAA=="
	Self string // "dbs/{dbRid}/colls/{collRid}/docs/{docRid}/"
	ETag string // quoted, e.g. "\"00000000-0000-0000-0000-000000000001\""
	TS   int64  // last write, Unix seconds
	// TTL is the item's own valid time to live in seconds (-1: never), when
	// HasTTL; see [TTL].
	TTL    int64
	HasTTL bool
}

// Marshal returns the item's JSON for storage and for replies: the client's
// top-level members in their order, with keys and values byte for byte as
// sent (numbers and escapes verbatim) but whitespace between tokens removed,
// except any client-supplied _rid, _self, _etag, _ts and _attachments; then
// the server's _rid, _self, _etag, _ts (an integer) and _attachments
// ("attachments/"), in that order. The result is a new slice.
func (it *Item) Marshal(sp SystemProps) []byte {
	out := make([]byte, 0, len(it.body)+len(sp.RID)+len(sp.Self)+len(sp.ETag)+96)
	out = append(out, '{')
	for _, m := range it.members {
		if isSystemMember(it.body, m) {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, it.body[m.ks:m.ke]...)
		out = append(out, ':')
		out = appendCompact(out, it.body[m.vs:m.ve])
	}
	if len(out) > 1 {
		out = append(out, ',')
	}
	out = append(out, `"_rid":`...)
	out = appendJSONString(out, sp.RID)
	out = append(out, `,"_self":`...)
	out = appendJSONString(out, sp.Self)
	out = append(out, `,"_etag":`...)
	out = appendJSONString(out, sp.ETag)
	out = append(out, `,"_ts":`...)
	out = strconv.AppendInt(out, sp.TS, 10)
	out = append(out, `,"_attachments":"attachments/"}`...)
	return out
}

// Props reads the system properties back out of stored item JSON, as Marshal
// produced it. Errors wrap ErrCorrupt: the top-level value is not a
// well-formed object, or _rid, _self or _etag is missing or not a string, or
// _ts is missing or not an integer.
//
// Props runs on every point read and write of a stored item, so it trusts
// what Marshal wrote (every item was validated on the way in, and Pebble
// checksums what it stores): it walks the top-level members once, checking
// their structure and the system properties' values, and skips the other
// values without validating them. Input it cannot take that way (a key with
// an escape, say) goes through a full validating scan. On valid JSON both
// give the same result (FuzzProps).
func Props(stored []byte) (SystemProps, error) {
	if sp, ok := propsFast(stored); ok {
		return sp, nil
	}
	return propsScan(stored)
}

// propsFast is Props in one pass over the top-level members of stored. ok is
// false when stored is malformed, a key has an escape, or a system property
// is not as Marshal writes it: propsScan then decides (and names the error).
// It never reads out of bounds, whatever stored holds.
func propsFast(b []byte) (sp SystemProps, ok bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return SystemProps{}, false
	}
	type span struct{ s, e int }
	var rid, self, etag, ts, ttl span // value spans; the last member of a name wins, as in findMember
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return SystemProps{}, false // no _rid: propsScan names it
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return SystemProps{}, false
		}
		ks := i
		ke, ok := StringEnd(b, i)
		if !ok {
			return SystemProps{}, false
		}
		key := b[ks+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return SystemProps{}, false
		}
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return SystemProps{}, false
		}
		vs := skipWS(b, i+1)
		ve, ok := ValueEnd(b, vs)
		if !ok {
			return SystemProps{}, false
		}
		switch string(key) {
		case propRID:
			rid = span{vs, ve}
		case propSelf:
			self = span{vs, ve}
		case propETag:
			etag = span{vs, ve}
		case propTS:
			ts = span{vs, ve}
		case "ttl":
			ttl = span{vs, ve}
		}
		i = skipWS(b, ve)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			break
		}
		return SystemProps{}, false
	}
	if skipWS(b, i+1) != len(b) {
		return SystemProps{}, false
	}
	for _, p := range []struct {
		v   span
		dst *string
	}{{rid, &sp.RID}, {self, &sp.Self}, {etag, &sp.ETag}} {
		if p.v.e == 0 || b[p.v.s] != '"' {
			return SystemProps{}, false
		}
		// A system property's string is validated: decodeString expects
		// a valid literal.
		end, esc, err := scanString(b, p.v.s, false)
		if err != nil || end != p.v.e {
			return SystemProps{}, false
		}
		*p.dst = decodeString(b[p.v.s+1:p.v.e-1], esc)
	}
	if ts.e == 0 {
		return SystemProps{}, false
	}
	n, err := strconv.ParseInt(string(b[ts.s:ts.e]), 10, 64)
	if err != nil {
		return SystemProps{}, false
	}
	sp.TS = n
	if ttl.e != 0 {
		if n, err := strconv.ParseInt(string(b[ttl.s:ttl.e]), 10, 64); err == nil && (n == -1 || (n > 0 && n <= math.MaxInt32)) {
			sp.TTL, sp.HasTTL = n, true
		}
	}
	return sp, true
}

// StringEnd returns the offset just past the JSON string literal at
// b[i] == '"', without validating it; ok is false when it is
// unterminated. With ValueEnd it is the shallow scan of stored items that
// Props and index.Policy.Diff make: they walk the top-level members of
// what Marshal wrote from validated input.
func StringEnd(b []byte, i int) (int, bool) {
	i++
	// Names and short values end within a few bytes: look byte by byte
	// first, then with the vectorised search.
	for j := i; j < len(b) && j < i+16; j++ {
		if b[j] == '\\' {
			break
		}
		if b[j] == '"' {
			return j + 1, true
		}
	}
	for {
		k := bytes.IndexByte(b[i:], '"')
		if k < 0 {
			return 0, false
		}
		k += i
		n := 0 // backslashes before the quote: odd means it is escaped
		for m := k - 1; m >= i && b[m] == '\\'; m-- {
			n++
		}
		if n%2 == 0 {
			return k + 1, true
		}
		i = k + 1
	}
}

// ValueEnd returns the offset just past the JSON value at b[i] without
// validating it beyond its extent: strings end at their closing quote,
// objects and arrays at the bracket that balances theirs, and other values
// at the next whitespace, ',', '}' or ']'. ok is false when the value is
// empty or unterminated.
func ValueEnd(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return StringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				end, ok := StringEnd(b, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	case '}', ']', ',', ':':
		return 0, false
	}
	j := i
	for j < len(b) && !isWS(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		j++
	}
	return j, j > i
}

// propsScan is Props by a validating scan of the whole document and a
// search of its members for each property.
func propsScan(stored []byte) (SystemProps, error) {
	root, err := scanRoot(stored, nil, false)
	if err != nil {
		return SystemProps{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	var sp SystemProps
	for _, p := range []struct {
		name string
		dst  *string
	}{{propRID, &sp.RID}, {propSelf, &sp.Self}, {propETag, &sp.ETag}} {
		vs, ve, ok := findMember(stored, root, p.name)
		if !ok || stored[vs] != '"' {
			return SystemProps{}, fmt.Errorf("%w: stored item has no string %s", ErrCorrupt, p.name)
		}
		raw := stored[vs+1 : ve-1]
		*p.dst = decodeString(raw, hasEscape(raw))
	}
	vs, ve, ok := findMember(stored, root, propTS)
	if !ok {
		return SystemProps{}, fmt.Errorf("%w: stored item has no %s", ErrCorrupt, propTS)
	}
	sp.TS, err = strconv.ParseInt(string(stored[vs:ve]), 10, 64)
	if err != nil {
		return SystemProps{}, fmt.Errorf("%w: stored item's %s is not an integer", ErrCorrupt, propTS)
	}
	if vs, ve, ok := findMember(stored, root, "ttl"); ok {
		if n, err := strconv.ParseInt(string(stored[vs:ve]), 10, 64); err == nil && (n == -1 || (n > 0 && n <= math.MaxInt32)) {
			sp.TTL, sp.HasTTL = n, true
		}
	}
	return sp, nil
}

// Validate checks that body is one JSON value, strictly, as ParseItem
// checks an item: string contents (escapes, control characters, UTF-8),
// numbers, nesting depth, and no object with two members of one name. The
// error is an *InvalidError naming the problem and its offset. For the
// definitions the catalog reads with fastjson, which checks none of a
// string's contents: a definition holding "\q" was stored, and then failed
// to marshal (a 500).
func Validate(body []byte) error {
	i := skipWS(body, 0)
	end, err := scanValue(body, i, 0, true)
	if err == nil {
		if j := skipWS(body, end); j != len(body) {
			err = synErr(j, "%s after the top-level value", describe(body, j))
		}
	}
	if se, ok := errors.AsType[*syntaxError](err); ok {
		return &InvalidError{Msg: "not valid JSON: " + se.Error()}
	}
	if de, ok := errors.AsType[*DuplicateNameError](err); ok {
		return &InvalidError{Msg: de.Error()}
	}
	return err
}

// StoredMember returns where the value of stored's top-level member name
// is, stored[vs:ve] (the last one of the name), or false when it has none.
// stored is an item as Marshal wrote it.
func StoredMember(stored []byte, name string) (vs, ve int, ok bool) {
	i := skipWS(stored, 0)
	if i >= len(stored) || stored[i] != '{' {
		return 0, 0, false
	}
	return findMember(stored, i, name)
}

// ValueCount returns an upper bound on the number of JSON values in b, a
// JSON text: one, and one more for each comma and opening bracket or brace
// outside strings (each begins an element or member; an empty array or
// object counts one too many). A document's memory as a parse tree and
// its index terms grows with its values, not its bytes: a 2 MB array of a
// million zeros is a million of each.
func ValueCount(b []byte) int {
	n := 1
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			end, ok := StringEnd(b, i)
			if !ok {
				return n
			}
			i = end - 1
		case ',', '[', '{':
			n++
		}
	}
	return n
}
