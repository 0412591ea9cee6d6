package cluster

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// unackedControl is a net.Dialer's Control that sets TCP_USER_TIMEOUT to
// unackedTimeout: the kernel ends a connection whose sent data stays
// unacknowledged (or unsent, the peer's window closed) that long, and the
// next read or write fails. Without it such a connection outlives a
// network cut: the sender's writes still fit the kernel's buffer, so they
// succeed, while what is buffered waits for retransmissions spaced by
// TCP's backoff (doubling, up to two minutes), and once the network heals
// nothing arrives until the next one. A bug hunt: a node whose outgoing
// packets were dropped for 30 s heard nothing from its peers' Raft
// streams for 24 s after the network healed.
func unackedControl(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(unackedTimeout/time.Millisecond))
	})
	if err != nil {
		return err
	}
	return serr
}
