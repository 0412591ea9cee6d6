package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/advise"
	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/status"
)

// Bounds of the advise endpoint's sample (hdrAdviseSample).
const (
	adviseDefaultSample = 1000
	adviseMaxSample     = 10000
	adviseTop           = 10 // candidates in the text table
	// advisePage is the read feed's page size: small pages fit a throttled
	// partition's budget.
	advisePage = 100
	// adviseRetries bounds the 429s the sampling waits out, in all.
	adviseRetries = 100
	// hdrAdviseSample is how many items the advise endpoint samples: a
	// header, as the Cosmos DB paths take no query string (foldQuery).
	hdrAdviseSample = "x-partita-advise-sample"
)

// adviseContainer serves GET /_partita/dbs/{db}/colls/{coll}/advise
// (x-partita-advise-sample: N): what `partita advise --live` prints, run in the server. It
// reads up to N items (default 1000, at most 10000) of the container's read
// feed (in key order, so like --live's query not a uniform sample; charged
// as reads, and throttled as they are: it waits out up to 100 429s, as
// the SDK --live reads through retries them), ranks candidate partition keys with package advise, projected
// onto the container's whole size, and names the keys hot now from the
// partition report:
//
//	{"report": {…advise.Report…}, "text": "Sample: 1000 items, …"}
//
// It writes nothing, so it needs read access only (the read-only key may
// use it). Errors: 404 for an unknown container, 400 for a bad sample size
// or a container with no items.
func (h *Handler) adviseContainer(w http.ResponseWriter, r *http.Request) error {
	n := adviseDefaultSample
	if v := r.Header.Get(hdrAdviseSample); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > adviseMaxSample {
			return status.BadRequest("%s: %q: want a number of items from 1 to %d", hdrAdviseSample, v, adviseMaxSample)
		}
	}
	ctx := r.Context()
	db, coll := r.PathValue("db"), r.PathValue("coll")
	res, err := h.eng.ReadContainer(db, coll)
	if err != nil {
		return err
	}
	var def struct {
		PartitionKey struct {
			Paths []string `json:"paths"`
		} `json:"partitionKey"`
	}
	if err := json.Unmarshal(res.Body, &def); err != nil {
		return err
	}
	a := advise.NewAnalyzer(advise.ReadOptions{OnError: advise.Skip})
	a.SetCurrentKey(def.PartitionKey.Paths)
	ru := 0.0 // the sample's reads, the response's charge
	for got, cont, throttled := 0, "", 0; got < n; {
		p, err := h.eng.ReadFeed(ctx, db, coll, engine.Scope{}, min(n-got, advisePage), cont)
		if se, ok := errors.AsType[*status.Error](err); ok && se.Code == http.StatusTooManyRequests && throttled < adviseRetries {
			// As the SDK that --live samples through does: wait as told
			// and retry. A hot container is when advice is wanted.
			throttled++
			t := time.NewTimer(max(se.RetryAfter, 10*time.Millisecond))
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			continue
		}
		if err != nil {
			return err
		}
		ru += p.RU
		for _, item := range p.Items {
			_ = a.Add(item) // a stored item is well-formed; Skip counts any that is not
			got++
		}
		if cont = p.Continuation; cont == "" || len(p.Items) == 0 {
			break
		}
	}
	u, err := h.eng.ContainerUsage(ctx, db, coll)
	if err != nil {
		return err
	}
	opts := advise.Options{}
	if u.Items > int64(a.Items()) {
		opts.TotalItems, opts.TotalBytes = u.Items, u.ItemBytes
	}
	rep, err := a.Analyze(ctx, opts)
	if errors.Is(err, advise.ErrNoItems) {
		return status.BadRequest("container %s has no items to analyse: the advisor needs a sample of them", coll)
	}
	if err != nil {
		return err
	}
	reps, err := h.eng.Partitions(ctx, db, coll)
	if err != nil {
		return err
	}
	// The advisor reads the report in its JSON form, as --live fetches it.
	rj, err := json.Marshal(reps)
	if err != nil {
		return err
	}
	var parts []advise.PartitionReport
	if err := json.Unmarshal(rj, &parts); err != nil {
		return err
	}
	rep.AddHotKeys(advise.HotKeys(parts))
	var text strings.Builder
	if err := rep.WriteTable(&text, adviseTop); err != nil {
		return err
	}
	body, err := json.Marshal(struct {
		Report *advise.Report `json:"report"`
		Text   string         `json:"text"`
	}{rep, text.String()})
	if err != nil {
		return err
	}
	setCharge(w, ru)
	return writeJSON(w, http.StatusOK, body)
}
