package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/replica"
)

// TestLoad: partita load writes bench's records into a data directory that
// partita check then finds sound, holding exactly those records; a second
// load over the same records leaves them as many (upserts); a bad
// workload is a usage error.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	for range 2 {
		var out, errs bytes.Buffer
		if code := Main(t.Context(), []string{"load", "--data", dir, "--workload", "query-filter", "--records", "300", "--workers", "3"}, &out, &errs); code != 0 {
			t.Fatalf("partita load = %d: %s%s", code, out.String(), errs.String())
		}
		if !strings.Contains(out.String(), "wrote 300 records of workload query-filter into bench/rows") {
			t.Fatalf("partita load said %q", out.String())
		}
		r, err := checkDir(t.Context(), dir)
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK() || r.Items != 300 {
			t.Fatalf("partita check after the load: %d items, %v", r.Items, r)
		}
	}
	var out, errs bytes.Buffer
	if code := Main(t.Context(), []string{"load", "--data", t.TempDir(), "--workload", "vehicles-date"}, &out, &errs); code != 2 {
		t.Fatalf("partita load of a workload without records = %d, want 2: %s", code, errs.String())
	}
	// A container it cannot create (throughput past the maximum) leaves
	// no database behind (a review: an empty one stayed).
	empty := t.TempDir()
	out.Reset()
	errs.Reset()
	if code := Main(t.Context(), []string{"load", "--data", empty, "--records", "10", "--throughput", "2000000"}, &out, &errs); code != 1 {
		t.Fatalf("partita load with 2,000,000 RU/s = %d, want 1: %s", code, errs.String())
	}
	withStore(t, empty, func(ctx context.Context, host *replica.Local) {
		cat, err := catalog.Open(ctx, host.Meta(), time.Now)
		if err != nil {
			t.Fatal(err)
		}
		if dbs := cat.Databases(); len(dbs) != 0 {
			t.Errorf("a failed load left %d databases behind", len(dbs))
		}
	})
}
