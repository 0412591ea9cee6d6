package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/partitadb/partita/internal/query/parse"
)

// Plan is the answer to a query plan request (x-ms-cosmos-is-query-plan-request), Cosmos DB's
// "partitioned query execution info": what a client must merge (QueryInfo) and which EPK
// ranges it must query (QueryRanges). It marshals to the exact JSON the SDKs read.
type Plan struct {
	Version     int        `json:"partitionedQueryExecutionInfoVersion"` // always 2
	QueryInfo   *QueryInfo `json:"queryInfo"`
	QueryRanges []EPKRange `json:"queryRanges"`
}

// EPKRange is an interval of effective partition keys, as upper-case hex strings like the
// pkranges feed's minInclusive/maxExclusive.
type EPKRange struct {
	Min            string `json:"min"`
	Max            string `json:"max"`
	IsMinInclusive bool   `json:"isMinInclusive"`
	IsMaxInclusive bool   `json:"isMaxInclusive"`
}

// FullRange is the whole EPK space ["", "FF").
func FullRange() EPKRange {
	return EPKRange{Min: "", Max: "FF", IsMinInclusive: true, IsMaxInclusive: false}
}

// PointRange is the single EPK epk (hex), both ends inclusive, as Cosmos DB plans a query
// whose filter pins one logical partition.
func PointRange(epk string) EPKRange {
	return EPKRange{Min: epk, Max: epk, IsMinInclusive: true, IsMaxInclusive: true}
}

// Distinct types of QueryInfo.DistinctType.
const (
	DistinctNone      = "None"
	DistinctOrdered   = "Ordered"   // duplicates arrive next to each other (DISTINCT on the ORDER BY keys)
	DistinctUnordered = "Unordered" // the client keeps a set of every result seen
)

// Sort orders of QueryInfo.OrderBy.
const (
	Ascending  = "Ascending"
	Descending = "Descending"
)

// Aggregate operators of QueryInfo.Aggregates and GroupByAliasToAggregateType.
const (
	AggCount    = "Count"
	AggSum      = "Sum"
	AggAverage  = "Average"
	AggMin      = "Min"
	AggMax      = "Max"
	AggCountIf  = "CountIf"
	AggMakeList = "MakeList"
	AggMakeSet  = "MakeSet"
)

// OrderByFilterPlaceholder is the text the rewritten query of an ORDER BY plan holds in its
// WHERE clause; the SDKs replace it with "true" (or with a resume filter) before sending.
const OrderByFilterPlaceholder = "{documentdb-formattableorderbyquery-filter}"

// QueryInfo tells a client how to run a query over several physical partitions: it sends
// RewrittenQuery (the original query when empty) to every range and merges the per-range
// results as the other fields say. The JSON field names and value shapes are Cosmos DB's, as
// @azure/cosmos 4.x reads them (queryExecutionContext/pipelinedQueryExecutionContext.js).
//
// The per-range result shapes the rewritten queries produce:
//   - ORDER BY: {"_rid", "orderByItems": [{"item": key}, ...], "payload": projected row}.
//   - VALUE aggregate: [{"item": partial}], where the partial of AVG is {"sum", "count"} and
//     MIN/MAX add "item2": {"min"|"max", "count"}.
//   - GROUP BY or non-VALUE aggregates: {"groupByItems": [{"item": key}, ...], "payload": p},
//     p an object of alias → value (grouping keys) or alias → {"item": partial} (aggregates),
//     or for SELECT VALUE the value itself (an [{"item": partial}] array for an aggregate).
type QueryInfo struct {
	DistinctType                string             `json:"distinctType"`
	Top                         *int64             `json:"top"`
	Offset                      *int64             `json:"offset"`
	Limit                       *int64             `json:"limit"`
	OrderBy                     []string           `json:"orderBy"`
	OrderByExpressions          []string           `json:"orderByExpressions"`
	GroupByExpressions          []string           `json:"groupByExpressions"`
	GroupByAliases              []string           `json:"groupByAliases"`
	Aggregates                  []string           `json:"aggregates"`
	GroupByAliasToAggregateType map[string]*string `json:"groupByAliasToAggregateType"`
	RewrittenQuery              string             `json:"rewrittenQuery"`
	HasSelectValue              bool               `json:"hasSelectValue"`
	DCountInfo                  *struct{}          `json:"dCountInfo"` // always null: DCOUNT rewrites are not produced
	HasNonStreamingOrderBy      bool               `json:"hasNonStreamingOrderBy"`
}

// UnsupportedError reports a query whose cross-partition execution Partita cannot plan: its
// per-range results could not be merged correctly by a client. What names the construct.
type UnsupportedError struct {
	What string
}

// Error returns the construct and why it is refused.
func (e *UnsupportedError) Error() string {
	return "plan: " + e.What + " is not supported in a cross-partition query"
}

// ValueError reports a TOP, OFFSET or LIMIT that is not a non-negative integer, or that names
// a missing parameter.
type ValueError struct {
	Clause string // "TOP", "OFFSET" or "LIMIT"
	Msg    string
}

// Error returns the clause and the problem.
func (e *ValueError) Error() string { return "plan: " + e.Clause + " " + e.Msg }

// maxCount bounds TOP, OFFSET and LIMIT, as Cosmos DB does (a signed 32-bit count).
const maxCount = math.MaxInt32

// Neutral returns the plan info of a query that needs no cross-partition merging: the client
// sends the original query to every range and concatenates the results.
func Neutral(q *parse.Query) *QueryInfo {
	return &QueryInfo{
		DistinctType:                DistinctNone,
		OrderBy:                     []string{},
		OrderByExpressions:          []string{},
		GroupByExpressions:          []string{},
		GroupByAliases:              []string{},
		Aggregates:                  []string{},
		GroupByAliasToAggregateType: map[string]*string{},
		HasSelectValue:              q != nil && q.Select.Value != nil,
	}
}

// Build computes the cross-partition plan of q with parameter values params (raw JSON by
// name, "@" included). A query without ORDER BY, aggregates, GROUP BY, DISTINCT, TOP or
// OFFSET/LIMIT gets the Neutral plan. Build does not modify q.
//
// Aggregates without GROUP BY yield one row: an ORDER BY beside them is dropped.
//
// Errors: *UnsupportedError for ORDER BY together with GROUP BY, an aggregate
// nested inside a larger expression (ABS(AVG(c.x)), SELECT VALUE {"n": COUNT(1)}), several
// aggregates in SELECT VALUE, SELECT * with GROUP BY, and a FROM subquery that itself needs
// merging (DISTINCT, TOP, OFFSET/LIMIT, GROUP BY or aggregates); *ValueError for a bad TOP,
// OFFSET or LIMIT.
func Build(q *parse.Query, params map[string][]byte) (*QueryInfo, error) {
	return build(q, params, false)
}

// BuildLegacy is Build for a client that declares no query features (such
// as the Python SDK v3): its SELECT VALUE MIN and MAX partials are
// {"item": AGG(x)} alone, which such a client merges, skipping a range's
// {} (no value there); it read "item" of the {"item2": …} a range without
// a value answers in the newer form, and failed (KeyError: 'item').
func BuildLegacy(q *parse.Query, params map[string][]byte) (*QueryInfo, error) {
	return build(q, params, true)
}

func build(q *parse.Query, params map[string][]byte, legacy bool) (*QueryInfo, error) {
	if q == nil {
		return nil, &UnsupportedError{What: "an empty query"}
	}
	if err := checkFromSubquery(q.From); err != nil {
		return nil, err
	}
	info := Neutral(q)
	grouped := len(q.GroupBy) > 0 || hasAggregate(q)
	ordered := len(q.OrderBy) > 0
	rw := *q // shallow copy: the rewrites replace fields, never mutate shared nodes
	if ordered && grouped && len(q.GroupBy) == 0 {
		// Aggregates without GROUP BY make one row, which an ORDER BY cannot
		// reorder: the service answers SELECT VALUE AVG(c.n) FROM c ORDER BY
		// c.n (the JavaScript SDK's aggregate tests send it), so the plan is
		// the aggregate's alone, and the ranges run it without the ORDER BY.
		rw.OrderBy, ordered = nil, false
	}
	if !grouped && !ordered && !q.Distinct && q.Top == nil && q.Offset == nil && q.Limit == nil {
		return info, nil
	}
	var err error
	if info.Top, err = count(q.Top, "TOP", params); err != nil {
		return nil, err
	}
	if grouped && len(q.GroupBy) == 0 && info.Top != nil && *info.Top >= 1 {
		// Aggregates without GROUP BY make one row, which TOP n (n ≥ 1)
		// keeps whole: the plan says no TOP, since a client that applies
		// it to each range's partial rows before merging them (the Python
		// SDK v3) counted one range's rows only (a bug hunt: TOP 1 VALUE
		// COUNT(1) over 40 items answered 9).
		info.Top = nil
	}
	if info.Offset, err = count(q.Offset, "OFFSET", params); err != nil {
		return nil, err
	}
	if info.Limit, err = count(q.Limit, "LIMIT", params); err != nil {
		return nil, err
	}
	if q.Distinct {
		info.DistinctType = DistinctUnordered
		if ordered && distinctOnOrderKeys(q) {
			info.DistinctType = DistinctOrdered
		}
	}
	switch {
	case grouped && ordered:
		return nil, &UnsupportedError{What: "ORDER BY together with GROUP BY"}
	case grouped:
		if err := rewriteGrouped(&rw, info, legacy); err != nil {
			return nil, err
		}
	case ordered:
		if err := rewriteOrdered(&rw, info); err != nil {
			return nil, err
		}
	default:
		// DISTINCT and TOP run per range as written (each range's first n distinct results
		// contain enough of the overall first n); OFFSET must not skip per range.
		if info.Offset == nil || info.Limit == nil {
			return info, nil
		}
		rw.Offset, rw.Limit = number(0), number(float64(*info.Offset+*info.Limit))
	}
	info.RewrittenQuery = rw.String()
	return info, nil
}

// Marshal returns p as JSON, without HTML escaping (query text keeps its '<' and '&'). A nil
// QueryInfo marshals as the Neutral one, nil QueryRanges as [].
func (p Plan) Marshal() ([]byte, error) {
	if p.QueryInfo == nil {
		p.QueryInfo = Neutral(nil)
	}
	if p.QueryRanges == nil {
		p.QueryRanges = []EPKRange{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// rewriteGrouped turns q (with GROUP BY or aggregates, no ORDER BY) into the per-range query
// returning groupByItems and payload (Cosmos DB's GroupBy rewrite), and fills info.
func rewriteGrouped(q *parse.Query, info *QueryInfo, legacy bool) error {
	for _, g := range q.GroupBy {
		info.GroupByExpressions = append(info.GroupByExpressions, parse.ExprString(g))
	}
	var payload parse.Expr
	switch s := q.Select; {
	case s.Star:
		return &UnsupportedError{What: "SELECT * with GROUP BY or aggregates"}
	case s.Value != nil:
		if call, kind := aggregateCall(s.Value); call != nil {
			partial, err := aggregatePartial(call, kind, legacy)
			if err != nil {
				return err
			}
			info.Aggregates = append(info.Aggregates, kind)
			payload = &parse.ArrayLit{Elems: []parse.Expr{partial}}
		} else if containsAggregate(s.Value) {
			return &UnsupportedError{What: "an aggregate inside the SELECT VALUE expression " + parse.ExprString(s.Value) +
				" (select the aggregates as separate aliased items instead)"}
		} else {
			payload = s.Value
		}
	default:
		obj := &parse.ObjectLit{}
		names := itemNames(s.Items)
		for i, it := range s.Items {
			alias := names[i]
			var kind *string
			v := it.Expr
			if call, k := aggregateCall(it.Expr); call != nil {
				partial, err := aggregatePartial(call, k, legacy)
				if err != nil {
					return err
				}
				v, kind = partial, &k
			} else if containsAggregate(it.Expr) {
				return &UnsupportedError{What: "an aggregate inside the expression " + parse.ExprString(it.Expr)}
			}
			obj.Fields = append(obj.Fields, parse.ObjectField{Name: alias, Value: v})
			info.GroupByAliases = append(info.GroupByAliases, alias)
			info.GroupByAliasToAggregateType[alias] = kind
		}
		payload = obj
	}
	q.Distinct, q.Top, q.Offset, q.Limit = false, nil, nil, nil
	if len(q.GroupBy) == 0 && q.Select.Value != nil {
		q.Select = parse.Select{Value: payload}
		return nil
	}
	items := []parse.SelectItem{}
	if len(q.GroupBy) > 0 {
		keys := &parse.ArrayLit{}
		for _, g := range q.GroupBy {
			keys.Elems = append(keys.Elems, itemObject(g))
		}
		items = append(items, parse.SelectItem{Expr: keys, Alias: "groupByItems"})
	}
	q.Select = parse.Select{Items: append(items, parse.SelectItem{Expr: payload, Alias: "payload"})}
	return nil
}

// rewriteOrdered turns q (with ORDER BY, no grouping) into the per-range query returning
// _rid, orderByItems and payload (Cosmos DB's ORDER BY rewrite), and fills info.
func rewriteOrdered(q *parse.Query, info *QueryInfo) error {
	keys := &parse.ArrayLit{}
	for _, o := range q.OrderBy {
		info.OrderBy = append(info.OrderBy, sortOrder(o.Desc))
		info.OrderByExpressions = append(info.OrderByExpressions, parse.ExprString(o.Expr))
		keys.Elems = append(keys.Elems, itemObject(o.Expr))
	}
	var payload parse.Expr
	switch s := q.Select; {
	case s.Star:
		if q.From == nil {
			return &UnsupportedError{What: "SELECT * without FROM"}
		}
		payload = &parse.Ident{Name: q.From.Alias}
	case s.Value != nil:
		payload = s.Value
	default:
		obj := &parse.ObjectLit{}
		names := itemNames(s.Items)
		for i, it := range s.Items {
			obj.Fields = append(obj.Fields, parse.ObjectField{Name: names[i], Value: it.Expr})
		}
		payload = obj
	}
	var items []parse.SelectItem
	if q.From != nil && !q.From.In && q.From.Subquery == nil {
		if _, ok := q.From.Expr.(*parse.Ident); ok {
			items = append(items, parse.SelectItem{Expr: &parse.Property{X: &parse.Ident{Name: q.From.Alias}, Name: "_rid"}})
		}
	}
	items = append(items,
		parse.SelectItem{Expr: keys, Alias: "orderByItems"},
		parse.SelectItem{Expr: payload, Alias: "payload"})
	// The placeholder prints verbatim: an identifier name is written as is.
	var where parse.Expr = &parse.Ident{Name: "(" + OrderByFilterPlaceholder + ")"}
	if q.Where != nil {
		where = &parse.Binary{Op: parse.OpAnd, X: q.Where, Y: where}
	}
	if q.Select.Value != nil {
		// SELECT VALUE drops undefined values; a payload-less row would not be dropped.
		where = &parse.Binary{Op: parse.OpAnd, X: where, Y: &parse.Call{Name: "IS_DEFINED", Args: []parse.Expr{q.Select.Value}}}
	}
	q.Where = where
	q.Select = parse.Select{Items: items}
	if q.Distinct {
		// DISTINCT is applied by the client over the merged stream; a range's first n rows,
		// duplicates included, may hold fewer than n distinct ones, so TOP and LIMIT go too.
		q.Distinct, q.Top, q.Offset, q.Limit = false, nil, nil, nil
		return nil
	}
	if info.Offset != nil && info.Limit != nil {
		q.Offset, q.Limit = number(0), number(float64(*info.Offset+*info.Limit))
	}
	return nil
}

func sortOrder(desc bool) string {
	if desc {
		return Descending
	}
	return Ascending
}

// itemObject returns {"item": e}.
func itemObject(e parse.Expr) parse.Expr {
	return &parse.ObjectLit{Fields: []parse.ObjectField{{Name: "item", Value: e}}}
}

func number(f float64) parse.Expr { return &parse.Literal{Kind: parse.LitNumber, Num: f} }

// aggregatePartial returns the per-range partial result of the aggregate call, as Cosmos DB
// rewrites it: {"item": AGG(x)}, AVG as {"item": {"sum": SUM(x), "count": COUNT(x)}}, MIN and
// MAX with "item2": {"min"|"max": AGG(x), "count": COUNT(x)} (which the JS SDK reads), but
// for a legacy client (BuildLegacy).
func aggregatePartial(call *parse.Call, kind string, legacy bool) (parse.Expr, error) {
	for _, a := range call.Args {
		if containsAggregate(a) {
			return nil, &UnsupportedError{What: "a nested aggregate " + parse.ExprString(call)}
		}
	}
	countOf := &parse.Call{Name: "COUNT", Args: call.Args}
	obj := func(fields ...parse.ObjectField) parse.Expr { return &parse.ObjectLit{Fields: fields} }
	switch kind {
	case AggAverage:
		return obj(parse.ObjectField{Name: "item", Value: obj(
			parse.ObjectField{Name: "sum", Value: &parse.Call{Name: "SUM", Args: call.Args}},
			parse.ObjectField{Name: "count", Value: countOf})}), nil
	case AggMin, AggMax:
		if legacy {
			break
		}
		return obj(
			parse.ObjectField{Name: "item", Value: call},
			parse.ObjectField{Name: "item2", Value: obj(
				parse.ObjectField{Name: strings.ToLower(kind), Value: call},
				parse.ObjectField{Name: "count", Value: countOf})}), nil
	}
	return obj(parse.ObjectField{Name: "item", Value: call}), nil
}

// aggregateKinds maps upper-case aggregate function names to their plan operator.
var aggregateKinds = map[string]string{
	"COUNT": AggCount, "SUM": AggSum, "AVG": AggAverage, "MIN": AggMin, "MAX": AggMax,
	"COUNTIF": AggCountIf, "MAKELIST": AggMakeList, "MAKESET": AggMakeSet,
}

// aggregateCall returns e as an aggregate call and its operator, or nil.
func aggregateCall(e parse.Expr) (*parse.Call, string) {
	c, ok := e.(*parse.Call)
	if !ok || c.UDF {
		return nil, ""
	}
	kind, ok := aggregateKinds[strings.ToUpper(c.Name)]
	if !ok {
		return nil, ""
	}
	return c, kind
}

// containsAggregate reports whether e calls an aggregate outside subqueries.
func containsAggregate(e parse.Expr) bool {
	found := false
	parse.Inspect(e, func(x parse.Expr) bool {
		if c, _ := aggregateCall(x); c != nil {
			found = true
		}
		return !found
	})
	return found
}

// hasAggregate reports whether q's projection calls an aggregate outside subqueries.
func hasAggregate(q *parse.Query) bool {
	if q.Select.Value != nil && containsAggregate(q.Select.Value) {
		return true
	}
	for _, it := range q.Select.Items {
		if containsAggregate(it.Expr) {
			return true
		}
	}
	return false
}

// checkFromSubquery refuses a FROM subquery whose result depends on all of the container
// (per range it would see only part of it).
func checkFromSubquery(f *parse.From) error {
	if f == nil || f.Subquery == nil {
		return nil
	}
	s := f.Subquery
	if s.Distinct || s.Top != nil || s.Offset != nil || s.Limit != nil || len(s.GroupBy) > 0 || hasAggregate(s) {
		return &UnsupportedError{What: "a FROM subquery with DISTINCT, TOP, OFFSET/LIMIT, GROUP BY or aggregates"}
	}
	return checkFromSubquery(s.From)
}

// distinctOnOrderKeys reports whether every projected value of q is one of its ORDER BY
// expressions, so that duplicates come out of the ordered merge next to each other.
func distinctOnOrderKeys(q *parse.Query) bool {
	keys := make(map[string]bool, len(q.OrderBy))
	for _, o := range q.OrderBy {
		keys[parse.ExprString(o.Expr)] = true
	}
	switch s := q.Select; {
	case s.Star:
		return false
	case s.Value != nil:
		return keys[parse.ExprString(s.Value)]
	default:
		for _, it := range s.Items {
			if !keys[parse.ExprString(it.Expr)] {
				return false
			}
		}
		return len(s.Items) > 0
	}
}

// itemNames returns the output property names of select items: the alias, else the last
// property name, else "$n" for the n-th item without either (as Cosmos DB and exec name them).
func itemNames(items []parse.SelectItem) []string {
	names := make([]string, len(items))
	anon := 0
	for i, it := range items {
		names[i] = it.Alias
		if names[i] == "" {
			names[i] = parse.InferName(it.Expr)
		}
		if names[i] == "" {
			anon++
			names[i] = "$" + strconv.Itoa(anon)
		}
	}
	return names
}

// count resolves a TOP, OFFSET or LIMIT operand (a number literal or a parameter) to a
// non-negative integer; nil for an absent clause.
func count(e parse.Expr, clause string, params map[string][]byte) (*int64, error) {
	var f float64
	switch x := e.(type) {
	case nil:
		return nil, nil
	case *parse.Literal:
		if x.Kind != parse.LitNumber {
			return nil, &ValueError{Clause: clause, Msg: "must be a number"}
		}
		f = x.Num
	case *parse.Param:
		raw, ok := params[x.Name]
		if !ok {
			return nil, &ValueError{Clause: clause, Msg: fmt.Sprintf("names parameter %s, which has no value", x.Name)}
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, &ValueError{Clause: clause, Msg: fmt.Sprintf("parameter %s is not a number", x.Name)}
		}
	default:
		return nil, &ValueError{Clause: clause, Msg: "must be a number or a parameter"}
	}
	if f < 0 || f > maxCount || f != math.Trunc(f) {
		return nil, &ValueError{Clause: clause, Msg: fmt.Sprintf("%s is not an integer between 0 and %d", parse.FormatNumber(f), maxCount)}
	}
	n := int64(f)
	return &n, nil
}

// Query features, as clients name what they can merge in x-ms-cosmos-supported-query-features.
const (
	FeatureAggregate           = "Aggregate"
	FeatureDistinct            = "Distinct"
	FeatureGroupBy             = "GroupBy"
	FeatureMultipleAggregates  = "MultipleAggregates"
	FeatureMultipleOrderBy     = "MultipleOrderBy"
	FeatureNonStreamingOrderBy = "NonStreamingOrderBy"
	FeatureNonValueAggregate   = "NonValueAggregate"
	FeatureOffsetAndLimit      = "OffsetAndLimit"
	FeatureOrderBy             = "OrderBy"
	FeatureTop                 = "Top"
)

// Features returns the query features a client must support to merge the per-range results
// of qi, in the vocabulary of x-ms-cosmos-supported-query-features, sorted: OrderBy for an
// ORDER BY (and MultipleOrderBy for several keys), Top, OffsetAndLimit, Distinct, GroupBy,
// Aggregate for one SELECT VALUE aggregate, NonValueAggregate for aggregates in a projection
// (and MultipleAggregates for several), NonStreamingOrderBy. The Neutral QueryInfo needs none.
func (qi *QueryInfo) Features() []string {
	var fs []string
	add := func(on bool, f string) {
		if on {
			fs = append(fs, f)
		}
	}
	aggs := 0
	for _, k := range qi.GroupByAliasToAggregateType {
		if k != nil {
			aggs++
		}
	}
	add(len(qi.Aggregates) > 0, FeatureAggregate)
	add(qi.DistinctType != "" && qi.DistinctType != DistinctNone, FeatureDistinct)
	add(len(qi.GroupByExpressions) > 0, FeatureGroupBy)
	add(aggs > 1, FeatureMultipleAggregates)
	add(len(qi.OrderBy) > 1, FeatureMultipleOrderBy)
	add(qi.HasNonStreamingOrderBy, FeatureNonStreamingOrderBy)
	add(aggs > 0, FeatureNonValueAggregate)
	add(qi.Offset != nil || qi.Limit != nil, FeatureOffsetAndLimit)
	add(len(qi.OrderBy) > 0, FeatureOrderBy)
	add(qi.Top != nil, FeatureTop)
	return fs
}

// LegacyFeatures are the features a client that declares none merges: ORDER BY (on several
// keys too), TOP and one SELECT VALUE aggregate, what the SDKs predating
// x-ms-cosmos-supported-query-features (such as the Python SDK v3) run from a plan.
func LegacyFeatures() []string {
	return []string{FeatureAggregate, FeatureMultipleOrderBy, FeatureOrderBy, FeatureTop}
}
