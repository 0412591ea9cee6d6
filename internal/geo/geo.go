// Package geo evaluates Cosmos DB's spatial query functions on GeoJSON geography: ST_DISTANCE,
// ST_WITHIN, ST_INTERSECTS, ST_ISVALID and ST_ISVALIDDETAILED over Point, LineString, Polygon
// and MultiPolygon in WGS-84 longitude/latitude degrees.
//
// Parse reads a geometry's "type" and "coordinates" (as encoding/json decodes them) into an
// immutable *Geometry, which may be invalid (Reason says why, in Cosmos DB's words where its
// documentation gives them). The predicates and Distance report ok false for an invalid
// geometry, which the query evaluator turns into undefined, as Cosmos DB does.
//
// The geography model is Cosmos DB's, which comes from SQL Server's geography type: shapes lie
// on the globe, edges are great-circle arcs, and a ring's interior is on its left, so a
// counter-clockwise ring encloses the small area inside it and a clockwise one the rest of the
// world (the Cosmos DB documentation: "a Polygon specified in clockwise order represents the
// inverse of the region within it"). Holes therefore run clockwise, as RFC 7946 asks.
// Containment and crossing are decided by github.com/golang/geo's s2 package, whose
// predicates are exact; two shapes closer than Touch count as touching. Distances are in
// meters along the WGS-84 ellipsoid: Vincenty's inverse formula between the two shapes'
// closest points, which are found on the sphere. The Cosmos DB documentation's ST_DISTANCE
// example (3345.2698 m and 1907438.4213 m) is reproduced to within 1e-7 of each distance.
//
// Not modelled: the Geometry spatial type (planar coordinates): the catalog refuses a container
// whose geospatialConfig is "Geometry", so every shape here is geography.
package geo

import (
	"fmt"
	"math"

	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
)

// Kind is a GeoJSON geometry type.
type Kind uint8

// The geometry types Cosmos DB supports.
const (
	KindPoint Kind = iota + 1
	KindLineString
	KindPolygon
	KindMultiPolygon
)

var kinds = map[string]Kind{
	"Point":        KindPoint,
	"LineString":   KindLineString,
	"Polygon":      KindPolygon,
	"MultiPolygon": KindMultiPolygon,
}

// Touch is how close two shapes must come to count as touching (intersecting, or a point
// lying on a line): 1e-11 radians, 0.06 mm on the ground. Coordinates given in degrees put a
// point that is meant to lie on an edge within about 1e-16 radians of it.
const Touch = s1.Angle(1e-11)

// Geometry is a parsed GeoJSON geometry. It is immutable and safe for concurrent use.
type Geometry struct {
	kind   Kind
	reason string // empty when valid
	// points are a Point's one point or a LineString's vertices, consecutive duplicates
	// removed.
	points []s2.Point
	// rings are a Polygon's or MultiPolygon's rings, each without its closing vertex and
	// with consecutive duplicates removed.
	rings [][]s2.Point
	// parts are the regions of a valid Polygon (one) or MultiPolygon (one per polygon; they
	// neither cross nor overlap).
	parts []*s2.Polygon
	// partRings are the rings of each part.
	partRings [][][]s2.Point
}

// containsPoint reports whether p lies inside g's polygons.
func (g *Geometry) containsPoint(p s2.Point) bool {
	for _, part := range g.parts {
		if part.ContainsPoint(p) {
			return true
		}
	}
	return false
}

// Kind returns g's type.
func (g *Geometry) Kind() Kind { return g.kind }

// Valid reports whether g is a valid geometry.
func (g *Geometry) Valid() bool { return g.reason == "" }

// Reason returns why g is not valid, or "" when it is.
func (g *Geometry) Reason() string { return g.reason }

// The reasons ST_ISVALIDDETAILED gives. Cosmos DB documents the latitude message and that of
// an open ring (the ST_ISVALIDDETAILED and spatial query pages); the others follow SQL Server's
// geography messages (24117, 24305), from which those come, and are Partita's wording.
const (
	reasonLatitude   = "Latitude values must be between -90 and 90 degrees."
	reasonLongitude  = "Longitude values must be between -180 and 180 degrees."
	reasonLineString = "The LineString input is not valid because it does not have enough distinct points. A LineString must have at least two distinct points."
	reasonAntipodal  = "The LineString input is not valid because two consecutive points are antipodal, so the edge between them is undefined."
	reasonNoRings    = "The Polygon input is not valid because it has no rings. A Polygon must have at least one ring."
	reasonRingsCross = "The Polygon input is not valid because its rings cross or overlap each other."
	reasonMultiCross = "The MultiPolygon input is not valid because its polygons cross or overlap each other."
	reasonNoPolygons = "The MultiPolygon input is not valid because it has no polygons."
)

func reasonRingOpen(n int) string {
	return fmt.Sprintf("The Polygon input is not valid because the start and end points of the ring number %d are not the same. Each ring of a Polygon must have the same start and end points.", n)
}

func reasonRingPoints(n int) string {
	return fmt.Sprintf("The Polygon input is not valid because the ring number %d does not have enough distinct points. Each ring of a Polygon must contain at least three distinct points.", n)
}

func reasonRingSelf(n int) string {
	return fmt.Sprintf("The Polygon input is not valid because the ring number %d crosses itself.", n)
}

// MaxPositions bounds the positions of a geometry Parse accepts: validation and the
// predicates compare edges pairwise, so a bigger geometry would make one row cost seconds.
// (Cosmos DB bounds the shapes of a query to 256 points: spatialMaxGeometryPointCount.)
const MaxPositions = 1024

// Parse reads a GeoJSON geometry of type typ from its coordinates, as encoding/json decodes
// them (arrays as []any, numbers as float64). It returns ok false when typ is not a type Cosmos
// DB supports, the coordinates are not shaped as typ's (positions are arrays of two or more
// numbers, longitude first), or there are more than MaxPositions of them; a well-shaped
// geometry that breaks a rule (latitude out of range, an open ring) is returned with its
// Reason.
func Parse(typ string, coordinates any) (g *Geometry, ok bool) {
	k, ok := kinds[typ]
	if !ok || countPositions(coordinates, 0) > MaxPositions {
		return nil, false
	}
	g = &Geometry{kind: k}
	switch k {
	case KindPoint:
		p, ok := position(coordinates)
		if !ok {
			return nil, false
		}
		g.reason = p.check()
		g.points = []s2.Point{p.point()}
	case KindLineString:
		ps, ok := positions(coordinates)
		if !ok {
			return nil, false
		}
		g.reason = g.lineString(ps)
	case KindPolygon:
		rings, ok := polygonRings(coordinates)
		if !ok {
			return nil, false
		}
		g.reason = g.polygons([][][]pos{rings})
	case KindMultiPolygon:
		arr, ok := coordinates.([]any)
		if !ok {
			return nil, false
		}
		polys := make([][][]pos, len(arr))
		for i, a := range arr {
			if polys[i], ok = polygonRings(a); !ok {
				return nil, false
			}
		}
		g.reason = g.polygons(polys)
	}
	return g, true
}

// countPositions counts the innermost arrays of coordinates (its positions), stopping early
// past MaxPositions.
func countPositions(v any, n int) int {
	arr, ok := v.([]any)
	if !ok || n > MaxPositions {
		return n
	}
	if len(arr) > 0 {
		if _, inner := arr[0].([]any); !inner {
			return n + 1
		}
	}
	for _, a := range arr {
		n = countPositions(a, n)
	}
	return n
}

// pos is a GeoJSON position.
type pos struct{ lng, lat float64 }

func position(v any) (pos, bool) {
	arr, ok := v.([]any)
	if !ok || len(arr) < 2 {
		return pos{}, false
	}
	for _, x := range arr {
		if _, ok := x.(float64); !ok {
			return pos{}, false
		}
	}
	return pos{lng: arr[0].(float64), lat: arr[1].(float64)}, true
}

func positions(v any) ([]pos, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	ps := make([]pos, len(arr))
	for i, a := range arr {
		if ps[i], ok = position(a); !ok {
			return nil, false
		}
	}
	return ps, true
}

func polygonRings(v any) ([][]pos, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	rings := make([][]pos, len(arr))
	for i, a := range arr {
		if rings[i], ok = positions(a); !ok {
			return nil, false
		}
	}
	return rings, true
}

// check returns the reason p is not a valid position, or "".
func (p pos) check() string {
	switch {
	case !(p.lat >= -90 && p.lat <= 90):
		return reasonLatitude
	case !(p.lng >= -180 && p.lng <= 180):
		return reasonLongitude
	}
	return ""
}

func (p pos) point() s2.Point { return s2.PointFromLatLng(s2.LatLngFromDegrees(p.lat, p.lng)) }

// points converts ps, dropping consecutive duplicates.
func points(ps []pos) []s2.Point {
	out := make([]s2.Point, 0, len(ps))
	for _, p := range ps {
		pt := p.point()
		if n := len(out); n == 0 || out[n-1] != pt {
			out = append(out, pt)
		}
	}
	return out
}

func checkAll(ps []pos) string {
	for _, p := range ps {
		if r := p.check(); r != "" {
			return r
		}
	}
	return ""
}

// lineString validates and sets a LineString's points.
func (g *Geometry) lineString(ps []pos) string {
	if r := checkAll(ps); r != "" {
		return r
	}
	g.points = points(ps)
	if len(g.points) < 2 {
		return reasonLineString
	}
	for i := 1; i < len(g.points); i++ {
		if g.points[i-1].Distance(g.points[i]) >= math.Pi-1e-12 {
			return reasonAntipodal
		}
	}
	return ""
}

// polygons validates the polygons of a Polygon (one) or MultiPolygon and sets rings and parts.
//
// s2's own validation (Loop.Validate, Polygon.Validate) does not yet look for crossing edges
// in this Go port, so the crossings are checked here: edges of a ring may meet only where they
// are adjacent, rings of a polygon may touch at vertices but not cross, and the polygons of a
// MultiPolygon may touch but neither cross nor overlap.
func (g *Geometry) polygons(polys [][][]pos) string {
	for _, rings := range polys {
		for _, ring := range rings {
			if r := checkAll(ring); r != "" {
				return r
			}
		}
	}
	if len(polys) == 0 {
		return reasonNoPolygons
	}
	var all [][]s2.Point
	var parts []*s2.Polygon
	for _, rings := range polys {
		if len(rings) == 0 {
			return reasonNoRings
		}
		var own [][]s2.Point
		for i, ring := range rings {
			n := i + 1
			if len(ring) == 0 || ring[0] != ring[len(ring)-1] {
				return reasonRingOpen(n)
			}
			pts := points(ring[:len(ring)-1])
			if len(pts) > 1 && pts[0] == pts[len(pts)-1] {
				pts = pts[:len(pts)-1] // the ring repeated its first point before closing
			}
			if distinct(pts) < 3 {
				return reasonRingPoints(n)
			}
			if s2.LoopFromPoints(pts).Validate() != nil || selfCrossing(pts) {
				return reasonRingSelf(n)
			}
			for _, other := range own {
				if ringsCross(pts, other) {
					return reasonRingsCross
				}
			}
			if i > 0 && !insideRing(pts, own[0]) {
				return reasonRingsCross // a hole outside its shell
			}
			own = append(own, pts)
		}
		part := polygonOf(own)
		if part.Validate() != nil {
			return reasonRingsCross // a hole outside its shell, or shells nested wrongly
		}
		for k, other := range parts {
			if overlap(own, part, g.partRings[k], other) {
				return reasonMultiCross
			}
		}
		all = append(all, own...)
		parts = append(parts, part)
		g.partRings = append(g.partRings, own)
	}
	g.rings, g.parts = all, parts
	return ""
}

// selfCrossing reports whether two edges of ring pts that are not adjacent meet.
func selfCrossing(pts []s2.Point) bool {
	n := len(pts)
	for i := range n {
		cr := s2.NewEdgeCrosser(pts[i], pts[(i+1)%n]) // one per edge: it allocates
		for j := i + 2; j < n; j++ {
			if i == 0 && j == n-1 {
				continue // the closing edge is adjacent to the first
			}
			if cr.CrossingSign(pts[j], pts[(j+1)%n]) != s2.DoNotCross {
				return true
			}
		}
	}
	return false
}

// insideRing reports whether every vertex of ring lies inside or on shell (the first ring of a
// polygon, whose interior is on its left).
func insideRing(ring, shell []s2.Point) bool {
	l := s2.LoopFromPoints(shell)
	for _, p := range ring {
		if !l.ContainsPoint(p) && distanceToRings(p, [][]s2.Point{shell}) > Touch {
			return false
		}
	}
	return true
}

// ringsCross reports whether an edge of ring a crosses one of ring b (sharing a vertex is
// allowed).
func ringsCross(a, b []s2.Point) bool {
	for i := range a {
		cr := s2.NewEdgeCrosser(a[i], a[(i+1)%len(a)])
		for j := range b {
			if cr.CrossingSign(b[j], b[(j+1)%len(b)]) == s2.Cross {
				return true
			}
		}
	}
	return false
}

// overlap reports whether two polygons of a MultiPolygon (rings and regions) cross or
// overlap: their edges cross, or a vertex of one lies inside the other and not on its
// boundary. Touching is allowed.
func overlap(aRings [][]s2.Point, a *s2.Polygon, bRings [][]s2.Point, b *s2.Polygon) bool {
	for _, ra := range aRings {
		for _, rb := range bRings {
			if ringsCross(ra, rb) {
				return true
			}
		}
	}
	inside := func(rings [][]s2.Point, poly *s2.Polygon, of [][]s2.Point) bool {
		for _, r := range of {
			for _, p := range r {
				if poly.ContainsPoint(p) && distanceToRings(p, rings) > Touch {
					return true
				}
			}
		}
		return false
	}
	return inside(bRings, b, aRings) || inside(aRings, a, bRings)
}

// distanceToRings returns the distance from p to the nearest edge of rings.
func distanceToRings(p s2.Point, rings [][]s2.Point) s1.Angle {
	d := s1.InfAngle()
	for _, r := range rings {
		for i := range r {
			d = min(d, s2.DistanceFromSegment(p, r[i], r[(i+1)%len(r)]))
		}
	}
	return d
}

// polygonOf builds the s2 polygon of rings, whose interiors are on their left. (It makes new
// loops each time: s2.PolygonFromOrientedLoops inverts the holes it is given.)
func polygonOf(rings [][]s2.Point) *s2.Polygon {
	loops := make([]*s2.Loop, len(rings))
	for i, r := range rings {
		loops[i] = s2.LoopFromPoints(r)
	}
	return s2.PolygonFromOrientedLoops(loops)
}

func distinct(pts []s2.Point) int {
	seen := make(map[s2.Point]bool, len(pts))
	for _, p := range pts {
		seen[p] = true
	}
	return len(seen)
}

// anyVertex calls fn for every vertex of g until it returns true, and reports whether it did.
func (g *Geometry) anyVertex(fn func(s2.Point) bool) bool {
	for _, p := range g.points {
		if fn(p) {
			return true
		}
	}
	for _, r := range g.rings {
		for _, p := range r {
			if fn(p) {
				return true
			}
		}
	}
	return false
}

// allVertices reports whether fn holds for every vertex of g.
func (g *Geometry) allVertices(fn func(s2.Point) bool) bool {
	return !g.anyVertex(func(p s2.Point) bool { return !fn(p) })
}

// edge is an edge of a line or ring.
type edge struct{ a, b s2.Point }

// edges returns g's edges: a LineString's, and every ring's including its closing edge. A
// Point has none.
func (g *Geometry) edges() []edge {
	var out []edge
	if g.kind == KindLineString {
		for i := 1; i < len(g.points); i++ {
			out = append(out, edge{g.points[i-1], g.points[i]})
		}
	}
	for _, r := range g.rings {
		for i := range r {
			out = append(out, edge{r[i], r[(i+1)%len(r)]})
		}
	}
	return out
}

// closest returns the closest pair of points of a's and b's boundaries (a Point is its own
// boundary) and their distance on the sphere.
func closest(a, b *Geometry) (pa, pb s2.Point, d s1.Angle) {
	d = s1.InfAngle()
	consider := func(x, y s2.Point) {
		if dd := x.Distance(y); dd < d {
			pa, pb, d = x, y, dd
		}
	}
	ea, eb := a.edges(), b.edges()
	switch {
	case a.kind == KindPoint && b.kind == KindPoint:
		consider(a.points[0], b.points[0])
	case a.kind == KindPoint:
		for _, e := range eb {
			consider(a.points[0], s2.Project(a.points[0], e.a, e.b))
		}
	case b.kind == KindPoint:
		for _, e := range ea {
			consider(s2.Project(b.points[0], e.a, e.b), b.points[0])
		}
	default:
		// s2.EdgePairClosestPoints, with one crossing test per edge of a rather than an
		// allocation per pair: crossing edges meet at their intersection; otherwise the
		// closest points include a vertex of one of them.
		for _, x := range ea {
			cr := s2.NewEdgeCrosser(x.a, x.b)
			for _, y := range eb {
				if cr.CrossingSign(y.a, y.b) == s2.Cross {
					p := s2.Intersection(x.a, x.b, y.a, y.b)
					return p, p, 0
				}
				consider(x.a, s2.Project(x.a, y.a, y.b))
				consider(x.b, s2.Project(x.b, y.a, y.b))
				consider(s2.Project(y.a, x.a, x.b), y.a)
				consider(s2.Project(y.b, x.a, x.b), y.b)
			}
		}
	}
	return pa, pb, d
}

// overlaps reports whether a lies partly inside b's polygons or b inside a's.
func overlaps(a, b *Geometry) bool {
	return b.parts != nil && a.anyVertex(b.containsPoint) || a.parts != nil && b.anyVertex(a.containsPoint)
}

// intersects reports whether valid geometries a and b share a point: one lies (partly)
// inside the other's polygon, or their boundaries touch or cross.
func intersects(a, b *Geometry) bool {
	if overlaps(a, b) {
		return true
	}
	_, _, d := closest(a, b)
	return d <= Touch
}

// Intersects is ST_INTERSECTS: whether a and b share a point (touching counts). ok is false
// when either is invalid.
func Intersects(a, b *Geometry) (result, ok bool) {
	if !a.Valid() || !b.Valid() {
		return false, false
	}
	return intersects(a, b), true
}

// Within is ST_WITHIN: whether a lies within b. A point on b's boundary lies within b when b
// is a LineString (on it) and as s2's point containment decides when b is a polygon (a point
// exactly on a shared edge belongs to exactly one of the polygons sharing it). A line is
// within a polygon when all of it is inside; a polygon within another when the other contains
// it (s2.Polygon.Contains, for each polygon of a MultiPolygon). Nothing but a point is within a point, and no polygon within a
// point or line. ok is false when either is invalid.
func Within(a, b *Geometry) (result, ok bool) {
	if !a.Valid() || !b.Valid() {
		return false, false
	}
	switch b.kind {
	case KindPoint:
		return a.kind == KindPoint && a.points[0].Distance(b.points[0]) <= Touch, true
	case KindLineString:
		if a.kind != KindPoint && a.kind != KindLineString {
			return false, true
		}
		be := b.edges()
		onLine := func(p s2.Point) bool {
			for _, e := range be {
				if s2.DistanceFromSegment(p, e.a, e.b) <= Touch {
					return true
				}
			}
			return false
		}
		for _, e := range a.edges() {
			if !onLine(midpoint(e)) {
				return false, true
			}
		}
		return a.allVertices(onLine), true
	}
	switch a.kind {
	case KindPoint:
		return b.containsPoint(a.points[0]), true
	case KindLineString:
		if !a.allVertices(b.containsPoint) {
			return false, true
		}
		be := b.edges()
		for _, x := range a.edges() {
			if !b.containsPoint(midpoint(x)) {
				return false, true
			}
			cr := s2.NewEdgeCrosser(x.a, x.b)
			for _, y := range be {
				if cr.CrossingSign(y.a, y.b) == s2.Cross {
					return false, true
				}
			}
		}
		return true, true
	}
	// Every polygon of a in one polygon of b (a polygon of a spread over two touching
	// polygons of b counts as not within).
	for _, pa := range a.parts {
		in := false
		for _, pb := range b.parts {
			if pb.Contains(pa) {
				in = true
				break
			}
		}
		if !in {
			return false, true
		}
	}
	return true, true
}

func midpoint(e edge) s2.Point { return s2.Interpolate(0.5, e.a, e.b) }

// Distance is ST_DISTANCE: the distance in meters between a and b along the WGS-84
// ellipsoid, 0 when they intersect. ok is false when either is invalid.
func Distance(a, b *Geometry) (meters float64, ok bool) {
	if !a.Valid() || !b.Valid() {
		return 0, false
	}
	if a.kind == KindPoint && b.kind == KindPoint {
		return geodesic(s2.LatLngFromPoint(a.points[0]), s2.LatLngFromPoint(b.points[0])), true
	}
	if overlaps(a, b) {
		return 0, true
	}
	pa, pb, d := closest(a, b)
	if d <= Touch {
		return 0, true
	}
	return geodesic(s2.LatLngFromPoint(pa), s2.LatLngFromPoint(pb)), true
}

// The WGS-84 ellipsoid.
const (
	wgs84A = 6378137.0
	wgs84F = 1 / 298.257223563
	wgs84B = wgs84A * (1 - wgs84F)
	// meanRadius is the WGS-84 mean radius (2a+b)/3, for the spherical fallback.
	meanRadius = (2*wgs84A + wgs84B) / 3
)

// geodesic returns the length in meters of the shortest path between p and q on the WGS-84
// ellipsoid, by Vincenty's inverse formula (T. Vincenty, Survey Review 23(176), 1975),
// accurate to well under a millimeter. For nearly antipodal points, where the formula does not
// converge, it returns the great-circle distance on a sphere of the mean radius, within 0.2%
// of the geodesic.
func geodesic(p, q s2.LatLng) float64 {
	const f = wgs84F
	L := q.Lng.Radians() - p.Lng.Radians()
	U1 := math.Atan((1 - f) * math.Tan(p.Lat.Radians()))
	U2 := math.Atan((1 - f) * math.Tan(q.Lat.Radians()))
	sinU1, cosU1 := math.Sincos(U1)
	sinU2, cosU2 := math.Sincos(U2)
	lambda := L
	for range 200 {
		sinL, cosL := math.Sincos(lambda)
		sinSigma := math.Hypot(cosU2*sinL, cosU1*sinU2-sinU1*cosU2*cosL)
		if sinSigma == 0 {
			return 0 // coincident points
		}
		cosSigma := sinU1*sinU2 + cosU1*cosU2*cosL
		sigma := math.Atan2(sinSigma, cosSigma)
		sinAlpha := cosU1 * cosU2 * sinL / sinSigma
		cos2Alpha := 1 - sinAlpha*sinAlpha
		cos2SigmaM := 0.0 // on the equator
		if cos2Alpha != 0 {
			cos2SigmaM = cosSigma - 2*sinU1*sinU2/cos2Alpha
		}
		C := f / 16 * cos2Alpha * (4 + f*(4-3*cos2Alpha))
		prev := lambda
		lambda = L + (1-C)*f*sinAlpha*(sigma+C*sinSigma*(cos2SigmaM+C*cosSigma*(-1+2*cos2SigmaM*cos2SigmaM)))
		if math.Abs(lambda-prev) < 1e-12 {
			u2 := cos2Alpha * (wgs84A*wgs84A - wgs84B*wgs84B) / (wgs84B * wgs84B)
			A := 1 + u2/16384*(4096+u2*(-768+u2*(320-175*u2)))
			B := u2 / 1024 * (256 + u2*(-128+u2*(74-47*u2)))
			deltaSigma := B * sinSigma * (cos2SigmaM + B/4*(cosSigma*(-1+2*cos2SigmaM*cos2SigmaM)-
				B/6*cos2SigmaM*(-3+4*sinSigma*sinSigma)*(-3+4*cos2SigmaM*cos2SigmaM)))
			return wgs84B * A * (sigma - deltaSigma)
		}
	}
	return p.Distance(q).Radians() * meanRadius
}
