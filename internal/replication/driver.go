package replication

import (
	"context"
	"fmt"
	"time"
)

// maxSteps bounds how many queued messages the driver steps before it
// processes them, so a flood of messages cannot delay the tick.
const maxSteps = 256

// Run drives h until ctx ends: it ticks every tick, steps the messages that
// arrive on inbox, and processes the groups' work after each. It returns
// nil when ctx ends, or Process's error: the store failed, and the host
// must not be used any more (a restart resumes from what is durable).
// Once it returns, the host refuses proposals, reads, campaigns and
// transfers (ErrStopped) and ignores steps and ticks.
func (h *Host) Run(ctx context.Context, tick time.Duration, inbox <-chan Message) error {
	defer func() {
		h.mu.Lock()
		h.stopped = true
		h.mu.Unlock()
	}()
	h.done = ctx.Done()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			h.Tick()
		case m := <-inbox:
			h.Step(m)
		drain:
			for range maxSteps {
				select {
				case m := <-inbox:
					h.Step(m)
				default:
					break drain
				}
			}
		case <-h.wake:
		}
		if h.failed.Load() {
			h.mu.Lock()
			failure := h.failure
			h.mu.Unlock()
			return fmt.Errorf("replication: the store failed under Raft: %w", failure)
		}
		if err := h.Process(); err != nil {
			if ctx.Err() != nil {
				return nil // stopped while it waited for space (commitWithRoom)
			}
			return err
		}
	}
}
