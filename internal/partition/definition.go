package partition

import (
	"slices"
	"strconv"
	"strings"

	"github.com/partitadb/partita/internal/document"
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

// SystemKeyPath is the path of the system partition key Cosmos DB gives a
// non-partitioned container (one created by an API version before
// 2018-12-31 without a partition key): Hash, version 1, systemKey true.
const SystemKeyPath = "/_partitionKey"

// Definition is a container's partition key definition, as in the container's
// "partitionKey" property. Call [Definition.Normalize] before using a
// definition that came from a client.
type Definition struct {
	Paths   []string // JSON paths, e.g. ["/pk"]; up to 3 for MultiHash
	Kind    Kind     // Hash or MultiHash
	Version int      // hash version, 1 or 2 (MultiHash is always 2)
	// SystemKey marks the system key of a non-partitioned container
	// (Paths is [SystemKeyPath], Kind Hash). Its items without a
	// _partitionKey form the "none" partition, whose EPK is the empty EPK
	// (see [Definition.Hash]).
	SystemKey bool `json:",omitempty"`
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
// Hash has exactly one path; Version is 1 or 2; MultiHash has Version 2. A
// system key has Version 1 when Version is 0 (it predates version 2) and
// must be the Hash definition of [SystemKeyPath]. An invalid definition
// yields a *DefinitionError. The returned definition does not share d's
// Paths slice.
func (d Definition) Normalize() (Definition, error) {
	n := Definition{Paths: slices.Clone(d.Paths), Kind: d.Kind, Version: d.Version, SystemKey: d.SystemKey}
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
		if n.SystemKey {
			n.Version = 1
		}
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
	if n.SystemKey && (n.Kind != Hash || n.Paths[0] != SystemKeyPath) {
		return Definition{}, &DefinitionError{Msg: "systemKey is only valid on the Hash definition of " + strconv.Quote(SystemKeyPath)}
	}
	return n, nil
}

// Equal reports whether d and o are the same definition: paths, kind,
// version and system key.
func (d Definition) Equal(o Definition) bool {
	return slices.Equal(d.Paths, o.Paths) && d.Kind == o.Kind && d.Version == o.Version && d.SystemKey == o.SystemKey
}

// IsNone reports whether pk is the "none" value of a system key: the single
// Undefined component an item without a _partitionKey has. Cosmos DB keeps
// those items at the empty EPK (PartitionKeyInternal.Empty), and the SDKs
// address them with the header [] (or none at all).
func (d Definition) IsNone(pk document.PartitionKey) bool {
	return d.SystemKey && len(pk) == 1 && pk[0].Kind == document.Undefined
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
