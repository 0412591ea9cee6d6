package partition

import (
	"slices"
	"strconv"
	"strings"
)

// Kind is the kind of a partition key definition.
type Kind string

// The kinds of partition key definition.
const (
	// Hash is a single-path definition, hashed with V1 or V2.
	Hash Kind = "Hash"
	// MultiHash is a hierarchical definition of up to three paths, each
	// component hashed separately with V2.
	MultiHash Kind = "MultiHash"
)

// maxPaths is the most paths a hierarchical partition key may have.
const maxPaths = 3

// Definition is a container's partition key definition, as in the container's
// "partitionKey" property. Call [Definition.Normalize] before using a
// definition that came from a client.
type Definition struct {
	Paths   []string // JSON paths, e.g. ["/pk"]; up to 3 for MultiHash
	Kind    Kind     // Hash or MultiHash
	Version int      // hash version, 1 or 2 (MultiHash is always 2)
}

// DefinitionError reports an invalid partition key definition.
type DefinitionError struct {
	Msg string // what is wrong, e.g. `path "pk" must start with "/"`
}

// Error implements error.
func (e *DefinitionError) Error() string {
	return "partition: invalid partition key definition: " + e.Msg
}

// Normalize returns d with defaults filled as Cosmos DB clients expect
// (protocol doc §4.2): Kind Hash for one path and MultiHash for several when
// Kind is empty, and Version 2 when Version is 0. It then validates the
// result: 1 to 3 paths, each starting with "/" and without empty segments;
// Hash has exactly one path; Version is 1 or 2; MultiHash has Version 2. An
// invalid definition yields a *DefinitionError. The returned definition does
// not share d's Paths slice.
func (d Definition) Normalize() (Definition, error) {
	n := Definition{Paths: slices.Clone(d.Paths), Kind: d.Kind, Version: d.Version}
	if len(n.Paths) == 0 {
		return Definition{}, &DefinitionError{Msg: "no paths"}
	}
	if len(n.Paths) > maxPaths {
		return Definition{}, &DefinitionError{Msg: "more than 3 paths"}
	}
	for _, p := range n.Paths {
		if !strings.HasPrefix(p, "/") {
			return Definition{}, &DefinitionError{Msg: "path " + strconv.Quote(p) + ` must start with "/"`}
		}
		if slices.Contains(strings.Split(p[1:], "/"), "") {
			return Definition{}, &DefinitionError{Msg: "path " + strconv.Quote(p) + " has an empty segment"}
		}
	}
	if n.Kind == "" {
		n.Kind = Hash
		if len(n.Paths) > 1 {
			n.Kind = MultiHash
		}
	}
	if n.Version == 0 {
		n.Version = 2
	}
	if n.Version != 1 && n.Version != 2 {
		return Definition{}, &DefinitionError{Msg: "version must be 1 or 2"}
	}
	switch n.Kind {
	case Hash:
		if len(n.Paths) != 1 {
			return Definition{}, &DefinitionError{Msg: "kind Hash needs exactly one path; use MultiHash for several"}
		}
	case MultiHash:
		if n.Version != 2 {
			return Definition{}, &DefinitionError{Msg: "kind MultiHash needs version 2"}
		}
	default:
		return Definition{}, &DefinitionError{Msg: "unknown kind " + strconv.Quote(string(n.Kind))}
	}
	return n, nil
}

// scheme is the hashing scheme a definition selects.
type scheme uint8

const (
	schemeInvalid scheme = iota
	schemeV1
	schemeV2
	schemeMulti
)

// scheme reports which hashing scheme d uses; schemeInvalid when d's Kind and
// Version are not a valid (normalized) combination. It does not check paths.
func (d Definition) scheme() scheme {
	switch {
	case d.Kind == Hash && d.Version == 1:
		return schemeV1
	case d.Kind == Hash && d.Version == 2:
		return schemeV2
	case d.Kind == MultiHash && d.Version == 2:
		return schemeMulti
	}
	return schemeInvalid
}
