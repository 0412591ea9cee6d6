package script

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
)

// Host is the logical partition a script acts on, inside one transaction: every write is
// applied to the transaction and committed or rolled back as a whole by the caller. Links are
// document links as scripts pass them: a name-based link "dbs/{db}/colls/{coll}/docs/{id}", a
// document's "_self", or a bare id — the Host resolves them. Methods return *HostError for
// Cosmos-level failures; any other error aborts the script (Error.Kind KindInternal).
//
// A Host is used by one execution at a time, from the goroutine that called Execute,
// RunPreTrigger or RunPostTrigger. Documents are JSON; the script package never retains the
// slices passed to or returned by a Host.
type Host interface {
	// CollectionLink is what getCollection().getSelfLink() returns: the container's name-based
	// link, "dbs/{db}/colls/{coll}".
	CollectionLink() string
	// CollectionSelf is the container's _self link, "dbs/{db rid}/colls/{rid}/": the other
	// link a collection-level method's optional first argument may name it by.
	CollectionSelf() string
	// Create stores a new document and returns it as stored (with _rid, _etag, _ts, ...).
	Create(doc []byte) ([]byte, error)
	// Upsert creates or replaces a document; ifMatch, when not empty, is the _etag a replaced
	// document must have.
	Upsert(doc []byte, ifMatch string) ([]byte, error)
	// Replace replaces the document at link; ifMatch as for Upsert.
	Replace(link string, doc []byte, ifMatch string) ([]byte, error)
	// Patch applies spec, a patch request's body (an array of operations,
	// or {condition, operations}), to the document at link and returns it
	// as stored; ifMatch as for Upsert.
	Patch(link string, spec []byte, ifMatch string) ([]byte, error)
	// Read returns the document at link.
	Read(link string) ([]byte, error)
	// Delete deletes the document at link; ifMatch as for Upsert.
	Delete(link string, ifMatch string) error
	// Query runs a SQL query within the partition; params maps "@name" to the JSON of its value.
	// It returns a page of the results and the continuation of the rest ("" when there is none).
	// ctx ends when the script's request does or the script passes a limit (its time, its
	// memory): the query must stop then, so that its scan, its UDF calls and the rows it
	// gathers stay within the script's limits (a scripts hunt: a stored procedure's query
	// calling a slow UDF ran for 40 s, and one gathering large rows reached 12.9 GB).
	Query(ctx context.Context, query string, params map[string][]byte, page Page) ([][]byte, string, error)
	// ReadAll returns a page of the partition's documents and the continuation of the rest;
	// ctx as for Query.
	ReadAll(ctx context.Context, page Page) ([][]byte, string, error)
}

// Page is what a queryDocuments or readDocuments call asks for: at most Size results (0: all
// of them), from Continuation ("" for the start), a continuation an earlier page returned.
type Page struct {
	Size         int
	Continuation string
}

// HostError is a Cosmos-level failure of a Host operation: a status (e.g. 404, 409, 412, 400,
// 403), a substatus (0 when none) and a client-safe message. Scripts see it as an Error object
// with number = Status and body = message = Msg.
type HostError struct {
	Status int
	Sub    int
	Msg    string
}

func (e *HostError) Error() string {
	return fmt.Sprintf("script host: %d: %s", e.Status, e.Msg)
}

// Limits bound one execution. A zero or negative field takes its default.
type Limits struct {
	Timeout       time.Duration // wall time; default and maximum 5s (MaxTimeout). On expiry the VM is interrupted.
	MaxOperations int           // host operations before isAccepted turns false; default 1000
	MaxHeapGrowth int64         // bytes of Go heap growth tolerated during the run; default 256 MiB
	MaxCallStack  int           // JavaScript call depth; default 1000 frames
	MaxLogBytes   int           // console.log output kept, in bytes; default 64 KiB
	// MaxResponseBytes is the response body the host accepts, which a stored procedure reads
	// with getContext().getResponse().getMaxResponseBodySize(); default 4 MiB. The host
	// enforces it (the script only reports it).
	MaxResponseBytes int
}

// Default limits; see Limits.
const (
	DefaultTimeout = 5 * time.Second
	// MaxTimeout is the longest Timeout; longer ones are reduced to it. It is Cosmos DB's
	// bound for scripts, and the bound on regular-expression matches relies on it (see guard.go).
	MaxTimeout           = 5 * time.Second
	DefaultMaxOperations = 1000
	DefaultMaxHeapGrowth = 256 << 20
	DefaultMaxCallStack  = 1000
	DefaultMaxLogBytes   = 64 << 10
	// DefaultMaxResponseBytes is Cosmos DB's bound on a stored procedure's response body.
	DefaultMaxResponseBytes = 4 << 20
)

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	l.Timeout = min(l.Timeout, MaxTimeout)
	if l.MaxOperations <= 0 {
		l.MaxOperations = DefaultMaxOperations
	}
	if l.MaxHeapGrowth <= 0 {
		l.MaxHeapGrowth = DefaultMaxHeapGrowth
	}
	if l.MaxCallStack <= 0 {
		l.MaxCallStack = DefaultMaxCallStack
	}
	if l.MaxLogBytes <= 0 {
		l.MaxLogBytes = DefaultMaxLogBytes
	}
	if l.MaxResponseBytes <= 0 {
		l.MaxResponseBytes = DefaultMaxResponseBytes
	}
	return l
}

// ErrorKind says why a script failed.
type ErrorKind int

const (
	// KindCompile: the body is not valid JavaScript or not a function. Status 400.
	KindCompile ErrorKind = iota + 1
	// KindArgs: the arguments are not valid JSON. Status 400.
	KindArgs
	// KindException: the script threw (or a built-in threw) and nothing caught it. Status 400.
	KindException
	// KindHost: a *HostError escaped the script unhandled (thrown by the script or by an
	// operation without a callback). Status and Sub are the HostError's; Unwrap returns it.
	KindHost
	// KindStackOverflow: the call depth exceeded Limits.MaxCallStack. Status 400.
	KindStackOverflow
	// KindTimeout: the run exceeded Limits.Timeout. Status 408 (Cosmos DB's RequestTimeout for
	// scripts).
	KindTimeout
	// KindMemory: the Go heap grew by more than Limits.MaxHeapGrowth. Status 400.
	KindMemory
	// KindCanceled: ctx was done; Unwrap returns ctx.Err(). Status 408.
	KindCanceled
	// KindInternal: the Host failed with an error that is not a *HostError, or the VM failed
	// unexpectedly. Status 500; Msg hides the cause, which Unwrap returns.
	KindInternal
)

var kindNames = [...]string{
	KindCompile:       "compile",
	KindArgs:          "args",
	KindException:     "exception",
	KindHost:          "host",
	KindStackOverflow: "stack overflow",
	KindTimeout:       "timeout",
	KindMemory:        "memory",
	KindCanceled:      "canceled",
	KindInternal:      "internal",
}

func (k ErrorKind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}

// Error is a script failure. Status is the HTTP status the API should answer and Sub its
// substatus (0 when none); Msg is client-safe and includes the JavaScript error message (for a
// thrown non-Error value, its JSON rendering: "42", `{"a":1}`, "null", "undefined"). The
// wrapped cause (ctx.Err(), the *HostError, a Host's internal error) is for logs and errors.Is.
type Error struct {
	Kind   ErrorKind
	Status int
	Sub    int
	Msg    string
	cause  error
}

func (e *Error) Error() string { return "script: " + e.Kind.String() + ": " + e.Msg }

// Unwrap returns the cause: ctx.Err() for KindCanceled, the *HostError for KindHost, the Host's
// error for KindInternal, nil otherwise.
func (e *Error) Unwrap() error { return e.cause }

// kindStatus is the HTTP status of each kind but KindHost, whose status is the HostError's.
var kindStatus = [...]int{
	KindCompile:       http.StatusBadRequest,
	KindArgs:          http.StatusBadRequest,
	KindException:     http.StatusBadRequest,
	KindStackOverflow: http.StatusBadRequest,
	KindTimeout:       http.StatusRequestTimeout,
	KindMemory:        http.StatusBadRequest,
	KindCanceled:      http.StatusRequestTimeout,
	KindInternal:      http.StatusInternalServerError,
}

func newError(k ErrorKind, msg string, cause error) *Error {
	return &Error{Kind: k, Status: kindStatus[k], Msg: truncate(msg, maxMsgBytes), cause: cause}
}

// maxMsgBytes bounds Error.Msg: scripts choose what they throw.
const maxMsgBytes = 4 << 10

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

type programKind int

const (
	kindSproc programKind = iota
	kindTrigger
	kindUDF
)

// Program is a compiled script. It is immutable and safe for concurrent use; every execution
// runs in a fresh VM.
type Program struct {
	kind programKind
	prg  *goja.Program
	// entry is the name of the global function to call after running prg; empty when prg
	// evaluates to the function itself.
	entry string
}

// CompileStoredProcedure compiles a stored procedure body. It returns an *Error of KindCompile
// when the body is not valid JavaScript or not a function.
func CompileStoredProcedure(body string) (*Program, error) { return compile(kindSproc, body) }

// CompileTrigger compiles a pre- or post-trigger body; errors as for CompileStoredProcedure.
func CompileTrigger(body string) (*Program, error) { return compile(kindTrigger, body) }

// CompileUDF compiles a user-defined function body; errors as for CompileStoredProcedure.
func CompileUDF(body string) (*Program, error) { return compile(kindUDF, body) }

func compile(kind programKind, body string) (p *Program, err error) {
	setRegexpTimeout() // before goja compiles the script's regular-expression literals
	// NB: goja's parser and compiler are trusted not to panic, but the body is untrusted input
	// and a panic here would take the server down; turn one into a compile error.
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, newError(KindCompile, "Encountered exception while compiling Javascript", fmt.Errorf("panic: %v", r))
		}
	}()
	if msg := sourceTooLarge("the script", body); msg != "" {
		return nil, newError(KindCompile, "Encountered exception while compiling Javascript. Exception = "+msg, nil)
	}
	// The usual body is a single function: compile it as a parenthesised expression whose value
	// is the function, which also accepts the anonymous `function (...) {...}` form.
	prg, exprErr := parser.ParseFile(nil, "", "("+body+"\n)", 0)
	if exprErr == nil && isFunctionExpr(prg) {
		if msg := checkFolds(prg); msg != "" {
			return nil, newError(KindCompile, "Encountered exception while compiling Javascript. Exception = "+msg, nil)
		}
		cp, cerr := goja.CompileAST(prg, false)
		if cerr != nil {
			return nil, compileError(cerr)
		}
		return &Program{kind: kind, prg: cp}, nil
	}
	prg, perr := parser.ParseFile(nil, "", body, 0)
	if perr != nil {
		var el parser.ErrorList
		if errors.As(exprErr, &el) && len(el) > 0 && el[0].Position.Line > strings.Count(body, "\n")+1 {
			// It failed at the ")" added after the body (a function
			// missing its "}"): what the body lacks is told without it.
			_, exprErr = parser.ParseFile(nil, "", "("+body, 0)
		}
		return nil, compileError(fartherError(exprErr, perr))
	}
	entry := firstFunction(prg)
	if entry == "" {
		return nil, newError(KindCompile, "Encountered exception while compiling Javascript. Exception = the script body must be a JavaScript function", nil)
	}
	if msg := checkFolds(prg); msg != "" {
		return nil, newError(KindCompile, "Encountered exception while compiling Javascript. Exception = "+msg, nil)
	}
	cp, cerr := goja.CompileAST(prg, false)
	if cerr != nil {
		return nil, compileError(cerr)
	}
	return &Program{kind: kind, prg: cp, entry: entry}, nil
}

// fartherError returns the syntax error of the parse that got further
// into the body: the one of the form its author meant. exprErr is that of
// the body parsed as a parenthesised expression (an anonymous
// `function () {…}` fails the other parse at its "("), its first line's
// columns moved back over the "(" added; declErr that of the body as it
// is. Equals go to declErr.
func fartherError(exprErr, declErr error) error {
	var el parser.ErrorList
	if !errors.As(exprErr, &el) || len(el) == 0 {
		return declErr
	}
	e := *el[0]
	if e.Position.Line == 1 {
		e.Position.Column--
	}
	var dl parser.ErrorList
	if errors.As(declErr, &dl) && len(dl) > 0 {
		d := dl[0].Position
		if e.Position.Line < d.Line || e.Position.Line == d.Line && e.Position.Column <= d.Column {
			return declErr
		}
	}
	return e
}

func compileError(err error) *Error {
	return newError(KindCompile, "Encountered exception while compiling Javascript. Exception = SyntaxError: "+err.Error(), nil)
}

// isFunctionExpr reports whether prg is exactly one expression statement whose expression is a
// plain (not async, not generator) function literal.
func isFunctionExpr(prg *ast.Program) bool {
	if len(prg.Body) != 1 {
		return false
	}
	st, ok := prg.Body[0].(*ast.ExpressionStatement)
	if !ok {
		return false
	}
	fn, ok := st.Expression.(*ast.FunctionLiteral)
	return ok && !fn.Async && !fn.Generator
}

// firstFunction returns the name of prg's first top-level plain function declaration, or "".
func firstFunction(prg *ast.Program) string {
	for _, st := range prg.Body {
		if d, ok := st.(*ast.FunctionDeclaration); ok && d.Function.Name != nil && !d.Function.Async && !d.Function.Generator {
			return d.Function.Name.Name.String()
		}
	}
	return ""
}

// Result is what a stored procedure produced.
type Result struct {
	// Body is the JSON of the value the script passed to getContext().getResponse().setBody,
	// or nil when it set none (or set undefined): Cosmos DB then answers 200 with an empty body.
	Body []byte
	// Log is the console.log output, the calls' texts concatenated as Cosmos DB does (see
	// installConsole), at most Limits.MaxLogBytes; empty unless logging was requested.
	Log string
}
