//go:build !invariants

package engine

// checkOnCleanup is off without -tags invariants (invariants_test.go).
const checkOnCleanup = false
