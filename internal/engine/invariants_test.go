//go:build invariants

package engine

// Built with -tags invariants (make invariants, CI), every engine a test
// opens through openOn is checked when the test ends: checkAtCleanup runs
// Check before the store's Close (cleanups run last-registered first) and
// fails the test on any problem, so every test doubles as a test of the
// write path's derived entries. Tests that damage their store on purpose
// opt out with skipCheck; a test that closes its store itself is not
// checked (it is logged).
//
// NB: this is a cleanup per engine rather than a TestMain: the package's
// TestMain (query_bench_test.go) already exists, and at TestMain time the
// tests' stores are closed.
const checkOnCleanup = true
