//go:build unix

package cluster

import (
	"errors"
	"syscall"
)

// alive reports whether pc, idle, is still open and has nothing to read:
// a look at the socket without waiting (MSG_PEEK). A peer that closed it
// (restarted, or closed it idle) left its end of the stream (a TLS
// close_notify before it is data: also not alive) or a reset.
func (pc *peerConn) alive() bool {
	if pc.br.Buffered() > 0 {
		return false
	}
	sc, ok := pc.raw.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var rerr error
	var buf [1]byte
	if err := rc.Read(func(fd uintptr) bool {
		_, _, rerr = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true
	}); err != nil {
		return false
	}
	// Otherwise a byte (nothing is expected on an idle connection), the
	// end of the stream (no error) or a reset.
	return errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK)
}
