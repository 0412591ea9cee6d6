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
	for code, want := range map[int]string{400: "BadRequest", 404: "NotFound", 409: "Conflict", 412: "PreconditionFailed", 413: "RequestEntityTooLarge", 429: "TooManyRequests", 500: "InternalServerError"} {
		if got := CodeName(code); got != want {
			t.Errorf("CodeName(%d) = %q, want %q", code, got, want)
		}
	}
}
