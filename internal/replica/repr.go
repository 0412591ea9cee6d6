package replica

import "fmt"

// BatchRepr returns the encoded writes of b, a batch of a Local keyspace
// (store.Batch.Repr): what a replicated keyspace proposes to its group.
func BatchRepr(b Batch) ([]byte, error) {
	lb, ok := b.(*localBatch)
	switch {
	case !ok:
		return nil, fmt.Errorf("replica: BatchRepr of a %T", b)
	case lb.err != nil:
		return nil, lb.err
	case lb.done:
		return nil, errBatchDone
	}
	repr, err := lb.b.Repr()
	return repr, mapErr(err)
}
