package cluster

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapLogger returns a zap logger, for etcd's server and client (which log
// through zap only), that passes records at min or above to l, with the
// attribute component=etcd. While stopping is set (nil: never), records
// are passed at debug level: a member being closed complains, at error
// level, about the listeners its own close shut ("use of closed network
// connection"), which is no failure an operator should see on every stop.
func zapLogger(l *slog.Logger, min zapcore.Level, stopping *atomic.Bool) *zap.Logger {
	return zap.New(&slogCore{l: l.With("component", "etcd"), min: min, stopping: stopping})
}

// slogCore is a zapcore.Core writing to a *slog.Logger.
type slogCore struct {
	l        *slog.Logger
	min      zapcore.Level
	fields   []zapcore.Field // from With
	stopping *atomic.Bool    // see zapLogger
}

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default: // error, and the panic and fatal levels, which zap acts on itself
		return slog.LevelError
	}
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	return l >= c.min && c.l.Enabled(context.Background(), slogLevel(l))
}

func (c *slogCore) With(fs []zapcore.Field) zapcore.Core {
	return &slogCore{l: c.l, min: c.min, fields: append(slices.Clip(c.fields), fs...), stopping: c.stopping}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fs {
		f.AddTo(enc)
	}
	attrs := make([]slog.Attr, 0, len(enc.Fields)+1)
	if e.LoggerName != "" {
		attrs = append(attrs, slog.String("logger", e.LoggerName))
	}
	for _, k := range slices.Sorted(maps.Keys(enc.Fields)) {
		attrs = append(attrs, slog.Any(k, enc.Fields[k]))
	}
	level := slogLevel(e.Level)
	if c.stopping != nil && c.stopping.Load() {
		level = slog.LevelDebug
	} else if level > slog.LevelInfo && benign(e.Message, enc.Fields) {
		level = slog.LevelInfo
	}
	c.l.LogAttrs(context.Background(), level, e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }

// benignEtcd are warnings and errors etcd logs on every healthy start of a
// member as Partita runs it, passed at info level so that an operator's
// eye goes to the ones that matter: its message and, if not "", a part of
// its error.
var benignEtcd = []struct{ msg, err string }{
	// At the first start, before the member's first Raft term is saved;
	// etcd tries again and succeeds.
	{"failed to update storage version", "missing term information"},
	// The client listener is a Unix socket in the data directory, served
	// to the node's own client only.
	{"Running http and grpc server on single port. This is not recommended for production.", ""},
	// etcd's own authentication is off: the client is the node itself.
	{"simple token is not cryptographically signed", ""},
}

// benign reports whether an etcd record is one of benignEtcd.
func benign(msg string, fields map[string]any) bool {
	for _, b := range benignEtcd {
		if msg != b.msg {
			continue
		}
		if b.err == "" {
			return true
		}
		if e, ok := fields["error"].(string); ok && strings.Contains(e, b.err) {
			return true
		}
	}
	return false
}
