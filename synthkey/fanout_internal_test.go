package synthkey

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
)

// TestFanOutBound: no more than limit calls run at once, every key is
// called exactly once, and the bound is reached (the calls wait for each
// other, so this does not depend on timing).
func TestFanOutBound(t *testing.T) {
	for _, limit := range []int{1, 3, 8, 0} {
		keys := make([]string, 20)
		for i := range keys {
			keys[i] = strconv.Itoa(i)
		}
		want := limit
		if want == 0 {
			want = DefaultConcurrency
		}
		var inFlight, peak atomic.Int32
		calls := make([]atomic.Int32, len(keys))
		// The first `want` calls wait until all of them have started, which
		// proves that many run in parallel.
		var started sync.WaitGroup
		started.Add(want)
		err := fanOut(t.Context(), keys, limit, func(ctx context.Context, i int) error {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			calls[i].Add(1)
			if i < want {
				started.Done()
				started.Wait()
			}
			return nil
		})
		if err != nil {
			t.Errorf("fanOut(limit %d) = %v", limit, err)
		}
		if p := peak.Load(); int(p) != want {
			t.Errorf("fanOut(limit %d): peak %d calls in flight, want %d", limit, p, want)
		}
		for i := range calls {
			if n := calls[i].Load(); n != 1 {
				t.Errorf("fanOut(limit %d): key %d called %d times, want 1", limit, i, n)
			}
		}
	}
}

// TestFanOutFirstError: the first error is returned as a *KeyError for its
// key and cancels the calls still running; keys not yet launched are not.
func TestFanOutFirstError(t *testing.T) {
	boom := errors.New("boom")
	keys := []string{"a", "b", "c", "d", "e", "f"}
	var launched atomic.Int32
	err := fanOut(t.Context(), keys, 2, func(ctx context.Context, i int) error {
		launched.Add(1)
		if keys[i] == "b" {
			return boom
		}
		<-ctx.Done() // blocks until b's failure cancels it
		return ctx.Err()
	})
	ke, ok := errors.AsType[*KeyError](err)
	if !ok || ke.Key != "b" || !errors.Is(err, boom) {
		t.Fatalf("fanOut = %v, want a *KeyError for b wrapping boom", err)
	}
	if n := launched.Load(); n != 2 {
		t.Errorf("fanOut launched %d calls after the failure, want 2 (a and b)", n)
	}
}

// TestFanOutCancelled: a caller's cancelled context stops the launch and
// is reported.
func TestFanOutCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	called := false
	err := fanOut(ctx, []string{"a", "b"}, 1, func(ctx context.Context, i int) error {
		called = true
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("fanOut(cancelled) = %v, want context.Canceled (called %v)", err, called)
	}
	if err := fanOut(t.Context(), nil, 0, nil); err != nil {
		t.Errorf("fanOut(no keys) = %v, want nil", err)
	}
}

func TestItemNotFound(t *testing.T) {
	resp := func(code int, sub string) error {
		r := &http.Response{StatusCode: code, Header: http.Header{}}
		if sub != "" {
			r.Header.Set("x-ms-substatus", sub)
		}
		return fmt.Errorf("wrapped: %w", &azcore.ResponseError{StatusCode: code, RawResponse: r})
	}
	tests := []struct {
		err  error
		want bool
	}{
		{resp(http.StatusNotFound, ""), true},
		{resp(http.StatusNotFound, "0"), true},
		{&azcore.ResponseError{StatusCode: http.StatusNotFound}, true},
		{resp(http.StatusNotFound, "1003"), false}, // container or database missing
		{resp(http.StatusGone, "1002"), false},
		{resp(http.StatusTooManyRequests, ""), false},
		{errors.New("other"), false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := itemNotFound(tt.err); got != tt.want {
			t.Errorf("itemNotFound(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
