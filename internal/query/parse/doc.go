// Package parse turns Azure Cosmos DB NoSQL query text into an abstract syntax tree.
//
// Parse is the entry point: it returns a *Query or a *SyntaxError that names the offending
// token and its line and column. Every AST node records its source Position, so later stages
// (package exec, the planner) can report errors at the right place. Query.String prints a
// canonical, fully parenthesised form of the query that parses back to an equal AST (equal
// except for positions); this is what the fuzz test checks.
//
// The grammar follows the Cosmos DB service (see the .NET SDK's sql.g4) with a few deliberate
// leniencies: keywords and the literals true, false, null and undefined are case-insensitive;
// a select item may take a bare alias (`SELECT c.a x`); object literals accept identifier keys
// (`{a: 1}`); BETWEEN composes with AND/OR like IN and LIKE do; and NOT binds more loosely than
// comparisons, as in SQL (`NOT c.a = 1` means `NOT (c.a = 1)`).
//
// Number literals are decimal (`12`, `1.5`, `.5`, `1e-3`) or hexadecimal (`0x1F`, Cosmos DB's
// hexadecimal_literal, at most 64 bits); `.5` is a number wherever an operand may start, a
// property access only after an operand (`c.a .5` is an error).
//
// Precedence, loosest first: ?: (right-associative), ??, OR, AND, NOT, then the predicates
// IN / LIKE / BETWEEN, then ||, |, ^, &, = != <>, < <= > >=, << >> >>>, + -, * / %, the unary
// operators - + ~ NOT, and finally property access .name and indexing [expr].
//
// WithComputed rewrites a parsed query for a container's computed properties (each reference
// becomes the property's expression), and ComputedShape checks a computed property's query;
// both work on the tree alone (computed.go).
//
// The package imports nothing else from Partita and keeps no state; it is safe for concurrent
// use. A parsed Query is plain data: callers must not mutate it while others read it.
package parse
