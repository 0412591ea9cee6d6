package cli

import (
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestPprofLiteralHostOnly: the profiling listener answers requests
// addressed to it by IP address or as localhost, and refuses any other Host
// (a DNS-rebinding page's name) with 403.
func TestPprofLiteralHostOnly(t *testing.T) {
	var out strings.Builder
	stop, err := startPprof("127.0.0.1:0", &out, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	addr := regexp.MustCompile(`http://([^/]+)/`).FindStringSubmatch(out.String())
	if addr == nil {
		t.Fatalf("no address in %q", out.String())
	}
	port := addr[1][strings.LastIndexByte(addr[1], ':'):]
	for host, want := range map[string]int{
		addr[1]:                   http.StatusOK,
		"localhost" + port:        http.StatusOK,
		"127.0.0.1":               http.StatusOK,
		"attacker.example" + port: http.StatusForbidden,
		"rebind.attacker.example": http.StatusForbidden,
	} {
		req, _ := http.NewRequest("GET", "http://"+addr[1]+"/debug/pprof/cmdline", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}
