package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

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

// etagPath is the excluded path Cosmos DB adds to every indexing policy
// (except in mode none): the system property _etag is never indexed.
const etagPath = `/"_etag"/?`

// parseDefinition validates a container definition and normalises it: the
// partition key gets explicit kind and version (version 2 when absent, see
// protocol doc §4.2; 1 for a system key), the policies Cosmos DB defaults are
// filled in, and the indexing policy is completed as Cosmos DB returns it
// (normalizePolicy). All other properties are kept verbatim, so vector,
// full-text and other policies round-trip (a vector policy checked first:
// checkVectorPolicy).
//
// current is the container's partition key when body replaces its
// definition (nil on create): a replace may then omit the key's kind,
// version and systemKey (they keep their values), and paths equal to the
// current ones are not checked again (containers created before a rule
// was tightened stay replaceable).
// parseJSON parses body, what (a "container definition", say), with p,
// after checking it strictly (document.Validate): fastjson checks no
// string's contents, and a definition is stored and marshalled as it came.
func parseJSON(p *fastjson.Parser, what string, body []byte) (*fastjson.Value, error) {
	if err := document.Validate(body); err != nil {
		msg := err.Error()
		if ie, ok := errors.AsType[*document.InvalidError](err); ok {
			msg = ie.Msg
		}
		return nil, invalid(fmt.Sprintf("%s is invalid: %s", what, msg))
	}
	v, err := p.ParseBytes(body)
	if err != nil {
		return nil, invalid(fmt.Sprintf("%s is not valid JSON: %v", what, err))
	}
	return v, nil
}

func parseDefinition(body []byte, current *partition.Definition) (definition, error) {
	var p fastjson.Parser
	v, err := parseJSON(&p, "container definition", body)
	if err != nil {
		return definition{}, err
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
	pk, err := parsePKDefinition(obj.Get("partitionKey"), current)
	if err != nil {
		return definition{}, err
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
	if pk.SystemKey {
		norm.Set("systemKey", a.NewTrue())
	}
	obj.Set("partitionKey", norm)
	for _, name := range systemProps {
		obj.Del(name)
	}
	setDefault := func(name, raw string) {
		if obj.Get(name) == nil {
			obj.Set(name, fastjson.MustParse(raw))
		}
	}
	if ip := obj.Get("indexingPolicy"); ip != nil && ip.Type() == fastjson.TypeNull {
		obj.Del("indexingPolicy") // null is the default policy, and is returned as it
	}
	setDefault("indexingPolicy", defaultIndexingPolicy)
	setDefault("conflictResolutionPolicy", defaultConflictPolicy)
	if g := obj.Get("geospatialConfig"); g != nil && g.Type() == fastjson.TypeNull {
		obj.Del("geospatialConfig") // null is the default, as for the indexing policy
	}
	setDefault("geospatialConfig", defaultGeospatial)
	rawPolicy := document.AppendJSON(nil, obj.Get("indexingPolicy"))
	_, err = index.ParsePolicy(rawPolicy)
	if err == nil {
		err = index.CheckNew(rawPolicy)
	}
	if err != nil {
		if pe, ok := errors.AsType[*index.PolicyError](err); ok {
			return definition{}, invalid(pe.Error())
		}
		return definition{}, err
	}
	if err := checkVectorPolicy(obj.Get("vectorEmbeddingPolicy"), obj.Get("indexingPolicy")); err != nil {
		return definition{}, err
	}
	if err := checkGeospatial(obj.Get("geospatialConfig")); err != nil {
		return definition{}, err
	}
	normalizePolicy(&a, obj.Get("indexingPolicy"))
	if ttl := obj.Get("defaultTtl"); ttl != nil && ttl.Type() == fastjson.TypeNull {
		obj.Del("defaultTtl") // null is off, the default: returned without it, as Cosmos DB does
	}
	if ttl := obj.Get("defaultTtl"); ttl != nil {
		n, err := ttl.Int()
		if err != nil || n == 0 || n < -1 || n > math.MaxInt32 {
			return definition{}, invalid("defaultTtl must be -1 or a positive number of seconds")
		}
	}
	if _, err := parseUniqueKeys(obj.Get("uniqueKeyPolicy")); err != nil {
		return definition{}, err
	}
	return definition{id: id, pk: pk, body: document.AppendJSON(nil, v)}, nil
}

// parsePKDefinition reads and normalises a definition's partitionKey member
// pkv (nil when absent); current is as for parseDefinition. Paths are
// checked with Cosmos DB's rules and messages (document.ValidatePKPath).
func parsePKDefinition(pkv *fastjson.Value, current *partition.Definition) (partition.Definition, error) {
	if pkv == nil || pkv.Type() == fastjson.TypeNull {
		// Cosmos DB's answer to a container without a partition key on API
		// versions from 2018-12-31 on; the api layer gives older versions
		// the system key (partition.SystemKeyPath) before this point.
		return partition.Definition{}, invalid("A Partition key definition is not specified in the request.")
	}
	var pk partition.Definition
	if pkv.Type() != fastjson.TypeObject {
		return partition.Definition{}, invalid("partitionKey must be an object")
	}
	for _, pv := range pkv.GetArray("paths") {
		s, err := pv.StringBytes()
		if err != nil {
			return partition.Definition{}, invalid("partitionKey.paths must be strings")
		}
		pk.Paths = append(pk.Paths, string(s))
	}
	samePaths := current != nil && slices.Equal(pk.Paths, current.Paths)
	if k := pkv.Get("kind"); k != nil && k.Type() != fastjson.TypeNull {
		s, err := k.StringBytes()
		if err != nil {
			return partition.Definition{}, invalid("partitionKey.kind must be a string")
		}
		pk.Kind = partition.Kind(s)
	} else if samePaths {
		pk.Kind = current.Kind
	}
	if ver := pkv.Get("version"); ver != nil && ver.Type() != fastjson.TypeNull {
		n, err := ver.Int()
		if err != nil {
			return partition.Definition{}, invalid("partitionKey.version must be an integer")
		}
		pk.Version = n
	} else if samePaths {
		pk.Version = current.Version
	}
	switch sk := pkv.Get("systemKey"); {
	case sk == nil || sk.Type() == fastjson.TypeNull:
		pk.SystemKey = samePaths && current.SystemKey
	case sk.Type() == fastjson.TypeTrue:
		pk.SystemKey = true
	case sk.Type() != fastjson.TypeFalse:
		return partition.Definition{}, invalid("partitionKey.systemKey must be a boolean")
	}
	if !samePaths {
		for i, p := range pk.Paths {
			if err := document.ValidatePKPath(p); err != nil {
				if ie, ok := errors.AsType[*document.InvalidError](err); ok {
					return partition.Definition{}, invalid(ie.Msg)
				}
				return partition.Definition{}, err
			}
			if slices.Contains(pk.Paths[:i], p) {
				// A hierarchical key with one path twice, whose levels
				// would always be equal, was accepted (a hunt). Checked
				// for new paths only: a container made so before still
				// takes replaces.
				return partition.Definition{}, invalid("partitionKey: path '" + p + "' is given twice")
			}
		}
	}
	pk, err := pk.Normalize()
	if err != nil {
		if de, ok := errors.AsType[*partition.DefinitionError](err); ok {
			return partition.Definition{}, invalid("partitionKey: " + de.Msg)
		}
		return partition.Definition{}, err
	}
	return pk, nil
}

// normalizePolicy completes a valid indexing policy object the way Cosmos
// DB returns it, so a container read shows the policy in force:
// indexingMode (lower case; "consistent" when absent) and automatic (true)
// are explicit; includedPaths defaults to [{"path":"/*"}] (to [] in mode
// none, or when the root is excluded) and excludedPaths to []; and outside
// mode none the system path /"_etag"/? is appended to excludedPaths unless
// one of the lists names it. An {} policy thus becomes the default policy;
// legacy "indexes" arrays and every other member are kept as sent.
func normalizePolicy(a *fastjson.Arena, pol *fastjson.Value) {
	if pol == nil || pol.Type() != fastjson.TypeObject {
		return
	}
	present := func(name string) *fastjson.Value {
		if m := pol.Get(name); m != nil && m.Type() != fastjson.TypeNull {
			return m
		}
		return nil
	}
	mode := "consistent"
	if m := present("indexingMode"); m != nil {
		mode = strings.ToLower(string(m.GetStringBytes()))
	}
	pol.Set("indexingMode", a.NewString(mode))
	if present("automatic") == nil {
		pol.Set("automatic", a.NewTrue())
	}
	names := func(list string) []string {
		var out []string
		for _, it := range pol.GetArray(list) {
			out = append(out, string(it.GetStringBytes("path")))
		}
		return out
	}
	if present("includedPaths") == nil {
		inc := a.NewArray()
		if ex := names("excludedPaths"); mode != "none" && !slices.Contains(ex, "/*") && !slices.Contains(ex, "/") {
			inc.SetArrayItem(0, fastjson.MustParse(`{"path":"/*"}`))
		}
		pol.Set("includedPaths", inc)
	}
	if present("excludedPaths") == nil {
		pol.Set("excludedPaths", a.NewArray())
	}
	if mode == "none" {
		return
	}
	for _, list := range []string{"includedPaths", "excludedPaths"} {
		for _, p := range names(list) {
			if p == etagPath || p == "/_etag/?" {
				return
			}
		}
	}
	ex := pol.Get("excludedPaths")
	ex.SetArrayItem(len(ex.GetArray()), fastjson.MustParse(`{"path":`+strconv.Quote(etagPath)+`}`))
}

// conflictPolicy is a container's conflict resolution policy as it means:
// the mode (lower case) and, for last-writer-wins, the path (default
// /_ts), for a custom policy the procedure.
type conflictPolicy struct{ mode, path, procedure string }

// conflictPolicyOf reads the conflict resolution policy of a stored
// container definition (its default when absent or unreadable).
func conflictPolicyOf(body []byte) conflictPolicy {
	var d struct {
		P *struct {
			Mode      string `json:"mode"`
			Path      string `json:"conflictResolutionPath"`
			Procedure string `json:"conflictResolutionProcedure"`
		} `json:"conflictResolutionPolicy"`
	}
	p := conflictPolicy{mode: "lastwriterwins", path: "/_ts"}
	if json.Unmarshal(body, &d) != nil || d.P == nil {
		return p
	}
	if d.P.Mode != "" {
		p.mode = strings.ToLower(d.P.Mode)
	}
	switch {
	case p.mode == "lastwriterwins":
		if d.P.Path != "" {
			p.path = d.P.Path
		}
	default:
		p.path, p.procedure = "", d.P.Procedure
	}
	return p
}

// checkGeospatial checks a container's geospatialConfig. Geography (the
// default: WGS-84 longitude and latitude, the model package geo evaluates)
// is served; Geometry (planar coordinates, flat distances and areas) is
// refused as not supported rather than stored and evaluated as geography:
// ST_DISTANCE([0,0], [3,4]) answered 554,059 m where a Geometry container
// answers 5 (a container hunt).
func checkGeospatial(v *fastjson.Value) error {
	if v.Type() != fastjson.TypeObject {
		return invalid("geospatialConfig must be an object such as {\"type\":\"Geography\"}")
	}
	t := v.Get("type")
	if t == nil || t.Type() != fastjson.TypeString {
		return invalid("geospatialConfig.type must be a string: Geography or Geometry")
	}
	switch s := string(t.GetStringBytes()); {
	case strings.EqualFold(s, "Geography"):
		return nil
	case strings.EqualFold(s, "Geometry"):
		return invalid("geospatialConfig.type Geometry (planar coordinates) is not supported: Partita evaluates spatial functions on geography only; use Geography")
	default:
		return invalid(fmt.Sprintf("geospatialConfig.type %q is invalid: want Geography or Geometry", s))
	}
}
