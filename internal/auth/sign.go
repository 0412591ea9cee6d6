package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrBadPath is returned by Resource when a path segment is not validly percent-encoded.
var ErrBadPath = errors.New("auth: bad resource path")

// ErrBadKey is returned by DecodeKey for an empty or non-base64 account key.
var ErrBadKey = errors.New("auth: bad account key")

// offersType is the resource type of throughput offers, which are signed by lower-cased id
// rather than by path (protocol doc §2.2).
const offersType = "offers"

// Resource returns the resource type and link a client signs for the request path rawPath
// (r.URL.EscapedPath()), per protocol doc §2.2.
//
// The path is split on "/" first and each segment percent-decoded once afterwards, so an id
// containing %2F stays one segment. One leading and one trailing "/" are ignored. With an odd
// number of segments (a feed, create, query or batch target) the type is the last segment and
// the link all segments but the last, joined with "/"; with an even number (one resource) the
// type is the second-to-last segment and the link the whole decoded path. "/" and "" give
// ("", ""), the database account. Offers by id, /offers/{id}, give ("offers", lower(id)) since
// both SDKs sign the lower-cased offer id alone.
//
// The type is returned as it appears in the path; Payload lower-cases it. Resource returns an
// error wrapping ErrBadPath when a segment has an invalid percent escape.
func Resource(rawPath string) (resourceType, resourceLink string, err error) {
	p := strings.TrimPrefix(rawPath, "/")
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return "", "", nil
	}
	if strings.IndexByte(p, '%') < 0 {
		// Fast path, no allocation: decoding is the identity, so the link is a substring.
		n := strings.Count(p, "/") + 1
		last := strings.LastIndexByte(p, '/')
		if n%2 == 1 {
			if last < 0 {
				return p, "", nil
			}
			return p[last+1:], p[:last], nil
		}
		prev := strings.LastIndexByte(p[:last], '/')
		typ := p[prev+1 : last]
		if n == 2 && typ == offersType {
			return offersType, strings.ToLower(p[last+1:]), nil
		}
		return typ, p, nil
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		d, err := url.PathUnescape(s)
		if err != nil {
			return "", "", fmt.Errorf("%w: segment %d", ErrBadPath, i)
		}
		segs[i] = d
	}
	n := len(segs)
	if n%2 == 1 {
		return segs[n-1], strings.Join(segs[:n-1], "/"), nil
	}
	if n == 2 && segs[0] == offersType {
		return offersType, strings.ToLower(segs[1]), nil
	}
	return segs[n-2], strings.Join(segs, "/"), nil
}

// Payload returns the master-key string-to-sign:
// lower(verb) "\n" lower(resourceType) "\n" resourceLink "\n" lower(date) "\n" "\n".
// The link is used verbatim: not lower-cased and not percent-encoded.
func Payload(verb, resourceType, resourceLink, date string) string {
	return string(appendPayload(nil, verb, resourceType, resourceLink, date))
}

// appendPayload appends Payload(verb, resourceType, resourceLink, date) to buf.
func appendPayload(buf []byte, verb, resourceType, resourceLink, date string) []byte {
	buf = appendLower(buf, verb)
	buf = append(buf, '\n')
	buf = appendLower(buf, resourceType)
	buf = append(buf, '\n')
	buf = append(buf, resourceLink...)
	buf = append(buf, '\n')
	buf = appendLower(buf, date)
	return append(buf, '\n', '\n')
}

// appendLower appends strings.ToLower(s) to buf, without allocating when s is ASCII.
func appendLower(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			// NB: the SDKs lower-case with full Unicode rules (Go strings.ToLower, JS
			// toLowerCase); fall back to the same for the rare non-ASCII input.
			return append(buf, strings.ToLower(s)...)
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf = append(buf, c)
	}
	return buf
}

// Sign returns base64(HMAC-SHA256(key, Payload(verb, resourceType, resourceLink, date))), the
// sig value of a master token. key is the decoded account key (see DecodeKey).
func Sign(key []byte, verb, resourceType, resourceLink, date string) string {
	m := hmac.New(sha256.New, key)
	m.Write(appendPayload(nil, verb, resourceType, resourceLink, date))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// MasterToken returns the Authorization header value a Go SDK client sends for a master-key
// signed request: url.QueryEscape("type=master&ver=1.0&sig=" + Sign(...)).
func MasterToken(key []byte, verb, resourceType, resourceLink, date string) string {
	return url.QueryEscape("type=master&ver=1.0&sig=" + Sign(key, verb, resourceType, resourceLink, date))
}

// DecodeKey decodes a standard-base64 account key such as the emulator's. It returns an error
// wrapping ErrBadKey when b64 is empty or not valid base64. The returned slice is the caller's.
func DecodeKey(b64 string) ([]byte, error) {
	if b64 == "" {
		return nil, fmt.Errorf("%w: empty", ErrBadKey)
	}
	k, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	if len(k) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrBadKey)
	}
	return k, nil
}
