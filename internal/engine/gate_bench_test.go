package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/script"
)

// BenchmarkPointReadUnderLoopingScripts measures a point read while eight
// stored procedures spin until their time limit, over and over: with the
// default script slots (half the processors) and with eight slots, which is
// what the engine did before it bounded them. Compare the two as a ratio:
//
//	go test -run=NONE -bench=PointReadUnderLoopingScripts -count=5 ./internal/engine
func BenchmarkPointReadUnderLoopingScripts(b *testing.B) {
	for _, slots := range []int{0, 8} {
		name := "slots=default"
		if slots > 0 {
			name = fmt.Sprintf("slots=%d", slots)
		}
		b.Run(name, func(b *testing.B) {
			e := testEngineWith(b, Config{ScriptSlots: slots, ScriptLimits: script.Limits{Timeout: 200 * time.Millisecond}})
			def, _ := json.Marshal(map[string]string{"id": "spin", "body": `function spin() { while (true) {} }`})
			if _, err := e.CreateScript("db", "k", StoredProcedures, def); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			pk := document.PartitionKey{{Kind: document.String, String: "r"}}
			if _, err := e.WriteItem(ctx, Write{DB: "db", Container: "k", Kind: Upsert, PK: pk, Body: []byte(`{"id":"r","pk":"r"}`)}); err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					spk := document.PartitionKey{{Kind: document.String, String: fmt.Sprintf("s%d", i)}}
					for ctx.Err() == nil {
						_, _ = e.ExecuteStoredProcedure(ctx, "db", "k", "spin", spk, []byte("[]"), false)
					}
				})
			}
			time.Sleep(100 * time.Millisecond) // let the scripts start
			for b.Loop() {
				if _, err := e.ReadItem(ctx, ItemRef{DB: "db", Container: "k", ID: "r"}, pk, ""); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cancel()
			wg.Wait()
		})
	}
}
