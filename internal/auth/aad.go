package auth

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// verifyAAD checks the JWT of a type=aad token: three dot-separated base64url segments
// (padded or not), the first two JSON objects, and a numeric exp claim, when present, after
// now. The signature segment is decoded but not checked: the emulator's test credential
// sends the master key string there, unsigned (protocol doc §2.4). date, when not empty, must
// lie within maxSkew of now.
func verifyAAD(jwt, date string, now time.Time, maxSkew time.Duration) (Access, error) {
	if date != "" {
		if err := checkDate(date, now, maxSkew); err != nil {
			return 0, err
		}
	}
	exp, hasExp, ok := parseJWT(jwt)
	if !ok {
		return 0, newError(Malformed, "The AAD token is not a well-formed JWT.")
	}
	if hasExp && float64(now.Unix()) >= exp {
		return 0, newError(TokenExpired, "The AAD token has expired; acquire a new token and retry.")
	}
	return ReadWrite, nil
}

// parseJWT reports whether jwt is header.payload.signature with base64url segments whose
// header and payload are JSON objects, and returns the payload's exp claim when it is a
// number.
func parseJWT(jwt string) (exp float64, hasExp, ok bool) {
	h, rest, ok1 := strings.Cut(jwt, ".")
	p, s, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s, ".") || h == "" || p == "" {
		return 0, false, false
	}
	hb, ok1 := decodeSegment(h)
	pb, ok2 := decodeSegment(p)
	_, ok3 := decodeSegment(s)
	if !ok1 || !ok2 || !ok3 {
		return 0, false, false
	}
	var header, claims map[string]json.RawMessage
	if json.Unmarshal(hb, &header) != nil || header == nil ||
		json.Unmarshal(pb, &claims) != nil || claims == nil {
		return 0, false, false
	}
	raw, found := claims["exp"]
	if !found {
		return 0, false, true
	}
	// A non-numeric exp (e.g. a string) is ignored rather than rejected.
	e, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, false, true
	}
	return e, true, true
}

// decodeSegment decodes one base64url JWT segment, with or without '=' padding.
func decodeSegment(s string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	return b, err == nil
}
