package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/query/exec"
	"github.com/partitadb/partita/internal/query/parse"
	"github.com/partitadb/partita/internal/query/plan"
	"github.com/partitadb/partita/internal/script"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/throughput"
)

// ScriptKind is a kind of server-side script: catalog.StoredProcedures,
// catalog.Triggers or catalog.UDFs.
type ScriptKind = catalog.ScriptKind

// The kinds of script, as named in URLs.
const (
	StoredProcedures = catalog.StoredProcedures
	Triggers         = catalog.Triggers
	UDFs             = catalog.UDFs
)

// programs caches compiled scripts by _rid, each with the _etag of the
// version it was compiled from: a replace changes the etag, so a stale
// program is never used, and the new version's takes its place (a
// script's programs do not pile up with its replacements). It holds at
// most maxScriptPrograms, dropping about half when full, so that the
// programs of deleted scripts (by whichever path: the script, its
// container or its database deleted, here or through another node) do
// not accumulate; a dropped program is compiled again when next run.
type programs struct {
	mu sync.Mutex
	m  map[string]compiledScript // _rid → the program of one version
}

const maxScriptPrograms = 1024

type compiledScript struct {
	etag string
	prog *script.Program
}

func (p *programs) get(sc *catalog.Script) (*script.Program, error) {
	p.mu.Lock()
	c, ok := p.m[sc.RID]
	p.mu.Unlock()
	if ok && c.etag == sc.ETag {
		return c.prog, nil
	}
	prog, err := compileScript(sc.Kind, sc.Body)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.m = keep(p.m, sc.RID, compiledScript{etag: sc.ETag, prog: prog}, maxScriptPrograms)
	p.mu.Unlock()
	return prog, nil
}

// len returns how many programs are kept.
func (p *programs) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}

func compileScript(kind ScriptKind, body string) (*script.Program, error) {
	var (
		prog *script.Program
		err  error
	)
	switch kind {
	case StoredProcedures:
		prog, err = script.CompileStoredProcedure(body)
	case Triggers:
		prog, err = script.CompileTrigger(body)
	default:
		prog, err = script.CompileUDF(body)
	}
	return prog, translateScript(err)
}

// translateScript turns a script failure into the status the client sees;
// the script package words messages as Cosmos DB does.
func translateScript(err error) error {
	if err == nil {
		return nil
	}
	if se, ok := errors.AsType[*script.Error](err); ok {
		return status.New(se.Status, se.Msg).WithSub(se.Sub).Wrap(err)
	}
	return translate(err)
}

// compiledAtCreation reports whether a script of kind must compile to be
// stored. Cosmos DB stores a trigger's body as it is and compiles it when
// the trigger runs (the JavaScript SDK's trigger tests create one with the
// body "serverScript() { var x = 10; }"), so a trigger that does not compile
// fails the operation that includes it, with the 400 its compilation gives.
func compiledAtCreation(kind ScriptKind) bool { return kind != Triggers }

// CreateScript creates a stored procedure, trigger or UDF; the body of a
// stored procedure or UDF must compile. Errors: 404, 409, 400.
func (e *Engine) CreateScript(db, coll string, kind ScriptKind, body []byte) (Resource, error) {
	if err := e.checkScript(db, coll, kind, body); err != nil {
		return Resource{}, err
	}
	sc, err := e.cat.CreateScript(db, coll, kind, body)
	if err != nil {
		return Resource{}, translate(err)
	}
	return Resource{Body: sc.JSON(), ETag: sc.ETag}, nil
}

// UpsertScript creates a script, or replaces the one of the body's id
// (x-ms-documentdb-is-upsert); created says which. Errors as CreateScript's.
func (e *Engine) UpsertScript(db, coll string, kind ScriptKind, body []byte) (res Resource, created bool, err error) {
	if err := e.checkScript(db, coll, kind, body); err != nil {
		return Resource{}, false, err
	}
	sc, created, err := e.cat.UpsertScript(db, coll, kind, body)
	if err != nil {
		return Resource{}, false, translate(err)
	}
	return Resource{Body: sc.JSON(), ETag: sc.ETag}, created, nil
}

// checkScript refuses a script definition before anything is stored: its
// container must exist (404/1003), and a stored procedure's or UDF's body
// must compile (400). A replace stored the new body and then compiled it,
// so a body that did not compile was answered 400 yet kept.
func (e *Engine) checkScript(db, coll string, kind ScriptKind, body []byte) error {
	if _, err := e.owner(db, coll); err != nil {
		return err
	}
	if !compiledAtCreation(kind) {
		return nil
	}
	sc, err := catalog.ParseScript(kind, body)
	if err != nil {
		return translate(err)
	}
	_, err = compileScript(kind, sc.Body)
	return err
}

// ReadScript returns a script, or 404.
func (e *Engine) ReadScript(db, coll string, kind ScriptKind, id string) (Resource, error) {
	sc, err := e.cat.Script(db, coll, kind, id)
	if err != nil {
		return Resource{}, translate(err)
	}
	return Resource{Body: sc.JSON(), ETag: sc.ETag}, nil
}

// ReplaceScript replaces a script; the new body of a stored procedure or
// UDF must compile.
func (e *Engine) ReplaceScript(db, coll string, kind ScriptKind, id string, body []byte, ifMatch string) (Resource, error) {
	if err := e.checkScript(db, coll, kind, body); err != nil {
		return Resource{}, err
	}
	sc, err := e.cat.ReplaceScript(db, coll, kind, id, body, ifMatch)
	if err != nil {
		return Resource{}, translate(err)
	}
	return Resource{Body: sc.JSON(), ETag: sc.ETag}, nil
}

// DeleteScript deletes a script, or 404.
func (e *Engine) DeleteScript(db, coll string, kind ScriptKind, id, ifMatch string) error {
	return translate(e.cat.DeleteScript(db, coll, kind, id, ifMatch))
}

// Scripts returns a container's scripts of one kind.
func (e *Engine) Scripts(ctx context.Context, db, coll string, kind ScriptKind) ([][]byte, string, error) {
	c, err := e.owner(db, coll)
	if err != nil {
		return nil, "", err
	}
	scs, err := e.cat.Scripts(ctx, db, coll, kind)
	if err != nil {
		return nil, "", translate(err)
	}
	out := make([][]byte, len(scs))
	for i, sc := range scs {
		out[i] = sc.JSON()
	}
	return out, c.RID, nil
}

// SprocResult is the outcome of a stored procedure execution.
type SprocResult struct {
	Body    []byte // what the script set with getResponse().setBody (may be empty)
	Log     string // console output, when logging was asked for
	RU      float64
	Session string
}

// ExecuteStoredProcedure runs stored procedure id on logical partition pk
// with args (a JSON array), in one transaction: all its writes commit
// together when it returns, and none does when it throws, times out or
// exceeds its limits. It may not write outside pk. A run that fails
// returns what the script logged (SprocResult.Log) beside the error.
func (e *Engine) ExecuteStoredProcedure(ctx context.Context, db, coll, id string, pk document.PartitionKey, args []byte, logging bool) (SprocResult, error) {
	c, err := e.owner(db, coll)
	if err != nil {
		return SprocResult{}, err
	}
	sc, err := e.cat.Script(db, coll, StoredProcedures, id)
	if err != nil {
		return SprocResult{}, translate(err)
	}
	prog, err := e.progs.get(sc)
	if err != nil {
		return SprocResult{}, err
	}
	if pk = pointKey(c, pk); pk == nil {
		return SprocResult{}, status.BadRequest("executing a stored procedure needs the x-ms-documentdb-partitionkey header")
	}
	// Wait for a slot before taking the logical partition's lock, for at
	// most one script's time limit.
	wait := e.cfg.ScriptLimits.Timeout
	if wait <= 0 {
		wait = script.DefaultTimeout
	}
	if err := e.scripts.acquireWithin(ctx, wait, "stored procedures"); err != nil {
		return SprocResult{}, err
	}
	defer e.scripts.release()
	t, err := e.begin(ctx, c, pk)
	if err != nil {
		return SprocResult{}, err
	}
	defer t.close()
	lim := e.cfg.ScriptLimits
	lim.MaxResponseBytes = MaxBatchResponseBytes // what the check below holds it to
	res, err := prog.Execute(ctx, &scriptHost{ctx: ctx, t: t}, args, lim, logging)
	if err != nil {
		return SprocResult{Log: res.Log}, translateScript(err)
	}
	if len(res.Body) > MaxBatchResponseBytes {
		// Cosmos DB's 4 MB response limit; t.close rolls the writes back.
		return SprocResult{Log: res.Log}, status.Newf(http.StatusRequestEntityTooLarge,
			"the stored procedure's response body is %d bytes; at most %d are allowed (nothing it wrote was kept)", len(res.Body), MaxBatchResponseBytes)
	}
	out := SprocResult{Body: res.Body, Log: res.Log, RU: t.ru + throughput.MinimumCost(), Session: t.session()}
	if err := t.commit(); err != nil {
		return SprocResult{Log: res.Log}, err
	}
	return out, nil
}

// TriggerSet names the triggers a request includes
// (x-ms-documentdb-pre-trigger-include / -post-trigger-include).
type TriggerSet struct {
	Pre, Post []string
}

// triggers loads the named triggers, checking their type and operation.
func (e *Engine) triggers(t *lpTxn, names []string, typ, op string) ([]*script.Program, error) {
	var out []*script.Program
	for _, name := range names {
		sc, err := e.cat.Script(t.c.DB, t.c.ID, Triggers, name)
		if errors.Is(err, catalog.ErrNotFound) {
			return nil, status.BadRequest("trigger %q does not exist", name)
		}
		if err != nil {
			return nil, translate(err)
		}
		if sc.TriggerType != typ {
			return nil, status.BadRequest("trigger %q is a %s-trigger, included as a %s-trigger", name, strings.ToLower(sc.TriggerType), strings.ToLower(typ))
		}
		if sc.TriggerOperation != "All" && sc.TriggerOperation != op && !(sc.TriggerOperation == "Update" && op == "Replace") {
			return nil, status.BadRequest("trigger %q runs on %s operations, not %s", name, sc.TriggerOperation, op)
		}
		prog, err := e.progs.get(sc)
		if err != nil {
			return nil, err
		}
		out = append(out, prog)
	}
	return out, nil
}

// withTriggers runs op inside t between the request's pre-triggers (which
// may rewrite body) and post-triggers (which see the result; a failure rolls
// the whole operation back). opName is Create, Replace, Upsert or Delete.
func (e *Engine) withTriggers(ctx context.Context, t *lpTxn, trig TriggerSet, opName string, body []byte,
	op func(body []byte) (Result, error)) (Result, error) {
	if len(trig.Pre) == 0 && len(trig.Post) == 0 {
		return op(body)
	}
	pre, err := e.triggers(t, trig.Pre, "Pre", opName)
	if err != nil {
		return Result{}, err
	}
	post, err := e.triggers(t, trig.Post, "Post", opName)
	if err != nil {
		return Result{}, err
	}
	host := &scriptHost{ctx: ctx, t: t}
	// The triggers of one operation share one script time limit: each
	// runs with what the ones before it left, so that a header naming a
	// trigger thousands of times (64 KiB of names) cannot hold the
	// logical partition for thousands of time limits (a review).
	limits := e.cfg.ScriptLimits
	budget := limits.Timeout
	if budget <= 0 || budget > script.MaxTimeout {
		budget = script.MaxTimeout
	}
	deadline := time.Now().Add(budget)
	left := func() (script.Limits, error) {
		l := limits
		if l.Timeout = time.Until(deadline); l.Timeout <= 0 {
			return l, status.Newf(http.StatusRequestTimeout, "the operation's triggers exceeded their time limit of %v (together)", budget)
		}
		return l, nil
	}
	for _, p := range pre {
		l, err := left()
		if err != nil {
			return Result{}, err
		}
		if body, err = p.RunPreTrigger(ctx, host, opName, body, l); err != nil {
			return Result{}, translateScript(err)
		}
	}
	res, err := op(body)
	if err != nil {
		return Result{}, err
	}
	for _, p := range post {
		l, err := left()
		if err != nil {
			return Result{}, err
		}
		out, err := p.RunPostTrigger(ctx, host, opName, body, res.Body, l)
		if err != nil {
			return Result{}, translateScript(err)
		}
		if res.Body != nil && out != nil {
			// The trigger's setBody is what the client gets (Cosmos DB's
			// wrapper: it overwrites the response); a delete answers no body.
			if len(out) > MaxBatchResponseBytes {
				return Result{}, status.Newf(http.StatusRequestEntityTooLarge,
					"the post-trigger's response body is %d bytes; at most %d are allowed (the operation was rolled back)", len(out), MaxBatchResponseBytes)
			}
			res.Body = out
		}
	}
	res.RU = t.ru
	return res, nil
}

// scriptHost is the logical partition a script acts on: every operation goes
// through the script's transaction.
type scriptHost struct {
	ctx context.Context
	t   *lpTxn
}

func hostErr(err error) error {
	se := status.From(err)
	if se.Code == http.StatusBadRequest && se.Sub == status.SubBadRequestPKMismatch {
		// Cosmos DB's words, without the substatus: 400/1001 is a
		// client's stale partition map, which the .NET SDK refreshes and
		// retries, in vain here.
		return &script.HostError{Status: http.StatusBadRequest,
			Msg: "Requests originating from scripts cannot reference partition keys other than the one for which client request was submitted."}
	}
	return &script.HostError{Status: se.Code, Sub: se.Sub, Msg: se.Message}
}

func (h *scriptHost) CollectionLink() string { return h.t.c.Link() }
func (h *scriptHost) CollectionSelf() string { return h.t.c.Self() }

// resolve turns a document link into an id: a name-based link
// (dbs/{db}/colls/{coll}/docs/{id}), a _self link (…/docs/{rid}/, looked up
// in the partition), or a bare id.
func (h *scriptHost) resolve(link string) (string, error) {
	link = strings.TrimSuffix(link, "/")
	i := strings.LastIndex(link, "/docs/")
	if i < 0 {
		return link, nil
	}
	coll, ref := link[:i], link[i+len("/docs/"):]
	if coll == strings.TrimSuffix(h.t.c.Self(), "/") {
		var id string
		err := h.t.scan(h.ctx, func(stored []byte) bool {
			if p, err := document.Props(stored); err == nil && p.RID == ref {
				id = idOf(stored)
				return false
			}
			return true
		})
		if err != nil {
			return "", err
		}
		if id == "" {
			return "", status.NotFound()
		}
		return id, nil
	}
	if coll != h.t.c.Link() {
		return "", status.BadRequest("document link %q is not in this collection", link)
	}
	return ref, nil
}

func idOf(stored []byte) string {
	item, err := document.ParseStoredItem(stored, nil)
	if err != nil {
		return ""
	}
	return item.ID
}

func (h *scriptHost) Create(doc []byte) ([]byte, error) {
	r, err := h.t.write(Create, "", doc, "")
	if err != nil {
		return nil, hostErr(err)
	}
	return r.Body, nil
}

func (h *scriptHost) Upsert(doc []byte, ifMatch string) ([]byte, error) {
	r, err := h.t.write(Upsert, "", doc, ifMatch)
	if err != nil {
		return nil, hostErr(err)
	}
	return r.Body, nil
}

func (h *scriptHost) Replace(link string, doc []byte, ifMatch string) ([]byte, error) {
	id, err := h.resolve(link)
	if err != nil {
		return nil, hostErr(err)
	}
	r, err := h.t.write(Replace, id, doc, ifMatch)
	if err != nil {
		return nil, hostErr(err)
	}
	return r.Body, nil
}

func (h *scriptHost) Patch(link string, spec []byte, ifMatch string) ([]byte, error) {
	id, err := h.resolve(link)
	if err != nil {
		return nil, hostErr(err)
	}
	req, err := document.ParsePatchRequest(spec)
	if err != nil {
		return nil, hostErr(translate(err))
	}
	r, err := h.t.patch(h.ctx, id, req, ifMatch)
	if err != nil {
		return nil, hostErr(err)
	}
	return r.Body, nil
}

func (h *scriptHost) Read(link string) ([]byte, error) {
	id, err := h.resolve(link)
	if err != nil {
		return nil, hostErr(err)
	}
	r, err := h.t.read(id)
	if err != nil {
		return nil, hostErr(err)
	}
	return r.Body, nil
}

func (h *scriptHost) Delete(link string, ifMatch string) error {
	id, err := h.resolve(link)
	if err != nil {
		return hostErr(err)
	}
	if _, err := h.t.remove(id, ifMatch); err != nil {
		return hostErr(err)
	}
	return nil
}

func (h *scriptHost) Query(ctx context.Context, query string, params map[string][]byte, page script.Page) ([][]byte, string, error) {
	ast, err := parse.Parse(query)
	if err != nil {
		return nil, "", hostErr(translate(err))
	}
	// As a query through the API is (compileQuery): a script's ORDER BY
	// needs a document path and an index to serve it (a review found
	// ORDER BY 1 and ORDER BY LENGTH(c.s) served here, refused there).
	if err := plan.CheckOrderBy(ast, h.t.c.Policy()); err != nil {
		return nil, "", hostErr(status.BadRequest("%v", err))
	}
	if ast, _, err = h.t.e.withComputed(h.t.c, ast, query); err != nil {
		return nil, "", hostErr(err)
	}
	prog, err := exec.Compile(ast, exec.Params(params), exec.WithUDFs(h.t.e.udfLookup(h.t.c)))
	if err != nil {
		return nil, "", hostErr(translate(err))
	}
	if page.Continuation == "" && !prog.Streamable() {
		// Every result in one page: what a query whose rows depend on
		// every document (ORDER BY, GROUP BY, aggregates, DISTINCT)
		// always answers. The script's limits bound it (ctx).
		rows, err := prog.Run(ctx, func(yield func([]byte) bool) error {
			return h.t.scan(ctx, func(v []byte) bool { return yield(bytes.Clone(v)) })
		})
		if err != nil {
			return nil, "", hostErr(translate(err))
		}
		return rows, "", nil
	}
	if !prog.Streamable() {
		return nil, "", hostErr(status.BadRequest("the continuation given to queryDocuments is not one this query returned: a query with ORDER BY, GROUP BY, an aggregate or DISTINCT answers every result in one page"))
	}
	return h.page(ctx, prog, page)
}

func (h *scriptHost) ReadAll(ctx context.Context, page script.Page) ([][]byte, string, error) {
	return h.page(ctx, readAllProgram, page)
}

// scriptPageBytes ends a page of a script's query or read once its rows
// reach it (a page has at least one row), as a query's page through the
// API ends at 4 MiB: pageSize -1 asks for a page as large as the server
// gives, not for every result (a scripts hunt: a stored procedure reading
// 720 MB of items with pageSize -1 took 1.8 GB before its memory limit
// stopped it).
const scriptPageBytes = 4 << 20

// readAllProgram is readDocuments as a query, for its pages.
var readAllProgram = func() *exec.Program {
	ast, err := parse.Parse("SELECT * FROM c")
	if err != nil {
		panic(err)
	}
	prog, err := exec.Compile(ast, nil)
	if err != nil {
		panic(err)
	}
	return prog
}()

// scriptCursor is where a page of a script's query or read stopped: the id
// of the item whose rows it was in (items are read in id order), how many
// of that item's rows it had passed, and how many rows of the whole stream
// (before the query's OFFSET, LIMIT and TOP) it had passed. A later page
// resumes there; an item deleted meanwhile is passed over, not repeated.
type scriptCursor struct {
	ID   string `json:"id"`
	Skip int    `json:"s"`
	N    int    `json:"n"`
}

// page runs the streamable prog over the logical partition from page's
// continuation and returns at most page.Size rows (0: no count), at most
// scriptPageBytes of them, and the continuation of the rest.
func (h *scriptHost) page(ctx context.Context, prog *exec.Program, page script.Page) ([][]byte, string, error) {
	var cur scriptCursor
	if page.Continuation != "" {
		b, err := base64.RawURLEncoding.DecodeString(page.Continuation)
		if err == nil {
			err = json.Unmarshal(b, &cur)
		}
		if err != nil || cur.ID == "" || cur.Skip < 0 || cur.N < 0 {
			return nil, "", hostErr(status.BadRequest("the continuation given to queryDocuments or readDocuments is not one they returned"))
		}
	}
	skip, take := prog.Window()
	var (
		out        [][]byte
		next       string
		from       []byte
		id         string // the item being read
		inItem     int    // rows of it passed
		resumeSkip int    // rows of the resumed item to pass over (returned before)
		n          = cur.N
		first      = true
		badKey     error
		size       int // bytes of out
	)
	if cur.ID != "" {
		from = h.t.key(cur.ID)
	}
	docs := func(yield func([]byte) bool) error {
		return h.t.scanFrom(ctx, from, func(key, v []byte) bool {
			k, err := decodeItemKey(key)
			if err != nil {
				badKey = err
				return false
			}
			id, inItem, resumeSkip = k.ID, 0, 0
			if first && cur.ID != "" && k.ID == cur.ID {
				resumeSkip = cur.Skip
			}
			first = false
			return yield(v)
		})
	}
	err := prog.Stream(ctx, docs, func(row []byte) bool {
		inItem++
		if resumeSkip > 0 {
			resumeSkip--
			return true
		}
		r := n
		if take >= 0 && r >= skip+take {
			return false // the window is full: no more pages
		}
		if page.Size > 0 && len(out) == page.Size || size >= scriptPageBytes {
			// A row past the page: the next one starts with it.
			b, _ := json.Marshal(scriptCursor{ID: id, Skip: inItem - 1, N: r})
			next = base64.RawURLEncoding.EncodeToString(b)
			return false
		}
		n++
		if r >= skip {
			out = append(out, bytes.Clone(row))
			size += len(row)
		}
		return true
	})
	if err == nil {
		err = badKey
	}
	if err != nil {
		return nil, "", hostErr(translate(err))
	}
	return out, next, nil
}

// udfFailure is a UDF's failure in a query: its message is the script's,
// and the query answers the script's status (translate): 408 past its time
// limit, as a stored procedure's or trigger's, 400 otherwise.
type udfFailure struct{ se *script.Error }

func (f udfFailure) Error() string { return f.se.Msg }

// udfLookup resolves udf.name calls in queries on container c to its UDFs.
func (e *Engine) udfLookup(c *catalog.Container) func(name string) (exec.UDF, bool) {
	return func(name string) (exec.UDF, bool) {
		sc, err := e.cat.Script(c.DB, c.ID, UDFs, name)
		if err != nil {
			return nil, false
		}
		prog, err := e.progs.get(sc)
		if err != nil {
			return nil, false
		}
		// One VM per query and function: rows reuse it (a fresh VM per row
		// would cost ~0.4 ms each).
		caller := prog.NewCaller(e.cfg.ScriptLimits)
		return func(ctx context.Context, args [][]byte) ([]byte, error) {
			out, err := caller.Call(ctx, args)
			if se, ok := errors.AsType[*script.Error](err); ok {
				return nil, udfFailure{se: se}
			}
			return out, err
		}, true
	}
}
