package api

import (
	"bytes"
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"
)

// querySpec is the body of a query request.
type querySpec struct {
	Query      *string      `json:"query"`
	Parameters []queryParam `json:"parameters"`
}

// queryParam is a parameter of a query request.
type queryParam struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value"`
}

// decodeQuerySpec decodes a query request's body as json.Unmarshal into a
// querySpec does, returning its error for a body it refuses.
//
// The bodies SDKs send, {"query": "…", "parameters": [{"name": "@p",
// "value": …}]} with scalar values, are read by a scanner of that shape
// alone (quickScanSpec); anything else (other or repeated members, other
// cases of the names, escaped surrogates, arrays or objects as values,
// invalid JSON) by json.Unmarshal. Both give the same
// result where the scanner answers (FuzzDecodeQuerySpec): the Go SDK sends
// a query body on every page, and encoding/json's reflection was a tenth
// of a single-partition query's CPU in the API (issue #15). The values
// alias body.
func decodeQuerySpec(body []byte) (querySpec, error) {
	if spec, ok := quickScanSpec(body); ok {
		return spec, nil
	}
	var spec querySpec
	err := json.Unmarshal(body, &spec)
	return spec, err
}

// quickScanSpec reads body if it has the common shape decodeQuerySpec
// describes, and reports whether it did.
func quickScanSpec(body []byte) (querySpec, bool) {
	s := specScanner{b: body}
	var spec querySpec
	sawParams := false
	if !s.byte('{') {
		return spec, false
	}
	for first := true; ; first = false {
		if s.byte('}') {
			break
		}
		if !first && !s.byte(',') {
			return spec, false
		}
		key, ok := s.plainString()
		if !ok || !s.byte(':') {
			return spec, false
		}
		switch {
		case key == "query" && spec.Query == nil:
			text, ok := s.plainString()
			if !ok {
				return spec, false
			}
			spec.Query = &text
		case key == "parameters" && !sawParams:
			sawParams = true
			if spec.Parameters, ok = s.params(); !ok {
				return spec, false
			}
		default:
			return spec, false
		}
	}
	s.space()
	return spec, s.i == len(s.b)
}

// specScanner reads the common shape of a query body (quickScanSpec): it
// accepts a strict subset of JSON and reports false for anything else.
type specScanner struct {
	b []byte
	i int
}

func (s *specScanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// byte skips white space and c, and reports whether c was there.
func (s *specScanner) byte(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// plainString reads a string in valid UTF-8 without control characters
// whose escapes are simple ones or \u escapes of characters outside the
// surrogate range (encoding/json escapes '<', '>' and '&' so): its value
// is its text, escapes decoded.
func (s *specScanner) plainString() (string, bool) {
	raw, ok := s.plainStringRaw()
	if !ok {
		return "", false
	}
	raw = raw[1 : len(raw)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw), true
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch raw[i] {
		case '"', '\\', '/':
			out = append(out, raw[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hexRune(raw[i+1 : i+5])
			if utf16.IsSurrogate(r) {
				return "", false // pairs and lone halves: left to encoding/json
			}
			out = utf8.AppendRune(out, r)
			i += 4
		}
	}
	return string(out), true
}

// plainStringRaw is plainString's token, quotes included: a string in
// valid UTF-8 without control characters whose escapes are valid.
func (s *specScanner) plainStringRaw() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i - 1
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			raw := s.b[start:s.i]
			return raw, utf8.Valid(raw)
		case c < 0x20:
			return nil, false
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return nil, false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if len(s.b)-s.i < 6 || hexRune(s.b[s.i+2:s.i+6]) < 0 {
					return nil, false
				}
				s.i += 6
			default:
				return nil, false
			}
			continue
		}
		s.i++
	}
	return nil, false
}

// hexRune returns the value of four hex digits, or -1.
func hexRune(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// params reads the parameters array: objects with exactly a name (a plain
// string) and a scalar value, in either order.
func (s *specScanner) params() ([]queryParam, bool) {
	if !s.byte('[') {
		return nil, false
	}
	ps := []queryParam{}
	for first := true; ; first = false {
		if s.byte(']') {
			return ps, true
		}
		if (!first && !s.byte(',')) || !s.byte('{') {
			return nil, false
		}
		var p queryParam
		sawName := false
		for pfirst := true; ; pfirst = false {
			if s.byte('}') {
				break
			}
			if !pfirst && !s.byte(',') {
				return nil, false
			}
			key, ok := s.plainString()
			if !ok || !s.byte(':') {
				return nil, false
			}
			switch {
			case key == "name" && !sawName:
				sawName = true
				if p.Name, ok = s.plainString(); !ok {
					return nil, false
				}
			case key == "value" && p.Value == nil:
				if p.Value, ok = s.scalar(); !ok {
					return nil, false
				}
			default:
				return nil, false
			}
		}
		if !sawName || p.Value == nil {
			return nil, false
		}
		ps = append(ps, p)
	}
}

// scalar reads a plain string, a number, true, false or null, and returns
// its token.
func (s *specScanner) scalar() ([]byte, bool) {
	s.space()
	if s.i >= len(s.b) {
		return nil, false
	}
	switch s.b[s.i] {
	case '"':
		return s.plainStringRaw()
	case 't':
		return s.word("true")
	case 'f':
		return s.word("false")
	case 'n':
		return s.word("null")
	}
	return s.number()
}

func (s *specScanner) word(w string) ([]byte, bool) {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return nil, false
	}
	s.i += len(w)
	return s.b[s.i-len(w) : s.i], true
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *specScanner) number() ([]byte, bool) {
	start := s.i
	digits := func() bool {
		n := s.i
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
		}
		return s.i > n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case !digits():
		return nil, false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !digits() {
			return nil, false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !digits() {
			return nil, false
		}
	}
	return s.b[start:s.i], true
}
