package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/partitadb/partita/internal/catalog"
)

// CatalogPrefix is the etcd key prefix under which Backend keeps the
// catalog's records by default.
const CatalogPrefix = "/partita/catalog/"

// ErrFenced is Apply's error when the backend's fence no longer holds: the
// writer lost the election that made it the catalog's writer, and nothing
// was written.
var ErrFenced = fmt.Errorf("cluster: catalog writer deposed (fence lost): %w", catalog.ErrUnavailable)

// loadPage is how many keys Load reads per etcd request.
const loadPage = 512

// BackendConfig configures a Backend.
type BackendConfig struct {
	// Prefix is put before every catalog key; default CatalogPrefix.
	Prefix string
	// Timeout bounds each Get and Apply, which take no context, and each
	// page of a Load; default 5 s.
	Timeout time.Duration
}

// Backend is a catalog.Backend over etcd: the catalog's key k is the etcd
// key Prefix+k, Apply is one etcd transaction, and reads are linearizable
// (etcd's default). A Fenced backend's Apply writes only while its writer
// still holds the election it won. It is safe for concurrent use.
type Backend struct {
	cli     *clientv3.Client
	prefix  string
	timeout time.Duration
	fence   *Fence // nil: Apply is unguarded
}

var _ catalog.Backend = (*Backend)(nil)

// NewBackend returns a backend over cli, without a fence.
func NewBackend(cli *clientv3.Client, cfg BackendConfig) *Backend {
	if cfg.Prefix == "" {
		cfg.Prefix = CatalogPrefix
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	return &Backend{cli: cli, prefix: cfg.Prefix, timeout: cfg.Timeout}
}

// Fence names the etcd key an elected writer holds: an election's leader
// key and its create revision. The pair identifies one tenure: when the
// writer's lease expires or it resigns, etcd deletes the key, and a
// successor's key has another create revision, so "Key's create revision
// is still Rev" holds exactly while this tenure lasts.
type Fence struct {
	Key string
	Rev int64
}

// ElectionFence returns the fence of e, which this node must have won
// (Campaign returned nil and it has not resigned).
func ElectionFence(e *concurrency.Election) (Fence, error) {
	if e.Key() == "" || e.Rev() == 0 {
		return Fence{}, errors.New("cluster: fence of an election this node does not lead")
	}
	return Fence{Key: e.Key(), Rev: e.Rev()}, nil
}

// Fenced returns a backend sharing b's client whose Apply commits only if
// f holds, in the same transaction as the writes; otherwise it writes
// nothing and returns ErrFenced. This is what makes a deposed catalog
// leader harmless: even if it has not yet noticed that it lost the
// election, etcd refuses its writes.
func (b *Backend) Fenced(f Fence) *Backend {
	fb := *b
	fb.fence = &f
	return &fb
}

// Get returns key's value and whether it exists.
func (b *Backend) Get(key string) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	resp, err := b.cli.Get(ctx, b.prefix+key)
	if err != nil {
		return nil, false, fmt.Errorf("etcd get: %w", unavailable(ctx, err))
	}
	if len(resp.Kvs) == 0 {
		return nil, false, nil
	}
	return resp.Kvs[0].Value, true, nil
}

// Load calls fn with every key that has prefix, and its value, in key
// (byte) order, stopping at fn's first error, which it returns. It reads
// in pages, all at the revision of the first, so fn sees one consistent
// state; ErrCompacted comes back (wrapped) in the unlikely case that the
// revision is compacted away before the last page.
func (b *Backend) Load(ctx context.Context, prefix string, fn func(key string, value []byte) error) error {
	start := b.prefix + prefix
	end := clientv3.GetPrefixRangeEnd(start)
	var rev int64
	for {
		resp, err := b.page(ctx, start, end, rev)
		if err != nil {
			return err
		}
		rev = resp.Header.Revision
		for _, kv := range resp.Kvs {
			if err := fn(string(kv.Key[len(b.prefix):]), kv.Value); err != nil {
				return err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// page reads up to loadPage keys in [start, end) at rev (0: the newest).
func (b *Backend) page(ctx context.Context, start, end string, rev int64) (*clientv3.GetResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(loadPage)}
	if rev != 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	resp, err := b.cli.Get(ctx, start, opts...)
	if err != nil {
		return nil, fmt.Errorf("etcd load: %w", unavailable(ctx, err))
	}
	return resp, nil
}

// unavailable marks err, a read's, catalog.ErrUnavailable when it is its
// timeout (ctx's: etcd's leader paused or gone, say) or etcd having no
// leader for now: the request may be retried (503), not a 500 (a bug hunt:
// stored procedures through a node just resumed from SIGSTOP).
func unavailable(ctx context.Context, err error) error {
	if ctx.Err() != nil || etcdTransient(err) {
		return fmt.Errorf("%w: %w", catalog.ErrUnavailable, err)
	}
	return err
}

// Apply sets the keys of set and deletes the keys of del, atomically: one
// etcd transaction, guarded by the fence if b has one (ErrFenced when it
// no longer holds). A key in both set and del is set, as when it is
// deleted and then written again. The embedded member accepts up to 16384
// keys and 8 MiB per transaction (one of them the revision key).
func (b *Backend) Apply(set map[string][]byte, del []string) error {
	_, err := b.apply(context.Background(), set, del)
	return err
}

// apply is Apply, returning the revision of the write (0 when there was
// nothing to write); it gives up when ctx ends (the outcome then unknown,
// as after a timeout).
func (b *Backend) apply(ctx context.Context, set map[string][]byte, del []string) (int64, error) {
	ops := make([]clientv3.Op, 0, len(set)+len(del))
	// NB: etcd refuses a transaction naming a key twice.
	for _, k := range slices.Compact(slices.Sorted(slices.Values(del))) {
		if _, ok := set[k]; !ok {
			ops = append(ops, clientv3.OpDelete(b.prefix+k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		ops = append(ops, clientv3.OpPut(b.prefix+k, string(set[k])))
	}
	if len(ops) == 0 {
		return 0, nil
	}
	// The revision of the catalog's last write, which a confirmation
	// reads (current.go): a delete leaves no key to read it from.
	ops = append(ops, clientv3.OpPut(revisionKey(b.prefix), ""))
	// Retried while etcd has no leader: the transaction's puts and
	// deletes leave the same state if an attempt that timed out did apply.
	var resp *clientv3.TxnResponse
	err := retryEtcd(ctx, func() error {
		ctx, cancel := context.WithTimeout(ctx, b.timeout)
		defer cancel()
		txn := b.cli.Txn(ctx)
		if b.fence != nil {
			txn = txn.If(clientv3.Compare(clientv3.CreateRevision(b.fence.Key), "=", b.fence.Rev))
		}
		var err error
		resp, err = txn.Then(ops...).Commit()
		if err != nil && ctx.Err() != nil {
			// This attempt's own timeout (a request etcd's leader took and
			// then stopped answering, as a paused one does): retried as
			// etcd's own timeouts are.
			return fmt.Errorf("%w: %w", rpctypes.ErrTimeout, err)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("etcd apply: %w", err)
	}
	if !resp.Succeeded {
		return 0, ErrFenced
	}
	return resp.Header.Revision, nil
}
