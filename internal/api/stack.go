package api

// handlerStack is the stack, in bytes, that growStack makes room for: about
// what a point operation reaches at its deepest (Pebble's read path alone
// has frames of several KiB: DB.getInternal's is 3.3 KiB).
const handlerStack = 8 << 10

// growStack grows the calling goroutine's stack in one step, so that the
// request it serves does not grow it frame by frame. Call it as
// growStack(true).
//
// Every request runs on a goroutine of its own (net/http's HTTP/2 server
// starts one per stream), and goroutines start with a 2 KiB stack. A point
// read or write goes deep (TLS, HTTP/2, auth, engine, Pebble), so its stack
// used to double three or four times on the way down, and each doubling
// copies the stack and adjusts every frame on it: 7–17% of the server's CPU
// in the profiles of issue #15. Called first thing, with few frames on the
// stack, one copy of a shallow stack makes room for the whole request. The
// runtime keeps the grown stack until the goroutine ends (a GC shrinks it
// only if it is mostly unused then).
//
// NB: the function's prologue checks for room for its whole frame, buf
// included, and the runtime grows the stack to fit it; buf itself is never
// zeroed or used, since skip returns first. noinline keeps the frame (and
// the compiler from seeing that skip is always true).
//
//go:noinline
func growStack(skip bool) {
	if skip {
		return
	}
	var buf [handlerStack]byte
	touch(buf[:])
}

// touch uses b so that the compiler keeps growStack's frame.
//
//go:noinline
func touch(b []byte) { b[len(b)-1] = 0 }
