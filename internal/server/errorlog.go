package server

import (
	stdlog "log"
	"log/slog"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// httpErrorLog is a listener's net/http ErrorLog. net/http logs there every
// client's failed handshake and broken connection, at debug level; but a
// listener that cannot accept ("http: Accept error: … too many open files")
// refuses every client, so that is a warning, at most every acceptWarnEvery
// (an operator hunt under ulimit -n 64 saw 53 of 100 connections time out
// with nothing logged at info level).
func httpErrorLog(log *slog.Logger) *stdlog.Logger {
	return stdlog.New(&httpErrorWriter{log: log}, "", 0)
}

const acceptWarnEvery = 10 * time.Second

type httpErrorWriter struct {
	log  *slog.Logger
	last atomic.Int64 // unix nanoseconds of the last warning
}

func (w *httpErrorWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if !strings.HasPrefix(msg, "http: Accept error") {
		w.log.Debug(msg)
		return len(p), nil
	}
	now := time.Now().UnixNano()
	if last := w.last.Load(); now-last >= int64(acceptWarnEvery) && w.last.CompareAndSwap(last, now) {
		w.log.Warn("the listener cannot accept connections; clients wait or time out",
			"err", msg, "hint", "out of file descriptors? raise the process's open-files limit (ulimit -n) above --max-connections")
	}
	return len(p), nil
}

// warnFileLimit logs a warning when the process may not open as many files
// as maxConns connections and the store need (Go raises the soft limit to
// the hard one at start, so what is left is the hard limit).
func warnFileLimit(log *slog.Logger, maxConns int) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return
	}
	if need := uint64(maxConns) + fileLimitSpare; rl.Cur < need {
		log.Warn("the open-files limit is below what --max-connections and the store need: connections past it wait or time out",
			"limit", rl.Cur, "max-connections", maxConns, "want", need)
	}
}

// fileLimitSpare is what the store, the logs and a cluster's peers take
// beside the clients' connections, about.
const fileLimitSpare = 256
