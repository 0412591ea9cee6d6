package synthkey

import "strings"

// path is a parsed property path such as "/a/b": segments "a", "b".
type path struct {
	text string
	segs []string
}

// parsePath parses a Cosmos DB property path: "/" followed by one or more
// non-empty segments separated by "/". Segments are property names, escaped
// as in JSON Pointer (RFC 6901): "~1" stands for "/" and "~0" for "~", so
// the property "a/b" is the path "/a~1b"; a "~" followed by anything else is
// invalid. There is no array indexing.
func parsePath(s string) (path, error) {
	if len(s) < 2 || s[0] != '/' {
		return path{}, &PathError{Path: s, Err: ErrInvalidPath}
	}
	segs := strings.Split(s[1:], "/")
	for i, seg := range segs {
		if seg == "" {
			return path{}, &PathError{Path: s, Err: ErrInvalidPath}
		}
		if strings.Contains(seg, "~") {
			u, ok := unescape(seg)
			if !ok {
				return path{}, &PathError{Path: s, Err: ErrInvalidPath}
			}
			segs[i] = u
		}
	}
	return path{text: s, segs: segs}, nil
}

// unescape undoes JSON Pointer's escapes in one segment, reporting false
// for a "~" not followed by "0" or "1".
func unescape(seg string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		if seg[i] != '~' {
			b.WriteByte(seg[i])
			continue
		}
		if i+1 == len(seg) || (seg[i+1] != '0' && seg[i+1] != '1') {
			return "", false
		}
		b.WriteByte("~/"[seg[i+1]-'0'])
		i++
	}
	return b.String(), true
}

// parsePaths parses ps, refusing any that overlaps target (equal, or one a
// prefix of the other), since Apply would then overwrite its own input.
func parsePaths(ps []string, target path) ([]path, error) {
	out := make([]path, 0, len(ps))
	for _, s := range ps {
		p, err := parsePath(s)
		if err != nil {
			return nil, err
		}
		if overlaps(p, target) {
			return nil, &PathError{Path: s, Err: ErrInvalidPath}
		}
		out = append(out, p)
	}
	return out, nil
}

func overlaps(a, b path) bool {
	n := min(len(a.segs), len(b.segs))
	for i := range n {
		if a.segs[i] != b.segs[i] {
			return false
		}
	}
	return true
}

// lookup returns the value at p in item; ok is false when any segment is
// absent or a value on the way is not an object (Cosmos DB's "undefined").
func (p path) lookup(item map[string]any) (v any, ok bool) {
	obj := item
	for i, seg := range p.segs {
		v, ok = obj[seg]
		if !ok {
			return nil, false
		}
		if i == len(p.segs)-1 {
			return v, true
		}
		if obj, ok = v.(map[string]any); !ok {
			return nil, false
		}
	}
	return nil, false // unreachable: a path has at least one segment
}

// appendValue appends the canonical string of the value at p in item,
// or returns a *PathError.
func (p path) appendValue(dst []byte, item map[string]any) ([]byte, error) {
	v, ok := p.lookup(item)
	if !ok {
		return dst, &PathError{Path: p.text, Err: ErrMissing}
	}
	dst, err := appendCanonical(dst, v)
	if err != nil {
		return dst, &PathError{Path: p.text, Err: err}
	}
	return dst, nil
}

// set stores v at p in item, creating missing objects. It changes nothing
// and returns a *PathError wrapping ErrNotObject when a value on the way is
// not an object.
func (p path) set(item map[string]any, v string) error {
	// Check the whole way before creating anything, so a failure leaves
	// item unchanged.
	if err := p.check(item); err != nil {
		return err
	}
	last := len(p.segs) - 1
	obj := item
	for _, seg := range p.segs[:last] {
		next, ok := obj[seg].(map[string]any)
		if !ok {
			next = map[string]any{}
			obj[seg] = next
		}
		obj = next
	}
	obj[p.segs[last]] = v
	return nil
}

// joinPath writes segments as a path, escaping them as parsePath reads them.
func joinPath(segs []string) string {
	var b strings.Builder
	r := strings.NewReplacer("~", "~0", "/", "~1")
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(r.Replace(s))
	}
	return b.String()
}

// check returns the *PathError (wrapping ErrNotObject) set would return for
// item, or nil.
func (p path) check(item map[string]any) error {
	obj := item
	for i, seg := range p.segs[:len(p.segs)-1] {
		next, ok := obj[seg]
		if !ok {
			return nil
		}
		if obj, ok = next.(map[string]any); !ok {
			return &PathError{Path: joinPath(p.segs[:i+1]), Err: ErrNotObject}
		}
	}
	return nil
}
