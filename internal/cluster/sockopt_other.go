//go:build !linux

package cluster

import "syscall"

// unackedControl sets nothing where TCP_USER_TIMEOUT is not Linux's: a
// stalled connection lasts until TCP gives up, or a write times out.
func unackedControl(_, _ string, _ syscall.RawConn) error { return nil }
