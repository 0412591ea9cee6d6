package exec

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// Cursor is a position in a sorted query's result order: the ORDER BY key
// values of a row, the tie key of the document it came from, and the row's
// index among that document's rows (a JOIN gives several). Rows are ordered
// by Keys (each ascending or descending as the query says), then by Tie
// bytewise, then by Sub. A Cursor round-trips through JSON.
type Cursor struct {
	// Keys is a JSON array of the key values; undefined keys hold null
	// there and have their bit set in Undef.
	Keys  json.RawMessage `json:"k"`
	Undef uint64          `json:"u,omitempty"`
	// Cut marks the keys that are strings longer than maxCursorString,
	// held in Keys by their first bytes alone (see RunSortedPage).
	Cut uint64 `json:"x,omitempty"`
	// CutSum is a hash of the whole strings of the cut keys: the
	// position's row, found again, restores them only if they are still
	// those (a row whose key changed but kept its first bytes moved the
	// position past rows never returned: a cluster hunt).
	CutSum []byte `json:"xs,omitempty"`
	Tie    []byte `json:"t"`
	Sub    int    `json:"s,omitempty"`
}

// maxCursorString bounds the bytes of a string key a Cursor holds: a page's
// position in ORDER BY c.s was the whole of its last row's string, so a
// 200 KB string made a 267 KB continuation, which the server's own 64 KiB
// header limit refused and @azure/cosmos (Node's 16 KiB) could not read (a
// hostile-query hunt).
const maxCursorString = 512

// SortedRow is a result row with its position.
type SortedRow struct {
	Row []byte
	At  Cursor
}

// Sortable reports whether RunSortedPage serves the query: an ORDER BY of at
// most 64 keys, no GROUP BY, aggregate or DISTINCT in the outermost query,
// which reads documents directly (no FROM subquery).
func (p *Program) Sortable() bool {
	q := p.q
	return len(q.orderBy) > 0 && len(q.orderBy) <= 64 && !q.grouped && !q.distinct && q.top && q.from != nil && q.from.sub == nil
}

// RunSortedPage evaluates a Sortable query over docs and returns, in
// order, the first n rows after position after (nil: from the first),
// ignoring OFFSET, LIMIT and TOP (see Window). It keeps about 2n rows in
// memory whatever the input size. docs yields every document with its tie
// key, which must be unique and stable across calls (a document's storage
// position); a row's order is that of Run when the tie keys ascend in input
// order. An after that is not a valid position for this query fails with
// an *Error.
func (p *Program) RunSortedPage(ctx context.Context, docs func(yield func(doc, tie []byte) bool) error, after *Cursor, n int) ([]SortedRow, error) {
	if !p.Sortable() {
		return nil, &Error{Msg: "the query has no ORDER BY a sorted page can serve"}
	}
	if n <= 0 {
		return nil, nil
	}
	q := *p.q
	q.topN, q.offset, q.limit = -1, 0, -1
	// Kept rows are copied out of their document at once, so one parser
	// serves every document.
	q.retain = false
	var from *sortedRow
	if after != nil {
		keys, err := decodeKeys(after, len(q.orderBy))
		if err != nil {
			return nil, err
		}
		from = &sortedRow{keys: keys, tie: after.Tie, sub: after.Sub}
		if after.Cut != 0 {
			if err := q.recoverCut(ctx, p, docs, after.Cut, after.CutSum, from); err != nil {
				return nil, err
			}
		}
	}
	var tie []byte
	sub := 0
	rc := &runCtx{ctx: ctx, now: p.now()}
	rc.docs = func(yield func([]byte) bool) error {
		return docs(func(doc, t []byte) bool {
			tie, sub = t, 0
			return yield(doc)
		})
	}
	e := &env{slots: make([]value, p.nslots), rc: rc}
	var rows []sortedRow
	var worst *sortedRow // once n rows are kept: the last of them; later rows past it are dropped
	prune := func() {
		q.sortPage(rows)
		if len(rows) >= n {
			clear(rows[n:])
			rows = rows[:n]
			worst = &rows[n-1]
		}
	}
	keys := make([]value, len(q.orderBy))
	q.forRows(e, func() bool {
		v := q.proj(e)
		if v.k == kUndef {
			return true
		}
		r := sortedRow{keys: keys, tie: tie, sub: sub}
		sub++
		for i, o := range q.orderBy {
			keys[i] = o.fn(e)
		}
		if (from != nil && q.comparePage(r, *from) <= 0) || (worst != nil && q.comparePage(r, *worst) >= 0) {
			return true
		}
		r.keys = make([]value, len(keys))
		for i, k := range keys {
			r.keys[i] = owned(k)
		}
		r.tie, r.row = bytes.Clone(tie), appendJSON(nil, v)
		rows = append(rows, r)
		if len(rows) >= 2*n+64 {
			prune()
		}
		return true
	})
	if rc.err != nil {
		return nil, rc.err
	}
	prune()
	out := make([]SortedRow, len(rows))
	for i, r := range rows {
		out[i] = SortedRow{Row: r.row, At: r.cursor()}
	}
	return out, nil
}

type sortedRow struct {
	keys []value
	tie  []byte
	sub  int
	row  []byte // the projected row as JSON
}

func (r sortedRow) cursor() Cursor {
	c := Cursor{Keys: []byte{'['}, Tie: r.tie, Sub: r.sub}
	for i, k := range r.keys {
		if i > 0 {
			c.Keys = append(c.Keys, ',')
		}
		switch {
		case k.k == kUndef:
			c.Undef |= 1 << i
			c.Keys = append(c.Keys, "null"...)
			continue
		case k.k == kStr && len(k.s) > maxCursorString:
			c.Cut |= 1 << i
			k = str(cutString(k.s, maxCursorString))
		}
		c.Keys = appendJSON(c.Keys, k)
	}
	c.Keys = append(c.Keys, ']')
	if c.Cut != 0 {
		c.CutSum = cutSum(r.keys, c.Cut)
	}
	return c
}

// cutSum hashes the strings of keys that cut marks.
func cutSum(keys []value, cut uint64) []byte {
	h := sha256.New()
	for i, k := range keys {
		if cut&(1<<i) != 0 {
			fmt.Fprintf(h, "%d:%s;", len(k.s), k.s)
		}
	}
	return h.Sum(nil)[:16]
}

// cutString returns s's first bytes, at most n, ending on a character boundary.
func cutString(s string, n int) string {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func decodeKeys(c *Cursor, n int) ([]value, error) {
	bad := &Error{Msg: "invalid position in the query's sort order"}
	var p fastjson.Parser
	v, err := p.ParseBytes(c.Keys)
	if err != nil {
		return nil, bad
	}
	arr, err := v.Array()
	if err != nil || len(arr) != n || c.Undef>>n != 0 || c.Cut>>n != 0 || c.Cut&c.Undef != 0 {
		return nil, bad
	}
	keys := make([]value, n)
	for i, j := range arr {
		if c.Undef&(1<<i) == 0 {
			keys[i] = owned(fromJSON(j))
		}
		if c.Cut&(1<<i) != 0 && keys[i].k != kStr {
			return nil, bad
		}
	}
	return keys, nil
}

// recoverCut restores the whole strings of from's cut keys (Cursor.Cut) from
// the position's own row: the document whose tie key from holds, its row
// from.sub, read in one pass over docs that evaluates that document alone.
// When that row is gone, or its keys no longer begin with the cut ones (the
// document changed since), each cut key stands for the least string that
// begins with it (ascending) or a string past every one that does
// (descending): the page may then repeat rows whose keys share those first
// bytes with the position's, and skips none.
func (q *cquery) recoverCut(ctx context.Context, p *Program, docs func(yield func(doc, tie []byte) bool) error, cut uint64, sum []byte, from *sortedRow) error {
	var found []value
	rc := &runCtx{ctx: ctx, now: p.now()}
	rc.docs = func(yield func([]byte) bool) error {
		return docs(func(doc, t []byte) bool {
			if !bytes.Equal(t, from.tie) {
				return true
			}
			yield(doc)
			return false
		})
	}
	e := &env{slots: make([]value, p.nslots), rc: rc}
	sub := 0
	q.forRows(e, func() bool {
		if q.proj(e).k == kUndef {
			return true
		}
		if sub++; sub-1 != from.sub {
			return true
		}
		found = make([]value, len(q.orderBy))
		for i, o := range q.orderBy {
			found[i] = owned(o.fn(e))
		}
		return false
	})
	if rc.err != nil {
		return rc.err
	}
	same := found != nil
	for i := range q.orderBy {
		if cut&(1<<i) != 0 && (!same || found[i].k != kStr || !strings.HasPrefix(found[i].s, from.keys[i].s)) {
			same = false
		}
	}
	if same && bytes.Equal(cutSum(found, cut), sum) {
		for i := range q.orderBy {
			if cut&(1<<i) != 0 {
				from.keys[i] = found[i]
			}
		}
		return nil
	}
	for i, o := range q.orderBy {
		if cut&(1<<i) != 0 && o.desc {
			from.keys[i] = str(from.keys[i].s + "\xff") // past every valid string that begins with the cut one
		}
	}
	return nil
}

// comparePage orders rows by their keys, tie key and index.
func (q *cquery) comparePage(a, b sortedRow) int {
	for i, o := range q.orderBy {
		if c := compareValues(a.keys[i], b.keys[i]); c != 0 {
			if o.desc {
				return -c
			}
			return c
		}
	}
	return cmp.Or(bytes.Compare(a.tie, b.tie), cmp.Compare(a.sub, b.sub))
}

func (q *cquery) sortPage(rows []sortedRow) {
	slices.SortFunc(rows, q.comparePage)
}

// String describes a cursor for error messages and tests.
func (c Cursor) String() string {
	return fmt.Sprintf("%s/%x/%x/%d", c.Keys, c.Undef, c.Tie, c.Sub)
}
