package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/partitadb/partita/internal/auth/authtest"
)

const (
	testIssuer   = "https://login.example.net/tenant-1/v2.0"
	testAudience = "https://myaccount.documents.azure.com"
	roleRW       = "Partita.ReadWrite"
	roleRO       = "Partita.ReadOnly"
)

// verifiedAAD returns an AADVerified config trusting iss's keys, testIssuer, testAudience and
// https://localhost, with roleRW and the scope Data.Write read-write and roleRO and Data.Read
// read-only.
func verifiedAAD(t testing.TB, iss *authtest.Issuer) AADConfig {
	t.Helper()
	keys, err := ParseJWKS(iss.JWKS())
	if err != nil {
		t.Fatalf("ParseJWKS = %v", err)
	}
	return AADConfig{Mode: AADVerified, Keys: keys, Issuers: []string{testIssuer},
		Audiences:      []string{testAudience, "https://localhost"},
		ReadWriteRoles: []string{roleRW, "Data.Write"}, ReadOnlyRoles: []string{roleRO, "Data.Read"}}
}

// with returns a copy of claims with key set to val, or deleted when val is nil.
func with(claims map[string]any, key string, val any) map[string]any {
	c := make(map[string]any, len(claims))
	for k, v := range claims {
		c[k] = v
	}
	if val == nil {
		delete(c, key)
	} else {
		c[key] = val
	}
	return c
}

// TestVerifySignedAAD checks AADVerified mode: signature (RS256, ES256, both checked by key
// id), validity period, issuer, audience and the role mapping, one reason per refusal.
func TestVerifySignedAAD(t *testing.T) {
	iss := authtest.NewIssuer(t)
	stranger := authtest.NewIssuer(t) // same key ids, other keys
	key := mustKey(t, emulatorKey)
	now := mustTime(t, emuDate)
	v := mustVerifier(t, Config{MasterKey: key, AAD: verifiedAAD(t, iss)})
	rw := authtest.Claims(testIssuer, testAudience, now, roleRW)
	ro := authtest.Claims(testIssuer, testAudience, now, roleRO)
	good := iss.RS256(t, rw)
	seg := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	parts := strings.Split(good, ".")
	rsaHeader := map[string]any{"alg": "RS256", "kid": authtest.RSAKeyID}

	tests := []struct {
		name   string
		token  string
		date   string
		want   Access
		reason Reason
	}{
		{name: "RS256 read-write", token: good, want: ReadWrite},
		{name: "ES256 read-write", token: iss.ES256(t, rw), want: ReadWrite},
		{name: "RS256 read-only", token: iss.RS256(t, ro), want: ReadOnly},
		{name: "ES256 read-only", token: iss.ES256(t, ro), want: ReadOnly},
		{name: "both roles: read-write wins", token: iss.RS256(t, with(rw, "roles", []string{roleRO, roleRW})), want: ReadWrite},
		{name: "roles as one string", token: iss.RS256(t, with(rw, "roles", roleRW)), want: ReadWrite},
		{name: "scope read-only", token: iss.RS256(t, with(with(rw, "roles", nil), "scp", "openid Data.Read")), want: ReadOnly},
		{name: "scope read-write", token: iss.RS256(t, with(with(rw, "roles", nil), "scp", "Data.Write")), want: ReadWrite},
		{name: "audience list containing ours", token: iss.RS256(t, with(rw, "aud", []string{"https://elsewhere", testAudience})), want: ReadWrite},
		{name: "second configured audience", token: iss.RS256(t, with(rw, "aud", "https://localhost")), want: ReadWrite},
		{name: "with x-ms-date", token: good, date: emuDate, want: ReadWrite},
		{name: "expired within leeway", token: iss.RS256(t, with(rw, "exp", now.Add(-AADLeeway/2).Unix())), want: ReadWrite},
		{name: "no nbf, no iat", token: iss.RS256(t, with(with(rw, "nbf", nil), "iat", nil)), want: ReadWrite},

		{name: "no role", token: iss.RS256(t, with(rw, "roles", nil)), reason: NoRole},
		{name: "unknown role", token: iss.RS256(t, with(rw, "roles", []string{"Partita.Admin"})), reason: NoRole},
		{name: "role names are case-sensitive", token: iss.RS256(t, with(rw, "roles", []string{strings.ToLower(roleRW)})), reason: NoRole},
		{name: "scope user_impersonation not mapped", token: iss.RS256(t, with(with(rw, "roles", nil), "scp", "user_impersonation")), reason: NoRole},

		{name: "expired", token: iss.RS256(t, with(rw, "exp", now.Add(-2*AADLeeway).Unix())), reason: TokenExpired},
		{name: "ES256 expired", token: iss.ES256(t, with(rw, "exp", now.Add(-time.Hour).Unix())), reason: TokenExpired},
		{name: "no exp", token: iss.RS256(t, with(rw, "exp", nil)), reason: Malformed},
		{name: "exp not a number", token: iss.RS256(t, with(rw, "exp", "soon")), reason: Malformed},
		{name: "not yet valid", token: iss.RS256(t, with(rw, "nbf", now.Add(5*time.Minute).Unix())), reason: NotYetValid},
		{name: "issued in the future", token: iss.RS256(t, with(rw, "iat", now.Add(5*time.Minute).Unix())), reason: NotYetValid},
		{name: "wrong issuer", token: iss.RS256(t, with(rw, "iss", "https://login.example.net/tenant-2/v2.0")), reason: BadIssuer},
		{name: "issuer differs by a trailing slash", token: iss.RS256(t, with(rw, "iss", testIssuer+"/")), reason: BadIssuer},
		{name: "no issuer", token: iss.RS256(t, with(rw, "iss", nil)), reason: BadIssuer},
		{name: "wrong audience", token: iss.RS256(t, with(rw, "aud", "https://other.documents.azure.com")), reason: BadAudience},
		{name: "no audience", token: iss.RS256(t, with(rw, "aud", nil)), reason: BadAudience},

		{name: "unknown kid", token: authtest.Sign(t, iss.RSA, map[string]any{"alg": "RS256", "kid": "rotated-away"}, rw), reason: UnknownKey},
		{name: "no kid", token: authtest.Sign(t, iss.RSA, map[string]any{"alg": "RS256"}, rw), reason: UnknownKey},
		{name: "emulator token", token: emulatorJWT(t, now.Add(time.Hour)), reason: UnknownKey},
		{name: "signed by another key with our kid", token: stranger.RS256(t, rw), reason: BadSignature},
		{name: "ES256 signed by another key with our kid", token: stranger.ES256(t, rw), reason: BadSignature},
		{name: "tampered payload", token: parts[0] + "." + seg(with(rw, "roles", []string{roleRW, "x"})) + "." + parts[2], reason: BadSignature},
		{name: "tampered signature", token: parts[0] + "." + parts[1] + "." + flip(parts[2]), reason: BadSignature},
		{name: "signature of another token", token: parts[0] + "." + parts[1] + "." + strings.Split(iss.RS256(t, ro), ".")[2], reason: BadSignature},
		{name: "header alg ES256 on the RSA key", token: authtest.Sign(t, iss.RSA, map[string]any{"alg": "ES256", "kid": authtest.RSAKeyID}, rw), reason: BadSignature},
		{name: "header alg RS256 on the EC key", token: authtest.Sign(t, iss.EC, map[string]any{"alg": "RS256", "kid": authtest.ECKeyID}, rw), reason: BadSignature},
		{name: "HS256 not accepted", token: seg(map[string]any{"alg": "HS256", "kid": authtest.RSAKeyID}) + "." + parts[1] + ".c2ln", reason: BadSignature},

		{name: "alg none", token: authtest.Unsigned(t, map[string]any{"alg": "none", "kid": authtest.RSAKeyID}, rw), reason: Unsigned},
		{name: "alg None", token: authtest.Unsigned(t, map[string]any{"alg": "None", "kid": authtest.RSAKeyID}, rw), reason: Unsigned},
		{name: "alg none with a signature", token: seg(map[string]any{"alg": "none"}) + "." + parts[1] + "." + parts[2], reason: Unsigned},
		{name: "no alg", token: "e30.e30.", reason: Unsigned},
		{name: "RS256 with an empty signature", token: authtest.Unsigned(t, rsaHeader, rw), reason: Unsigned},

		{name: "two segments", token: parts[0] + "." + parts[1], reason: Malformed},
		{name: "header not JSON", token: seg("x")[:2] + "." + parts[1] + "." + parts[2], reason: Malformed},
		{name: "opaque token", token: "opaque-token", reason: Malformed},

		{name: "skewed x-ms-date", token: good, date: "Mon, 01 Jan 2024 01:00:00 GMT", reason: DateSkew},
	}
	for _, tt := range tests {
		for _, enc := range []bool{false, true} {
			auth := "type=aad&ver=1.0&sig=" + tt.token
			if enc {
				auth = url.QueryEscape(auth)
			}
			r := Request{Method: "POST", RawPath: "/dbs", Authorization: auth, Date: tt.date}
			got, err := v.Verify(r, now)
			if got != tt.want || reasonOf(err) != tt.reason {
				t.Errorf("%s (encoded %v): Verify = %v, %v (reason %v), want %v, reason %v", tt.name, enc, got, err, reasonOf(err), tt.want, tt.reason)
			}
			if e, ok := errors.AsType[*Error](err); ok && (e.Msg == "" || strings.Contains(e.Msg, "\n")) {
				t.Errorf("%s: Verify = %+v, want a one-line message", tt.name, e)
			}
		}
	}
}

// flip changes one character in the middle of a base64url string.
func flip(s string) string {
	b := []byte(s)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// TestAADModes checks what each mode does with an emulator token, the unsigned token of the
// hardening issue, and a signed token.
func TestAADModes(t *testing.T) {
	iss := authtest.NewIssuer(t)
	key := mustKey(t, emulatorKey)
	now := mustTime(t, emuDate)
	signed := iss.RS256(t, authtest.Claims(testIssuer, testAudience, now, roleRO))
	tokens := []string{emulatorJWT(t, now.Add(time.Hour)), "e30.e30.", signed}
	tests := []struct {
		mode    AADConfig
		want    [3]Access
		reasons [3]Reason
	}{
		{AADConfig{}, [3]Access{}, [3]Reason{Unsupported, Unsupported, Unsupported}},
		{AADConfig{Mode: AADEmulator}, [3]Access{ReadWrite, ReadWrite, ReadWrite}, [3]Reason{}},
		{verifiedAAD(t, iss), [3]Access{0, 0, ReadOnly}, [3]Reason{UnknownKey, Unsigned, 0}},
	}
	for _, tt := range tests {
		v := mustVerifier(t, Config{MasterKey: key, AAD: tt.mode})
		for i, tok := range tokens {
			r := Request{Method: "DELETE", RawPath: "/dbs/db", Authorization: "type=aad&ver=1.0&sig=" + tok, Date: emuDate}
			got, err := v.Verify(r, now)
			if got != tt.want[i] || reasonOf(err) != tt.reasons[i] {
				t.Errorf("mode %v, token %d: Verify = %v, %v, want %v, reason %v", tt.mode.Mode, i, got, err, tt.want[i], tt.reasons[i])
			}
		}
		// Master-key signatures are unaffected by the AAD mode.
		r := Request{Method: "GET", RawPath: "/", Date: emuDate, Authorization: MasterToken(key, "GET", "", "", emuDate)}
		if got, err := v.Verify(r, now); got != ReadWrite || err != nil {
			t.Errorf("mode %v: master token: Verify = %v, %v, want ReadWrite", tt.mode.Mode, got, err)
		}
	}
}

func TestNewVerifierAAD(t *testing.T) {
	iss := authtest.NewIssuer(t)
	key := mustKey(t, emulatorKey)
	good := verifiedAAD(t, iss)
	noKeys, noIss, noAud := good, good, good
	noKeys.Keys = nil
	noIss.Issuers = nil
	noAud.Audiences = []string{}
	for name, c := range map[string]AADConfig{"no keys": noKeys, "no issuers": noIss, "no audiences": noAud, "unknown mode": {Mode: 7}} {
		if _, err := NewVerifier(Config{MasterKey: key, AAD: c}); !errors.Is(err, ErrBadAADConfig) {
			t.Errorf("NewVerifier(%s) = %v, want ErrBadAADConfig", name, err)
		}
	}
	// The Verifier copies its lists: later changes by the caller do not affect it.
	v := mustVerifier(t, Config{MasterKey: key, AAD: good})
	good.Issuers[0] = "https://evil"
	good.ReadWriteRoles[0] = "nobody"
	now := mustTime(t, emuDate)
	r := Request{Method: "POST", RawPath: "/dbs", Authorization: "type=aad&ver=1.0&sig=" + iss.RS256(t, authtest.Claims(testIssuer, testAudience, now, roleRW))}
	if got, err := v.Verify(r, now); got != ReadWrite || err != nil {
		t.Errorf("Verify after caller changed lists = %v, %v, want ReadWrite, nil", got, err)
	}
}

func TestParseJWKS(t *testing.T) {
	iss := authtest.NewIssuer(t)
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(iss.JWKS(), &doc); err != nil {
		t.Fatal(err)
	}
	rsaKey, ecKey := string(doc.Keys[0]), string(doc.Keys[1])
	jwk := func(k any, kid string) string {
		b, err := jose.JSONWebKey{Key: k, KeyID: kid}.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	ec384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edPub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	set := func(keys ...string) []byte { return []byte(`{"keys":[` + strings.Join(keys, ",") + `]}`) }
	encKey := strings.Replace(rsaKey, `"use":"sig"`, `"use":"enc"`, 1)
	tests := []struct {
		name string
		data []byte
		want int // usable keys; -1: an error
	}{
		{"RSA and EC", iss.JWKS(), 2},
		{"P-384", set(jwk(&ec384.PublicKey, "p384")), 1},
		{"Entra-like extra fields", set(strings.Replace(rsaKey, `{`, `{"x5t":"`+base64.RawURLEncoding.EncodeToString(make([]byte, 20))+`","issuer":"https://login.example.net/{tenantid}/v2.0",`, 1)), 1},
		{"encryption key skipped", set(encKey, ecKey), 1},
		{"Ed25519 key skipped", set(jwk(edPub, "ed"), rsaKey), 1},
		{"unknown kty skipped", set(`{"kty":"XYZ","kid":"x"}`, rsaKey), 1},

		{"not JSON", []byte("nope"), -1},
		{"no keys member", []byte(`{}`), -1},
		{"empty", set(), -1},
		{"only an encryption key", set(encKey), -1},
		{"no kid", set(jwk(&iss.EC.PublicKey, "")), -1},
		{"symmetric", set(`{"kty":"oct","kid":"h","k":"c2VjcmV0"}`, rsaKey), -1},
		{"RSA private key", set(jwk(iss.RSA, "p")), -1},
		{"EC private key", set(jwk(iss.EC, "p")), -1},
		{"RSA-1024", set(jwk(&small.PublicKey, "small")), -1},
		{"malformed RSA key", set(`{"kty":"RSA","kid":"r","n":"AQAB"}`), -1},
	}
	for _, tt := range tests {
		ks, err := ParseJWKS(tt.data)
		switch {
		case tt.want < 0 && !errors.Is(err, ErrBadJWKS):
			t.Errorf("%s: ParseJWKS = %v, want ErrBadJWKS", tt.name, err)
		case tt.want >= 0 && (err != nil || ks.Len() != tt.want):
			t.Errorf("%s: ParseJWKS = %v, want %d keys", tt.name, err, tt.want)
		}
	}
}

func TestAADModeString(t *testing.T) {
	for m, want := range map[AADMode]string{AADOff: "off", AADEmulator: "emulator", AADVerified: "verified", 9: "AADMode(9)"} {
		if got := m.String(); got != want {
			t.Errorf("AADMode(%d).String() = %q, want %q", int(m), got, want)
		}
	}
}

// FuzzVerifySignedAAD checks that verifying arbitrary AAD tokens never panics, never grants
// access to a token other than the seeded valid ones, and always says why.
func FuzzVerifySignedAAD(f *testing.F) {
	iss := authtest.NewIssuer(f)
	now := mustTime(f, emuDate)
	rw := authtest.Claims(testIssuer, testAudience, now, roleRW)
	valid := map[string]bool{iss.RS256(f, rw): true, iss.ES256(f, rw): true}
	for tok := range valid {
		f.Add(tok)
		f.Add(flip(tok))
	}
	f.Add("e30.e30.")
	f.Add(authtest.Unsigned(f, map[string]any{"alg": "none", "kid": authtest.RSAKeyID}, rw))
	f.Add(emulatorJWT(f, now.Add(time.Hour)))
	v := mustVerifier(f, Config{MasterKey: mustKey(f, emulatorKey), AAD: verifiedAAD(f, iss)})
	f.Fuzz(func(t *testing.T, token string) {
		r := Request{Method: "POST", RawPath: "/dbs", Authorization: "type=aad&ver=1.0&sig=" + token}
		got, err := v.Verify(r, now)
		if err == nil {
			// Any token that verifies must be one the issuer signed (base64 padding or
			// trailing bits aside, which go-jose rejects), so it is a seed.
			if got != ReadWrite {
				t.Fatalf("Verify(%q) = %v, nil, want ReadWrite", token, got)
			}
			return
		}
		e, ok := errors.AsType[*Error](err)
		if !ok || e.Reason < Missing || e.Reason > lastReason || e.Msg == "" || got != 0 {
			t.Fatalf("Verify(%q) = %v, %#v, want 0 and an *Error with a reason and message", token, got, err)
		}
	})
}
