package auth

import (
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"

	jose "github.com/go-jose/go-jose/v4"
)

// ErrBadJWKS is returned by ParseJWKS for a key set it cannot use.
var ErrBadJWKS = errors.New("auth: bad JWKS")

// minRSABits is the smallest RSA modulus accepted in a key set (NIST SP 800-131A).
const minRSABits = 2048

// aadAlgorithms are the JWS algorithms an AAD token may be signed with: RSA (PKCS #1 v1.5,
// what Microsoft Entra ID uses, and PSS) and ECDSA. Symmetric (HS*) and "none" are never
// accepted: an HMAC key would have to be shared with every token issuer.
var aadAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
}

// KeySet is a parsed JSON Web Key Set (RFC 7517): the public keys AAD tokens may be signed
// with, by key id. Build it with ParseJWKS; it is immutable and safe for concurrent use.
type KeySet struct {
	keys []jose.JSONWebKey // RSA (≥2048 bits) or ECDSA public signing keys, each with a kid
}

// ParseJWKS parses a JWKS document such as Microsoft Entra ID's
// https://login.microsoftonline.com/{tenant}/discovery/v2.0/keys. As RFC 7517 §5 advises,
// keys of a type it does not use (Ed25519, post-quantum, unknown kty) and keys whose "use" is
// not "sig" are skipped. It returns an error wrapping ErrBadJWKS when data is not a JWKS, when
// a key is malformed, symmetric ("oct"), holds private key material, is an RSA key shorter
// than 2048 bits, or has no kid (tokens name their key by kid), or when no usable key remains.
func ParseJWKS(data []byte) (*KeySet, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadJWKS, err)
	}
	if doc.Keys == nil {
		return nil, fmt.Errorf("%w: no \"keys\" array", ErrBadJWKS)
	}
	s := &KeySet{}
	for i, raw := range doc.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			if errors.Is(err, jose.ErrUnsupportedKeyType) {
				continue
			}
			return nil, fmt.Errorf("%w: key %d: %w", ErrBadJWKS, i, err)
		}
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		switch key := k.Key.(type) {
		case *rsa.PublicKey:
			if key.N.BitLen() < minRSABits {
				return nil, fmt.Errorf("%w: key %d (%q): RSA key of %d bits, want at least %d", ErrBadJWKS, i, k.KeyID, key.N.BitLen(), minRSABits)
			}
		case *ecdsa.PublicKey:
		case []byte:
			return nil, fmt.Errorf("%w: key %d (%q): symmetric keys are not accepted", ErrBadJWKS, i, k.KeyID)
		case *rsa.PrivateKey, *ecdsa.PrivateKey:
			return nil, fmt.Errorf("%w: key %d (%q): holds private key material; give the public keys only", ErrBadJWKS, i, k.KeyID)
		default:
			if !k.IsPublic() {
				return nil, fmt.Errorf("%w: key %d (%q): holds private key material; give the public keys only", ErrBadJWKS, i, k.KeyID)
			}
			continue // a public key of a type tokens here are not signed with (Ed25519, ML-DSA)
		}
		if k.KeyID == "" {
			return nil, fmt.Errorf("%w: key %d has no kid", ErrBadJWKS, i)
		}
		s.keys = append(s.keys, k)
	}
	if len(s.keys) == 0 {
		return nil, fmt.Errorf("%w: no RSA or EC signing key", ErrBadJWKS)
	}
	return s, nil
}

// Len returns the number of usable keys in s.
func (s *KeySet) Len() int { return len(s.keys) }

// byKID returns the keys whose kid is kid (RFC 7517 allows repeats, e.g. across key types).
func (s *KeySet) byKID(kid string) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range s.keys {
		if k.KeyID == kid {
			out = append(out, k)
		}
	}
	return out
}
