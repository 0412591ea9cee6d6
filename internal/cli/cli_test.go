package cli

import (
	"bytes"
	"testing"
	"time"
)

func TestParseServeFlagsAndEnv(t *testing.T) {
	env := map[string]string{
		"PARTITA_ADDR":          "127.0.0.1:9000",
		"PARTITA_LOG_LEVEL":     "debug",
		"PARTITA_TLS":           "false",
		"PARTITA_BALLAST_BYTES": "0",
	}
	cfg, err := parseServe([]string{"--addr", "127.0.0.1:9001", "--durability=relaxed", "--max-clock-skew=5m", "--min-free-bytes=1048576"}, func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Addr != "127.0.0.1:9001" {
		t.Errorf("addr = %q, want the flag's 127.0.0.1:9001 (flags win over the environment)", cfg.Server.Addr)
	}
	if cfg.Logging.Level != "debug" || cfg.Server.TLS {
		t.Errorf("environment not applied: level %q tls %v", cfg.Logging.Level, cfg.Server.TLS)
	}
	if cfg.Store.Durability != "relaxed" || cfg.Auth.MaxClockSkew != 5*time.Minute || cfg.Store.MinFreeBytes != 1<<20 || cfg.Store.BallastBytes != 0 {
		t.Errorf("flags not applied: %+v", cfg)
	}
}

func TestParseServeErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--durability=sometimes"},
		{"--min-free-bytes=-1"},
		{"--key=not-base64!"},
		{"--nope"},
		{"extra"},
	} {
		if _, err := parseServe(args, func(string) string { return "" }, &bytes.Buffer{}); err == nil {
			t.Errorf("parseServe(%q) succeeded", args)
		}
	}
	if _, err := parseServe(nil, func(k string) string {
		if k == "PARTITA_TLS" {
			return "maybe"
		}
		return ""
	}, &bytes.Buffer{}); err == nil {
		t.Errorf("PARTITA_TLS=maybe accepted")
	}
}

func TestMainUnknownCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main(t.Context(), []string{"frobnicate"}, &out, &errb); code != 2 || !bytes.Contains(errb.Bytes(), []byte("unknown command")) {
		t.Errorf("Main(frobnicate) = %d, stderr %q", code, errb.String())
	}
	out.Reset()
	if code := Main(t.Context(), []string{"version"}, &out, &errb); code != 0 || !bytes.HasPrefix(out.Bytes(), []byte("partita ")) {
		t.Errorf("Main(version) = %d, %q", code, out.String())
	}
}
