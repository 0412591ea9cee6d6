package cluster

import (
	"bytes"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestZapLogger: etcd's zap records reach slog at warn and above, with
// their fields as attributes.
func TestZapLogger(t *testing.T) {
	var buf bytes.Buffer
	l := zapLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), zapcore.WarnLevel, nil)
	l.Info("not shown")
	l.Named("raft").With(zap.String("member", "m1")).Warn("peer unreachable", zap.Int("attempts", 3))
	l.Error("failed", zap.Error(errTest))
	got := buf.String()
	for _, want := range []string{
		`level=WARN msg="peer unreachable" component=etcd logger=raft attempts=3 member=m1`,
		`level=ERROR msg=failed component=etcd error=boom`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "not shown") {
		t.Errorf("an info record passed the warn level:\n%s", got)
	}
}

type testError string

func (e testError) Error() string { return string(e) }

const errTest = testError("boom")

// TestZapLoggerStopping: once the member is stopping, etcd's records pass
// at debug level (its complaints about the listeners its close shut).
func TestZapLoggerStopping(t *testing.T) {
	var buf bytes.Buffer
	stopping := new(atomic.Bool)
	l := zapLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), zapcore.WarnLevel, stopping).Named("x")
	l.Error("before")
	stopping.Store(true)
	l.Error("setting up serving from embedded etcd failed.", zap.String("error", "use of closed network connection"))
	got := buf.String()
	if !strings.Contains(got, `level=ERROR msg=before`) || !strings.Contains(got, `level=DEBUG msg="setting up serving`) {
		t.Errorf("levels before and after stopping:\n%s", got)
	}
}
