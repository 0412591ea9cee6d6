package synthkey

import (
	"errors"
	"fmt"
)

// Sentinel errors. Functions that read a property wrap them in a *PathError
// naming the path; match them with errors.Is.
var (
	// ErrInvalidPath: a property path is not of the form "/a" or "/a/b/…"
	// with non-empty segments, or the target path overlaps a source path.
	ErrInvalidPath = errors.New("synthkey: invalid property path")
	// ErrInvalidConfig: a Config is inconsistent (see New).
	ErrInvalidConfig = errors.New("synthkey: invalid config")
	// ErrMissing: the path does not resolve to a value in the item.
	ErrMissing = errors.New("synthkey: property missing")
	// ErrNull: the property is JSON null.
	ErrNull = errors.New("synthkey: property is null")
	// ErrNotScalar: the property is a JSON object or array.
	ErrNotScalar = errors.New("synthkey: property is an object or array")
	// ErrNumberRange: the property is a number that is not finite or whose
	// magnitude is 2^53 or more, which no JSON client represents exactly.
	ErrNumberRange = errors.New("synthkey: number out of range")
	// ErrUnsupportedType: the property holds a Go value that is not one of
	// JSON's (string, bool, a number type or json.Number, nil,
	// map[string]any, []any), or an invalid json.Number.
	ErrUnsupportedType = errors.New("synthkey: unsupported value type")
	// ErrNotTime: a TimeBucket's property is not a time (see TimeBucket).
	ErrNotTime = errors.New("synthkey: property is not a time")
	// ErrNotObject: the item, or a value on the target path, is not a JSON
	// object, so the key cannot be set there.
	ErrNotObject = errors.New("synthkey: not a JSON object")
	// ErrRandomSuffix: a random-suffix key cannot be recomputed for a point
	// read; read or query all of its FanOutKeys instead.
	ErrRandomSuffix = errors.New("synthkey: random suffix cannot be recomputed")
	// ErrNotFound: a fan-out read found the item under none of the keys.
	ErrNotFound = errors.New("synthkey: item not found under any key")
)

// PathError reports a problem with the property at Path (as written in the
// Config, e.g. "/vehicle/vin"). Err is one of the sentinels above.
type PathError struct {
	Path string
	Err  error
}

func (e *PathError) Error() string { return fmt.Sprintf("%v: %q", e.Err, e.Path) }

// Unwrap returns e.Err.
func (e *PathError) Unwrap() error { return e.Err }

// KeyError reports the failure of a fan-out request for one partition key
// value. Err is the SDK's error (an *azcore.ResponseError for a status) or
// the context's.
type KeyError struct {
	Key string
	Err error
}

func (e *KeyError) Error() string { return fmt.Sprintf("synthkey: partition key %q: %v", e.Key, e.Err) }

// Unwrap returns e.Err.
func (e *KeyError) Unwrap() error { return e.Err }
