// Package auth owns request authentication for the Cosmos DB REST protocol: deriving the
// resource type and link a client signed from the URL path (Resource), building and signing
// the master-key string-to-sign (Payload, Sign, MasterToken), parsing the Authorization
// header, verifying master-key HMAC signatures (read-write and read-only keys), handling
// type=aad (Microsoft Entra ID) tokens, and issuing and verifying resource tokens, the _token
// of a permission (Verifier; resource.go).
//
// The wire rules implemented here are those of docs/cosmos-wire-protocol.md §2:
//
//	payload = lower(verb) \n lower(resourceType) \n resourceLink \n lower(x-ms-date) \n \n
//	sig     = base64(HMAC-SHA256(base64decode(accountKey), payload))
//	header  = percent-encode("type=master&ver=1.0&sig=" + sig)
//
// AAD tokens are handled in one of three modes (AADConfig.Mode): refused (AADOff, the zero
// value); accepted unsigned as the Cosmos DB emulator does (AADEmulator: any well-formed,
// unexpired JWT gives read-write access, for emulator compatibility only); or verified
// (AADVerified: signature against a JWKS parsed by ParseJWKS, issuer, audience, exp/nbf/iat
// within AADLeeway, and a role or scope mapped to read-only or read-write). JOSE parsing and
// signature checks are github.com/go-jose/go-jose/v4's, not hand-rolled.
//
// A resource token is signed with a key derived from the master key and carries its Grant:
// the permission it was issued for and so its scope, mode and validity. Verifying one yields
// a Principal with access Scoped and that Grant; whether the grant covers a request, and
// whether its permission still exists unchanged, is the caller's (api) to check.
//
// Everything here is a pure function or a small value type: no HTTP server code, no clock
// (callers pass now), no file reads (callers pass the JWKS bytes), no logging. A *Verifier
// and a *KeySet are safe for concurrent use. Failures are returned as *Error, whose Reason
// says which kind and whose Msg is safe to send to clients.
package auth
