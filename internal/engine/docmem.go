package engine

import (
	"context"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/status"
)

// Writes are bounded in the memory they take to index what they write and
// delete. Indexing a document makes its terms and stages an index entry
// per term in the transaction's batch until commit: about 500 bytes
// allocated for each JSON value of the document, so a 2 MB item of a
// million small values peaks a server at half a gigabyte (a gigabyte while
// the index parsed documents into trees), and eight at once, in eight
// logical partitions, passed 2.8 GB before this bound (a security review). The body
// budget (api) counts bytes, which cannot see that. So a transaction
// reserves docBytesPerValue for each value of every version it indexes
// (old and new) from one budget of docMemory per node, and holds the
// reservation until it commits or rolls back; one larger than the whole
// budget takes all of it, and so runs alone. A write that cannot reserve
// within docMemoryWait answers 429, which the SDKs retry. Documents of
// ordinary shape reserve a few hundred kilobytes and never wait.
const (
	docMemory        = 256 << 20
	docBytesPerValue = 512

	// docCountAbove is the size up to which a document is charged its
	// largest possible number of values (one per two bytes) rather than
	// counted: at most 256 KiB, spared the count on every small write.
	docCountAbove = 1 << 10
)

// docMemoryWait is how long a write waits for its reservation (a variable
// for tests).
var docMemoryWait = 5 * time.Second

// docWeight is what indexing doc reserves (see docMemory).
func docWeight(doc []byte) int64 {
	if len(doc) == 0 {
		return 0
	}
	n := len(doc)/2 + 1
	if len(doc) > docCountAbove {
		n = document.ValueCount(doc)
	}
	return int64(n) * docBytesPerValue
}

// reserve reserves what indexing docs takes from the engine's budget (see
// docMemory) for the rest of the transaction, waiting up to docMemoryWait:
// past it, a 429.
func (t *lpTxn) reserve(docs ...[]byte) error {
	var w int64
	for _, d := range docs {
		w += docWeight(d)
	}
	w = min(w, docMemory-t.mem) // the whole budget at most
	if w <= 0 {
		return nil
	}
	sem := t.e.docMem
	if !sem.TryAcquire(w) {
		ctx, cancel := context.WithTimeout(context.Background(), docMemoryWait)
		err := sem.Acquire(ctx, w)
		cancel()
		if err != nil {
			busy := status.Throttled(time.Second)
			busy.Message = "Request rate is large: this node is indexing as many large documents as its memory allows; no changes were made. Retry shortly."
			return busy
		}
	}
	t.mem += w
	return nil
}

// releaseMemory returns the transaction's reservation.
func (t *lpTxn) releaseMemory() {
	if t.mem > 0 {
		t.e.docMem.Release(t.mem)
		t.mem = 0
	}
}

func newDocMemory() *semaphore.Weighted { return semaphore.NewWeighted(docMemory) }
