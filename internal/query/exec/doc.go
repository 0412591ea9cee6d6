// Package exec evaluates parsed Cosmos DB NoSQL queries over a stream of JSON documents.
//
// Compile checks a *parse.Query against the built-in functions and the query's parameters and
// turns it into a *Program, a tree of closures over slot-indexed variables. Program.Run
// evaluates it over one stream of documents (one partition's items, or a list of catalog
// resources) and returns the result rows as JSON. Programs are immutable: one Program may Run
// on many goroutines at once.
//
// Semantics follow Azure Cosmos DB: a missing property is undefined (not null), undefined
// propagates through operators and functions, comparing values of different types yields
// undefined, and WHERE keeps a row only when its filter is exactly true. SELECT VALUE drops
// undefined results and SELECT a, b omits undefined properties. ORDER BY sorts across types in
// the order undefined < null < false < true < numbers < strings < arrays < objects.
//
// Errors a client caused (unknown function, missing parameter, bad TOP value, ...) are
// *Error; anything else Run returns (a cancelled context, an unparsable document) is not.
//
// The spatial functions (ST_DISTANCE, ST_WITHIN, ST_INTERSECTS, ST_ISVALID,
// ST_ISVALIDDETAILED) evaluate GeoJSON geography with package geo; ST_AREA takes a
// polygon's area on the WGS-84 ellipsoid's authalic sphere (spatial.go).
//
// Not supported among the documented system functions: DATETIMEFORMAT, whose page does
// not say which format specifiers it accepts (and whose example is not .NET's formatting).
//
// FullTextContains, FullTextContainsAll and FullTextContainsAny analyze text as Cosmos DB's
// full-text search documents for English: tokens of letters and digits, stop words left out,
// Snowball stemming (textWords).
//
// Not yet supported: vector functions, ORDER BY RANK and FullTextScore, and ALL/FIRST/LAST
// subqueries.
package exec
