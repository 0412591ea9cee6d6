package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// identityName is the file in a member's cluster directory that names the
// member whose data the directory holds.
const identityName = "member"

// identityHeader begins the file; v1 is its format.
const identityHeader = "partita cluster member v1"

// claimDataDir makes sure dataDir holds the data of member self: a data
// directory names its member (<data>/cluster/member: its cluster address
// and node id), written the first time a member starts on it, and a node
// started on another member's directory is refused. Each member's Raft
// logs, votes and etcd member are its own: a bug hunt started node 3 (its
// --cluster-addr) on node 1's copied directory, and it started, took
// writes under node 3's id with node 1's logs and votes — one replica's
// history presented as another's, which Raft cannot tell — and the real
// node 3 later stopped on "tocommit(14) is out of range [lastIndex(9)]".
// A directory a member used before the file existed is claimed by the
// first node started on it.
//
// It reports whether it wrote the file now: a start that fails before its
// etcd member holds any data gives the claim up (unclaimDataDir), so that
// a node stopped while it waited for the others, or started with a
// mistyped --cluster-addr, may be started again as another member.
func claimDataDir(dataDir string, self Member) (created bool, err error) {
	dir := filepath.Join(dataDir, clusterDir)
	path := filepath.Join(dir, identityName)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return false, fmt.Errorf("cluster: %w", err)
		}
		body := fmt.Sprintf("%s\naddr %s\nid %016x\n", identityHeader, self.Addr, self.ID)
		if err := writeFileAtomic(path, []byte(body)); err != nil {
			return false, fmt.Errorf("cluster: record this member's identity: %w", err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("cluster: read this member's identity: %w", err)
	}
	addr, id, err := parseIdentity(data)
	if err != nil {
		return false, fmt.Errorf("cluster: %s: %w", path, err)
	}
	if id != self.ID {
		return false, fmt.Errorf("cluster: the data directory %s holds the data of member %s (node %016x), not of this node "+
			"(--cluster-addr %s, node %016x): each member keeps its own data directory; start this node on its own, "+
			"or start %s on this one",
			dataDir, addr, id, self.Addr, self.ID, addr)
	}
	return false, nil
}

// unclaimDataDir removes the identity claimDataDir wrote, unless the
// directory holds etcd data by now (IsMember): the member may then have
// voted, and the claim must stand.
func unclaimDataDir(dataDir string) {
	if !IsMember(dataDir) {
		_ = os.Remove(filepath.Join(dataDir, clusterDir, identityName))
	}
}

// parseIdentity reads a member's identity file.
func parseIdentity(data []byte) (addr string, id uint64, err error) {
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) < 3 || lines[0] != identityHeader {
		return "", 0, errors.New("not a member identity file")
	}
	a, okA := strings.CutPrefix(lines[1], "addr ")
	i, okI := strings.CutPrefix(lines[2], "id ")
	if !okA || !okI {
		return "", 0, errors.New("malformed member identity file")
	}
	id, err = strconv.ParseUint(i, 16, 64)
	if err != nil {
		return "", 0, fmt.Errorf("malformed member identity file: %w", err)
	}
	return a, id, nil
}
