package advise

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/valyala/fastjson"
)

// Errors of a malformed input line, wrapped in a *LineError.
var (
	// ErrSyntax: the line is not valid JSON.
	ErrSyntax = errors.New("advise: invalid JSON")
	// ErrNotObject: the line is JSON but not an object.
	ErrNotObject = errors.New("advise: not a JSON object")
	// ErrLineTooLong: the line is longer than MaxLineBytes.
	ErrLineTooLong = errors.New("advise: line too long")
)

// MaxLineBytes is the longest input line (one item) read: twice Cosmos DB's
// 2 MB item limit.
const MaxLineBytes = 4 << 20

// LineError is a malformed line of a JSON-lines input.
type LineError struct {
	Line int   // 1-based line number
	Err  error // wraps ErrSyntax, ErrNotObject or ErrLineTooLong
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// OnError says what reading does with a malformed line.
type OnError int

const (
	// Stop ends reading at the first malformed line (the zero value).
	Stop OnError = iota
	// Skip reports the line (ReadOptions.Malformed), counts it, and goes on.
	Skip
)

// Progress is a report on a long step, for a progress bar.
type Progress struct {
	Phase string // "read" (Done, Total: bytes) or "analyze" (Done, Total: candidates)
	Done  int64
	Total int64 // 0 when unknown
	Items int64 // items read so far
}

// ReadOptions configure how an Analyzer takes in items. The zero value
// keeps every item, stops at the first malformed line, and tracks up to
// DefaultMaxPaths paths.
type ReadOptions struct {
	OnError OnError
	// Sample caps how many items are analysed; 0 means all. A longer input
	// is sampled uniformly (reservoir sampling with a fixed seed, so runs
	// repeat), and the full count becomes the projection basis.
	Sample int
	// MaxPaths caps how many distinct property paths are tracked (default
	// DefaultMaxPaths); later new paths are ignored and counted.
	MaxPaths int
	// InputBytes is the input's size if known, for Progress.Total.
	InputBytes int64
	// Progress, if set, is called now and then while reading.
	Progress func(Progress)
	// Malformed, if set, is called for each skipped line (OnError Skip).
	Malformed func(*LineError)
}

// DefaultMaxPaths is ReadOptions.MaxPaths' default.
const DefaultMaxPaths = 256

// maxDepth is the deepest nesting of objects whose properties are tracked.
const maxDepth = 8

// pathNode is one property path: its interned values and its column (the
// value of every item, 0 for missing).
type pathNode struct {
	path     string // "/a/b"; "" for the root
	depth    int
	children map[string]int32
	values   map[string]uint32 // canonical string → value id (1-based)
	strs     []string          // value id-1 → canonical string
	col      []uint32          // item index → value id; shorter means missing
	strings  int               // items whose value is a string
	present  int               // items with a scalar, non-null value
}

// Analyzer collects a sample of items and analyses candidate partition keys
// over it (Analyze). It is not safe for concurrent use.
type Analyzer struct {
	opts    ReadOptions
	parser  fastjson.Parser
	nodes   []*pathNode // nodes[0] is the root
	sizes   []int32     // item index → size in bytes
	bytes   int64       // sum of sizes
	ignored int         // paths past MaxPaths
	// seen counts items offered (kept or not); seenBytes their size.
	seen      int64
	seenBytes int64
	malformed int
	lines     int
	current   []string
}

// NewAnalyzer returns an empty Analyzer.
func NewAnalyzer(opts ReadOptions) *Analyzer {
	if opts.MaxPaths <= 0 {
		opts.MaxPaths = DefaultMaxPaths
	}
	return &Analyzer{opts: opts, nodes: []*pathNode{{children: map[string]int32{}}}}
}

// Items reports how many items the sample holds.
func (a *Analyzer) Items() int { return len(a.sizes) }

// SetCurrentKey names the container's current partition key paths, so that
// the report marks that candidate.
func (a *Analyzer) SetCurrentKey(paths []string) { a.current = append([]string(nil), paths...) }

// Add adds one item, a JSON object, to the sample (ignoring ReadOptions.Sample).
// Errors wrap ErrSyntax or ErrNotObject; the sample is then unchanged.
func (a *Analyzer) Add(item []byte) error {
	v, err := a.parser.ParseBytes(item)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	o, err := v.Object()
	if err != nil {
		return ErrNotObject
	}
	i := len(a.sizes)
	a.sizes = append(a.sizes, int32(min(len(item), math.MaxInt32)))
	a.bytes += int64(len(item))
	a.seen++
	a.seenBytes += int64(len(item))
	a.walk(0, o, i)
	return nil
}

// check reports whether item is a JSON object, without adding it.
func (a *Analyzer) check(item []byte) error {
	v, err := a.parser.ParseBytes(item)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if v.Type() != fastjson.TypeObject {
		return ErrNotObject
	}
	return nil
}

func (a *Analyzer) walk(parent int32, o *fastjson.Object, i int) {
	o.Visit(func(k []byte, v *fastjson.Value) {
		p := a.nodes[parent]
		if len(k) == 0 || bytes.IndexByte(k, '/') >= 0 {
			return // not addressable by a Cosmos DB path
		}
		id, ok := p.children[string(k)]
		if !ok {
			if len(a.nodes) >= a.opts.MaxPaths+1 {
				a.ignored++
				return
			}
			id = int32(len(a.nodes))
			p.children[string(k)] = id
			a.nodes = append(a.nodes, &pathNode{path: p.path + "/" + string(k), depth: p.depth + 1,
				children: map[string]int32{}, values: map[string]uint32{}})
		}
		n := a.nodes[id]
		switch v.Type() {
		case fastjson.TypeObject:
			if n.depth < maxDepth {
				sub, _ := v.Object()
				a.walk(id, sub, i)
			}
		case fastjson.TypeString:
			s, _ := v.StringBytes()
			a.set(n, i, s)
			n.strings++
		case fastjson.TypeNumber:
			f, err := v.Float64()
			if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return
			}
			var buf [32]byte
			a.set(n, i, canonicalFloat(buf[:0], f))
		case fastjson.TypeTrue:
			a.set(n, i, []byte("true"))
		case fastjson.TypeFalse:
			a.set(n, i, []byte("false"))
		}
		// null and arrays leave the item missing on this path: synthetic
		// keys cannot use them, and Cosmos DB partition keys cannot be arrays.
	})
}

// canonicalFloat appends f as synthkey's canonical number string: the
// shortest decimal in plain notation, -0 as "0".
func canonicalFloat(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	return strconv.AppendFloat(dst, f, 'f', -1, 64)
}

// set records value s for item i on path n (the first value wins if an
// object repeats a property).
func (a *Analyzer) set(n *pathNode, i int, s []byte) {
	if len(n.col) > i {
		return
	}
	id, ok := n.values[string(s)]
	if !ok {
		n.strs = append(n.strs, string(s))
		id = uint32(len(n.strs))
		n.values[n.strs[id-1]] = id
	}
	for len(n.col) < i {
		n.col = append(n.col, 0)
	}
	n.col = append(n.col, id)
	n.present++
}

// value returns item i's value id on path node n (0: missing).
func (n *pathNode) value(i int) uint32 {
	if i < len(n.col) {
		return n.col[i]
	}
	return 0
}

// progressEvery is how many lines pass between Progress calls.
const progressEvery = 1024

// ReadLines reads JSON lines (one item per line; blank lines are ignored)
// from r into the sample. A malformed line is a *LineError: with OnError
// Stop it is returned at once (items before it stay in the sample); with
// Skip it is passed to ReadOptions.Malformed and counted. Other errors are
// r's or ctx's.
func (a *Analyzer) ReadLines(ctx context.Context, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		res       [][]byte // reservoir, when sampling
		rng       = rand.New(rand.NewPCG(1, 2))
		readBytes int64
		line      []byte
	)
	sampling := a.opts.Sample > 0
	report := func() {
		if a.opts.Progress != nil {
			a.opts.Progress(Progress{Phase: "read", Done: readBytes, Total: a.opts.InputBytes, Items: a.seen})
		}
	}
	for {
		var err error
		line, err = readLine(br, line[:0])
		readBytes += int64(len(line)) + 1
		if err == io.EOF && len(line) == 0 {
			break
		}
		a.lines++
		if a.lines%progressEvery == 0 {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			report()
		}
		var lerr error
		switch {
		case errors.Is(err, ErrLineTooLong):
			lerr = ErrLineTooLong
		case err != nil && err != io.EOF:
			return err
		}
		body := bytes.TrimSpace(line)
		if a.lines == 1 {
			body = bytes.TrimPrefix(body, []byte("\uFEFF"))
		}
		if lerr == nil && len(body) == 0 {
			if err == io.EOF {
				break
			}
			continue
		}
		if lerr == nil {
			if sampling {
				lerr = a.check(body)
			} else {
				lerr = a.Add(body)
			}
		}
		if lerr != nil {
			le := &LineError{Line: a.lines, Err: lerr}
			if a.opts.OnError == Stop {
				return le
			}
			a.malformed++
			if a.opts.Malformed != nil {
				a.opts.Malformed(le)
			}
		} else if sampling {
			// Reservoir sampling (Algorithm R): after n items each has been
			// kept with probability Sample/n.
			a.seen++
			a.seenBytes += int64(len(body))
			if len(res) < a.opts.Sample {
				res = append(res, bytes.Clone(body))
			} else if j := rng.Int64N(a.seen); j < int64(a.opts.Sample) {
				res[j] = append(res[j][:0], body...)
			}
		}
		if err == io.EOF {
			break
		}
	}
	report()
	if sampling {
		seen, seenBytes := a.seen, a.seenBytes
		for _, b := range res {
			if err := a.Add(b); err != nil {
				return err // checked above; cannot happen
			}
		}
		a.seen, a.seenBytes = seen, seenBytes
	}
	return nil
}

// readLine appends the next line of br (without its newline) to dst. A line
// longer than MaxLineBytes is consumed and reported as ErrLineTooLong. At
// the end of input it returns io.EOF, with the last unterminated line if
// any.
func readLine(br *bufio.Reader, dst []byte) ([]byte, error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if len(dst)+len(chunk) > MaxLineBytes+1 {
			// Drop the rest of the line.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return dst[:0], err
			}
			return dst[:0], ErrLineTooLong
		}
		dst = append(dst, chunk...)
		switch {
		case err == nil:
			return dst[:len(dst)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return dst, err
		}
	}
}
