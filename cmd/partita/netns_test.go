package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// Clusters on separate machines, rehearsed on one (make clusterloop-netns):
// with PARTITA_CLUSTER_NETNS=1, newCluster puts each member in a network
// namespace of its own — its own interface, address and ports, on a bridge
// with the others, as three hosts on a switch — and every member listens
// on the same ports (API 8081, cluster 7001, etcd 7002), as on separate
// hosts. The test's clients and `partita cluster status` run in the root
// namespace and reach the members over the bridge. It needs root (ip
// netns, iptables); the members' traffic never leaves the machine.
//
// cutOff and heal use it for what loopback cannot show: a member cut off
// from its peers (every packet between them dropped, both ways) while
// clients still reach it.

// netnsMode reports whether the tests' clusters run in network namespaces.
func netnsMode() bool { return os.Getenv("PARTITA_CLUSTER_NETNS") == "1" }

// netnsClusters numbers this process's namespaced clusters (each its own
// subnet and names).
var netnsClusters atomic.Int32

// netnsCluster creates n namespaces on a bridge and returns each member's
// namespace and address; t's cleanup removes them (after the members,
// whose cleanups, registered later, kill them first).
func netnsCluster(t *testing.T, n int) (names, ips []string) {
	t.Helper()
	k := int(netnsClusters.Add(1))
	pid := os.Getpid() % 100000
	subnet := fmt.Sprintf("10.%d.%d", 100+k%100, pid%250)
	bridge := fmt.Sprintf("pb%d_%d", pid, k)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s (PARTITA_CLUSTER_NETNS=1 needs root and iproute2)", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() {
		for _, ns := range names {
			_ = exec.Command("ip", "netns", "del", ns).Run()
		}
		_ = exec.Command("ip", "link", "del", bridge).Run()
	})
	run("link", "add", bridge, "type", "bridge")
	run("addr", "add", subnet+".254/24", "dev", bridge)
	run("link", "set", bridge, "up")
	for i := range n {
		ns := fmt.Sprintf("pt%d_%d_%d", pid, k, i+1)
		veth := fmt.Sprintf("pv%d_%d_%d", pid, k, i+1)
		ip := fmt.Sprintf("%s.%d", subnet, i+1)
		run("netns", "add", ns)
		names = append(names, ns)
		run("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
		run("link", "set", veth, "master", bridge, "up")
		run("netns", "exec", ns, "ip", "addr", "add", ip+"/24", "dev", "eth0")
		run("netns", "exec", ns, "ip", "link", "set", "eth0", "up")
		run("netns", "exec", ns, "ip", "link", "set", "lo", "up")
		ips = append(ips, ip)
	}
	return names, ips
}

// netnsNodes lays out n members of a namespaced cluster (newCluster).
func netnsNodes(t *testing.T, n int, dir string) []*clusterNode {
	names, ips := netnsCluster(t, n)
	nodes := make([]*clusterNode, n)
	for i := range nodes {
		nodes[i] = &clusterNode{addr: net.JoinHostPort(ips[i], "8081"), clusterAddr: net.JoinHostPort(ips[i], "7001"),
			data: fmt.Sprintf("%s/n%d", dir, i+1), ns: names[i]}
	}
	return nodes
}

// iptables runs iptables in namespace ns.
func iptables(ns string, args ...string) error {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns, "iptables"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s in %s: %v: %s", strings.Join(args, " "), ns, err, out)
	}
	return nil
}

// cutOff drops every packet between member i and the other members, both
// ways (each side drops what arrives from the other, as a cut cable
// would: senders see silence, not errors), while the clients in the root
// namespace still reach every member.
func cutOff(nodes []*clusterNode, i int) error {
	host := func(n *clusterNode) string { h, _, _ := net.SplitHostPort(n.addr); return h }
	for j, n := range nodes {
		if j == i {
			continue
		}
		if err := iptables(nodes[i].ns, "-A", "INPUT", "-s", host(n), "-j", "DROP"); err != nil {
			return err
		}
		if err := iptables(n.ns, "-A", "INPUT", "-s", host(nodes[i]), "-j", "DROP"); err != nil {
			return err
		}
	}
	return nil
}

// heal removes every cut (cutOff) between the members.
func heal(nodes []*clusterNode) error {
	for _, n := range nodes {
		if err := iptables(n.ns, "-F", "INPUT"); err != nil {
			return err
		}
	}
	return nil
}
