package geo

import (
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"
)

// geom parses a GeoJSON object given as JSON text; it fails the test when it is not one.
func geom(t testing.TB, text string) *Geometry {
	t.Helper()
	var obj struct {
		Type        string `json:"type"`
		Coordinates any    `json:"coordinates"`
	}
	if err := json.Unmarshal([]byte(text), &obj); err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	g, ok := Parse(obj.Type, obj.Coordinates)
	if !ok {
		t.Fatalf("Parse(%s) is not a geometry", text)
	}
	return g
}

const (
	// The Cosmos DB documentation's examples: ST_DISTANCE's offices, ST_WITHIN's campus, and
	// the spatial query page's families polygon (its Wakefield family lives at [31.9, -4.8]).
	headquarters = `{"type":"Point","coordinates":[-122.12826822304672,47.63980239335718]}`
	research     = `{"type":"Point","coordinates":[-96.84368664765994,46.81297794314663]}`
	reference    = `{"type":"Point","coordinates":[-122.11758113953535,47.66901087006131]}`
	campus       = `{"type":"Polygon","coordinates":[[[-122.13236581015025,47.64606476313813],[-122.13221982500913,47.633757091363975],[-122.11840598103835,47.641749416109235],[-122.12061400629656,47.64589264786028],[-122.13236581015025,47.64606476313813]]]}`
	inCampus     = `{"type":"Point","coordinates":[-122.12824857332558,47.6395516675712]}`
	families     = `{"type":"Polygon","coordinates":[[[31.8,-5],[32,-5],[32,-4.7],[31.8,-4.7],[31.8,-5]]]}`

	// A 10°×10° square at the origin, counter-clockwise, with a 2°×2° hole (clockwise).
	square    = `{"type":"Polygon","coordinates":[[[0,0],[10,0],[10,10],[0,10],[0,0]]]}`
	holed     = `{"type":"Polygon","coordinates":[[[0,0],[10,0],[10,10],[0,10],[0,0]],[[4,4],[4,6],[6,6],[6,4],[4,4]]]}`
	clockwise = `{"type":"Polygon","coordinates":[[[0,0],[0,10],[10,10],[10,0],[0,0]]]}`
	twoSquare = `{"type":"MultiPolygon","coordinates":[[[[0,0],[10,0],[10,10],[0,10],[0,0]]],[[[20,0],[30,0],[30,10],[20,10],[20,0]]]]}`
)

// TestDistanceDocumentedExample: ST_DISTANCE's documented results, 3.345269817267368 km and
// 1907.438421299902 km, to within 1e-7 of each: Cosmos DB measures on the WGS-84 ellipsoid
// (a sphere would be off by 0.3%).
func TestDistanceDocumentedExample(t *testing.T) {
	ref := geom(t, reference)
	for _, tt := range []struct {
		from string
		want float64
	}{
		{headquarters, 3345.269817267368},
		{research, 1907438.421299902},
	} {
		got, ok := Distance(geom(t, tt.from), ref)
		if !ok || math.Abs(got-tt.want)/tt.want > 1e-7 {
			t.Errorf("Distance(%s, reference) = %v, %v; want %v", tt.from, got, ok, tt.want)
		}
		back, _ := Distance(ref, geom(t, tt.from))
		if math.Abs(back-got) > 1e-6 {
			t.Errorf("Distance is not symmetric: %v and %v", got, back)
		}
	}
}

func TestGeodesic(t *testing.T) {
	for _, tt := range []struct {
		name      string
		a, b      string
		want, tol float64
	}{
		{"same point", `[5,5]`, `[5,5]`, 0, 0},
		// One degree of longitude on the equator: a·π/180.
		{"equator", `[0,0]`, `[1,0]`, 6378137 * math.Pi / 180, 1e-6},
		// Pole to pole: twice the meridian quadrant, 10001965.729 m.
		{"meridian", `[0,-90]`, `[0,90]`, 2 * 10001965.729, 1e-3},
		// Nearly antipodal on the equator: the spherical fallback, within 0.2%.
		{"antipodal", `[0,0]`, `[179.9,0]`, 20003931, 20003931 * 0.002},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Distance(geom(t, `{"type":"Point","coordinates":`+tt.a+`}`), geom(t, `{"type":"Point","coordinates":`+tt.b+`}`))
			if !ok || math.Abs(got-tt.want) > tt.tol {
				t.Errorf("Distance(%s, %s) = %v, %v; want %v ± %v", tt.a, tt.b, got, ok, tt.want, tt.tol)
			}
		})
	}
}

func TestDistanceToShapes(t *testing.T) {
	pt := func(lng, lat string) string { return `{"type":"Point","coordinates":[` + lng + `,` + lat + `]}` }
	for _, tt := range []struct {
		name, a, b string
		want, tol  float64
	}{
		{"a point inside a polygon", pt("5", "5"), square, 0, 0},
		{"a point in its hole", pt("5", "5"), holed, 111195, 400}, // a degree to the hole's edge
		{"a point on the equator below a square", pt("5", "-1"), square, 110574, 50},
		{"a point on a line", pt("5", "0"), `{"type":"LineString","coordinates":[[0,0],[10,0]]}`, 0, 1e-6},
		{"a line crossing a polygon", `{"type":"LineString","coordinates":[[-5,5],[15,5]]}`, square, 0, 0},
		{"two squares a degree apart (closest at their top corners)", square, `{"type":"Polygon","coordinates":[[[11,0],[21,0],[21,10],[11,10],[11,0]]]}`, 109639, 5},
		{"crossing lines", `{"type":"LineString","coordinates":[[0,0],[2,2]]}`, `{"type":"LineString","coordinates":[[0,2],[2,0]]}`, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Distance(geom(t, tt.a), geom(t, tt.b))
			if !ok || math.Abs(got-tt.want) > tt.tol {
				t.Errorf("Distance = %v, %v; want %v ± %v", got, ok, tt.want, tt.tol)
			}
		})
	}
}

func TestWithinAndIntersects(t *testing.T) {
	pt := func(lng, lat string) string { return `{"type":"Point","coordinates":[` + lng + `,` + lat + `]}` }
	line := func(coords string) string { return `{"type":"LineString","coordinates":` + coords + `}` }
	for _, tt := range []struct {
		name             string
		a, b             string
		within, intersec bool
	}{
		{"the documented campus", inCampus, campus, true, true},
		{"headquarters' own point", headquarters, campus, true, true},
		{"the documented families polygon", pt("31.9", "-4.8"), families, true, true},
		{"outside the families polygon", pt("32.1", "-4.8"), families, false, false},
		{"inside a square", pt("5", "5"), square, true, true},
		{"outside a square", pt("15", "5"), square, false, false},
		{"in a hole", pt("5", "5"), holed, false, false},
		{"in the ring around a hole", pt("2", "2"), holed, true, true},
		{"a clockwise ring is the rest of the world", pt("15", "5"), clockwise, true, true},
		{"not inside a clockwise ring", pt("5", "5"), clockwise, false, false},
		{"in a MultiPolygon's second part", pt("25", "5"), twoSquare, true, true},
		{"between a MultiPolygon's parts", pt("15", "5"), twoSquare, false, false},
		{"a line inside a square", line(`[[1,1],[9,9]]`), square, true, true},
		{"a line leaving a square", line(`[[1,1],[15,5]]`), square, false, true},
		{"a line across a hole", line(`[[1,5],[9,5]]`), holed, false, true},
		{"a square within itself", square, square, true, true},
		{"a small square within a big one", `{"type":"Polygon","coordinates":[[[1,1],[2,1],[2,2],[1,2],[1,1]]]}`, square, true, true},
		{"a big square not within a small one", square, `{"type":"Polygon","coordinates":[[[1,1],[2,1],[2,2],[1,2],[1,1]]]}`, false, true},
		{"overlapping squares", square, `{"type":"Polygon","coordinates":[[[5,5],[15,5],[15,15],[5,15],[5,5]]]}`, false, true},
		{"a cross of two bars (no vertex inside the other)", `{"type":"Polygon","coordinates":[[[0,4],[10,4],[10,6],[0,6],[0,4]]]}`, `{"type":"Polygon","coordinates":[[[4,0],[6,0],[6,10],[4,10],[4,0]]]}`, false, true},
		{"a polygon in its hole", `{"type":"Polygon","coordinates":[[[4.5,4.5],[5.5,4.5],[5.5,5.5],[4.5,5.5],[4.5,4.5]]]}`, holed, false, false},
		{"crossing lines", line(`[[0,0],[2,2]]`), line(`[[0,2],[2,0]]`), false, true},
		{"disjoint lines", line(`[[0,0],[1,0]]`), line(`[[0,1],[1,1]]`), false, false},
		{"a point on a line", pt("5", "0"), line(`[[0,0],[10,0]]`), true, true},
		{"a line on a longer line", line(`[[0,0],[5,0]]`), line(`[[0,0],[10,0]]`), true, true},
		{"a point at a point", pt("1", "2"), pt("1", "2"), true, true},
		{"a point elsewhere", pt("1", "2"), pt("2", "1"), false, false},
		{"a polygon is not within a point", square, pt("5", "5"), false, true},
		{"a polygon touching another at an edge", square, `{"type":"Polygon","coordinates":[[[10,0],[20,0],[20,10],[10,10],[10,0]]]}`, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b := geom(t, tt.a), geom(t, tt.b)
			if got, ok := Within(a, b); !ok || got != tt.within {
				t.Errorf("Within = %v, %v; want %v", got, ok, tt.within)
			}
			if got, ok := Intersects(a, b); !ok || got != tt.intersec {
				t.Errorf("Intersects = %v, %v; want %v", got, ok, tt.intersec)
			}
			if got, _ := Intersects(b, a); got != tt.intersec {
				t.Errorf("Intersects(b, a) = %v; want %v (symmetric)", got, tt.intersec)
			}
		})
	}
}

// TestValidity: the documented reasons (a latitude out of range, an open ring) and the others.
func TestValidity(t *testing.T) {
	for _, tt := range []struct {
		geom, reason string
	}{
		{`{"type":"Point","coordinates":[-84.38876194345323,33.75682784306348]}`, ""},
		{`{"type":"Point","coordinates":[133.75682784306348,-184.38876194345323]}`, "Latitude values must be between -90 and 90 degrees."},
		{`{"type":"Point","coordinates":[31.9,-132.8]}`, "Latitude values must be between -90 and 90 degrees."},
		{`{"type":"Point","coordinates":[181,0]}`, "Longitude values must be between -180 and 180 degrees."},
		{`{"type":"Point","coordinates":[180,90,12.5]}`, ""},
		{`{"type":"Polygon","coordinates":[[[31.8,-5],[31.8,-4.7],[32,-4.7],[32,-5]]]}`,
			"The Polygon input is not valid because the start and end points of the ring number 1 are not the same. Each ring of a Polygon must have the same start and end points."},
		{`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]],[[0.5,0.2],[0.6,0.2],[0.5,0.2]]]}`,
			"The Polygon input is not valid because the ring number 2 does not have enough distinct points. Each ring of a Polygon must contain at least three distinct points."},
		{`{"type":"Polygon","coordinates":[[[0,0],[1,1],[1,0],[0,1],[0,0]]]}`, "The Polygon input is not valid because the ring number 1 crosses itself."},
		{`{"type":"Polygon","coordinates":[]}`, "The Polygon input is not valid because it has no rings. A Polygon must have at least one ring."},
		{`{"type":"Polygon","coordinates":[[[0,0],[10,0],[10,10],[0,10],[0,0]],[[5,5],[15,5],[15,15],[5,15],[5,5]]]}`, "The Polygon input is not valid because its rings cross or overlap each other."},
		{`{"type":"MultiPolygon","coordinates":[[[[0,0],[10,0],[10,10],[0,10],[0,0]]],[[[5,5],[15,5],[15,15],[5,15],[5,5]]]]}`, "The MultiPolygon input is not valid because its polygons cross or overlap each other."},
		{`{"type":"LineString","coordinates":[[1,1],[1,1]]}`, "The LineString input is not valid because it does not have enough distinct points. A LineString must have at least two distinct points."},
		{`{"type":"LineString","coordinates":[[1,1],[2,2],[1,1]]}`, ""},
		{square, ""}, {holed, ""}, {clockwise, ""}, {twoSquare, ""}, {campus, ""},
		// A MultiPolygon's parts may touch, but not nest.
		{`{"type":"MultiPolygon","coordinates":[[[[0,0],[10,0],[10,10],[0,10],[0,0]]],[[[10,0],[20,0],[20,10],[10,10],[10,0]]]]}`, ""},
		{`{"type":"MultiPolygon","coordinates":[[[[0,0],[10,0],[10,10],[0,10],[0,0]]],[[[2,2],[3,2],[3,3],[2,3],[2,2]]]]}`, "The MultiPolygon input is not valid because its polygons cross or overlap each other."},
		// A hole outside its shell.
		{`{"type":"Polygon","coordinates":[[[0,0],[10,0],[10,10],[0,10],[0,0]],[[20,20],[20,21],[21,21],[21,20],[20,20]]]}`, "The Polygon input is not valid because its rings cross or overlap each other."},
		// A ring that repeats points, and its first before closing.
		{`{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,0],[1,1],[0,0],[0,0]]]}`, ""},
	} {
		g := geom(t, tt.geom)
		if g.Reason() != tt.reason || g.Valid() != (tt.reason == "") {
			t.Errorf("%s: Reason = %q, want %q", tt.geom, g.Reason(), tt.reason)
		}
	}
	// Invalid geometries have no distance and no relations.
	bad, ok := geom(t, `{"type":"Point","coordinates":[0,100]}`), geom(t, square)
	if _, ok1 := Distance(bad, ok); ok1 {
		t.Errorf("Distance of an invalid point: ok")
	}
	if _, ok1 := Within(ok, bad); ok1 {
		t.Errorf("Within an invalid point: ok")
	}
	if _, ok1 := Intersects(bad, ok); ok1 {
		t.Errorf("Intersects with an invalid point: ok")
	}
}

// TestParseNotGeoJSON: what is not a GeoJSON geometry of a supported type is not parsed.
func TestParseNotGeoJSON(t *testing.T) {
	for _, tt := range []struct {
		typ    string
		coords string
	}{
		{"point", `[1,2]`},
		{"MultiPoint", `[[1,2]]`},
		{"GeometryCollection", `[]`},
		{"Point", `[1]`},
		{"Point", `[1,"2"]`},
		{"Point", `"1,2"`},
		{"Point", `null`},
		{"LineString", `[1,2]`},
		{"Polygon", `[[1,2],[3,4]]`},
		{"MultiPolygon", `[[[1,2]]]`},
		{"LineString", "[" + strings.Repeat("[1,2],", MaxPositions) + "[1,3]]"},
	} {
		var c any
		if err := json.Unmarshal([]byte(tt.coords), &c); err != nil {
			t.Fatal(err)
		}
		if g, ok := Parse(tt.typ, c); ok {
			t.Errorf("Parse(%q, %s) = %+v, want not a geometry", tt.typ, tt.coords, g)
		}
	}
}

// TestConcurrentUse: a Geometry is shared by the rows of a query and by parallel partitions.
func TestConcurrentUse(t *testing.T) {
	poly := geom(t, holed)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				p := geom(t, `{"type":"Point","coordinates":[`+json.Number(string(rune('0'+i))).String()+`.5,`+json.Number(string(rune('0'+j%10))).String()+`.5]}`)
				Within(p, poly)
				Intersects(poly, p)
				Distance(p, poly)
			}
		})
	}
	wg.Wait()
}

// BenchmarkLargePolygon: the costliest evaluation Parse allows, a polygon of MaxPositions
// vertices validated and tested against a line of 64.
func BenchmarkLargePolygon(b *testing.B) {
	ring := make([]any, 0, MaxPositions)
	for i := range MaxPositions - 1 {
		a := 2 * math.Pi * float64(i) / float64(MaxPositions-1)
		ring = append(ring, []any{10 * math.Cos(a), 10 * math.Sin(a)})
	}
	ring = append(ring, ring[0])
	line := make([]any, 64)
	for i := range line {
		line[i] = []any{-20 + 40*float64(i)/63, 15.0}
	}
	b.ReportAllocs()
	for b.Loop() {
		poly, ok := Parse("Polygon", []any{ring})
		l, _ := Parse("LineString", line)
		if !ok || !poly.Valid() {
			b.Fatal("polygon not valid")
		}
		Distance(l, poly)
		Intersects(l, poly)
	}
}
