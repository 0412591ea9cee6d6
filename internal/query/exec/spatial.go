package exec

import (
	"math"

	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"

	"github.com/partitadb/partita/internal/geo"
	"github.com/partitadb/partita/internal/query/parse"
)

// The spatial functions (package geo has the geometry). A value that is not a GeoJSON object
// of a supported type, or a geometry that is not valid, makes ST_DISTANCE, ST_WITHIN,
// ST_INTERSECTS and ST_AREA undefined, as in Cosmos DB; ST_ISVALID and ST_ISVALIDDETAILED are undefined
// for what is not GeoJSON and report the reason a geometry is not valid. Spatial indexes are
// not used: a spatial filter reads its whole scope (or what another filter's index narrows
// it to), with or without a spatial index in the policy.

// lookupSpatial returns the spatial function named upper.
func lookupSpatial(upper string) (builtin, bool) {
	switch upper {
	case "ST_DISTANCE", "ST_WITHIN", "ST_INTERSECTS":
		op := spatialOp(upper)
		return builtin{2, 2, func(a []value) value {
			g1, ok1 := geometryOf(a[0])
			g2, ok2 := geometryOf(a[1])
			if !ok1 || !ok2 {
				return undef
			}
			return op(g1, g2)
		}}, true
	case "ST_AREA":
		return builtin{1, 1, func(a []value) value { return area(a[0]) }}, true
	case "ST_ISVALID":
		return builtin{1, 1, func(a []value) value {
			g, ok := geometryOf(a[0])
			if !ok {
				return undef
			}
			return boolean(g.Valid())
		}}, true
	case "ST_ISVALIDDETAILED":
		return builtin{1, 1, func(a []value) value {
			g, ok := geometryOf(a[0])
			if !ok {
				return undef
			}
			obj := &composite{keys: []string{"valid"}, elems: []value{boolean(g.Valid())}}
			if !g.Valid() {
				obj.keys = append(obj.keys, "reason")
				obj.elems = append(obj.elems, str(g.Reason()))
			}
			return value{k: kObj, c: obj}
		}}, true
	}
	return builtin{}, false
}

// The WGS-84 ellipsoid (as package geo's ST_DISTANCE uses it), and for ST_AREA its
// authalic sphere: the sphere of the same surface area, onto which authalicLat maps the
// ellipsoid preserving areas.
const (
	wgs84A  = 6378137.0
	wgs84F  = 1 / 298.257223563
	wgs84E2 = wgs84F * (2 - wgs84F) // eccentricity squared
)

var (
	wgs84E   = math.Sqrt(wgs84E2)
	qPole    = authalicQ(math.Pi / 2)
	authalic = wgs84A * math.Sqrt(qPole/2) // the authalic radius, 6371007.18 m
)

// authalicQ is q(φ) of the authalic latitude (Snyder, Map Projections: A Working Manual,
// USGS 1395, eq. 3-12).
func authalicQ(lat float64) float64 {
	s := math.Sin(lat)
	return (1 - wgs84E2) * (s/(1-wgs84E2*s*s) - math.Log((1-wgs84E*s)/(1+wgs84E*s))/(2*wgs84E))
}

// authalicLat maps a geodetic latitude (radians) to the authalic sphere (eq. 3-11).
func authalicLat(lat float64) float64 {
	return math.Asin(max(-1, min(1, authalicQ(lat)/qPole)))
}

// area is ST_AREA: the area in square meters of a valid Polygon or MultiPolygon on the
// WGS-84 ellipsoid, 0 for a Point or LineString, undefined for what is not a valid
// geometry. A ring's interior is on its left, as for the other functions: a clockwise
// shell covers the rest of the world. The vertices are mapped to the authalic sphere,
// which keeps areas, and the polygon's area is taken there with great-circle edges (s2).
// The ellipsoid's geodesic edges map to curves slightly off those great circles; the error
// is far below a square meter for the shapes of the Cosmos DB page's example (its
// 735970283.0522614 m² comes out 735970283.11, 8e-11 off), growing with an edge's length.
func area(v value) value {
	g, ok := geometryOf(v)
	if !ok || !g.Valid() {
		return undef
	}
	switch g.Kind() {
	case geo.KindPoint, geo.KindLineString:
		return num(0)
	}
	coords, _ := plainCoordinates(v.get("coordinates"), 0)
	polys := coords.([]any)
	if g.Kind() == geo.KindPolygon {
		polys = []any{coords}
	}
	total := 0.0
	for _, p := range polys {
		var loops []*s2.Loop
		for _, r := range p.([]any) {
			ring := r.([]any)
			var pts []s2.Point
			for _, c := range ring[:len(ring)-1] { // without the closing position
				c := c.([]any)
				lat := authalicLat(c[1].(float64) * math.Pi / 180)
				pt := s2.PointFromLatLng(s2.LatLng{Lat: s1.Angle(lat), Lng: s1.Angle(c[0].(float64) * math.Pi / 180)})
				if len(pts) == 0 || pts[len(pts)-1] != pt {
					pts = append(pts, pt)
				}
			}
			if len(pts) > 1 && pts[0] == pts[len(pts)-1] {
				pts = pts[:len(pts)-1]
			}
			loops = append(loops, s2.LoopFromPoints(pts))
		}
		// The polygons of a valid MultiPolygon do not overlap: their areas add up.
		total += s2.PolygonFromOrientedLoops(loops).Area()
	}
	return num(total * authalic * authalic)
}

// spatialOp returns the two-geometry function of ST_DISTANCE, ST_WITHIN or ST_INTERSECTS.
func spatialOp(upper string) func(a, b *geo.Geometry) value {
	switch upper {
	case "ST_DISTANCE":
		return func(a, b *geo.Geometry) value {
			d, ok := geo.Distance(a, b)
			if !ok {
				return undef
			}
			return num(d)
		}
	case "ST_WITHIN":
		return func(a, b *geo.Geometry) value {
			r, ok := geo.Within(a, b)
			if !ok {
				return undef
			}
			return boolean(r)
		}
	}
	return func(a, b *geo.Geometry) value {
		r, ok := geo.Intersects(a, b)
		if !ok {
			return undef
		}
		return boolean(r)
	}
}

// geometryOf reads v as a GeoJSON geometry: false when it is not one.
func geometryOf(v value) (*geo.Geometry, bool) {
	if v.k != kObj {
		return nil, false
	}
	t := v.get("type")
	if t.k != kStr {
		return nil, false
	}
	coords, ok := plainCoordinates(v.get("coordinates"), 0)
	if !ok {
		return nil, false
	}
	return geo.Parse(t.s, coords)
}

// maxCoordinateDepth bounds the nesting of GeoJSON coordinates (a MultiPolygon's are 4 deep).
const maxCoordinateDepth = 4

// plainCoordinates converts a coordinates value into encoding/json's form for geo.Parse:
// arrays as []any and numbers as float64. Anything else, or deeper nesting than any geometry
// has, is not coordinates.
func plainCoordinates(v value, depth int) (any, bool) {
	switch v.k {
	case kNum:
		return v.n, true
	case kArr:
		if depth >= maxCoordinateDepth {
			return nil, false
		}
		out := make([]any, 0, v.length())
		ok := true
		v.each(func(_ string, e value) bool {
			var c any
			c, ok = plainCoordinates(e, depth+1)
			out = append(out, c)
			return ok
		})
		return out, ok
	}
	return nil, false
}

// constSpatial compiles ST_DISTANCE, ST_WITHIN or ST_INTERSECTS with an argument that is a
// constant (a literal or parameter, as a query's reference shape usually is): its geometry
// is parsed once, here, rather than for every row. ok is false when no argument is constant.
func (c *compiler) constSpatial(upper string, e *parse.Call, args []evalFn) (evalFn, bool) {
	if upper != "ST_DISTANCE" && upper != "ST_WITHIN" && upper != "ST_INTERSECTS" || len(args) != 2 {
		return nil, false
	}
	var fixed [2]*geo.Geometry
	some := false
	for i, a := range e.Args {
		if !isConstExpr(a) {
			continue
		}
		// Compiled again on its own, outside any grouping, so that it reads nothing of a
		// row: a constant needs no environment.
		fn, err := c.expr(a, ectx{sc: &scope{}})
		if err != nil {
			return nil, false // reported by the caller's own compilation
		}
		g, ok := geometryOf(fn(&env{}))
		if !ok {
			return constant(undef), true // never a geometry: always undefined
		}
		fixed[i], some = g, true
	}
	if !some {
		return nil, false
	}
	op := spatialOp(upper)
	return func(en *env) value {
		var gs [2]*geo.Geometry
		for i, g := range fixed {
			if g == nil {
				var ok bool
				if g, ok = geometryOf(args[i](en)); !ok {
					return undef
				}
			}
			gs[i] = g
		}
		return op(gs[0], gs[1])
	}, true
}

// isConstExpr reports whether e's value is the same for every row: literals, parameters, and
// arrays, objects and operators made of them.
func isConstExpr(e parse.Expr) bool {
	switch x := e.(type) {
	case *parse.Literal, *parse.Param:
		return true
	case *parse.Unary:
		return isConstExpr(x.X)
	case *parse.Binary:
		return isConstExpr(x.X) && isConstExpr(x.Y)
	case *parse.ArrayLit:
		for _, el := range x.Elems {
			if !isConstExpr(el) {
				return false
			}
		}
		return true
	case *parse.ObjectLit:
		for _, f := range x.Fields {
			if !isConstExpr(f.Value) {
				return false
			}
		}
		return true
	}
	return false
}
