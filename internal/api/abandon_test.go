package api

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/partitadb/partita/internal/status"
)

// TestWriteErrorAbandoned: an error of a request its client gave up on
// (a query cancelled at the end of a benchmark round, a client's timeout)
// is not answered and is not logged as a server failure; the same error of
// a live request is answered and logged.
func TestWriteErrorAbandoned(t *testing.T) {
	var logs bytes.Buffer
	h := New(Config{}, nil, nil, nil, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	failure := status.From(errors.New("http2: stream closed"))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	h.writeError(rec, httptest.NewRequest(http.MethodPost, "/dbs/db/colls/c/docs", nil).WithContext(ctx), failure)
	if rec.Body.Len() != 0 || rec.Header().Get("x-ms-request-charge") != "" {
		t.Errorf("abandoned request answered: %d %q", rec.Code, rec.Body)
	}
	if strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "abandoned by its client") {
		t.Errorf("abandoned request logged as:\n%s", logs.String())
	}

	logs.Reset()
	rec = httptest.NewRecorder()
	h.writeError(rec, httptest.NewRequest(http.MethodPost, "/dbs/db/colls/c/docs", nil), failure)
	if rec.Code != http.StatusInternalServerError || !strings.Contains(logs.String(), "level=ERROR msg=\"request failed\"") {
		t.Errorf("live request: %d, logged:\n%s", rec.Code, logs.String())
	}
}

// TestWriteErrorUndelivered: a response that could not be written after its
// status went out (the connection closed under it: "use of closed network
// connection" as a server stops) is not answered again with a 500, nor
// logged as a server failure.
func TestWriteErrorUndelivered(t *testing.T) {
	var logs bytes.Buffer
	h := New(Config{}, nil, nil, nil, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	w := &failingWriter{ResponseRecorder: httptest.NewRecorder()}
	err := writeJSON(w, http.StatusOK, []byte(`{}`))
	if err == nil {
		t.Fatal("writeJSON on a closed connection succeeded")
	}
	h.writeError(w, httptest.NewRequest(http.MethodPost, "/dbs/db/colls/c/docs", nil), err)
	if w.Code != http.StatusOK || w.headers != 1 {
		t.Errorf("undelivered response answered again: status %d, %d status lines", w.Code, w.headers)
	}
	if strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "response not delivered") {
		t.Errorf("undelivered response logged as:\n%s", logs.String())
	}
}

// failingWriter is a response writer whose connection closed: every Write
// fails. It counts the status lines written.
type failingWriter struct {
	*httptest.ResponseRecorder
	headers int
}

func (f *failingWriter) WriteHeader(code int) {
	f.headers++
	f.ResponseRecorder.WriteHeader(code)
}

func (f *failingWriter) Write([]byte) (int, error) {
	return 0, errors.New("write tcp 127.0.0.1:8081->127.0.0.1:50000: use of closed network connection")
}

// TestWriteErrorLogsRefusals: a 401 or 403, answered before the request log
// sees the request, is logged at debug level with its reason (an operator
// hunt found none, even at debug).
func TestWriteErrorLogsRefusals(t *testing.T) {
	var logs bytes.Buffer
	h := New(Config{}, nil, nil, nil, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	for _, code := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		logs.Reset()
		rec := httptest.NewRecorder()
		h.writeError(rec, httptest.NewRequest(http.MethodGet, "/dbs/db", nil), status.New(code, "the signature does not match"))
		if rec.Code != code || !strings.Contains(logs.String(), "level=DEBUG msg=\"request refused\"") || !strings.Contains(logs.String(), "the signature does not match") {
			t.Errorf("%d: answered %d, logged:\n%s", code, rec.Code, logs.String())
		}
	}
}
