package auth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// AADMode says what a Verifier does with type=aad (Microsoft Entra ID) tokens.
type AADMode int

const (
	// AADOff refuses every AAD token (Unsupported). It is the zero value.
	AADOff AADMode = iota
	// AADEmulator accepts any well-formed JWT whose exp, if present, is after now, and gives
	// it ReadWrite, without checking its signature, issuer or audience: what the Cosmos DB
	// emulator does, and what the SDKs' emulator tests rely on (their test credential sends
	// an unsigned token, protocol doc §2.4). Anyone who can reach the server can forge such
	// a token, so this mode is for emulator compatibility only.
	AADEmulator
	// AADVerified accepts a JWT only when it is signed (RS*, PS* or ES*) by a key of
	// AADConfig.Keys named by its kid, is within its validity (exp required; exp, nbf and iat
	// checked with AADLeeway), was issued by one of AADConfig.Issuers for one of
	// AADConfig.Audiences, and carries a role that AADConfig maps to an access level.
	AADVerified
)

// String returns "off", "emulator" or "verified".
func (m AADMode) String() string {
	switch m {
	case AADOff:
		return "off"
	case AADEmulator:
		return "emulator"
	case AADVerified:
		return "verified"
	}
	return "AADMode(" + strconv.Itoa(int(m)) + ")"
}

// AADLeeway is the clock difference allowed between a token issuer and this server when
// checking a verified AAD token's exp, nbf and iat claims. It is smaller than the x-ms-date
// skew (DefaultMaxSkew): a token's lifetime is already about an hour.
const AADLeeway = time.Minute

// AADConfig configures AAD token handling. The zero value refuses AAD tokens.
type AADConfig struct {
	// Mode selects refusal, emulator-style acceptance, or verification. Default AADOff.
	Mode AADMode
	// Keys are the signing keys (ParseJWKS). Required for AADVerified.
	Keys *KeySet
	// Issuers are the accepted iss claim values, compared exactly (Entra v1 tokens:
	// https://sts.windows.net/{tenant}/, v2: https://login.microsoftonline.com/{tenant}/v2.0).
	// Required for AADVerified: a public JWKS such as Entra's signs every tenant's tokens,
	// so the issuer is what binds a token to yours.
	Issuers []string
	// Audiences are the accepted aud claim values, compared exactly; a token is accepted when
	// one of its audiences is listed (the Go SDK asks for scope <scheme>://<host>/.default,
	// so the audience is e.g. https://myaccount.documents.azure.com). Required for AADVerified.
	Audiences []string
	// ReadWriteRoles and ReadOnlyRoles are the values of the token's roles claim (app roles)
	// or of its space-separated scp claim (delegated scopes) that give ReadWrite or ReadOnly
	// access; compared exactly. A token with a value from both lists gets ReadWrite; one with
	// none gets a NoRole error. Nil or empty: no token gets that access. AADVerified only.
	ReadWriteRoles, ReadOnlyRoles []string
}

// ErrBadAADConfig is returned by NewVerifier for an AADConfig it cannot use.
var ErrBadAADConfig = errors.New("auth: bad AAD configuration")

// check returns an error wrapping ErrBadAADConfig when c is incomplete for its mode.
func (c AADConfig) check() error {
	switch c.Mode {
	case AADOff, AADEmulator:
		return nil
	case AADVerified:
		var errs []error
		if c.Keys == nil || c.Keys.Len() == 0 {
			errs = append(errs, fmt.Errorf("%w: verified mode needs signing keys", ErrBadAADConfig))
		}
		if len(c.Issuers) == 0 {
			errs = append(errs, fmt.Errorf("%w: verified mode needs at least one issuer", ErrBadAADConfig))
		}
		if len(c.Audiences) == 0 {
			errs = append(errs, fmt.Errorf("%w: verified mode needs at least one audience", ErrBadAADConfig))
		}
		return errors.Join(errs...)
	}
	return fmt.Errorf("%w: unknown mode %d", ErrBadAADConfig, int(c.Mode))
}

// clone returns a copy of c that shares no slices with the caller.
func (c AADConfig) clone() AADConfig {
	c.Issuers = slices.Clone(c.Issuers)
	c.Audiences = slices.Clone(c.Audiences)
	c.ReadWriteRoles = slices.Clone(c.ReadWriteRoles)
	c.ReadOnlyRoles = slices.Clone(c.ReadOnlyRoles)
	return c
}

// verifyAAD checks the JWT of a type=aad token according to v's AAD mode. date, when not
// empty, must lie within maxSkew of now.
func (v *Verifier) verifyAAD(token, date string, now time.Time) (Access, error) {
	if v.aad.Mode == AADOff {
		return 0, newError(Unsupported, "AAD authentication is not configured on this server; sign requests with the account key.")
	}
	if date != "" {
		if err := checkDate(date, now, v.maxSkew); err != nil {
			return 0, err
		}
	}
	if v.aad.Mode == AADEmulator {
		return verifyUnsignedAAD(token, now)
	}
	return v.verifySignedAAD(token, now)
}

// verifyUnsignedAAD checks an emulator-style token: three dot-separated base64url segments
// (padded or not), the first two JSON objects, and a numeric exp claim, when present, after
// now. The signature segment is decoded but not checked: the emulator's test credential
// sends the master key string there, unsigned (protocol doc §2.4).
func verifyUnsignedAAD(token string, now time.Time) (Access, error) {
	exp, hasExp, ok := parseJWT(token)
	if !ok {
		return 0, newError(Malformed, "The AAD token is not a well-formed JWT.")
	}
	if hasExp && float64(now.Unix()) >= exp {
		return 0, newError(TokenExpired, "The AAD token has expired; acquire a new token and retry.")
	}
	return ReadWrite, nil
}

// aadClaims are the claims a verified token is checked against.
type aadClaims struct {
	jwt.Claims
	Roles stringList `json:"roles"` // app roles (application tokens)
	Scope string     `json:"scp"`   // space-separated delegated scopes (user tokens)
}

// stringList is a JSON array of strings that also accepts a single string.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = []string{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*l = many
	return nil
}

// verifySignedAAD checks a token in AADVerified mode: signature, validity period, issuer,
// audience, then role, in that order, so that nothing is said about the claims of a token
// whose signature does not verify.
func (v *Verifier) verifySignedAAD(token string, now time.Time) (Access, error) {
	alg, sig, ok := jwtHeader(token)
	if !ok {
		return 0, newError(Malformed, "The AAD token is not a well-formed JWT.")
	}
	if alg == "" || strings.EqualFold(alg, "none") || sig == "" {
		return 0, newError(Unsigned, "The AAD token is unsigned; unsigned tokens are accepted only in emulator-compatibility mode.")
	}
	if !slices.Contains(aadAlgorithms, jose.SignatureAlgorithm(alg)) {
		return 0, newError(BadSignature, fmt.Sprintf("The AAD token's signature algorithm %q is not accepted; use RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384 or ES512.", clip(alg)))
	}
	jws, err := jose.ParseSignedCompact(token, aadAlgorithms)
	if err != nil {
		return 0, newError(Malformed, "The AAD token is not a well-formed JWT.")
	}
	kid := jws.Signatures[0].Header.KeyID
	if kid == "" {
		return 0, newError(UnknownKey, "The AAD token names no signing key (kid header).")
	}
	keys := v.aad.Keys.byKID(kid)
	if len(keys) == 0 {
		return 0, newError(UnknownKey, fmt.Sprintf("The AAD token is signed with key %q, which is not among this server's AAD signing keys.", clip(kid)))
	}
	var payload []byte
	for _, k := range keys {
		if k.Algorithm != "" && k.Algorithm != alg {
			continue // the key is pinned to another algorithm (RFC 7517 §4.4)
		}
		if p, err := jws.Verify(k.Key); err == nil {
			payload = p
			break
		}
	}
	if payload == nil {
		return 0, newError(BadSignature, fmt.Sprintf("The AAD token's signature does not verify with key %q.", clip(kid)))
	}
	var c aadClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return 0, newError(Malformed, "The AAD token's claims are not valid JSON claims.")
	}
	if c.Expiry == nil {
		return 0, newError(Malformed, "The AAD token has no exp claim.")
	}
	switch err := c.ValidateWithLeeway(jwt.Expected{Time: now}, AADLeeway); {
	case errors.Is(err, jwt.ErrExpired):
		return 0, newError(TokenExpired, "The AAD token has expired; acquire a new token and retry.")
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return 0, newError(NotYetValid, "The AAD token is not valid yet (nbf or iat is in the future).")
	case err != nil:
		return 0, newError(Malformed, "The AAD token's claims are not valid.")
	}
	if !slices.Contains(v.aad.Issuers, c.Issuer) {
		return 0, newError(BadIssuer, fmt.Sprintf("The AAD token's issuer %q is not accepted by this server.", clip(c.Issuer)))
	}
	if !slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(v.aad.Audiences, a) }) {
		return 0, newError(BadAudience, fmt.Sprintf("The AAD token's audience %q is not this server; request a token for one of: %s.",
			clip(strings.Join(c.Audience, ",")), strings.Join(v.aad.Audiences, ", ")))
	}
	return v.roleAccess(c)
}

// roleAccess maps the roles and scopes of a verified token to an access level.
func (v *Verifier) roleAccess(c aadClaims) (Access, error) {
	values := append(slices.Clone([]string(c.Roles)), strings.Fields(c.Scope)...)
	has := func(list []string) bool {
		return slices.ContainsFunc(values, func(r string) bool { return slices.Contains(list, r) })
	}
	switch {
	case has(v.aad.ReadWriteRoles):
		return ReadWrite, nil
	case has(v.aad.ReadOnlyRoles):
		return ReadOnly, nil
	}
	return 0, newError(NoRole, "Request blocked: the AAD token is valid but carries no role or scope (roles, scp claims) that this server maps to read-only or read-write access.")
}

// jwtHeader returns the alg of compact JWS token's header and its signature segment, and
// reports whether the token has three segments and a JSON object header.
func jwtHeader(token string) (alg, sig string, ok bool) {
	h, rest, ok1 := strings.Cut(token, ".")
	_, s, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s, ".") {
		return "", "", false
	}
	hb, ok := decodeSegment(h)
	if !ok {
		return "", "", false
	}
	var header struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(hb, &header) != nil {
		return "", "", false
	}
	return header.Alg, s, true
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
