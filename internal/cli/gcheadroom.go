package cli

// defaultGCHeadroomMB is --gc-headroom-mb's default; maxGCHeadroomMB its
// largest accepted value (16 GiB).
const (
	defaultGCHeadroomMB = 64
	maxGCHeadroomMB     = 16 << 10
)

// gcHeadroom returns n bytes of Go heap that nothing reads or writes, for
// the caller to keep alive while it serves: it paces the garbage collector
// (nil when n is 0).
//
// Go collects when the heap has grown by GOGC% (100) of what the last
// collection left live, or at 4 MiB. A server keeps its data off the Go heap
// (Pebble's block cache and memtables are allocated manually), so its live
// heap is a few MiB, and at thousands of requests a second, each allocating
// kilobytes, it collected dozens of times a second (issue #15: 1,674
// collections in a read benchmark where the floor server, which holds its
// items on the Go heap, made 94). Each collection costs a fixed part (its
// phases, scanning every goroutine's stack, shrinking idle stacks that the
// connections' goroutines then grow again) and slows the program while it
// marks (write barriers). The collector counts these bytes as live, so a
// collection waits for about n more bytes of allocation, whatever the live
// heap.
//
// The bytes cost no memory: a fresh large allocation comes from pages the
// runtime maps from the operating system and does not clear (they are zero
// already), and no one touches them, so they are never resident (the
// process's RSS does not grow; its virtual size and Go's heap statistics
// count them). The cost is the garbage allowed between collections: up to n
// more bytes of resident heap at the peak. A ballast in Go's idiom (Twitch,
// 2019); GOGC cannot express "at least n bytes", and GOMEMLIMIT only makes
// the collector run more often.
func gcHeadroom(n int) []byte {
	if n <= 0 {
		return nil
	}
	return make([]byte, n)
}
