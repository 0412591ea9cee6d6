//go:build !unix

package cluster

// alive reports whether pc, idle, is still open; where the socket cannot
// be looked at without reading it, it is taken as open (a dead one then
// fails its exchange).
func (pc *peerConn) alive() bool { return pc.br.Buffered() == 0 }
