package cli

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"
)

// healthCmd runs `partita health`: one GET of --url, exit 0 on 200 and 1
// otherwise. It is the container image's health check (an image FROM
// scratch has no curl), so it skips certificate verification: it probes a
// server on its own loopback, with that server's self-signed certificate.
// The default URL is the emulator's certificate download, which needs no
// key and touches no data.
func healthCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("partita health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "https://127.0.0.1:8081/_explorer/emulator.pem", "URL to GET; healthy when it answers 200")
	timeout := fs.Duration("timeout", 5*time.Second, "how long the request may take")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "partita health: unexpected argument %q (the URL is --url)\n", fs.Arg(0))
		return 2
	}
	if *timeout <= 0 {
		fmt.Fprintf(stderr, "partita health: --timeout must be positive\n")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "partita health: %v\n", err)
		return 2
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "partita health: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "partita health: %s answered %s\n", *url, resp.Status)
		return 1
	}
	fmt.Fprintf(stdout, "healthy: %s answered %s\n", *url, resp.Status)
	return 0
}
