package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/partitadb/partita/internal/config"
)

func TestParseServeFlagsAndEnv(t *testing.T) {
	env := map[string]string{
		"PARTITA_ADDR":          "127.0.0.1:9000",
		"PARTITA_LOG_LEVEL":     "debug",
		"PARTITA_TLS":           "false",
		"PARTITA_METRICS_ADDR":  "127.0.0.1:9090",
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
	if cfg.Server.MetricsAddr != "127.0.0.1:9090" {
		t.Errorf("metrics addr = %q, want PARTITA_METRICS_ADDR's", cfg.Server.MetricsAddr)
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
		{"--metrics-addr=nope"},
		{"--gc-headroom-mb=-1"},
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

// TestParseGCHeadroom checks --gc-headroom-mb: its default, the flag and
// PARTITA_GC_HEADROOM_MB.
func TestParseGCHeadroom(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  string
		want int
	}{
		{nil, "", defaultGCHeadroomMB},
		{[]string{"--gc-headroom-mb=0"}, "", 0},
		{nil, "128", 128},
		{[]string{"--gc-headroom-mb=16"}, "128", 16},
	} {
		_, o, err := parseServeAs("partita serve", tt.args, func(k string) string {
			if k == "PARTITA_GC_HEADROOM_MB" {
				return tt.env
			}
			return ""
		}, &bytes.Buffer{})
		if err != nil || o.gcHeadroomMB != tt.want {
			t.Errorf("parseServeAs(%q, PARTITA_GC_HEADROOM_MB=%q) = %d, %v; want %d", tt.args, tt.env, o.gcHeadroomMB, err, tt.want)
		}
	}
	if got := len(gcHeadroom(1 << 20)); got != 1<<20 {
		t.Errorf("len(gcHeadroom(1 MiB)) = %d", got)
	}
	if gcHeadroom(0) != nil {
		t.Errorf("gcHeadroom(0) is not nil")
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

func TestParseServeAAD(t *testing.T) {
	env := map[string]string{
		"PARTITA_AAD_JWKS":            "/etc/partita/jwks.json",
		"PARTITA_AAD_ISSUER":          "https://login.microsoftonline.com/t1/v2.0, https://sts.windows.net/t1/",
		"PARTITA_AAD_AUDIENCE":        "https://env.example",
		"PARTITA_AAD_READ_ONLY_ROLES": "Reader",
	}
	cfg, err := parseServe([]string{"--aad-audience=https://a.documents.azure.com,,https://localhost", "--aad-read-write-roles", "Writer,Admin"},
		func(k string) string { return env[k] }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := config.Auth{Key: config.EmulatorKey, MaxClockSkew: 15 * time.Minute, AADJWKS: "/etc/partita/jwks.json",
		AADIssuers:        []string{"https://login.microsoftonline.com/t1/v2.0", "https://sts.windows.net/t1/"},
		AADAudiences:      []string{"https://a.documents.azure.com", "https://localhost"}, // the flag replaces the environment's
		AADReadWriteRoles: []string{"Writer", "Admin"},
		AADReadOnlyRoles:  []string{"Reader"},
	}
	if diff := cmp.Diff(want, cfg.Auth); diff != "" {
		t.Errorf("auth config (-want +got):\n%s", diff)
	}

	// Defaults: no key set, default roles; an empty flag clears a list.
	cfg, err = parseServe([]string{"--aad-read-only-roles="}, func(string) string { return "" }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Auth.AADJWKS != "" || !slices.Equal(cfg.Auth.AADReadWriteRoles, []string{"Partita.ReadWrite"}) || len(cfg.Auth.AADReadOnlyRoles) != 0 {
		t.Errorf("defaults: %+v", cfg.Auth)
	}

	for _, args := range [][]string{
		{"--aad-jwks=k.json"}, // no issuer, no audience
		{"--aad-jwks=k.json", "--aad-issuer=https://i"},
		{"--aad-jwks=k.json", "--aad-audience=https://a"},
		{"--aad-issuer=https://i", "--aad-audience=https://a"}, // no key set
		{"--aad-jwks=k.json", "--aad-issuer=https://i", "--aad-audience=https://a", "--aad-read-only-roles=Partita.ReadWrite"},
	} {
		if _, err := parseServe(args, func(string) string { return "" }, &bytes.Buffer{}); err == nil {
			t.Errorf("parseServe(%q) succeeded", args)
		}
	}
}

// TestConnectionStringHidesOwnKey: serve prints the emulator's well-known
// key in its connection string, and never a key of one's own (a security
// review: one passed through PARTITA_KEY was printed whole, into logs).
func TestConnectionStringHidesOwnKey(t *testing.T) {
	if got := connectionString("https://127.0.0.1:8081/", config.EmulatorKey); !strings.Contains(got, config.EmulatorKey) {
		t.Errorf("with the emulator's key: %q, want the key", got)
	}
	own := "bXktcHJpdmF0ZS1tYXN0ZXIta2V5LTAxMjM0NTY3ODlhYmNkZWY="
	if got := connectionString("https://127.0.0.1:8081/", own); strings.Contains(got, own) || !strings.Contains(got, "AccountEndpoint=https://127.0.0.1:8081/;") {
		t.Errorf("with a key of one's own: %q, want the endpoint and not the key", got)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/data/tls/cert.pem":         "/data/tls/cert.pem",
		"/tmp/dir with spaces/c.pem": "'/tmp/dir with spaces/c.pem'",
		"/tmp/it's/c.pem":            `'/tmp/it'\''s/c.pem'`,
		"":                           "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
