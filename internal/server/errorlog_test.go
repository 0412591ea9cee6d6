package server

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestAcceptErrorsWarn: net/http's "Accept error" (out of file descriptors)
// is logged at warning level, at most once per acceptWarnEvery, and its
// other complaints (a client's failed handshake) at debug.
func TestAcceptErrorsWarn(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l := httpErrorLog(log)
	l.Print("http: TLS handshake error from 127.0.0.1:5000: EOF")
	for range 3 {
		l.Print("http: Accept error: accept tcp 127.0.0.1:8081: accept4: too many open files; retrying in 5ms")
	}
	out := buf.String()
	if strings.Count(out, "level=WARN") != 1 || !strings.Contains(out, "too many open files") || !strings.Contains(out, "level=DEBUG msg=\"http: TLS handshake error") {
		t.Errorf("log:\n%s\nwant one warning for the accept errors and the handshake error at debug", out)
	}
}
