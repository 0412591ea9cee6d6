package catalog

import (
	"errors"
	"fmt"
	"math"

	"github.com/valyala/fastjson"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/index"
	"github.com/partitadb/partita/internal/partition"
)

// systemProps are removed from client-sent definitions: the server owns them.
var systemProps = []string{"_rid", "_self", "_etag", "_ts", "_docs", "_sprocs", "_triggers", "_udfs", "_conflicts"}

// Defaults Cosmos DB fills into a container definition that omits them.
const (
	defaultIndexingPolicy = `{"indexingMode":"consistent","automatic":true,"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/\"_etag\"/?"}]}`
	defaultConflictPolicy = `{"mode":"LastWriterWins","conflictResolutionPath":"/_ts","conflictResolutionProcedure":""}`
	defaultGeospatial     = `{"type":"Geography"}`
)

type definition struct {
	id   string
	pk   partition.Definition
	body []byte // normalised definition JSON without system properties
}

// parseDefinition validates a container definition and normalises it: the
// partition key gets explicit kind and version (version 2 when absent, see
// protocol doc §4.2), and the policies Cosmos DB defaults are filled in. All
// other properties are kept verbatim, so vector, full-text and other policies
// round-trip.
func parseDefinition(body []byte) (definition, error) {
	var p fastjson.Parser
	v, err := p.ParseBytes(body)
	if err != nil {
		return definition{}, invalid("container definition is not valid JSON: " + err.Error())
	}
	obj, err := v.Object()
	if err != nil {
		return definition{}, invalid("container definition must be a JSON object")
	}
	idv := obj.Get("id")
	if idv == nil {
		return definition{}, invalid("container definition has no id")
	}
	idb, err := idv.StringBytes()
	if err != nil {
		return definition{}, invalid("container id must be a string")
	}
	id := string(idb)
	if err := document.ValidateID(id); err != nil {
		if ie, ok := errors.AsType[*document.InvalidError](err); ok {
			return definition{}, invalid(ie.Msg)
		}
		return definition{}, err
	}
	pkv := obj.Get("partitionKey")
	if pkv == nil || pkv.Type() == fastjson.TypeNull {
		return definition{}, invalid("container definition has no partitionKey; Partita containers are always partitioned")
	}
	var pk partition.Definition
	if pkv.Type() != fastjson.TypeObject {
		return definition{}, invalid("partitionKey must be an object")
	}
	for _, pv := range pkv.GetArray("paths") {
		s, err := pv.StringBytes()
		if err != nil {
			return definition{}, invalid("partitionKey.paths must be strings")
		}
		pk.Paths = append(pk.Paths, string(s))
	}
	if k := pkv.Get("kind"); k != nil {
		s, err := k.StringBytes()
		if err != nil {
			return definition{}, invalid("partitionKey.kind must be a string")
		}
		pk.Kind = partition.Kind(s)
	}
	if ver := pkv.Get("version"); ver != nil && ver.Type() != fastjson.TypeNull {
		n, err := ver.Int()
		if err != nil {
			return definition{}, invalid("partitionKey.version must be an integer")
		}
		pk.Version = n
	}
	if sk := pkv.Get("systemKey"); sk != nil && sk.Type() == fastjson.TypeTrue {
		return definition{}, invalid("partition keys with systemKey are not supported by Partita")
	}
	pk, err = pk.Normalize()
	if err != nil {
		if de, ok := errors.AsType[*partition.DefinitionError](err); ok {
			return definition{}, invalid("partitionKey: " + de.Msg)
		}
		return definition{}, err
	}
	for _, p := range pk.Paths {
		if err := document.ValidatePKPath(p); err != nil {
			return definition{}, invalid(fmt.Sprintf("partitionKey path %q is invalid", p))
		}
	}
	var a fastjson.Arena
	norm := a.NewObject()
	paths := a.NewArray()
	for i, p := range pk.Paths {
		paths.SetArrayItem(i, a.NewString(p))
	}
	norm.Set("paths", paths)
	norm.Set("kind", a.NewString(string(pk.Kind)))
	norm.Set("version", a.NewNumberInt(pk.Version))
	obj.Set("partitionKey", norm)
	for _, name := range systemProps {
		obj.Del(name)
	}
	setDefault := func(name, raw string) {
		if obj.Get(name) == nil {
			obj.Set(name, fastjson.MustParse(raw))
		}
	}
	setDefault("indexingPolicy", defaultIndexingPolicy)
	setDefault("conflictResolutionPolicy", defaultConflictPolicy)
	setDefault("geospatialConfig", defaultGeospatial)
	if _, err := index.ParsePolicy(obj.Get("indexingPolicy").MarshalTo(nil)); err != nil {
		if pe, ok := errors.AsType[*index.PolicyError](err); ok {
			return definition{}, invalid(pe.Error())
		}
		return definition{}, err
	}
	if ttl := obj.Get("defaultTtl"); ttl != nil && ttl.Type() != fastjson.TypeNull {
		n, err := ttl.Int()
		if err != nil || n == 0 || n < -1 || n > math.MaxInt32 {
			return definition{}, invalid("defaultTtl must be -1 or a positive number of seconds")
		}
	}
	if _, err := parseUniqueKeys(obj.Get("uniqueKeyPolicy")); err != nil {
		return definition{}, err
	}
	return definition{id: id, pk: pk, body: v.MarshalTo(nil)}, nil
}
