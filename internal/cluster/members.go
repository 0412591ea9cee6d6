package cluster

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Member is one node of the --join list.
type Member struct {
	// ID is the node's id in every Raft group (NodeID of Addr).
	ID uint64
	// Addr is the node's cluster address, host:port in canonical form
	// (CanonicalAddr): its mTLS listener for Raft and forwarded requests.
	// It is also the node's etcd member name.
	Addr string
	// PeerURL is the node's etcd peer URL: https://host:port+1.
	PeerURL string
}

// Host returns the host of m's address: the name or IP address its node
// certificate must carry (CA.NodeCert).
func (m Member) Host() string {
	host, _, _ := net.SplitHostPort(m.Addr)
	return host
}

// nodeIDContext separates node ids from every other use of SHA-256 of an
// address; v1 is the derivation's version (changing it renumbers nodes).
const nodeIDContext = "partita node id v1\x00"

// NodeID returns the node id of a cluster address: the first 8 bytes of
// SHA-256 over a fixed context and the address's canonical form, big
// endian, or 1 in the (2^-64) case that they are zero: Raft reserves 0 for
// "none". The id is stable for as long as the address is: a node that
// moves to another address is, to Raft, another node. Equal ids from
// different addresses are a collision Members refuses.
func NodeID(addr string) (uint64, error) {
	c, err := CanonicalAddr(addr)
	if err != nil {
		return 0, err
	}
	return nodeID(c), nil
}

func nodeID(canonical string) uint64 {
	sum := sha256.Sum256([]byte(nodeIDContext + canonical))
	if id := binary.BigEndian.Uint64(sum[:8]); id != 0 {
		return id
	}
	return 1
}

// CanonicalAddr returns addr (host:port) with a lowercase host name, or an
// IP address in its canonical text form, and a decimal port; it fails
// unless the port is in [1, 65534] (the next port is the etcd peer
// listener's). The same node written two ways ("[::1]:7001",
// "[0::1]:07001") has one canonical form; a host name and an address of
// the same host do not.
func CanonicalAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("cluster address %q: %w", addr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 || p == 65535 {
		return "", fmt.Errorf("cluster address %q: port must be in [1, 65534]", addr)
	}
	switch ip, err := netip.ParseAddr(host); {
	case err == nil && ip.Zone() == "":
		host = ip.Unmap().String()
	case err == nil:
		return "", fmt.Errorf("cluster address %q: zoned IPv6 addresses are not supported", addr)
	case host == "" || strings.ContainsAny(host, "/=,@ "):
		return "", fmt.Errorf("cluster address %q: bad host", addr)
	default:
		host = strings.ToLower(host)
	}
	return net.JoinHostPort(host, strconv.FormatUint(p, 10)), nil
}

// peerURL returns the etcd peer URL of a canonical cluster address.
func peerURL(canonical string) string {
	host, port, _ := net.SplitHostPort(canonical)
	p, _ := strconv.Atoi(port)
	return (&url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(p+1))}).String()
}

// Members returns the members of a --join list, sorted by address. It
// fails when the list is empty, an address is malformed, an address
// appears twice (in any form) or two addresses share a node id.
func Members(join []string) ([]Member, error) {
	if len(join) == 0 {
		return nil, errors.New("cluster: empty join list")
	}
	ms := make([]Member, 0, len(join))
	var errs []error
	for _, a := range join {
		c, err := CanonicalAddr(a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ms = append(ms, Member{ID: nodeID(c), Addr: c, PeerURL: peerURL(c)})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("cluster: join list: %w", err)
	}
	slices.SortFunc(ms, func(a, b Member) int { return strings.Compare(a.Addr, b.Addr) })
	ids := map[uint64]string{}
	for i, m := range ms {
		if i > 0 && ms[i-1].Addr == m.Addr {
			return nil, fmt.Errorf("cluster: join list names %s twice", m.Addr)
		}
		if other, ok := ids[m.ID]; ok {
			return nil, fmt.Errorf("cluster: join list: %s and %s have the same node id %016x", other, m.Addr, m.ID)
		}
		ids[m.ID] = m.Addr
	}
	// Each member also listens on its port+1 (etcd's peers): a member
	// listed there could not bind it (a bug hunt: the list was accepted and
	// each member failed with another misleading error).
	for _, m := range ms {
		peer, err := url.Parse(m.PeerURL)
		if err != nil {
			return nil, fmt.Errorf("cluster: join list: %s: %w", m.Addr, err)
		}
		if _, ok := Find(ms, peer.Host); ok {
			return nil, fmt.Errorf("cluster: join list names %s, the port after %s, which that member uses for etcd's peers "+
				"(each member listens on its cluster port and the next one): leave a port free after each member's", peer.Host, m.Addr)
		}
	}
	return ms, nil
}

// Find returns the member whose address is addr (in any form), and whether
// there is one.
func Find(ms []Member, addr string) (Member, bool) {
	c, err := CanonicalAddr(addr)
	if err != nil {
		return Member{}, false
	}
	i := slices.IndexFunc(ms, func(m Member) bool { return m.Addr == c })
	if i < 0 {
		return Member{}, false
	}
	return ms[i], true
}

// memberIDs returns the members' node ids, in order.
func memberIDs(members []Member) []uint64 {
	ids := make([]uint64, len(members))
	for i, m := range members {
		ids[i] = m.ID
	}
	return ids
}
