package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/exec"
	"github.com/partitadb/partita/internal/query/parse"
	"github.com/partitadb/partita/internal/query/plan"
	"github.com/partitadb/partita/internal/status"
)

// The query limits the parser enforces (parse.MaxJoins and the rest), for
// the account document's queryEngineConfiguration, which advertises them.
const (
	MaxQueryLength = parse.MaxQueryLength
	MaxJoins       = parse.MaxJoins
	MaxAnds        = parse.MaxAnds
	MaxOrs         = parse.MaxOrs
	MaxUDFRefs     = parse.MaxUDFRefs
	MaxInItems     = parse.MaxInItems
)

// QueryPlan answers a query plan request (x-ms-cosmos-is-query-plan-request,
// protocol doc §6.3): the JSON of Cosmos DB's partitioned query execution
// info for q over container coll of database db. A query whose filter pins
// one logical partition gets a plan without merge steps and the EPK point
// of that partition key; any other query the full EPK range, with the
// per-range rewritten query and merge steps its ORDER BY, aggregates,
// GROUP BY, DISTINCT, TOP or OFFSET/LIMIT need (see plan.Build).
//
// Errors (as *status.Error): 404 for a missing database or container; 400
// for a syntax error, an invalid query (unknown function, missing
// parameter, bad TOP) or a shape Partita cannot plan across partitions.
func (e *Engine) QueryPlan(ctx context.Context, db, coll string, q Query) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := e.owner(db, coll)
	if err != nil {
		return nil, err
	}
	ast, err := parse.Parse(q.Text)
	if err != nil {
		return nil, translate(err)
	}
	if _, err := exec.Compile(ast, q.Params, exec.WithUDFs(e.udfLookup(c))); err != nil {
		return nil, translate(err)
	}
	if err := plan.CheckOrderByPaths(ast); err != nil {
		return nil, status.BadRequest("%v", err)
	}
	p, err := queryPlan(c, ast, q.Params, q.SupportedFeatures)
	if err != nil {
		return nil, err
	}
	return marshalPlan(p)
}

// ExplainQuery returns the physical plan that a page of q over scope would
// run (plan.Physical; docs/query-plan.md), continuation included, without
// running it. The statistics a range lookup needs are measured as a page
// would measure them. Errors are QueryItems': 404 for a missing database or
// container, 400 for an invalid query or continuation, and the gateway's
// refusal of a cross-partition query that needs merging.
func (e *Engine) ExplainQuery(ctx context.Context, db, coll string, scope Scope, q Query) (plan.Physical, error) {
	start := time.Now()
	c, release, err := e.readContainer(ctx, db, coll, scope.RangeID)
	if err != nil {
		return plan.Physical{}, err
	}
	defer release()
	ast, prog, r, scope, err := e.compileQuery(c, scope, q)
	if err != nil {
		return plan.Physical{}, err
	}
	run, _, err := e.prepareQuery(ctx, c, ast, prog, r, scope, q, start)
	if err != nil {
		return plan.Physical{}, err
	}
	run.src.v.close()
	return run.plan, nil
}

// queryPlan builds the plan of the parsed (and compiled) query ast over
// container c. QueryItems puts it, as a string, in the additionalErrorInfo
// of its 400/1004 refusal, where the JS and Python SDKs look for it; its
// errors are *status.Error.
// queryPlan is the plan of ast over c for a client that declared features
// (nil: none declared, a legacy client: plan.BuildLegacy).
func queryPlan(c *catalog.Container, ast *parse.Query, params exec.Params, features []string) (plan.Plan, error) {
	p := plan.Plan{Version: 2}
	if pk, keys := plan.Routing(ast, c.PK.Paths, params); pk != nil {
		epk, err := c.PK.Hash(pk)
		if err != nil {
			return plan.Plan{}, translate(err)
		}
		// One range executes the whole query: nothing to merge.
		p.QueryInfo = plan.Neutral(ast)
		p.QueryRanges = []plan.EPKRange{plan.PointRange(epk.String())}
	} else {
		build := plan.Build
		if features == nil {
			build = plan.BuildLegacy
		}
		info, err := build(ast, params)
		if err != nil {
			return plan.Plan{}, planError(err)
		}
		p.QueryInfo = info
		if p.QueryRanges, err = keyRanges(c, keys); err != nil {
			return plan.Plan{}, err
		}
	}
	return p, nil
}

// keyRanges returns the EPK ranges of the partition keys a query is
// confined to (plan.Routing: a hierarchical key's prefix, or a key's IN
// values), sorted and without repeats, or the whole EPK space for none: the
// SDK queries only the physical partitions they touch (a hierarchical-key
// hunt: a prefix's ORDER BY was sent to all 8 partitions of a container).
func keyRanges(c *catalog.Container, keys []document.PartitionKey) ([]plan.EPKRange, error) {
	if len(keys) == 0 {
		return []plan.EPKRange{plan.FullRange()}, nil
	}
	var out []plan.EPKRange
	for _, k := range keys {
		var r plan.EPKRange
		if len(k) == len(c.PK.Paths) {
			epk, err := c.PK.Hash(k)
			if err != nil {
				return nil, translate(err)
			}
			r = plan.PointRange(epk.String())
		} else {
			lo, hi, err := c.PK.Span(k)
			if err != nil {
				return nil, translate(err)
			}
			r = plan.EPKRange{Min: lo.String(), Max: hi.String(), IsMinInclusive: true}
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b plan.EPKRange) int { return strings.Compare(a.Min, b.Min) })
	return out, nil
}

// marshalPlan is p as JSON; its errors are *status.Error.
func marshalPlan(p plan.Plan) ([]byte, error) {
	b, err := p.Marshal()
	if err != nil {
		return nil, status.From(err)
	}
	return b, nil
}

// planError turns plan.Build's errors into 400s naming the construct.
func planError(err error) error {
	if e, ok := errors.AsType[*plan.UnsupportedError](err); ok {
		return status.NotSupported(e.What + " in a cross-partition query").Wrap(err)
	}
	if e, ok := errors.AsType[*plan.ValueError](err); ok {
		return status.BadRequest("%s %s", e.Clause, e.Msg).Wrap(err)
	}
	return translate(err)
}
