package auth

// Reason is the kind of an authentication failure. The api layer maps every Reason to
// 401 Unauthorized, except BadPath (a malformed URL: 400), and NoRole (an authentic identity
// without permission) and ResourceExpired (an authentic resource token used outside its
// validity, as Cosmos DB answers it): 403 Forbidden.
type Reason int

const (
	// Missing: the request has no Authorization header.
	Missing Reason = iota + 1
	// Malformed: the Authorization header (or the AAD JWT or resource token in it) cannot be
	// parsed.
	Malformed
	// BadPath: the URL path has an invalid percent escape, so the signed link is unknown.
	BadPath
	// BadSignature: the master-token signature matches no configured key, a verified AAD
	// token's signature does not verify or uses an algorithm that is not accepted, or a
	// resource token was not issued by this server or was altered.
	BadSignature
	// DateMissing: a master-token request has no x-ms-date.
	DateMissing
	// DateInvalid: x-ms-date is not an RFC 1123 date.
	DateInvalid
	// DateSkew: x-ms-date is further than MaxSkew from the server's clock.
	DateSkew
	// TokenExpired: the AAD token's exp claim has passed.
	TokenExpired
	// Unsupported: a token type this server does not accept (SAS, unknown, or AAD when AAD
	// is not configured).
	Unsupported
	// Unsigned: an AAD token without a signature (alg "none" or absent, or an empty
	// signature) when AAD tokens must be verified.
	Unsigned
	// UnknownKey: a verified AAD token names no kid, or a kid not in the configured keys.
	UnknownKey
	// NotYetValid: a verified AAD token's nbf or iat lies in the future.
	NotYetValid
	// BadIssuer: a verified AAD token's iss is not an accepted issuer.
	BadIssuer
	// BadAudience: a verified AAD token's aud names none of the accepted audiences.
	BadAudience
	// NoRole: a verified AAD token carries no role or scope mapped to an access level.
	NoRole
	// ResourceExpired: a resource token (issued by this server, unaltered) is used after
	// its expiry.
	ResourceExpired

	lastReason = ResourceExpired
)

// String returns the Reason's name, e.g. "BadSignature".
func (r Reason) String() string {
	switch r {
	case Missing:
		return "Missing"
	case Malformed:
		return "Malformed"
	case BadPath:
		return "BadPath"
	case BadSignature:
		return "BadSignature"
	case DateMissing:
		return "DateMissing"
	case DateInvalid:
		return "DateInvalid"
	case DateSkew:
		return "DateSkew"
	case TokenExpired:
		return "TokenExpired"
	case Unsupported:
		return "Unsupported"
	case Unsigned:
		return "Unsigned"
	case UnknownKey:
		return "UnknownKey"
	case NotYetValid:
		return "NotYetValid"
	case BadIssuer:
		return "BadIssuer"
	case BadAudience:
		return "BadAudience"
	case NoRole:
		return "NoRole"
	case ResourceExpired:
		return "ResourceExpired"
	}
	return "Reason(?)"
}

// Error is an authentication failure. Reason says which kind; Msg is safe to send to the
// client (for BadSignature it quotes the payload the server signed, with newlines shown as
// `\n`, as the real service does). Match it with errors.AsType[*auth.Error] and compare
// Reason, never Msg.
type Error struct {
	Reason Reason
	Msg    string
	cause  error // ErrBadPath chain for BadPath; nil otherwise
}

// newError returns an *Error with reason r and message msg.
func newError(r Reason, msg string) *Error {
	return &Error{Reason: r, Msg: msg}
}

// Error returns Msg.
func (e *Error) Error() string { return e.Msg }

// Unwrap returns the underlying cause: an error wrapping ErrBadPath for BadPath, else nil.
func (e *Error) Unwrap() error { return e.cause }
