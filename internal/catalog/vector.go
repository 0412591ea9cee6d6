package catalog

import (
	"fmt"
	"strings"

	"github.com/valyala/fastjson"
)

// checkVectorPolicy checks a container's vectorEmbeddingPolicy and its
// indexing policy's vectorIndexes as Cosmos DB does, before they are stored
// (Partita keeps them and returns them, and runs no vector search:
// VectorDistance is refused). Taken unchecked, a policy Cosmos DB refuses
// (an unknown data type, dimensions of -3, an index on a path no embedding
// names) was stored (an SDK hunt).
func checkVectorPolicy(policy, indexing *fastjson.Value) error {
	dims := map[string]int{} // path → dimensions
	if policy != nil && policy.Type() != fastjson.TypeNull {
		if policy.Type() != fastjson.TypeObject {
			return invalid("vectorEmbeddingPolicy must be an object")
		}
		embs := policy.Get("vectorEmbeddings")
		if embs != nil && embs.Type() != fastjson.TypeNull && embs.Type() != fastjson.TypeArray {
			return invalid("vectorEmbeddingPolicy.vectorEmbeddings must be an array")
		}
		for i, e := range policy.GetArray("vectorEmbeddings") {
			where := fmt.Sprintf("vectorEmbeddingPolicy.vectorEmbeddings[%d]", i)
			path := string(e.GetStringBytes("path"))
			if !strings.HasPrefix(path, "/") || len(path) < 2 || strings.ContainsAny(path, "*?") {
				return invalid(fmt.Sprintf("%s.path %q must be a path to a property, such as /embedding", where, path))
			}
			if _, ok := dims[path]; ok {
				return invalid(fmt.Sprintf("%s.path %q is given twice", where, path))
			}
			// Each of the three may be left out (a type as "", as the Go
			// SDK sends one it was not given): Cosmos DB's defaults are
			// float32, cosine and 1,536 dimensions.
			if dt := e.Get("dataType"); dt != nil && !oneOf(string(dt.GetStringBytes()), "", "float32", "float16", "uint8", "int8") {
				return invalid(fmt.Sprintf("%s.dataType %s is invalid: want float32, float16, uint8 or int8", where, dt))
			}
			if df := e.Get("distanceFunction"); df != nil && !oneOf(string(df.GetStringBytes()), "", "euclidean", "cosine", "dotproduct") {
				return invalid(fmt.Sprintf("%s.distanceFunction %s is invalid: want euclidean, cosine or dotproduct", where, df))
			}
			n := 1536
			if d := e.Get("dimensions"); d != nil {
				var err error
				if n, err = d.Int(); err != nil || n < 1 || n > 4096 {
					return invalid(fmt.Sprintf("%s.dimensions %s is invalid: want an integer from 1 to 4096", where, d))
				}
			}
			dims[path] = n
		}
	}
	if indexing == nil {
		return nil
	}
	for i, x := range indexing.GetArray("vectorIndexes") {
		where := fmt.Sprintf("indexingPolicy.vectorIndexes[%d]", i)
		path := string(x.GetStringBytes("path"))
		n, ok := dims[path]
		if !ok {
			return invalid(fmt.Sprintf("%s.path %q is not a path of the vectorEmbeddingPolicy", where, path))
		}
		switch typ := string(x.GetStringBytes("type")); {
		case !oneOf(typ, "flat", "quantizedFlat", "diskANN"):
			return invalid(fmt.Sprintf("%s.type %q is invalid: want flat, quantizedFlat or diskANN", where, typ))
		case typ == "flat" && n > 505:
			return invalid(fmt.Sprintf("%s: a flat index takes at most 505 dimensions; %s has %d", where, path, n))
		}
	}
	return nil
}

// oneOf reports whether s is one of the values, compared case-insensitively.
func oneOf(s string, values ...string) bool {
	for _, v := range values {
		if strings.EqualFold(s, v) {
			return true
		}
	}
	return false
}
