package status

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
)

// TestSubName checks the (status, substatus) → name table (STYLE §3).
func TestSubName(t *testing.T) {
	tests := []struct {
		code, sub int
		want      string
	}{
		{http.StatusNotFound, 1002, "ReadSessionNotAvailable"},
		{http.StatusGone, 1002, "PartitionKeyRangeGone"}, // same number, other meaning
		{http.StatusTooManyRequests, 3200, "RUBudgetExceeded"},
		{http.StatusBadRequest, 1001, "PartitionKeyMismatch"},
		{http.StatusForbidden, 1014, "PartitionKeyQuotaOverLimit"},
		{http.StatusNotFound, 0, ""},
	}
	for _, tt := range tests {
		if got := SubName(tt.code, tt.sub); got != tt.want {
			t.Errorf("SubName(%d, %d) = %q, want %q", tt.code, tt.sub, got, tt.want)
		}
	}
}

func TestFromHidesInternalErrors(t *testing.T) {
	cause := errors.New("pebble: disk on fire")
	e := From(fmt.Errorf("write: %w", cause))
	if e.Code != http.StatusInternalServerError || e.Message != "internal error" {
		t.Fatalf("From(internal) = %d %q, want 500 \"internal error\"", e.Code, e.Message)
	}
	if !errors.Is(e, cause) {
		t.Errorf("From(internal) does not wrap its cause")
	}
	nf := NotFound()
	if got := From(fmt.Errorf("read: %w", nf)); got != nf {
		t.Errorf("From(wrapped *Error) = %v, want the same *Error", got)
	}
}

func TestCodeName(t *testing.T) {
	for code, want := range map[int]string{400: "BadRequest", 404: "NotFound", 409: "Conflict", 412: "PreconditionFailed", 413: "RequestEntityTooLarge", 429: "TooManyRequests", 500: "InternalServerError", 503: "ServiceUnavailable", 507: "InsufficientStorage"} {
		if got := CodeName(code); got != want {
			t.Errorf("CodeName(%d) = %q, want %q", code, got, want)
		}
	}
}

// TestInsufficientStorage: the 507 names the problem and both numbers.
func TestInsufficientStorage(t *testing.T) {
	e := InsufficientStorage(4096, 1<<20)
	if e.Code != http.StatusInsufficientStorage || e.Sub != SubNone {
		t.Fatalf("InsufficientStorage = %d/%d, want 507", e.Code, e.Sub)
	}
	want := "the data directory's disk is short of space (full, or under the --min-free-bytes floor): 4096 bytes free, writes resume above 1048576 bytes free"
	if e.Message != want {
		t.Errorf("InsufficientStorage message = %q, want %q", e.Message, want)
	}
	if got := InsufficientStorage(-5, 10).Message; got != "the data directory's disk is short of space (full, or under the --min-free-bytes floor): 0 bytes free, writes resume above 10 bytes free" {
		t.Errorf("InsufficientStorage(-5, 10) message = %q, want 0 bytes free", got)
	}
}
