package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// feedFollower reads a container's change feed (latest-version mode, the
// whole container) while the kill loop runs, each page through whichever
// node pick returns, with one continuation carried from node to node, and
// checks that it delivers every item's versions in order and none twice
// (an item's _lsn strictly increases from one delivery to the next),
// across splits, separations and failovers.
type feedFollower struct {
	mu         sync.Mutex
	token      *string
	lsns       map[string][]int64 // id → the _lsn of each delivery
	lastV      map[string]int     // id → "v" of its last delivery (registers)
	violations []string
	pages      int
}

func newFeedFollower() *feedFollower {
	return &feedFollower{lsns: map[string][]int64{}, lastV: map[string]int{}}
}

// wide is the whole container's feed range.
var wide = &azcosmos.FeedRange{MinInclusive: "", MaxExclusive: "FF"}

// page reads one page through cc and records it; it returns how many
// items the page held (0 with an error: the continuation is kept, and the
// next page asks again).
func (f *feedFollower) page(ctx context.Context, cc *azcosmos.ContainerClient) (int, error) {
	f.mu.Lock()
	tok := f.token
	f.mu.Unlock()
	resp, err := cc.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{FeedRange: wide, MaxItemCount: 100, Continuation: tok})
	if err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pages++
	for _, raw := range resp.Items {
		var d struct {
			ID  string `json:"id"`
			LSN int64  `json:"_lsn"`
			V   int    `json:"v"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			f.violations = append(f.violations, fmt.Sprintf("an item that is not JSON: %v", err))
			continue
		}
		if prev := f.lsns[d.ID]; len(prev) > 0 && d.LSN <= prev[len(prev)-1] {
			f.violations = append(f.violations, fmt.Sprintf("%s delivered at _lsn %d after _lsn %d (deliveries %v)", d.ID, d.LSN, prev[len(prev)-1], prev))
		}
		f.lsns[d.ID] = append(f.lsns[d.ID], d.LSN)
		if strings.HasPrefix(d.ID, "k") {
			f.lastV[d.ID] = d.V
		}
	}
	if resp.ContinuationToken != "" {
		t := resp.ContinuationToken
		f.token = &t
	}
	return len(resp.Items), nil
}

// follow reads pages through the nodes pick returns until ctx ends:
// back to back while they hold items, every 150 ms once one is empty.
func (f *feedFollower) follow(ctx context.Context, pick func() *azcosmos.ContainerClient) {
	for ctx.Err() == nil {
		octx, cancel := context.WithTimeout(ctx, 15*time.Second)
		n, err := f.page(octx, pick())
		cancel()
		if err != nil || n == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(150 * time.Millisecond):
			}
		}
	}
}

// drain reads pages through cc until one is empty (at Strong consistency a
// node's feed waits until it has what was acknowledged anywhere), retrying
// failures for up to 30 s.
func (f *feedFollower) drain(ctx context.Context, cc *azcosmos.ContainerClient) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		octx, cancel := context.WithTimeout(ctx, 15*time.Second)
		n, err := f.page(octx, cc)
		cancel()
		switch {
		case err == nil && n == 0:
			return nil
		case err != nil && time.Now().After(deadline):
			return err
		case err != nil:
			time.Sleep(200 * time.Millisecond)
		}
	}
}
