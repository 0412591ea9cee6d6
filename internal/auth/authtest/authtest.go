// Package authtest issues AAD (Microsoft Entra ID-style) test tokens: an Issuer holds an RSA
// and an EC signing key, publishes them as a JWKS, and signs JWTs with any header and claims,
// including ones a verifier must refuse (unknown kid, wrong algorithm, tampered). Tokens are
// signed with crypto/rsa and crypto/ecdsa directly (RFC 7515, RFC 7518 §3.3 and §3.4), not
// with the JOSE library package auth verifies with, so tests check the two against each
// other. Import it from tests only.
package authtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Key ids of an Issuer's keys in its JWKS and token headers.
const (
	RSAKeyID = "test-rsa-1"
	ECKeyID  = "test-ec-1"
)

// Issuer is a token issuer with an RSA-2048 key (RS256) and an ECDSA P-256 key (ES256).
type Issuer struct {
	RSA *rsa.PrivateKey
	EC  *ecdsa.PrivateKey
}

// NewIssuer returns an Issuer with freshly generated keys.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("authtest: RSA key: %v", err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("authtest: EC key: %v", err)
	}
	return &Issuer{RSA: rk, EC: ek}
}

// JWKS returns the issuer's public keys as a JSON Web Key Set.
func (i *Issuer) JWKS() []byte {
	b64 := base64.RawURLEncoding.EncodeToString
	pub, err := i.EC.PublicKey.Bytes() // uncompressed point: 0x04 || X || Y
	if err != nil {
		panic(err) // a P-256 key always encodes
	}
	keys := []map[string]string{
		{"kty": "RSA", "use": "sig", "kid": RSAKeyID, "alg": "RS256",
			"n": b64(i.RSA.N.Bytes()), "e": b64(big.NewInt(int64(i.RSA.E)).Bytes())},
		{"kty": "EC", "use": "sig", "kid": ECKeyID, "crv": "P-256",
			"x": b64(pub[1:33]), "y": b64(pub[33:])},
	}
	b, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		panic(err)
	}
	return b
}

// WriteJWKS writes the issuer's JWKS to a file in t.TempDir() and returns its path.
func (i *Issuer) WriteJWKS(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, i.JWKS(), 0o600); err != nil {
		t.Fatalf("authtest: %v", err)
	}
	return path
}

// Claims returns the claims of a token valid from now for an hour: iss, aud, iat, nbf, exp,
// and roles. Tests change or delete entries to build bad tokens.
func Claims(issuer, audience string, now time.Time, roles ...string) map[string]any {
	return map[string]any{
		"iss": issuer, "aud": audience, "sub": "test-principal", "oid": "00000000-0000-0000-0000-000000000001",
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(), "roles": roles,
	}
}

// RS256 returns a token signed by the issuer's RSA key, with kid RSAKeyID.
func (i *Issuer) RS256(t testing.TB, claims map[string]any) string {
	t.Helper()
	return Sign(t, i.RSA, map[string]any{"typ": "JWT", "alg": "RS256", "kid": RSAKeyID}, claims)
}

// ES256 returns a token signed by the issuer's EC key, with kid ECKeyID.
func (i *Issuer) ES256(t testing.TB, claims map[string]any) string {
	t.Helper()
	return Sign(t, i.EC, map[string]any{"typ": "JWT", "alg": "ES256", "kid": ECKeyID}, claims)
}

// Sign returns the compact JWS of claims with header, signed with key: an *rsa.PrivateKey
// signs RS256 (PKCS #1 v1.5, SHA-256) and an *ecdsa.PrivateKey ES256 (P-256, SHA-256, r||s),
// whatever header's alg says, so tests can lie about it.
func Sign(t testing.TB, key crypto.Signer, header, claims map[string]any) string {
	t.Helper()
	input := segment(t, header) + "." + segment(t, claims)
	sum := sha256.Sum256([]byte(input))
	var sig []byte
	switch k := key.(type) {
	case *rsa.PrivateKey:
		s, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
		if err != nil {
			t.Fatalf("authtest: sign: %v", err)
		}
		sig = s
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
		if err != nil {
			t.Fatalf("authtest: sign: %v", err)
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:])
	default:
		t.Fatalf("authtest: cannot sign with %T", key)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// Unsigned returns header.claims. with an empty signature, as alg "none" tokens are.
func Unsigned(t testing.TB, header, claims map[string]any) string {
	t.Helper()
	return segment(t, header) + "." + segment(t, claims) + "."
}

func segment(t testing.TB, v map[string]any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("authtest: %v", err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
