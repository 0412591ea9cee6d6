package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Placement says which members hold each keyspace's replicas
// (docs/cluster.md, "Placement on a subset"): with the members sorted by
// node id, keyspace k's voters are the R members from index k mod N on,
// wrapping round. The catalog hands out keyspace ids in sequence, so new
// keyspaces go round the members evenly; every node computes the same
// placement from the --join list, which is fixed for a cluster's life.
type Placement struct {
	members  []uint64 // sorted
	replicas int
}

// NewPlacement returns the placement of replicas replicas of each keyspace
// over members (node ids); replicas ≥ len(members), or < 1, puts every
// keyspace on every member.
func NewPlacement(members []uint64, replicas int) Placement {
	m := slices.Sorted(slices.Values(members))
	m = slices.Compact(m)
	if replicas < 1 || replicas > len(m) {
		replicas = len(m)
	}
	return Placement{members: m, replicas: replicas}
}

// Voters returns keyspace ks's voters, sorted by node id.
func (p Placement) Voters(ks uint64) []uint64 {
	n := uint64(len(p.members))
	if n == 0 {
		return nil
	}
	out := make([]uint64, 0, p.replicas)
	start := ks % n
	for i := range uint64(p.replicas) {
		out = append(out, p.members[(start+i)%n])
	}
	slices.Sort(out)
	return out
}

// Holds reports whether node holds a replica of keyspace ks.
func (p Placement) Holds(node, ks uint64) bool {
	return slices.Contains(p.Voters(ks), node)
}

// placementKey is the etcd key recording the placement a cluster was
// created with.
const placementKey = "/partita/placement"

// placementRecord is what placementKey holds.
type placementRecord struct {
	Replicas int      `json:"replicas"` // voters per keyspace (at most the members)
	Members  []string `json:"members"`  // node ids, 16 hex digits, sorted
}

func (p Placement) record() placementRecord {
	r := placementRecord{Replicas: p.replicas}
	for _, m := range p.members {
		r.Members = append(r.Members, nodeHex(m))
	}
	return r
}

// ErrPlacementChanged is returned by StartNode when the cluster was
// created with another number of replicas per keyspace (or other
// members): every keyspace's voters follow from both, so a member started
// with another --replicas would put groups on other nodes than its peers.
var ErrPlacementChanged = errors.New("cluster: --replicas differs from the cluster's")

// ErrMembersChanged is returned by StartNode when the cluster was created
// with other members than this node's --join list names (adding and
// removing members is not supported yet).
var ErrMembersChanged = errors.New("cluster: the --join list differs from the cluster's members")

// recordPlacement records p as the cluster's placement if none is
// recorded yet, else checks that the recorded one is p; join is this
// node's --join list (Members), for the error.
func recordPlacement(ctx context.Context, cli *clientv3.Client, p Placement, join []Member) error {
	want, err := json.Marshal(p.record())
	if err != nil {
		return err
	}
	rec, created, err := recordFirst(ctx, cli, placementKey, string(want))
	if err != nil {
		return fmt.Errorf("cluster: record the placement: %w", err)
	}
	if created {
		return nil
	}
	var got placementRecord
	if err := json.Unmarshal([]byte(rec), &got); err != nil {
		return fmt.Errorf("cluster: the recorded placement %q: %w", rec, err)
	}
	if mine := p.record().Members; !slices.Equal(got.Members, mine) {
		// The ids say nothing to an operator: name the addresses etcd
		// lists (its members are the cluster's initial ones; a bug hunt).
		var addrs []string
		if ml, err := cli.MemberList(ctx); err == nil {
			for _, m := range ml.Members {
				if m.Name != "" {
					addrs = append(addrs, m.Name)
				} else if len(m.PeerURLs) > 0 {
					if u, err := url.Parse(m.PeerURLs[0]); err == nil {
						addrs = append(addrs, memberAddr(u.Host))
					}
				}
			}
			slices.Sort(addrs)
		}
		created := "(node ids) " + strings.Join(got.Members, ", ")
		if len(addrs) > 0 {
			created = strings.Join(addrs, ",") + " (node ids " + strings.Join(got.Members, ", ") + ")"
		}
		return fmt.Errorf("%w: the cluster was created with the members %s; this node's --join list names %s (node ids %s): "+
			"start every member with the --join list the cluster was created with, each address written the same way "+
			"(a host name and its IP address are different members)",
			ErrMembersChanged, created, joinList(join), strings.Join(mine, ", "))
	}
	if got.Replicas != p.replicas {
		return fmt.Errorf("%w: the cluster was created with %d replicas of each partition; this node was started with --replicas %d (start it with --replicas %d)",
			ErrPlacementChanged, got.Replicas, p.replicas, got.Replicas)
	}
	return nil
}

// recordFirst puts value at key unless the key exists, in one
// transaction: the first member to start records a setting of the cluster
// (its placement, its default consistency), the others read it. It returns
// the value recorded and whether this call recorded it.
func recordFirst(ctx context.Context, cli *clientv3.Client, key, value string) (recorded string, created bool, err error) {
	var resp *clientv3.TxnResponse
	if err := retryEtcd(ctx, func() error {
		var err error
		resp, err = cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, value)).Else(clientv3.OpGet(key)).Commit()
		return err
	}); err != nil {
		return "", false, err
	}
	if resp.Succeeded {
		return value, true, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return "", false, fmt.Errorf("the record %s vanished while it was read", key)
	}
	return string(kvs[0].Value), false, nil
}
