// Package replication replicates keyspaces with Raft (docs/cluster.md): a
// Host is one node's replicas of Raft groups, one group per keyspace, on
// etcd's Raft library (go.etcd.io/raft/v3). A group's log and hard state
// live in the node's store beside the keyspaces (0x11 <group:8> …), its
// applied state inside its keyspace, written in the same batch as the
// entries it applies.
//
// Writes are proposer-evaluated: the leader evaluates a write against its
// applied state and proposes its effects (a store batch) tagged with its
// term; every replica applies the entry only if its log term is that tag.
// A node proposes only as the settled leader of a term (it has applied an
// entry of that term), so its evaluation saw every earlier commit.
// TransferLeader hands a group's leadership to a caught-up voter (leader
// balance); the leader counts as unsettled while it does.
//
// A replica behind the leader's truncated log catches up from a snapshot
// (snapshot.go), which never travels as a message: a transport streams it
// with WriteSnapshot and ReadSnapshot, the receiver stages it in a table
// file, and Process ingests it with the group's new Raft state in one
// atomic step.
//
// The host's core is synchronous and owns no goroutine or clock: Tick,
// Step and Process drive it, so the simulator (sim_test.go) runs several
// hosts deterministically in one goroutine, and a driver runs it in a
// server. Membership is static in this stage: a group keeps the voters it
// was created with.
package replication
