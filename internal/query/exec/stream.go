package exec

import (
	"cmp"
	"context"
)

// Window returns the part of the result stream a query keeps: skip rows are dropped, then
// at most take rows are kept (take < 0: no limit). It combines OFFSET, LIMIT and TOP of the
// outermost query.
func (p *Program) Window() (skip, take int) {
	q := p.q
	take = q.limit
	if q.topN >= 0 && (take < 0 || q.topN < take) {
		take = q.topN
	}
	return q.offset, take
}

// Streamable reports whether the query's rows can be produced one document at a time and
// concatenated across partitions and pages: no ORDER BY, GROUP BY, aggregate or DISTINCT in
// the outermost query, and rows that come from the documents one at a time (perDocument).
// OFFSET, LIMIT and TOP are the caller's to apply (see Window).
func (p *Program) Streamable() bool {
	q := p.q
	return len(q.orderBy) == 0 && !q.grouped && !q.distinct && q.perDocument()
}

// perDocument reports whether q's rows come from the documents one at a time, so that a
// page can resume after the last document it read: q reads FROM the documents, or FROM a
// subquery that does so itself and keeps every row (no ORDER BY, GROUP BY, aggregate,
// DISTINCT, TOP, OFFSET or LIMIT, whose rows depend on every document). Otherwise each page
// ran the subquery afresh from where the last one stopped (a bug hunt: FROM (SELECT DISTINCT
// …) in pages of one repeated values; FROM (SELECT TOP 3 …) returned every row), and a query
// without FROM, whose one row comes from no document, never ended in pages of one.
func (q *cquery) perDocument() bool {
	if q.from == nil {
		return false
	}
	s := q.from.sub
	if s == nil {
		return true
	}
	return len(s.orderBy) == 0 && !s.grouped && !s.distinct && s.topN < 0 && s.offset == 0 && s.limit < 0 && s.perDocument()
}

// Stream evaluates a streamable program (see Streamable) over docs and calls fn with each
// result row, ignoring OFFSET, LIMIT and TOP, until fn returns false. Each row is produced
// while docs is inside its yield call for the document it comes from, so the caller knows
// which document a row belongs to. row is only valid during the call. Errors are those of
// Run (but a query whose rows are its documents as they are, SELECT * FROM c, passes them on
// unparsed: streamWhole); a program that is not streamable fails with an *Error.
func (p *Program) Stream(ctx context.Context, docs func(yield func(doc []byte) bool) error, fn func(row []byte) bool) error {
	if !p.Streamable() {
		return &Error{Msg: "the query cannot be streamed"}
	}
	return p.stream(ctx, docs, fn)
}

// StreamOrdered is Stream for a query whose documents arrive in its ORDER BY
// order already (read from an index in that order): the ORDER BY is not
// evaluated. The query must otherwise be streamable (no GROUP BY, aggregate
// or DISTINCT), else StreamOrdered fails with an *Error.
func (p *Program) StreamOrdered(ctx context.Context, docs func(yield func(doc []byte) bool) error, fn func(row []byte) bool) error {
	if q := p.q; q.grouped || q.distinct {
		return &Error{Msg: "the query cannot be streamed"}
	}
	return p.stream(ctx, docs, fn)
}

func (p *Program) stream(ctx context.Context, docs func(yield func(doc []byte) bool) error, fn func(row []byte) bool) error {
	if p.whole {
		return p.streamWhole(ctx, docs, fn)
	}
	q := *p.q
	q.topN, q.offset, q.limit, q.orderBy = -1, 0, -1, nil
	rc := &runCtx{ctx: ctx, docs: docs, now: p.now()}
	return p.streamRows(&q, rc, fn)
}

// RowPos is a row's position among the rows of its document: the index of
// the element that each of the query's FROM … IN and JOIN sources binds
// (0 for a source over the document itself), outermost first.
type RowPos []int

// Positions reports the length of the query's row positions (StreamAt), or
// 0 when its rows have none: its rows are its documents as they are, or
// come from a FROM subquery.
func (p *Program) Positions() int {
	if p.whole || p.q.from == nil || p.q.from.sub != nil {
		return 0
	}
	return 1 + len(p.q.joins)
}

// StreamAt is Stream (StreamOrdered when ordered) that tells fn each row's
// position, and begins each document's rows where docs says: docs yields a
// document with start, the position of its first row to evaluate (nil: its
// first), or, with after, of the last one evaluated before, which is passed
// over too. The rows before start are not evaluated, so a page resumes
// inside a document's JOINs without evaluating their product again (a
// hostile-query hunt: resuming at row 10 million took 3.3 s and 10,005 RU,
// the page after it timed out). A start of another length than Positions
// fails with an *Error. at is only valid during fn.
func (p *Program) StreamAt(ctx context.Context, ordered bool, docs func(yield func(doc []byte, start RowPos, after bool) bool) error, fn func(row []byte, at RowPos) bool) error {
	if q := p.q; (!ordered && !p.Streamable()) || (ordered && (q.grouped || q.distinct)) {
		return &Error{Msg: "the query cannot be streamed"}
	}
	n := p.Positions()
	var bad error
	plain := func(yield func([]byte) bool) error {
		return docs(func(doc []byte, start RowPos, after bool) bool { return yield(doc) })
	}
	if n == 0 {
		return p.stream(ctx, plain, func(row []byte) bool { return fn(row, nil) })
	}
	q := *p.q
	q.topN, q.offset, q.limit, q.orderBy = -1, 0, -1, nil
	rc := &runCtx{ctx: ctx, now: p.now(), pos: make(RowPos, n)}
	rc.docs = func(yield func([]byte) bool) error {
		return docs(func(doc []byte, start RowPos, after bool) bool {
			if start != nil && len(start) != n {
				bad = &Error{Msg: "invalid position among a document's rows"}
				return false
			}
			rc.start, rc.startLive, rc.startAfter = start, start != nil, after
			return yield(doc)
		})
	}
	err := p.streamRows(&q, rc, func(row []byte) bool { return fn(row, rc.pos) })
	return cmp.Or(bad, err)
}

// streamRows runs q over rc's documents, calling fn with each row.
func (p *Program) streamRows(q *cquery, rc *runCtx, fn func(row []byte) bool) error {
	e := &env{slots: make([]value, p.nslots), rc: rc}
	var buf []byte
	q.exec(e, func(v value) bool {
		if rc.curDoc != nil && v.j != nil && v.j == rc.curRoot {
			return fn(rc.curDoc)
		}
		buf = appendJSON(buf[:0], v)
		return fn(buf)
	})
	return rc.err
}

// BuffersInput reports whether Run keeps every row until the end: an ORDER
// BY with no TOP or LIMIT to prune its buffer. Its memory then grows with
// the documents read.
func (p *Program) BuffersInput() bool {
	return len(p.q.orderBy) > 0 && p.q.sortedRowsNeeded() < 0
}

// OrderFree reports whether the order documents are read in cannot change
// the result (beyond floating-point rounding of sums): the outermost query
// folds every row into one group (aggregates without GROUP BY).
func (p *Program) OrderFree() bool {
	return p.q.grouped && len(p.q.groupBy) == 0
}

// streamWhole is stream for a program whose rows are its documents as they
// are (wholeDocs): each document is passed on without being parsed. A
// document that is not valid JSON is passed on too: the engine's documents
// are its own (document.Item.Marshal wrote them), and the SDKs parse every
// page they get.
func (p *Program) streamWhole(ctx context.Context, docs func(yield func(doc []byte) bool) error, fn func(row []byte) bool) error {
	rc := &runCtx{ctx: ctx, docs: docs}
	err := docs(func(doc []byte) bool {
		if rc.tick(&rc.ndocs) {
			return false
		}
		return fn(doc)
	})
	if err != nil {
		rc.fail(err)
	}
	return rc.err
}
