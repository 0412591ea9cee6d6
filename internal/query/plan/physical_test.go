package plan_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/index"
	"github.com/partitadb/partita/internal/query/exec"
	"github.com/partitadb/partita/internal/query/parse"
	"github.com/partitadb/partita/internal/query/plan"
)

// TestPhysical runs the plan choices of testdata/physical/* (datadriven;
// regenerate with go test ./internal/query/plan -rewrite and review the
// diff). Commands:
//
//	policy
//	<indexing policy JSON; empty: the default, index everything>
//	----
//
//	explain [logical] [key=<partition key header JSON>] [paths=(/a,/b)] [ranges=N] [units=N] [page=N] [stale] [params=<JSON object>] [stats=(terms,entries,items[,lead])] [leads=(terms/entries/items,...)] [counts=(entries,items)] [covered=<bool>] [dense=<bool>] [ordered] [json]
//	<query>
//	----
//	<the plan, as Physical.String prints it, or its JSON with json>
//
// explain plans a query over a scope of ranges physical partitions (4 by
// default), read from units keyspaces (ranges by default), cross-partition
// unless logical (one logical partition, whose key is key when given), of
// a container whose partition key path is /pk (or paths). stale marks the index as being
// rebuilt. page is the page size (100 by default). stats are the
// measurements of the lookup (Plan.NeedStats), leads those of each range
// or prefix a query could lead an intersection with (Plan.Leads), counts those that weigh it
// against an ordered read (Plan.Weigh; ordered: the continuation is an
// index-ordered position); covered says whether every
// document has a scalar on the ORDER BY's path (Plan.Cover); dense whether
// a logical partition's entries are dense in the path's index (Plan.Probe).
func TestPhysical(t *testing.T) {
	datadriven.Walk(t, "testdata/physical", func(t *testing.T, path string) {
		pol := index.DefaultPolicy()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "policy":
				if strings.TrimSpace(d.Input) == "" {
					pol = index.DefaultPolicy()
					return ""
				}
				p, err := index.ParsePolicy([]byte(d.Input))
				if err != nil {
					return "error: " + err.Error()
				}
				pol = p
				return ""
			case "explain":
				return explain(t, d, pol)
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}

func explain(t *testing.T, d *datadriven.TestData, pol *index.Policy) string {
	in := plan.Input{Policy: pol, Scope: plan.Scope{Cross: true, Ranges: 4, IndexCurrent: true, KeyPaths: []string{"/pk"}}, PageSize: 100}
	units := -1
	asJSON := false
	for _, arg := range d.CmdArgs {
		val := ""
		if len(arg.Vals) > 0 {
			val = strings.Join(arg.Vals, ",")
		}
		switch arg.Key {
		case "logical":
			in.Scope.Logical, in.Scope.Cross, in.Scope.Ranges = true, false, 1
		case "key":
			k, err := document.ParsePKHeader(val)
			if err != nil {
				d.Fatalf(t, "key: %v", err)
			}
			in.Scope.Key = k
		case "paths":
			in.Scope.KeyPaths = arg.Vals
		case "page":
			in.PageSize = atoi(t, d, val)
		case "ranges":
			in.Scope.Ranges = atoi(t, d, val)
		case "units":
			units = atoi(t, d, val)
		case "wide":
			in.Wide = true
		case "stale":
			in.Scope.IndexCurrent = false
		case "hides":
			in.Scope.Hides = true
		case "json":
			asJSON = true
		case "params":
			var raw map[string]json.RawMessage
			if err := json.Unmarshal([]byte(val), &raw); err != nil {
				d.Fatalf(t, "params: %v", err)
			}
			in.Params = map[string][]byte{}
			for k, v := range raw {
				in.Params[k] = v
			}
		case "dense":
			b, err := strconv.ParseBool(val)
			if err != nil {
				d.Fatalf(t, "dense: %v", err)
			}
			in.Dense = &b
		case "covered":
			b, err := strconv.ParseBool(val)
			if err != nil {
				d.Fatalf(t, "covered: %v", err)
			}
			in.Covered = &b
		case "stats":
			if len(arg.Vals) != 3 && len(arg.Vals) != 4 {
				d.Fatalf(t, "stats=(terms,entries,items[,lead])")
			}
			in.Stats = &plan.Stats{Terms: atoi(t, d, arg.Vals[0]), Entries: atoi(t, d, arg.Vals[1]), Items: int64(atoi(t, d, arg.Vals[2]))}
			if len(arg.Vals) == 4 {
				in.Stats.Lead = atoi(t, d, arg.Vals[3])
			}
		case "leads":
			for _, v := range arg.Vals {
				f := strings.Split(v, "/")
				if len(f) != 3 {
					d.Fatalf(t, "leads=(terms/entries/items,...)")
				}
				in.Leads = append(in.Leads, plan.Stats{Terms: atoi(t, d, f[0]), Entries: atoi(t, d, f[1]), Items: int64(atoi(t, d, f[2]))})
			}
		case "counts":
			if len(arg.Vals) != 2 {
				d.Fatalf(t, "counts=(entries,items)")
			}
			in.Stats = &plan.Stats{Entries: atoi(t, d, arg.Vals[0]), Items: int64(atoi(t, d, arg.Vals[1])), Counted: true}
		case "ordered":
			in.Ordered, in.Covered, in.Dense = true, ptrTrue(), ptrTrue()
		default:
			d.Fatalf(t, "unknown argument %q", arg.Key)
		}
	}
	in.Scope.Units = in.Scope.Ranges
	if units >= 0 {
		in.Scope.Units = units
	}
	q, err := parse.Parse(d.Input)
	if err != nil {
		return "error: " + err.Error()
	}
	prog, err := exec.Compile(q, in.Params)
	if err != nil {
		return "error: " + err.Error()
	}
	in.Query, in.Program = q, shape(prog)
	p := plan.Choose(in)
	if asJSON {
		b, err := json.Marshal(p)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(b)
	}
	return p.String()
}

// shape is what the engine passes plan of a compiled program.
func shape(p *exec.Program) plan.Program {
	f := p.Features()
	_, take := p.Window()
	return plan.Program{Streamable: p.Streamable(), Sortable: p.Sortable(), OrderFree: p.OrderFree(), Parallel: p.Parallel(),
		Grouped: f.GroupBy || f.Aggregate || f.Distinct, Take: take}
}

func atoi(t *testing.T, d *datadriven.TestData, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		d.Fatalf(t, "%q: %v", s, err)
	}
	return n
}

// TestChooseIsPure checks that Choose gives equal plans for equal inputs and
// does not change its input (the engine may plan a query twice).
func TestChooseIsPure(t *testing.T) {
	q, err := parse.Parse("SELECT * FROM c WHERE c.n >= @lo AND c.s IN ('a', 'b') ORDER BY c.n")
	if err != nil {
		t.Fatal(err)
	}
	params := map[string][]byte{"@lo": []byte("5")}
	in := plan.Input{Query: q, Params: params, Policy: index.DefaultPolicy(), Scope: plan.Scope{Cross: true, Ranges: 2, Units: 2, IndexCurrent: true},
		Program: plan.Program{Sortable: true, Take: -1}}
	before := q.String()
	a, b := plan.Choose(in), plan.Choose(in)
	if a.String() != b.String() {
		t.Errorf("Choose twice:\n%s\nthen\n%s", a, b)
	}
	if after := q.String(); after != before || string(params["@lo"]) != "5" {
		t.Errorf("Choose changed its input: %s, params %s", after, params)
	}
}

func ptrTrue() *bool { b := true; return &b }
