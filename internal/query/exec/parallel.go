package exec

import (
	"context"
	"errors"
	"sync"
)

// Parallel reports whether RunParallel splits the query's work across its
// sources: the outermost query groups (GROUP BY or aggregates) directly
// over documents (no FROM subquery), and calls no user-defined functions,
// whose runtimes are not safe for concurrent use.
func (p *Program) Parallel() bool {
	q := p.q
	return q.grouped && q.top && q.from != nil && q.from.sub == nil && !p.hasUDFs
}

// RunParallel is Run over the concatenation of sources, in order. When
// Parallel holds, each source is folded into groups on its own goroutine,
// at most workers at a time, and the partial groups are merged (counts and
// sums added, AVG from sum and count, MIN/MAX compared, lists
// concatenated) before one projection: the result is Run's, except that
// sums may round differently. Otherwise it is Run. The first error of any
// source stops the others and is returned.
func (p *Program) RunParallel(ctx context.Context, sources []func(yield func(doc []byte) bool) error, workers int) ([][]byte, error) {
	rows, _, err := p.runParallel(ctx, sources, workers, false)
	return rows, err
}

// RunParallelKeyed is RunParallel that also returns each row's key, for a
// Keyed program (see RunKeyed).
func (p *Program) RunParallelKeyed(ctx context.Context, sources []func(yield func(doc []byte) bool) error, workers int) ([][]byte, []RowKey, error) {
	return p.runParallel(ctx, sources, workers, p.Keyed())
}

func (p *Program) runParallel(ctx context.Context, sources []func(yield func(doc []byte) bool) error, workers int, keyed bool) ([][]byte, []RowKey, error) {
	if !p.Parallel() || len(sources) < 2 || workers < 2 {
		return p.run(ctx, func(yield func([]byte) bool) error {
			for _, src := range sources {
				stopped := false
				if err := src(func(doc []byte) bool {
					if !yield(doc) {
						stopped = true
						return false
					}
					return true
				}); err != nil || stopped {
					return err
				}
			}
			return nil
		}, keyed)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	now := p.now()
	parts := make([][]*group, len(sources))
	errs := make([]error, len(sources))
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i, src := range sources {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			rc := &runCtx{ctx: ctx, docs: src, now: now}
			e := &env{slots: make([]value, p.nslots), rc: rc}
			parts[i] = p.q.fold(e)
			if rc.err != nil {
				errs[i] = rc.err
				cancel()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	groups := mergeGroups(p.q.aggs, parts)
	rc := &runCtx{ctx: ctx, now: now}
	e := &env{slots: make([]value, p.nslots), rc: rc}
	out := [][]byte{}
	var keys []RowKey
	p.q.emitGroups(e, groups, func(v value) bool {
		out = append(out, appendJSON(nil, v))
		if keyed {
			keys = append(keys, rowKeyOf(rc.rowKey))
		}
		return true
	})
	if rc.err != nil {
		return nil, nil, rc.err
	}
	return out, keys, nil
}

// mergeGroups merges per-source groups into the groups one fold over the
// sources in order would give, in first-seen order.
func mergeGroups(aggs []*aggSpec, parts [][]*group) []*group {
	var out []*group
	index := make(map[string]*group)
	for _, part := range parts {
		for _, g := range part {
			have := index[g.key]
			if have == nil {
				index[g.key] = g
				out = append(out, g)
				continue
			}
			for i, a := range aggs {
				have.states[i].merge(a.kind, &g.states[i])
			}
		}
	}
	return out
}

// merge folds o, the state of later rows of the same group, into s.
func (s *aggState) merge(k aggKind, o *aggState) {
	if s.bad || o.bad {
		s.bad = true
		return
	}
	switch k {
	case aggCount, aggCountIf:
		s.n += o.n
	case aggSum, aggAvg:
		s.sum += o.sum
		s.n += o.n
	case aggMin, aggMax:
		if o.n == 0 {
			return
		}
		c := compareValues(o.best, s.best)
		if s.n == 0 || (k == aggMin && c < 0) || (k == aggMax && c > 0) {
			s.best = o.best
		}
		s.n += o.n
	case aggMakeList:
		s.list = append(s.list, o.list...)
	case aggMakeSet:
		for _, v := range o.list {
			s.add(nil, aggMakeSet, v)
		}
	}
}
