package api

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
	"strings"

	"github.com/partitadb/partita/internal/document"
	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/status"
)

// Request headers (case-insensitive on the wire).
const (
	hdrPartitionKey      = "x-ms-documentdb-partitionkey"
	hdrPKRangeID         = "x-ms-documentdb-partitionkeyrangeid"
	hdrMaxItemCount      = "x-ms-max-item-count"
	hdrContinuation      = "x-ms-continuation"
	hdrIsUpsert          = "x-ms-documentdb-is-upsert"
	hdrIsQuery           = "x-ms-documentdb-isquery"
	hdrQuery             = "x-ms-documentdb-query"
	hdrCrossPartition    = "x-ms-documentdb-query-enablecrosspartition"
	hdrQueryMetrics      = "x-ms-documentdb-populatequerymetrics"
	hdrIndexMetrics      = "x-ms-cosmos-populateindexmetrics"
	hdrIndexMetricsV2    = "x-ms-cosmos-populateindexmetrics-V2"
	hdrIsBatch           = "x-ms-cosmos-is-batch-request"
	hdrIsPlan            = "x-ms-cosmos-is-query-plan-request"
	hdrQueryFeatures     = "x-ms-cosmos-supported-query-features"
	hdrGatewayQuery      = "x-partita-gateway-query" // "full": run this query whole, as --gateway-query=full runs every query
	hdrOfferTP           = "x-ms-offer-throughput"
	hdrOfferType         = "x-ms-offer-type"
	hdrAutopilot         = "x-ms-cosmos-offer-autopilot-settings"
	hdrAIM               = "A-IM"
	hdrStartEPK          = "x-ms-start-epk"
	hdrEndEPK            = "x-ms-end-epk"
	hdrVersion           = "x-ms-version"
	hdrPopulateQuota     = "x-ms-documentdb-populatequotainfo"
	hdrMinThroughput     = "x-ms-cosmos-min-throughput"
	hdrPartitionStats    = "x-ms-documentdb-populatepartitionstatistics"
	hdrIndexingDirective = "x-ms-indexing-directive"
)

func isTrue(r *http.Request, name string) bool {
	return strings.EqualFold(strings.TrimSpace(headerValue(r.Header, name)), "true")
}

// headerValue returns the first value of header name in h, "" when absent:
// h.Get(name) without its allocation. The protocol's header names are
// written in lowercase here, and http.Header.Get makes a new string of a
// name's canonical form ("X-Ms-Date") on every call unless the name is
// canonical already; headerValue makes it on the stack.
func headerValue(h http.Header, name string) string {
	if v := headerValues(h, name); len(v) > 0 {
		return v[0]
	}
	return ""
}

// headerValues returns the values of header name in h, as h.Values(name)
// does, without allocating (headerValue).
func headerValues(h http.Header, name string) []string {
	var buf [64]byte
	c, ok := appendCanonicalKey(buf[:0], name)
	if !ok {
		return h.Values(name)
	}
	return h[string(c)]
}

// appendCanonicalKey appends the canonical form of header name to dst, as
// http.CanonicalHeaderKey returns it: the first letter and every letter after
// a hyphen in upper case, the others in lower case. ok is false, and dst
// unchanged, for a name of other bytes than ASCII letters, digits and
// hyphens, or longer than 64 bytes (the caller then asks net/http).
func appendCanonicalKey(dst []byte, name string) (_ []byte, ok bool) {
	if len(name) > 64 {
		return dst, false
	}
	n := len(dst)
	upper := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z':
			if upper {
				c -= 'a' - 'A'
			}
		case 'A' <= c && c <= 'Z':
			if !upper {
				c += 'a' - 'A'
			}
		case '0' <= c && c <= '9', c == '-':
		default:
			return dst[:n], false
		}
		dst = append(dst, c)
		upper = c == '-'
	}
	return dst, true
}

// isQuery reports whether a POST carries a query rather than a resource.
func isQuery(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	return strings.HasPrefix(strings.ToLower(ct), "application/query+json") || isTrue(r, hdrIsQuery) || isTrue(r, hdrQuery)
}

// partitionKey returns the request's partition key header, nil when absent.
func partitionKey(r *http.Request) (document.PartitionKey, error) {
	vals := headerValues(r.Header, hdrPartitionKey)
	if len(vals) == 0 {
		return nil, nil
	}
	pk, err := document.ParsePKHeader(vals[0])
	if err != nil {
		if pe, ok := err.(*document.PKError); ok {
			return nil, status.BadRequest("invalid %s header: %s", hdrPartitionKey, pe.Msg)
		}
		return nil, status.BadRequest("invalid %s header", hdrPartitionKey)
	}
	if pk == nil {
		pk = document.PartitionKey{} // present but empty: "[]"
	}
	return pk, nil
}

// rangeID returns the x-ms-documentdb-partitionkeyrangeid header; the SDKs
// may send "collRid,id", of which the id is the last part. Any other shape
// (more commas, an empty part) is refused: "5,," read the whole container.
func rangeID(r *http.Request) (string, error) {
	v := strings.TrimSpace(r.Header.Get(hdrPKRangeID))
	if v == "" {
		return "", nil
	}
	parts := strings.Split(v, ",")
	id := strings.TrimSpace(parts[len(parts)-1])
	if len(parts) > 2 || id == "" || strings.TrimSpace(parts[0]) == "" {
		return "", status.BadRequest("invalid %s header %q: want a partition key range id, or \"<collection rid>,<id>\"", hdrPKRangeID, v)
	}
	if _, err := strconv.ParseUint(id, 10, 32); err != nil {
		// Range ids are numbers: one that cannot be any range's is a 400,
		// not the 410 (gone, split) that makes the SDKs refresh and retry.
		return "", status.BadRequest("invalid %s header %q: a partition key range id is a non-negative integer", hdrPKRangeID, v)
	}
	return id, nil
}

// scope reads the feed/query scope headers: partition key, range id, and
// an EPK sub-range of that range.
func scope(r *http.Request) (engine.Scope, error) {
	pk, err := partitionKey(r)
	if err != nil {
		return engine.Scope{}, err
	}
	id, err := rangeID(r)
	if err != nil {
		return engine.Scope{}, err
	}
	return engine.Scope{PK: pk, RangeID: id, MinEPK: strings.TrimSpace(r.Header.Get(hdrStartEPK)), MaxEPK: strings.TrimSpace(r.Header.Get(hdrEndEPK))}, nil
}

// maxItemCount reads x-ms-max-item-count: 0 when absent, -1 for unbounded.
func maxItemCount(r *http.Request) (int, error) {
	v := strings.TrimSpace(r.Header.Get(hdrMaxItemCount))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < -1 || n == 0 {
		return 0, status.BadRequest("invalid %s header %q: it must be a positive integer or -1", hdrMaxItemCount, v)
	}
	return n, nil
}

// requestedThroughput reads the throughput headers of a create request.
func requestedThroughput(r *http.Request) (engine.Throughput, error) {
	var tp engine.Throughput
	if v := strings.TrimSpace(r.Header.Get(hdrOfferType)); v != "" {
		// The S1, S2 and S3 performance levels Cosmos DB retired: taken,
		// the header was ignored (an SDK hunt).
		return tp, status.BadRequest("%s %q is not supported: the legacy performance levels are retired; provision throughput with %s or %s", hdrOfferType, v, hdrOfferTP, hdrAutopilot)
	}
	if v := strings.TrimSpace(r.Header.Get(hdrOfferTP)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return tp, status.BadRequest("invalid %s header %q", hdrOfferTP, v)
		}
		tp.Manual = n
	}
	if v := strings.TrimSpace(r.Header.Get(hdrAutopilot)); v != "" {
		var s autopilotSettings
		if err := json.Unmarshal([]byte(v), &s); err != nil || s.MaxThroughput <= 0 {
			return tp, status.BadRequest("invalid %s header: want {\"maxThroughput\": N}", hdrAutopilot)
		}
		if err := s.supported(); err != nil {
			return tp, err
		}
		tp.AutoscaleMax = s.MaxThroughput
	}
	return tp, nil
}

// autopilotSettings is an offer's autoscale settings, as a create's
// x-ms-cosmos-offer-autopilot-settings header and an offer's
// content.offerAutopilotSettings carry them.
type autopilotSettings struct {
	MaxThroughput int `json:"maxThroughput"`
	AutoUpgrade   *struct {
		ThroughputPolicy *struct {
			IncrementPercent int `json:"incrementPercent"`
		} `json:"throughputPolicy"`
	} `json:"autoUpgradePolicy"`
}

// supported refuses (400) the auto-upgrade policy (azcosmos's
// NewAutoscaleThroughputPropertiesWithIncrement: the maximum raised by a
// percentage as usage nears it), which Partita does not apply: taken, it
// was dropped silently (an SDK hunt).
func (s autopilotSettings) supported() error {
	if s.AutoUpgrade != nil && s.AutoUpgrade.ThroughputPolicy != nil && s.AutoUpgrade.ThroughputPolicy.IncrementPercent != 0 {
		return status.BadRequest("autoscale's autoUpgradePolicy (an increment of %d%%) is not supported: the autoscale maximum changes only when it is replaced", s.AutoUpgrade.ThroughputPolicy.IncrementPercent)
	}
	return nil
}

// parseQuery reads a query request: body, paging and cross-partition headers.
func parseQuery(r *http.Request) (engine.Query, error) {
	body, err := readBody(r)
	if err != nil {
		return engine.Query{}, err
	}
	spec, err := decodeQuerySpec(body)
	if err != nil {
		return engine.Query{}, status.BadRequest("query body is not a valid query specification: %v", err)
	}
	if spec.Query == nil {
		return engine.Query{}, status.BadRequest(`query body has no "query"`)
	}
	q := engine.Query{Text: *spec.Query, EnableCrossPartition: isTrue(r, hdrCrossPartition), Continuation: r.Header.Get(hdrContinuation)}
	if len(spec.Parameters) > 0 {
		q.Params = map[string][]byte{}
		for _, p := range spec.Parameters {
			if !strings.HasPrefix(p.Name, "@") {
				return engine.Query{}, status.BadRequest("query parameter name %q must start with '@'", p.Name)
			}
			if len(p.Value) == 0 {
				return engine.Query{}, status.BadRequest("query parameter %s has no value", p.Name)
			}
			q.Params[p.Name] = p.Value
		}
	}
	if q.MaxItems, err = maxItemCount(r); err != nil {
		return engine.Query{}, err
	}
	switch v := r.Header.Get(hdrGatewayQuery); {
	case strings.EqualFold(v, "full"):
		q.Whole = true
	case v != "" && !strings.EqualFold(v, "gateway"):
		return engine.Query{}, status.BadRequest("%s %q: want full or gateway", hdrGatewayQuery, v)
	}
	if vals := r.Header.Values(hdrQueryFeatures); len(vals) > 0 {
		q.SupportedFeatures = []string{}
		for _, v := range vals {
			for f := range strings.SplitSeq(v, ",") {
				if f = strings.TrimSpace(f); f != "" {
					q.SupportedFeatures = append(q.SupportedFeatures, f)
				}
			}
		}
	}
	return q, nil
}

// setHeader sets response header name to v. Cosmos DB's own headers
// (x-ms-*, etag, lsn) go out in lowercase, as the service sends them,
// whatever the protocol: some clients read them case-sensitively (the Python
// SDK copies the response headers into a plain dict and looks up
// "x-ms-continuation"), and http.Header.Set would canonicalise the name to
// "X-Ms-Continuation" on HTTP/1.1. Standard HTTP headers (Content-Type,
// Content-Length) keep their canonical names, which net/http itself reads.
//
// Every response header of the API is written here (TestResponseHeadersOneWriter):
// one name never ends up in the map under two spellings.
func setHeader(w http.ResponseWriter, name, v string) {
	h := w.Header()
	key := strings.ToLower(name)
	if !cosmosHeader(key) {
		h.Set(name, v)
		return
	}
	// A spelling other than the lowercase one can only be the canonical one
	// (http.Header.Set's), looked up without allocating.
	var buf [64]byte
	if c, ok := appendCanonicalKey(buf[:0], key); !ok {
		if c := http.CanonicalHeaderKey(key); c != key {
			delete(h, c)
		}
	} else if _, dup := h[string(c)]; dup && string(c) != key {
		delete(h, string(c))
	}
	h[key] = []string{v}
}

// responseHeader returns the value of response header name set by
// setHeader, "" when unset.
func responseHeader(w http.ResponseWriter, name string) string {
	key := strings.ToLower(name)
	if !cosmosHeader(key) {
		return w.Header().Get(name)
	}
	if v := w.Header()[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// cosmosCaseWriter gives the Cosmos DB headers of a response another node
// wrote (a forwarded request's, copied from Go's HTTP client, which
// canonicalises names) the lowercase names setHeader gives them, just
// before they are written.
type cosmosCaseWriter struct{ http.ResponseWriter }

func (c cosmosCaseWriter) WriteHeader(code int) {
	h := c.Header()
	for k, vs := range h {
		if l := strings.ToLower(k); l != k && cosmosHeader(l) {
			delete(h, k)
			h[l] = vs
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

// cosmosHeader reports whether the lowercase header name is one of Cosmos
// DB's own, sent in lowercase.
func cosmosHeader(key string) bool {
	return strings.HasPrefix(key, "x-ms-") || key == "etag" || key == "lsn"
}

// uriComponentEscape percent-encodes s so that JavaScript's
// decodeURIComponent (and .NET's Uri.UnescapeDataString) restore it: every
// byte but A-Z a-z 0-9 and "-_.~" is escaped, spaces as %20.
func uriComponentEscape(s string) string {
	return string(appendURIComponent(make([]byte, 0, len(s)+len(s)/2), s))
}

// appendURIComponent appends s percent-encoded as uriComponentEscape does:
// url.QueryEscape with spaces as %20, in one pass.
func appendURIComponent(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b = append(b, c)
		default:
			b = append(b, '%', hex[c>>4], hex[c&0xf])
		}
	}
	return b
}

// heldWriter holds a response (propagated) until copyHeaders and the
// caller's writes send it on. Its headers were written by setHeader, so
// their keys are copied as they are.
type heldWriter struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (w *heldWriter) Header() http.Header { return w.header }

func (w *heldWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *heldWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.body.Write(b)
}

// copyHeaders adds the held headers to to's.
func (w *heldWriter) copyHeaders(to http.ResponseWriter) {
	maps.Copy(to.Header(), w.header)
}
