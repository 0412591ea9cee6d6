// Package cluster holds what turns Partita nodes into a cluster
// (docs/cluster.md): node identities and credentials, the embedded etcd
// member that is the control plane, the catalog's etcd backend, and the
// transport that carries Raft messages between nodes.
//
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
//   - Backend (backend.go): catalog.Backend over etcd, each Apply one
//     transaction; a Fenced backend writes only while its writer holds the
//     election it won (Fence), so a deposed catalog leader cannot overwrite
//     its successor.
//   - Transport (transport.go): replication.Transport over HTTP/2 and
//     mutual TLS: per peer a bounded queue and a goroutine posting batches
//     of length-prefixed protobuf frames to RaftPath, and the handler that
//     receives them. It drops rather than blocks.
//
// Not here yet (docs/cluster.md, stage 2): the node records with liveness
// leases, placement, leader balance, request forwarding and snapshots sent
// apart from Raft messages.
package cluster
