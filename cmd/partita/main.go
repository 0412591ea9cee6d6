// Command partita is a Cosmos DB-compatible, partitioned JSON document
// database. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/partitadb/partita/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
