package engine

import (
	"context"
	"fmt"
	"testing"
)

// TestContainerUsage: the usage a container read reports (quota headers)
// totals the statistics of every physical partition and counts scripts.
func TestContainerUsage(t *testing.T) {
	e := testEngine(t) // 24,000 RU/s: four physical partitions
	ctx := context.Background()
	for i := range 40 {
		if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Create, PK: pkOf(i % 9),
			Body: []byte(fmt.Sprintf(`{"id":"i%d","pk":"p%d","pad":"%0*d"}`, i, i%9, 10*i, 0))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.CreateScript("db", "k", StoredProcedures, []byte(`{"id":"s","body":"function s(){}"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateScript("db", "k", UDFs, []byte(`{"id":"u","body":"function u(x){return x}"}`)); err != nil {
		t.Fatal(err)
	}
	u, err := e.ContainerUsage(ctx, "db", "k")
	if err != nil {
		t.Fatal(err)
	}
	reps, err := e.Partitions(ctx, "db", "k")
	if err != nil {
		t.Fatal(err)
	}
	var bytes int64
	for _, r := range reps {
		bytes += r.StorageBytes
	}
	want := ContainerUsage{Items: 40, ItemBytes: bytes, StoredProcedures: 1, UDFs: 1, IndexProgress: 100}
	if len(reps) < 2 || u != want || bytes == 0 {
		t.Errorf("ContainerUsage over %d partitions = %+v, want %+v", len(reps), u, want)
	}
	if _, err := e.ContainerUsage(ctx, "db", "nope"); code(err) != 404 {
		t.Errorf("ContainerUsage of a missing container: %v, want 404", err)
	}
}

func TestProgressPercent(t *testing.T) {
	tests := []struct {
		done, total int64
		want        int
	}{
		{0, 0, 0}, {5, 0, 0}, {0, 10, 0}, {1, 3, 33}, {9, 10, 90}, {10, 10, 99}, {12, 10, 99},
	}
	for _, tt := range tests {
		if got := progressPercent(tt.done, tt.total); got != tt.want {
			t.Errorf("progressPercent(%d, %d) = %d, want %d", tt.done, tt.total, got, tt.want)
		}
	}
}
