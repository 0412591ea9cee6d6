package advise

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

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

// LineError is a malformed item of the input: a line of a JSON-lines
// input, or an element of a JSON array.
type LineError struct {
	// Line is the 1-based line number of a JSON-lines input; 0 for an
	// array's element.
	Line int
	// Item is the 1-based index of an array's element; 0 for JSON lines.
	Item int
	Err  error // wraps ErrSyntax, ErrNotObject or ErrLineTooLong
}

func (e *LineError) Error() string {
	if e.Item > 0 {
		return fmt.Sprintf("item %d of the array: %v", e.Item, e.Err)
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

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
//
// Values are interned with their JSON type, as Cosmos DB keys them: the
// number 17 and the string "17" are two values (two logical partitions),
// though both have the canonical string "17" that a synthetic key (a
// string) is made of. JSON null is a value of its own kind (kindNull,
// canonical string "null"): Cosmos DB keys an item whose property is null
// in the logical partition of null, apart from the items without the
// property (the undefined partition, value id 0 here). A synthetic key
// cannot take null (synthkey.ErrNull), so the canonical column maps it to
// missing (analysis.canonIDs). Null is no part of present, strings or
// numbers, nor of scalars().
type pathNode struct {
	path     string // "/a/b" (segments escaped as in JSON Pointer); "" for the root
	depth    int
	children map[string]int32  // property name (unescaped) → node
	values   map[string]uint32 // type tag + canonical string → value id (1-based)
	strs     []string          // value id-1 → canonical string
	kinds    []byte            // value id-1 → type tag: 's', 'n', 'b' or kindNull
	col      []uint32          // item index → value id; shorter means missing
	null     uint32            // the value id of null; 0 if no item has null here
	strings  int               // items whose value is a string
	present  int               // items with a scalar, non-null value
	// numbers counts items whose value is a number, fractional those whose
	// number is not an integer; strBytes sums the lengths of string values.
	numbers, fractional int
	strBytes            int64
	// unsafe counts items whose number is past ±(2^53−1): Cosmos DB keys
	// it as the nearest double, and a synthetic key refuses it
	// (synthkey.ErrNumberRange), so it is no part of one.
	unsafe int
	// unit, for a time bucket derived from the time path (not a property),
	// is "hour", "day" or "month"; src is the time path's node.
	unit string
	src  int32
}

// Analyzer collects a sample of items and analyses candidate partition keys
// over it (Analyze). It is not safe for concurrent use.
type Analyzer struct {
	opts    ReadOptions
	parser  fastjson.Parser
	compact []byte      // an item re-marshalled without white space, to measure it
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
	// Measured without the input's white space: an item's size is what
	// the store keeps, whether it came as a JSON line or from an indented
	// array (a pretty-printed export measured 1.5 times as much).
	a.compact = v.MarshalTo(a.compact[:0])
	n := len(a.compact)
	i := len(a.sizes)
	a.sizes = append(a.sizes, int32(min(n, math.MaxInt32)))
	a.bytes += int64(n)
	a.seen++
	a.seenBytes += int64(n)
	a.walk(0, o, i)
	return nil
}

// check reports whether item is a JSON object, without adding it, and
// returns its size as Add measures it.
func (a *Analyzer) check(item []byte) (int, error) {
	v, err := a.parser.ParseBytes(item)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if v.Type() != fastjson.TypeObject {
		return 0, ErrNotObject
	}
	a.compact = v.MarshalTo(a.compact[:0])
	return len(a.compact), nil
}

func (a *Analyzer) walk(parent int32, o *fastjson.Object, i int) {
	o.Visit(func(k []byte, v *fastjson.Value) {
		p := a.nodes[parent]
		if len(k) == 0 {
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
			a.nodes = append(a.nodes, &pathNode{path: p.path + "/" + escapeSegment(string(k)), depth: p.depth + 1,
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
			if a.set(n, i, 's', s) {
				n.strings++
				n.strBytes += int64(len(s))
			}
		case fastjson.TypeNumber:
			f, err := v.Float64()
			if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
				return
			}
			var buf [32]byte
			if a.set(n, i, 'n', canonicalFloat(buf[:0], f)) {
				n.numbers++
				if f != math.Trunc(f) {
					n.fractional++
				}
				if math.Abs(f) > maxSafeInteger {
					n.unsafe++
				}
			}
		case fastjson.TypeTrue:
			a.set(n, i, 'b', []byte("true"))
		case fastjson.TypeFalse:
			a.set(n, i, 'b', []byte("false"))
		case fastjson.TypeNull:
			a.set(n, i, kindNull, []byte("null"))
		}
		// Arrays leave the item missing on this path: Cosmos DB partition
		// keys cannot be arrays (nor objects, walked above).
	})
}

// kindNull is the type tag of JSON null (see pathNode).
const kindNull = 'z'

// isNull reports whether value id v of n is null.
func (n *pathNode) isNull(v uint32) bool { return v != 0 && v == n.null }

// scalars returns how many distinct values other than null n holds.
func (n *pathNode) scalars() int {
	if n.null != 0 {
		return len(n.strs) - 1
	}
	return len(n.strs)
}

// maxSafeInteger is the largest integer a double holds exactly, and the
// largest number a synthetic key takes (synthkey's own bound).
const maxSafeInteger = 1<<53 - 1

// canonicalFloat appends f as synthkey's canonical number string: the
// shortest decimal in plain notation, -0 as "0".
func canonicalFloat(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	return strconv.AppendFloat(dst, f, 'f', -1, 64)
}

// escapeSegment escapes a property name as a path segment the way JSON
// Pointer (RFC 6901) does: "~" as "~0" and "/" as "~1", so that a property
// named "a/b" is the path "/a~1b", not the nested "/a/b".
func escapeSegment(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// unescapeSegment undoes escapeSegment.
func unescapeSegment(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// set records value s of type tag for item i on path n and reports whether
// it did: the first value wins if an object repeats a property. A null
// (tag kindNull) is not counted as present.
func (a *Analyzer) set(n *pathNode, i int, tag byte, s []byte) bool {
	if len(n.col) > i {
		return false
	}
	var kb [64]byte
	key := append(append(kb[:0], tag), s...)
	id, ok := n.values[string(key)]
	if !ok {
		n.strs = append(n.strs, string(s))
		n.kinds = append(n.kinds, tag)
		id = uint32(len(n.strs))
		n.values[string(key)] = id
		if tag == kindNull {
			n.null = id
		}
	}
	for len(n.col) < i {
		n.col = append(n.col, 0)
	}
	n.col = append(n.col, id)
	if tag != kindNull {
		n.present++
	}
	return true
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

// ReadLines reads items from r into the sample: JSON lines (one item per
// line; blank lines are ignored) or, when the input starts with "[", one
// JSON array of items (as Cosmos DB's Data Explorer and many tools export
// them), laid out over lines as it likes. A malformed item is a
// *LineError: with OnError Stop it is returned at once (items before it
// stay in the sample); with Skip it is passed to ReadOptions.Malformed and
// counted. In an array invalid JSON ends the input, as there is no line to
// resume at: with Skip it is reported and counted like a malformed item.
// Other errors are r's or ctx's.
func (a *Analyzer) ReadLines(ctx context.Context, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	rd := &reader{a: a, rng: rand.New(rand.NewPCG(1, 2))}
	array, err := startsArray(br)
	if err != nil {
		return err
	}
	if array {
		err = rd.readArray(ctx, br)
	} else {
		err = rd.readLines(ctx, br)
	}
	if err != nil {
		return err
	}
	rd.report()
	return rd.finish()
}

// startsArray reports whether the input's first byte other than white
// space and a byte order mark is "[", without consuming it.
func startsArray(br *bufio.Reader) (bool, error) {
	for skip := 0; ; {
		b, err := br.Peek(skip + 1)
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		switch c := b[skip]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			skip++
		case skip == 0 && bytes.HasPrefix(b, []byte{0xEF}):
			bom, err := br.Peek(3)
			if err != nil || !bytes.Equal(bom, []byte("\uFEFF")) {
				return false, nil
			}
			_, _ = br.Discard(3)
		default:
			return c == '[', nil
		}
		if skip > 0 && skip >= 4096 {
			_, _ = br.Discard(skip)
			skip = 0
		}
	}
}

// reader takes in the items of one input, sampling them if asked.
type reader struct {
	a         *Analyzer
	res       [][]byte // reservoir, when sampling
	rng       *rand.Rand
	readBytes int64
}

func (rd *reader) report() {
	a := rd.a
	if a.opts.Progress != nil {
		a.opts.Progress(Progress{Phase: "read", Done: rd.readBytes, Total: a.opts.InputBytes, Items: a.seen})
	}
}

// offer takes one well-formed or malformed item; lerr, if set, is why it
// is malformed (le names where). It returns le when reading must stop.
func (rd *reader) offer(body []byte, le *LineError) error {
	a := rd.a
	sampling := a.opts.Sample > 0
	size := 0
	if le.Err == nil {
		if sampling {
			size, le.Err = a.check(body)
		} else {
			le.Err = a.Add(body)
		}
	}
	if le.Err != nil {
		if a.opts.OnError == Stop {
			return le
		}
		a.malformed++
		if a.opts.Malformed != nil {
			a.opts.Malformed(le)
		}
		return nil
	}
	if sampling {
		// Reservoir sampling (Algorithm R): after n items each has been
		// kept with probability Sample/n.
		a.seen++
		a.seenBytes += int64(size)
		if len(rd.res) < a.opts.Sample {
			rd.res = append(rd.res, bytes.Clone(body))
		} else if j := rd.rng.Int64N(a.seen); j < int64(a.opts.Sample) {
			rd.res[j] = append(rd.res[j][:0], body...)
		}
	}
	return nil
}

// finish adds the reservoir's items to the sample.
func (rd *reader) finish() error {
	a := rd.a
	if a.opts.Sample <= 0 {
		return nil
	}
	seen, seenBytes := a.seen, a.seenBytes
	for _, b := range rd.res {
		if err := a.Add(b); err != nil {
			return err // checked when offered; cannot happen
		}
	}
	a.seen, a.seenBytes = seen, seenBytes
	return nil
}

func (rd *reader) readLines(ctx context.Context, br *bufio.Reader) error {
	a := rd.a
	var line []byte
	for {
		var err error
		line, err = readLine(br, line[:0])
		rd.readBytes += int64(len(line)) + 1
		if err == io.EOF && len(line) == 0 {
			return nil
		}
		a.lines++
		if a.lines%progressEvery == 0 {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			rd.report()
		}
		le := &LineError{Line: a.lines}
		switch {
		case errors.Is(err, ErrLineTooLong):
			le.Err = ErrLineTooLong
		case err != nil && err != io.EOF:
			return err
		}
		body := bytes.TrimSpace(line)
		if a.lines == 1 {
			body = bytes.TrimPrefix(body, []byte("\uFEFF"))
		}
		if le.Err != nil || len(body) > 0 {
			if oerr := rd.offer(body, le); oerr != nil {
				return oerr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// countingReader counts the bytes read through it, for Progress.
type countingReader struct {
	r io.Reader
	n *int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

func (rd *reader) readArray(ctx context.Context, br *bufio.Reader) error {
	a := rd.a
	dec := json.NewDecoder(countingReader{br, &rd.readBytes})
	// Invalid JSON ends the array: with Skip it is reported and counted,
	// and the items before it kept.
	bad := func(item int, err error) error {
		le := &LineError{Item: item, Err: fmt.Errorf("%w: %v", ErrSyntax, err)}
		if a.opts.OnError == Stop {
			return le
		}
		a.malformed++
		if a.opts.Malformed != nil {
			a.opts.Malformed(le)
		}
		return nil
	}
	if _, err := dec.Token(); err != nil { // the "["
		return bad(1, err)
	}
	var raw json.RawMessage
	for item := 1; dec.More(); item++ {
		if item%progressEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			rd.report()
		}
		raw = raw[:0]
		if err := dec.Decode(&raw); err != nil {
			return bad(item, err)
		}
		a.lines++
		le := &LineError{Item: item}
		if len(raw) > MaxLineBytes {
			le.Err = ErrLineTooLong
		}
		if err := rd.offer(raw, le); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the "]"
		return bad(a.lines+1, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return bad(a.lines+1, errors.New("data after the array"))
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
