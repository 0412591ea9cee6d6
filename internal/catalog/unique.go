package catalog

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// Limits on a container's uniqueKeyPolicy, Cosmos DB's documented ones: at
// most MaxUniqueKeys unique keys, each of 1 to MaxUniqueKeyPaths paths.
const (
	MaxUniqueKeys     = 10
	MaxUniqueKeyPaths = 16
)

// uniqueKeys is a parsed uniqueKeyPolicy; the zero value is no policy.
type uniqueKeys struct {
	paths [][]string   // each key's paths, as the definition writes them
	segs  [][][]string // each key's paths split into unquoted segments
}

// UniqueKeys returns the paths of each unique key of the container's
// uniqueKeyPolicy, in policy order ("/a/b" form, as the definition writes
// them), or nil when it has none. The caller must not modify the result.
func (c *Container) UniqueKeys() [][]string { return c.unique.paths }

// UniqueKeySegments returns, for each unique key in UniqueKeys order, its
// paths split into segments, JSON-quoted ones unquoted ("/a/\"b c\"" →
// ["a", "b c"]); nil when there are none. The caller must not modify it.
func (c *Container) UniqueKeySegments() [][][]string { return c.unique.segs }

// equal reports whether u and o constrain the same paths in the same order.
func (u uniqueKeys) equal(o uniqueKeys) bool {
	return slices.EqualFunc(u.segs, o.segs, func(a, b [][]string) bool {
		return slices.EqualFunc(a, b, slices.Equal[[]string])
	})
}

// parseUniqueKeys validates the uniqueKeyPolicy of a container definition
// (v nil or null: none) and returns its keys. An empty uniqueKeys list is no
// policy. Errors are *InvalidError; the keys are then the zero value.
//
// A path is rooted ("/email", "/name/first", "/\"odd name\""): non-empty
// segments, none a wildcard ("*", "?", "[]") and none with a '"' unless it
// is a JSON string literal. The first segment may not be a property the
// server writes (_rid, _self, _etag, _ts, _attachments): those change with
// every write. "/id" is allowed (and redundant: ids are unique in a logical
// partition already). A key may not repeat a path.
func parseUniqueKeys(v *fastjson.Value) (uniqueKeys, error) {
	if v == nil || v.Type() == fastjson.TypeNull {
		return uniqueKeys{}, nil
	}
	if v.Type() != fastjson.TypeObject {
		return uniqueKeys{}, invalid("uniqueKeyPolicy must be an object")
	}
	list := v.Get("uniqueKeys")
	if list == nil || list.Type() == fastjson.TypeNull {
		return uniqueKeys{}, nil
	}
	keys, err := list.Array()
	if err != nil {
		return uniqueKeys{}, invalid("uniqueKeyPolicy.uniqueKeys must be an array")
	}
	if len(keys) > MaxUniqueKeys {
		return uniqueKeys{}, invalid(fmt.Sprintf("uniqueKeyPolicy has %d unique keys; at most %d are allowed", len(keys), MaxUniqueKeys))
	}
	var u uniqueKeys
	for i, k := range keys {
		if k.Type() != fastjson.TypeObject {
			return uniqueKeys{}, invalid(fmt.Sprintf("uniqueKeyPolicy.uniqueKeys[%d] must be an object", i))
		}
		pv := k.Get("paths")
		if pv == nil || pv.Type() != fastjson.TypeArray {
			return uniqueKeys{}, invalid(fmt.Sprintf("uniqueKeyPolicy.uniqueKeys[%d].paths must be an array of paths", i))
		}
		ps, _ := pv.Array()
		if len(ps) == 0 || len(ps) > MaxUniqueKeyPaths {
			return uniqueKeys{}, invalid(fmt.Sprintf("uniqueKeyPolicy.uniqueKeys[%d] has %d paths; it must have 1 to %d", i, len(ps), MaxUniqueKeyPaths))
		}
		paths := make([]string, 0, len(ps))
		segs := make([][]string, 0, len(ps))
		for _, p := range ps {
			b, err := p.StringBytes()
			if err != nil {
				return uniqueKeys{}, invalid(fmt.Sprintf("uniqueKeyPolicy.uniqueKeys[%d].paths must be strings", i))
			}
			path := string(b)
			s, why := splitUniquePath(path)
			if why != "" {
				return uniqueKeys{}, invalid(fmt.Sprintf("unique key path %q is invalid: %s", path, why))
			}
			if slices.ContainsFunc(segs, func(o []string) bool { return slices.Equal(o, s) }) {
				return uniqueKeys{}, invalid(fmt.Sprintf("uniqueKeyPolicy.uniqueKeys[%d] names path %q twice", i, path))
			}
			paths, segs = append(paths, path), append(segs, s)
		}
		u.paths, u.segs = append(u.paths, paths), append(u.segs, segs)
	}
	return u, nil
}

// splitUniquePath splits a unique key path into unquoted segments; why is
// non-empty when the path is invalid.
func splitUniquePath(path string) (segs []string, why string) {
	if !strings.HasPrefix(path, "/") {
		return nil, "it must start with '/'"
	}
	if !utf8.ValidString(path) {
		return nil, "it is not valid UTF-8"
	}
	for i := 0; i < len(path); {
		i++ // past '/'
		var seg string
		if i < len(path) && path[i] == '"' {
			end := closingQuote(path, i)
			if end < 0 {
				return nil, "a quoted segment is not terminated"
			}
			if err := json.Unmarshal([]byte(path[i:end+1]), &seg); err != nil {
				return nil, "a quoted segment is not a JSON string"
			}
			i = end + 1
			if i < len(path) && path[i] != '/' {
				return nil, "a quoted segment must be followed by '/' or the end"
			}
		} else {
			j := strings.IndexByte(path[i:], '/')
			if j < 0 {
				j = len(path) - i
			}
			seg, i = path[i:i+j], i+j
			switch {
			case seg == "":
				return nil, "it has an empty segment"
			case strings.ContainsAny(seg, "*?[]"):
				return nil, "wildcards (*, ?, []) are not allowed in unique key paths"
			case strings.ContainsRune(seg, '"'):
				return nil, "a segment with '\"' must be a quoted JSON string"
			}
		}
		if len(segs) == 0 && isServerProperty(seg) {
			return nil, "it names system property " + seg + ", which the server rewrites on every write"
		}
		segs = append(segs, seg)
	}
	return segs, ""
}

// closingQuote returns the index of the '"' closing the JSON string that
// opens at path[i], or -1.
func closingQuote(path string, i int) int {
	for j := i + 1; j < len(path); j++ {
		switch path[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}

func isServerProperty(s string) bool {
	switch s {
	case "_rid", "_self", "_etag", "_ts", "_attachments":
		return true
	}
	return false
}
