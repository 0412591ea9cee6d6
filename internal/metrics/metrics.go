// Package metrics owns Partita's Prometheus metrics: a collector that reads
// the engine's per-partition reports at scrape time (request units charged,
// 429s, storage, items, logical partitions and provisioned share, labelled by
// database, container and range) and the handler that serves them. It
// exports no partition key values: those stay in the authenticated
// /_partita reports.
package metrics

import (
	"context"
	"net/http"
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

type collector struct {
	src                                     Source
	charged, throttled                      *prometheus.Desc
	storage, items, logical, share, ranges_ *prometheus.Desc
}

// NewHandler returns the /metrics handler: partition metrics from src plus
// Go runtime and process metrics, on a registry of its own.
func NewHandler(src Source) http.Handler {
	labels := []string{"db", "container", "range"}
	c := &collector{
		src:       src,
		charged:   prometheus.NewDesc("partita_partition_request_units_total", "Request units charged to the physical partition since the server started.", labels, nil),
		throttled: prometheus.NewDesc("partita_partition_throttled_total", "Requests refused with 429 by the physical partition since the server started.", labels, nil),
		storage:   prometheus.NewDesc("partita_partition_storage_bytes", "Item bytes stored in the physical partition.", labels, nil),
		items:     prometheus.NewDesc("partita_partition_items", "Items stored in the physical partition.", labels, nil),
		logical:   prometheus.NewDesc("partita_partition_logical_partitions", "Logical partitions in the physical partition.", labels, nil),
		share:     prometheus.NewDesc("partita_partition_provisioned_request_units_per_second", "The physical partition's share of the provisioned throughput (0: not enforced).", labels, nil),
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
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
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
