// Package metrics owns Partita's Prometheus metrics: a collector that reads
// the engine's per-partition reports at scrape time (request units charged,
// 429s, storage, items, logical partitions and provisioned share, labelled by
// database, container and range), this node's store (free space, its floor,
// writes refused) and error responses by status, and, in a cluster, this
// node's replicas' Raft state (leading, term, applied index, labelled by
// keyspace; where it leads, each replica's lag and activity, labelled by
// keyspace and replica), and the handler that serves them. It exports no partition key values:
// those stay in the authenticated /_partita reports.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/partitadb/partita/internal/engine"
)

// Source is what the collector reads: every container's partition reports.
type Source interface {
	AllPartitions(ctx context.Context) ([]engine.ContainerPartitions, error)
}

// Replica is this node's replica of one keyspace (a Raft group) in a
// cluster, for the replication metrics.
type Replica struct {
	Keyspace      uint64
	Leading       bool // this node is its settled leader
	Term, Applied uint64
	LeaderKnown   bool // this node knows a leader of it
	// Followers is each voter's replication as this node, the group's
	// Raft leader, tracks it; nil where it does not lead.
	Followers []Follower
}

// Follower is one voter of a group as its leader tracks it.
type Follower struct {
	Node   string // node id
	Lag    uint64 // committed entries its log lacks, when Known
	Known  bool   // the leader knows where its log stands
	Active bool   // the leader heard from it within an election timeout
}

// Replicas lists this node's replicas (nil on a single node).
type Replicas func() []Replica

// Process is this node's own state, read at scrape time: its store's
// free space and whether it refuses writes for want of it, and the error
// responses its API answered.
type Process struct {
	// FreeBytes is the data directory's filesystem's free space as the
	// store last measured it; FloorBytes the free space below which it
	// refuses writes (0: no floor); WritesRefused whether it refuses them
	// now (507).
	FreeBytes, FloorBytes int64
	WritesRefused         bool
	// Errors counts the error responses (status 400 and above) since the
	// process started, by status code.
	Errors []StatusCount
}

// StatusCount is how many responses had status Status.
type StatusCount struct {
	Status int
	Count  int64
}

type collector struct {
	src                                     Source
	replicas                                Replicas
	process                                 func() Process
	free, floor, refusing, errors           *prometheus.Desc
	charged, throttled                      *prometheus.Desc
	storage, items, logical, share, ranges_ *prometheus.Desc
	leading, leaderless, term, applied, led *prometheus.Desc
	lag, active                             *prometheus.Desc
}

// NewHandler returns the /metrics handler: partition metrics from src,
// replication metrics from replicas in a cluster (nil on a single node),
// this node's store and error responses from process (nil: none), plus Go
// runtime and process metrics, on a registry of its own. In a cluster each
// node exports what it counts itself (request units charged on it, its
// 429s, its error responses) and its replicas' state: sum the counters
// over the nodes for the cluster's totals.
func NewHandler(src Source, replicas Replicas, process func() Process) http.Handler {
	labels := []string{"db", "container", "range"}
	ks := []string{"keyspace"}
	c := &collector{
		src:        src,
		replicas:   replicas,
		process:    process,
		free:       prometheus.NewDesc("partita_store_free_bytes", "Free bytes on the data directory's filesystem, as the store last measured them.", nil, nil),
		floor:      prometheus.NewDesc("partita_store_free_floor_bytes", "Free bytes below which the store refuses writes with 507 (--min-free-bytes, plus the ballast to restore once released); 0: no floor.", nil, nil),
		refusing:   prometheus.NewDesc("partita_store_writes_refused", "1 while the store refuses writes for want of space (507 Insufficient Storage), else 0.", nil, nil),
		errors:     prometheus.NewDesc("partita_error_responses_total", "Error responses (status 400 and above) this node answered since it started, by status code: 429s of every cause (a partition's throughput, the server's request and memory limits), 507s, …", []string{"status"}, nil),
		leading:    prometheus.NewDesc("partita_keyspace_leading", "1 if this node is the settled leader of the keyspace's Raft group, else 0.", ks, nil),
		leaderless: prometheus.NewDesc("partita_keyspace_leader_unknown", "1 if this node knows no leader of the keyspace's Raft group, else 0.", ks, nil),
		term:       prometheus.NewDesc("partita_keyspace_raft_term", "The Raft term of this node's replica of the keyspace.", ks, nil),
		applied:    prometheus.NewDesc("partita_keyspace_applied_index", "The last Raft log index applied by this node's replica of the keyspace.", ks, nil),
		led:        prometheus.NewDesc("partita_node_keyspaces_led", "Keyspaces (Raft groups) this node leads.", nil, nil),
		lag: prometheus.NewDesc("partita_keyspace_replica_lag_entries",
			"Committed Raft log entries the replica's log lacks, as the keyspace's leader (this node) tracks it; absent while the leader has not learnt where the replica's log stands.",
			[]string{"keyspace", "replica"}, nil),
		active: prometheus.NewDesc("partita_keyspace_replica_active",
			"1 if the keyspace's leader (this node) heard from the replica within an election timeout, else 0.", []string{"keyspace", "replica"}, nil),
		charged:   prometheus.NewDesc("partita_partition_request_units_total", "Request units charged to the physical partition since the server started.", labels, nil),
		throttled: prometheus.NewDesc("partita_partition_throttled_total", "Requests refused with 429 by the physical partition since the server started.", labels, nil),
		storage:   prometheus.NewDesc("partita_partition_storage_bytes", "Item bytes stored in the physical partition.", labels, nil),
		items:     prometheus.NewDesc("partita_partition_items", "Items stored in the physical partition.", labels, nil),
		logical:   prometheus.NewDesc("partita_partition_logical_partitions", "Logical partitions in the physical partition.", labels, nil),
		share:     prometheus.NewDesc("partita_partition_provisioned_request_units_per_second", "The rate of the budget the physical partition draws on (0: not enforced): its share of its container's throughput, or its database's budget, which the sharing containers' partitions of its slice draw on too.", labels, nil),
		ranges_:   prometheus.NewDesc("partita_container_physical_partitions", "Physical partitions of the container.", []string{"db", "container"}, nil),
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.charged, c.throttled, c.storage, c.items, c.logical, c.share, c.ranges_} {
		ch <- d
	}
	if c.replicas != nil {
		for _, d := range []*prometheus.Desc{c.leading, c.leaderless, c.term, c.applied, c.led, c.lag, c.active} {
			ch <- d
		}
	}
	if c.process != nil {
		for _, d := range []*prometheus.Desc{c.free, c.floor, c.refusing, c.errors} {
			ch <- d
		}
	}
}

// collectProcess sends this node's store and error-response metrics.
func (c *collector) collectProcess(ch chan<- prometheus.Metric) {
	p := c.process()
	refusing := 0.0
	if p.WritesRefused {
		refusing = 1
	}
	ch <- prometheus.MustNewConstMetric(c.free, prometheus.GaugeValue, float64(p.FreeBytes))
	ch <- prometheus.MustNewConstMetric(c.floor, prometheus.GaugeValue, float64(p.FloorBytes))
	ch <- prometheus.MustNewConstMetric(c.refusing, prometheus.GaugeValue, refusing)
	for _, e := range p.Errors {
		ch <- prometheus.MustNewConstMetric(c.errors, prometheus.CounterValue, float64(e.Count), strconv.Itoa(e.Status))
	}
}

// collectReplicas sends the replication metrics.
func (c *collector) collectReplicas(ch chan<- prometheus.Metric) {
	led := 0
	for _, r := range c.replicas() {
		k := strconv.FormatUint(r.Keyspace, 10)
		leading, unknown := 0.0, 1.0
		if r.Leading {
			leading = 1
			led++
		}
		if r.LeaderKnown {
			unknown = 0
		}
		ch <- prometheus.MustNewConstMetric(c.leading, prometheus.GaugeValue, leading, k)
		ch <- prometheus.MustNewConstMetric(c.leaderless, prometheus.GaugeValue, unknown, k)
		ch <- prometheus.MustNewConstMetric(c.term, prometheus.GaugeValue, float64(r.Term), k)
		// A gauge: the replica's state, which a snapshot can move by any
		// amount (a counter without _total, an operator hunt noted).
		ch <- prometheus.MustNewConstMetric(c.applied, prometheus.GaugeValue, float64(r.Applied), k)
		for _, f := range r.Followers {
			if f.Known {
				ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(f.Lag), k, f.Node)
			}
			active := 0.0
			if f.Active {
				active = 1
			}
			ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, active, k, f.Node)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.led, prometheus.GaugeValue, float64(led))
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	if c.replicas != nil {
		c.collectReplicas(ch)
	}
	if c.process != nil {
		c.collectProcess(ch)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, err := c.src.AllPartitions(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.storage, err)
		return
	}
	for _, cp := range all {
		ch <- prometheus.MustNewConstMetric(c.ranges_, prometheus.GaugeValue, float64(len(cp.Partitions)), cp.DB, cp.Container)
		for _, p := range cp.Partitions {
			l := []string{cp.DB, cp.Container, p.ID}
			ch <- prometheus.MustNewConstMetric(c.charged, prometheus.CounterValue, p.ChargedRU, l...)
			ch <- prometheus.MustNewConstMetric(c.throttled, prometheus.CounterValue, float64(p.Throttled), l...)
			ch <- prometheus.MustNewConstMetric(c.storage, prometheus.GaugeValue, float64(p.StorageBytes), l...)
			ch <- prometheus.MustNewConstMetric(c.items, prometheus.GaugeValue, float64(p.Items), l...)
			ch <- prometheus.MustNewConstMetric(c.logical, prometheus.GaugeValue, float64(p.LogicalPartitions), l...)
			ch <- prometheus.MustNewConstMetric(c.share, prometheus.GaugeValue, p.RUPerSecond, l...)
		}
	}
}
