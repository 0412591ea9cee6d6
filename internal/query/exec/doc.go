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
// Paging is the caller's, with what the Program tells it: Stream and StreamAt give rows as
// each document is read, with their positions among a document's rows (RowPos) so that a
// page resumes inside one item's JOINs; RunSortedPage gives one page of a sort after a
// position (Cursor, which holds a long string key by its first bytes); RunKeyed gives each
// row of a DISTINCT or GROUP BY its key (RowKey), which a page resumes after. WithRowCount
// and WithPause let the caller count the rows JOINs bind and let other work run while they do.
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
