package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/status"
)

// Partita's own administrative endpoints live under /_partita/, signed like
// any request: the reports (GET) need read access, so the read-only key may
// read them (TestReadOnlyKeyCannotWrite); a split needs the master key.

// splitRange serves POST /_partita/dbs/{db}/colls/{coll}/pkranges/{id}/split:
// it splits that physical partition at its storage midpoint and answers the
// container's ranges after the split.
func (h *Handler) splitRange(w http.ResponseWriter, r *http.Request) error {
	ranges, err := h.eng.SplitRange(r.Context(), r.PathValue("db"), r.PathValue("coll"), r.PathValue("id"))
	if err != nil {
		return err
	}
	type rangeJSON struct {
		ID           string   `json:"id"`
		MinInclusive string   `json:"minInclusive"`
		MaxExclusive string   `json:"maxExclusive"`
		Parents      []string `json:"parents"`
	}
	out := struct {
		Ranges []rangeJSON `json:"ranges"`
	}{}
	for _, rg := range ranges {
		out.Ranges = append(out.Ranges, rangeJSON{ID: rg.ID, MinInclusive: rg.Min, MaxExclusive: rg.Max, Parents: append([]string{}, rg.Parents...)})
	}
	body, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, body)
}

// partitions serves GET /_partita/dbs/{db}/colls/{coll}/partitions: one
// report per physical partition (engine.PartitionReport).
func (h *Handler) partitions(w http.ResponseWriter, r *http.Request) error {
	reps, err := h.eng.Partitions(r.Context(), r.PathValue("db"), r.PathValue("coll"))
	if err != nil {
		return err
	}
	out := struct {
		Partitions []engine.PartitionReport `json:"partitions"`
		// In a cluster: the nodes whose counts the report adds up, and
		// those it lacks (clusterwide.go).
		Nodes            int               `json:"nodes,omitempty"`
		UnreachableNodes []UnreachableNode `json:"unreachableNodes,omitempty"`
	}{Partitions: reps}
	if h.cfg.Gather != nil && !forwarded(r) {
		out.Nodes, out.UnreachableNodes = h.gatherPartitions(r, reps)
	}
	body, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, body)
}

// hdrClusterDigest asks GET /_partita/cluster for every keyspace's digest
// ("true" or "1"): a header, as the Cosmos DB paths take no query string
// (foldQuery).
const hdrClusterDigest = "x-partita-cluster-digest"

// clusterStatus serves GET /_partita/cluster: this node's view of its
// cluster (members, and each keyspace's leader and applied position), for
// `partita cluster status`; with x-partita-cluster-digest: true, each
// keyspace's digest too (a scan of every keyspace). A single node answers
// 404 saying so; a malformed header value, 400.
func (h *Handler) clusterStatus(w http.ResponseWriter, r *http.Request) error {
	if h.cfg.ClusterStatus == nil {
		return status.New(http.StatusNotFound, "this server is a single node, not a member of a cluster (start it with --cluster-addr and --join)")
	}
	digest := false
	if v := r.Header.Get(hdrClusterDigest); v != "" {
		var err error
		if digest, err = strconv.ParseBool(v); err != nil {
			return status.BadRequest("%s: %q: want true or false", hdrClusterDigest, v)
		}
	}
	st, err := h.cfg.ClusterStatus(r.Context(), digest)
	if err != nil {
		return err
	}
	body, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, body)
}
