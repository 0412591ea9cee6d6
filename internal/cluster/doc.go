// Package cluster holds what turns Partita nodes into a cluster
// (docs/cluster.md): the node itself, node identities and credentials, the
// embedded etcd member that is the control plane, the catalog's etcd
// backend, the keyspaces as Raft groups and their placement, remote reads
// of the keyspaces a node holds no replica of, and the transport that
// carries Raft messages and forwarded requests between nodes.
//
//   - Node (node.go): StartNode runs a member in the server's process: the
//     cluster listener (mutual TLS: RaftProto connections for Raft
//     messages; HTTPS for ForwardPath, the requests other nodes forward,
//     and for the /kv, budget and status routes), the etcd member, the
//     shared catalog, the replication host and its driver, and Keyspaces.
//     Forward sends a request this node cannot serve to its partition's
//     leader, ForwardRead a read of a keyspace it holds no replica of to
//     that keyspace's leader, once (gather.go: the sending, and the
//     cluster-wide reports' requests to every member). A member starts
//     only on an empty data directory (IsMember, ErrNotEmpty).
//   - Status (status.go, statusall.go): the node's view of its members
//     and replicas (partita cluster status), with each keyspace's
//     replication progress where it leads (replication.Host.Progress);
//     ClusterStatus asks every member for its view over StatusPath and
//     marks each live or not by whether it answered, and CompareDigests
//     finds replicas that diverged.
//   - Keyspaces (keyspaces.go): the engine's replica.Host in a cluster:
//     every keyspace a Raft group whose voters Placement names, created on
//     first use on each of them; idle leaders publish their stable marks.
//   - Placement (placement.go): keyspace k's voters are --replicas of the
//     members, from index k mod N on; recorded in etcd at the first start,
//     and a member started with another --replicas is refused.
//   - Remote reads (remote.go, kvserve.go): a keyspace this node holds no
//     replica of is a Remote, read through the /kv service of its voters,
//     monotonically (each request carries the largest applied index seen).
//   - Leader balance (balance.go): every second each node hands one group
//     it leads to the voter of that group leading the fewest of the groups
//     with the same voters, while it leads two more (Raft leadership
//     transfer, replication.Host.TransferLeader).
//   - Releases (release.go): members of different data formats
//     (replica.DataFormat) never take part in one cluster: RaftProto and
//     SnapProto carry it, every request and answer between members names it
//     (X-Partita-Data-Format, refused when it differs), and a member starting
//     while one of another release is up exits (checkReleases).
//   - Members and NodeID (members.go): the --join list as sorted members,
//     each with a node id derived from its cluster address (SHA-256, never
//     0), its canonical address (also its etcd member name) and its etcd
//     peer URL (the cluster port + 1).
//   - CA and Cert (creds.go): the cluster's Ed25519 CA, derived from the
//     cluster secret with HKDF-SHA256, so every node holding the secret has
//     it and nothing else is distributed; each node issues itself a fresh
//     Cert at start. Cert.ServerTLS and Cert.ClientTLS are mutual TLS 1.3
//     configurations that accept only certificates chaining to the CA.
//   - StartEtcd and Etcd (etcd.go): the node's etcd member, its peers on
//     mutual TLS with the node's certificate, its client listener a Unix
//     socket in the data directory; Etcd.Client is connected to it.
//     Etcd.Restart starts it again in place, which watchEtcd
//     (etcdwatch.go) does when the member cannot confirm the catalog while
//     the node hears its peers: its peer connections stalled.
//   - unackedControl (sockopt_linux.go): the connections a node dials end
//     when what they sent stays unacknowledged for 10 s
//     (TCP_USER_TIMEOUT), so none outlives a network cut.
//   - Backend (backend.go) and SharedCatalog (shared.go): catalog.Backend
//     over etcd, each Apply one transaction, fenced by the cluster-wide
//     catalog lock; a watch feeds the other nodes' changes to the catalog,
//     and is started again when etcd ends it.
//   - Catalog currency (current.go): a node's copy of the catalog is
//     current for CatalogLease after a confirmation began (Current), and a
//     change is acknowledged once every member reported it or a lease has
//     passed (Propagated), so writes and Strong reads never act on a copy
//     that misses an acknowledged change.
//   - OpenOfflineCatalog and MemberKeyspaces (offline.go): for partita
//     check of a stopped member's data directory, the catalog the member
//     last knew, read from a copy of its etcd data started alone, and its
//     keyspaces with their groups' LSNs.
//   - Transport (transport.go): replication.Transport over mutual TLS:
//     per peer a bounded queue and a goroutine writing batches of
//     length-prefixed protobuf frames to one connection of its own
//     protocol (RaftProto), which the cluster listener hands to the
//     receiving transport (Register). It drops rather than blocks.
//     Snapshots go as streams on connections of their own (SnapProto).
//   - Budgets (budgets.go): the partitions' request-unit budgets shared
//     between the nodes: each reports what it charged to partitions it
//     does not lead to their leaders, whose buckets are the partitions',
//     and refuses their requests while a leader says they are spent.
//
// Not here yet (docs/cluster.md): node records with liveness leases in
// etcd (a member is live here when it answers the node asking),
// load-based leader balance and membership changes.
package cluster
