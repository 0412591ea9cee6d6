// Package auth owns request authentication for the Cosmos DB REST protocol: deriving the
// resource type and link a client signed from the URL path (Resource), building and signing
// the master-key string-to-sign (Payload, Sign, MasterToken), parsing the Authorization
// header, and verifying master-key HMAC signatures (read-write and read-only keys) and
// emulator-style AAD tokens (Verifier).
//
// The wire rules implemented here are those of docs/cosmos-wire-protocol.md §2:
//
//	payload = lower(verb) \n lower(resourceType) \n resourceLink \n lower(x-ms-date) \n \n
//	sig     = base64(HMAC-SHA256(base64decode(accountKey), payload))
//	header  = percent-encode("type=master&ver=1.0&sig=" + sig)
//
// Everything here is a pure function or a small value type: no HTTP server code, no clock
// (callers pass now), no logging. A *Verifier is safe for concurrent use. Failures are
// returned as *Error, whose Reason says which kind and whose Msg is safe to send to clients.
package auth
