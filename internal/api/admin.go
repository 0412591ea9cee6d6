package api

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/partitadb/partita/internal/auth"
	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/status"
)

// Partita's own administrative endpoints live under /_partita/, signed like
// any request: the reports (GET) need read access, so the read-only key may
// read them (TestReadOnlyKeyCannotWrite); a split, and the cluster status
// with digests (a scan of every keyspace), need the master key.

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

// hdrClusterAll asks GET /_partita/cluster for every member's view, which
// the node gathers, rather than its own ("true" or "1").
const hdrClusterAll = "x-partita-cluster-all"

// clusterStatus serves GET /_partita/cluster: this node's view of its
// cluster (members, and each keyspace's leader, applied position and, from
// its leader, its replicas' lag), for `partita cluster status`; with
// x-partita-cluster-all: true, every member's view as a JSON array, this
// node's first, with each member's liveness in it; with
// x-partita-cluster-digest: true, each keyspace's digest too (a scan of
// every keyspace: with read-write access only, 403 otherwise). A single
// node answers 404 saying so; a malformed header value, 400.
func (h *Handler) clusterStatus(w http.ResponseWriter, r *http.Request) error {
	if h.cfg.ClusterStatus == nil {
		return status.New(http.StatusNotFound, "this server is a single node, not a member of a cluster (start it with --cluster-addr and --join)")
	}
	var digest, all bool
	for _, f := range []struct {
		name string
		v    *bool
	}{{hdrClusterDigest, &digest}, {hdrClusterAll, &all}} {
		if v := r.Header.Get(f.name); v != "" {
			var err error
			if *f.v, err = strconv.ParseBool(v); err != nil {
				return status.BadRequest("%s: %q: want true or false", f.name, v)
			}
		}
	}
	if digest && principalFrom(r.Context()).Access != auth.ReadWrite {
		// A digest reads every keyspace whole, on every member with all:
		// an operator's check, not a read to let every read-only client
		// repeat unthrottled and uncharged.
		return status.New(http.StatusForbidden, hdrClusterDigest+" scans every keyspace of the cluster: it needs the master key (or a read-write role), not read-only access")
	}
	st, err := h.cfg.ClusterStatus(r.Context(), digest, all)
	if err != nil {
		return err
	}
	body, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, body)
}
