package synthkey

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// DefaultConcurrency is the number of requests a fan-out keeps in flight
// when FanOutOptions.Concurrency is 0.
const DefaultConcurrency = 8

// FanOutOptions configure Query and ReadItem. A nil *FanOutOptions means
// the zero value.
type FanOutOptions struct {
	// Concurrency bounds the requests in flight (one key's query pages run
	// one after another); 0 means DefaultConcurrency.
	Concurrency int
	// Query is passed to every key's query (Query only), e.g. for
	// QueryParameters or PageSizeHint; it is copied per key, and a
	// ContinuationToken in it is ignored.
	Query *azcosmos.QueryOptions
	// Item is passed to every point read (ReadItem only).
	Item *azcosmos.ItemOptions
}

// Result is the merged outcome of a fan-out.
type Result struct {
	// Items holds the items (or query rows) of all keys, grouped by key in
	// the order the keys were given, each key's in the order the service
	// returned them. The caller owns them.
	Items []json.RawMessage
	// Keys[i] is the partition key value Items[i] came from.
	Keys []string
	// RequestCharge is the total RU charge of the successful requests
	// (query pages and point reads, including reads that found nothing).
	RequestCharge float64
}

// Query runs query as a single-partition query under each of keys (e.g.
// Key.FanOutKeys), in parallel with bounded concurrency, reads all pages and
// merges the rows in key order. The query itself need not filter on the
// partition key: each run is scoped to its key by the SDK.
//
// NB: ORDER BY, TOP, OFFSET/LIMIT, DISTINCT and aggregates apply within each
// key, not across them: merge such results yourself.
//
// The first failing request cancels the others; the error is a *KeyError
// naming its key and wrapping the SDK's error. Keys should be distinct: a
// key given twice is queried twice.
func Query(ctx context.Context, c *azcosmos.ContainerClient, keys []string, query string, o *FanOutOptions) (Result, error) {
	o = orZero(o)
	type slot struct {
		items  [][]byte
		charge float64
	}
	slots := make([]slot, len(keys))
	err := fanOut(ctx, keys, o.Concurrency, func(ctx context.Context, i int) error {
		var qo azcosmos.QueryOptions
		if o.Query != nil {
			qo = *o.Query
		}
		qo.ContinuationToken = nil
		pager := c.NewQueryItemsPager(query, azcosmos.NewPartitionKeyString(keys[i]), &qo)
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return err
			}
			slots[i].items = append(slots[i].items, page.Items...)
			slots[i].charge += float64(page.RequestCharge)
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	var r Result
	for i, s := range slots {
		for _, it := range s.items {
			r.Items = append(r.Items, it)
			r.Keys = append(r.Keys, keys[i])
		}
		r.RequestCharge += s.charge
	}
	return r, nil
}

// ReadItem point-reads the item id under each of keys in parallel with
// bounded concurrency, for a random-suffix key whose bucket is unknown. An
// item's 404 under a key is not an error (a 404 with a substatus, such as a
// missing container's, is); Result holds the items found, in key
// order (normally one). It returns ErrNotFound when no key holds id. Other
// failures cancel the remaining reads and are returned as a *KeyError, as
// for Query.
func ReadItem(ctx context.Context, c *azcosmos.ContainerClient, keys []string, id string, o *FanOutOptions) (Result, error) {
	o = orZero(o)
	type slot struct {
		item   []byte
		found  bool
		charge float64
	}
	slots := make([]slot, len(keys))
	err := fanOut(ctx, keys, o.Concurrency, func(ctx context.Context, i int) error {
		resp, err := c.ReadItem(ctx, azcosmos.NewPartitionKeyString(keys[i]), id, o.Item)
		if itemNotFound(err) {
			slots[i].charge = errorCharge(err) // a miss costs too
			return nil
		}
		if err != nil {
			return err
		}
		slots[i] = slot{item: resp.Value, found: true, charge: float64(resp.RequestCharge)}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	var r Result
	for i, s := range slots {
		r.RequestCharge += s.charge
		if s.found {
			r.Items = append(r.Items, s.item)
			r.Keys = append(r.Keys, keys[i])
		}
	}
	if len(r.Items) == 0 {
		return r, fmt.Errorf("%w: id %q, %d keys", ErrNotFound, id, len(keys))
	}
	return r, nil
}

// errorCharge is the request charge an error response reports, 0 if none.
func errorCharge(err error) float64 {
	re, ok := errors.AsType[*azcore.ResponseError](err)
	if !ok || re.RawResponse == nil {
		return 0
	}
	ru, perr := strconv.ParseFloat(re.RawResponse.Header.Get("x-ms-request-charge"), 64)
	if perr != nil {
		return 0
	}
	return ru
}

// itemNotFound reports whether err is the 404 of a missing item, not of a
// missing container or database (Cosmos DB adds substatus 1003,
// OwnerResourceNotExists, to those).
func itemNotFound(err error) bool {
	re, ok := errors.AsType[*azcore.ResponseError](err)
	if !ok || re.StatusCode != http.StatusNotFound {
		return false
	}
	if re.RawResponse == nil {
		return true
	}
	sub := re.RawResponse.Header.Get("x-ms-substatus")
	return sub == "" || sub == "0"
}

// Decode unmarshals each of items into a T, for Result.Items.
func Decode[T any](items []json.RawMessage) ([]T, error) {
	out := make([]T, len(items))
	for i, it := range items {
		if err := json.Unmarshal(it, &out[i]); err != nil {
			return nil, fmt.Errorf("synthkey: decode item %d: %w", i, err)
		}
	}
	return out, nil
}

func orZero(o *FanOutOptions) *FanOutOptions {
	if o == nil {
		return &FanOutOptions{}
	}
	return o
}

// fanOut calls fn(ctx, i) for every key index with at most limit calls in
// flight and waits for all of them. The first error cancels ctx for the
// rest and is returned as a *KeyError for its key.
func fanOut(ctx context.Context, keys []string, limit int, fn func(ctx context.Context, i int) error) error {
	if limit <= 0 {
		limit = DefaultConcurrency
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	// sem holds one token per request in flight; its capacity is the bound.
	sem := make(chan struct{}, limit)
	launched := 0
launch:
	for i := range keys {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break launch
		}
		if ctx.Err() != nil {
			// select picks at random when both are ready; a failure
			// cancels before it frees its slot, so this sees it.
			<-sem
			break
		}
		launched++
		wg.Go(func() {
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				errOnce.Do(func() {
					firstErr = &KeyError{Key: keys[i], Err: err}
					cancel()
				})
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if launched < len(keys) {
		// Cancelled by the caller before every key was launched.
		return ctx.Err()
	}
	return nil
}
