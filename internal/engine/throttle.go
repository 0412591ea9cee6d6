package engine

import (
	"strconv"

	"github.com/partitadb/partita/internal/catalog"
	"github.com/partitadb/partita/internal/partition"
	"github.com/partitadb/partita/internal/status"
	"github.com/partitadb/partita/internal/throughput"
)

// Rate limiting (docs/request-units.md): every physical partition gets an
// equal share of its container's provisioned throughput (or, for a
// container sharing its database's throughput, of the database's, spread
// over the partitions of every container sharing it). A request is admitted
// when each partition it needs has budget left and refused with 429
// otherwise, before it does anything; its charge is debited once known.

// partitionRate is the RU/s each physical partition of c is provisioned
// with; 0 means unlimited.
func (e *Engine) partitionRate(c *catalog.Container) float64 {
	if c.OfferID != "" {
		o, err := e.cat.Offer(c.OfferID)
		if err != nil {
			return 0
		}
		return float64(o.MaxThroughput()) / float64(max(1, c.Map().Len()))
	}
	d, err := e.cat.Database(c.DB)
	if err != nil || d.OfferID == "" {
		return 0
	}
	o, err := e.cat.Offer(d.OfferID)
	if err != nil {
		return 0
	}
	colls, err := e.cat.Containers(c.DB)
	if err != nil {
		return 0
	}
	n := 0
	for _, k := range colls {
		if k.OfferID == "" {
			n += k.Map().Len()
		}
	}
	return float64(o.MaxThroughput()) / float64(max(1, n))
}

func rangeKey(c *catalog.Container, r partition.Range) string {
	return strconv.FormatUint(c.Internal, 16) + "/" + r.ID
}

// admit returns a 429 (with the time to wait) when one of the physical
// partitions a request needs has spent its budget.
func (e *Engine) admit(c *catalog.Container, ranges ...partition.Range) error {
	if e.limit == nil {
		return nil
	}
	rate := e.partitionRate(c)
	for _, r := range ranges {
		if wait, ok := e.limit.Admit(rangeKey(c, r), rate); !ok {
			return status.Throttled(wait)
		}
	}
	return nil
}

// charge debits ru request units, spread evenly over the partitions a
// request used.
func (e *Engine) charge(c *catalog.Container, ru float64, ranges ...partition.Range) {
	if e.limit == nil || len(ranges) == 0 {
		return
	}
	rate := e.partitionRate(c)
	for _, r := range ranges {
		e.limit.Charge(rangeKey(c, r), rate, ru/float64(len(ranges)))
	}
}

// chargeFailed charges a request that failed after admission the work it
// did, at least the minimum charge.
func (e *Engine) chargeFailed(c *catalog.Container, ru float64, ranges ...partition.Range) {
	e.charge(c, max(ru, throughput.MinimumCost()), ranges...)
}
