package advise

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// ErrStatus: the server answered a request with an error status; the
// *StatusError says which.
var ErrStatus = errors.New("advise: server error")

// StatusError is an error response of the server's admin endpoint.
type StatusError struct {
	Code int
	Body string // the start of the response body
}

func (e *StatusError) Error() string { return fmt.Sprintf("status %d: %s", e.Code, e.Body) }

// Unwrap returns ErrStatus.
func (e *StatusError) Unwrap() error { return ErrStatus }

// Live reads a live container: a sample of its items through the official
// SDK, and Partita's partition report. Its zero HTTPClient means one with a
// 60 s timeout and the system's trusted certificates.
type Live struct {
	Endpoint   string // e.g. https://127.0.0.1:8081/
	Key        string // master key, base64
	Database   string
	Container  string
	HTTPClient *http.Client
}

func (l *Live) httpClient() *http.Client {
	if l.HTTPClient != nil {
		return l.HTTPClient
	}
	return &http.Client{Timeout: 60 * time.Second}
}

// Sample reads about n items (n ≤ 0: all) of the container into a and
// sets a's current key from the container's partition key definition (two
// or three paths: a hierarchical MultiHash key). Errors are the SDK's or
// a's (a malformed item is skipped or stops as a's ReadOptions say).
//
// The first n items in storage order would be a few logical partitions
// whole, so the sample is spread instead: every physical partition (feed
// range) gives its share of n, in proportion to its items when Partita's
// partition report says how many; within one, its largest logical
// partitions (the report's exact counts) give theirs through
// single-partition queries, and the rest comes from the partition's change
// feed, oldest first. Without the report (Cosmos DB) each feed range gives
// an equal share from its change feed.
func (l *Live) Sample(ctx context.Context, a *Analyzer, n int) error {
	c, err := l.container()
	if err != nil {
		return err
	}
	props, err := c.Read(ctx, nil)
	if err != nil {
		return fmt.Errorf("read container %s/%s: %w", l.Database, l.Container, err)
	}
	var paths []string
	if props.ContainerProperties != nil {
		paths = props.ContainerProperties.PartitionKeyDefinition.Paths
		a.SetCurrentKey(paths)
	}
	s := &sampler{l: l, a: a, c: c, n: n}
	if n <= 0 {
		pager := c.NewQueryItemsPager("SELECT * FROM c", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: 1000})
		return s.drain(ctx, func() ([][]byte, bool, error) {
			if !pager.More() {
				return nil, false, nil
			}
			resp, err := pager.NextPage(ctx)
			return resp.Items, true, err
		}, -1, nil)
	}
	ranges, err := c.ReadFeedRanges(ctx, nil)
	if err != nil {
		return fmt.Errorf("feed ranges of %s/%s: %w", l.Database, l.Container, err)
	}
	parts, _ := l.Partitions(ctx) // not Partita: equal shares
	for _, pl := range planSample(n, ranges, parts) {
		skip := map[string]bool{}
		for _, t := range pl.tops {
			pk, ok := partitionKeyFromJSON(t.key)
			if !ok {
				// A key the SDK cannot name (an Undefined component of a
				// hierarchical key, {}): its share is read from the feed
				// with the rest, which it is not skipped by. It was lost,
				// and the sample fell short of its size.
				pl.rest += max(t.quota, 0)
				continue
			}
			skip[normKey(t.key)] = true
			if t.quota <= 0 {
				continue
			}
			pager := c.NewQueryItemsPager("SELECT * FROM c", pk, &azcosmos.QueryOptions{PageSizeHint: int32(min(t.quota, 1000))})
			err := s.drain(ctx, func() ([][]byte, bool, error) {
				if !pager.More() {
					return nil, false, nil
				}
				resp, err := pager.NextPage(ctx)
				return resp.Items, true, err
			}, t.quota, nil)
			if err != nil {
				return err
			}
		}
		if pl.rest <= 0 {
			continue
		}
		fr := pl.feed
		var cont *string
		err := s.drain(ctx, func() ([][]byte, bool, error) {
			resp, err := c.ReadChangeFeed(ctx, &azcosmos.ChangeFeedOptions{FeedRange: &fr, Continuation: cont, MaxItemCount: int32(min(pl.rest, 1000))})
			if err != nil || len(resp.Items) == 0 {
				return nil, false, err
			}
			cont = &resp.ContinuationToken
			return resp.Items, true, nil
		}, pl.rest, func(item []byte) bool { return skip[itemKey(item, paths)] })
		if err != nil {
			return err
		}
	}
	return nil
}

func (l *Live) container() (*azcosmos.ContainerClient, error) {
	cred, err := azcosmos.NewKeyCredential(l.Key)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	client, err := azcosmos.NewClientWithKey(l.Endpoint, cred, &azcosmos.ClientOptions{
		ClientOptions: azcore.ClientOptions{Transport: l.httpClient()},
	})
	if err != nil {
		return nil, err
	}
	return client.NewContainer(l.Database, l.Container)
}

// sampler adds live items to an Analyzer.
type sampler struct {
	l   *Live
	a   *Analyzer
	c   *azcosmos.ContainerClient
	n   int // the sample's size (≤ 0: all)
	got int
}

// drain adds the items of successive pages (next reports false at the
// end) until quota items are added (quota < 0: all), leaving out those
// skip reports true for.
func (s *sampler) drain(ctx context.Context, next func() ([][]byte, bool, error), quota int, skip func([]byte) bool) error {
	a := s.a
	taken := 0
	for quota < 0 || taken < quota {
		items, more, err := next()
		for try := 0; err != nil && try < maxThrottledRetries; try++ {
			// A hot container refuses the sample's reads too, beyond the
			// SDK's own retries: wait as told and read the page again.
			re, ok := errors.AsType[*azcore.ResponseError](err)
			if !ok || re.StatusCode != http.StatusTooManyRequests {
				break
			}
			select {
			case <-time.After(retryAfter(re)):
			case <-ctx.Done():
				return ctx.Err()
			}
			items, more, err = next()
		}
		if err != nil {
			return fmt.Errorf("read %s/%s: %w", s.l.Database, s.l.Container, err)
		}
		if !more {
			return nil
		}
		for _, item := range items {
			if quota >= 0 && taken >= quota {
				break
			}
			if skip != nil && skip(item) {
				continue
			}
			taken++
			s.got++
			if err := a.Add(item); err != nil {
				le := &LineError{Line: s.got, Err: err}
				if a.opts.OnError == Stop {
					return le
				}
				a.malformed++
				if a.opts.Malformed != nil {
					a.opts.Malformed(le)
				}
			}
		}
		if a.opts.Progress != nil {
			a.opts.Progress(Progress{Phase: "read", Done: int64(s.got), Total: int64(max(s.n, 0)), Items: a.seen})
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// maxThrottledRetries bounds the retries of one throttled sample read.
const maxThrottledRetries = 100

// retryAfter is how long a 429 asks to wait (x-ms-retry-after-ms), 100 ms
// if it does not say, at most 5 s.
func retryAfter(re *azcore.ResponseError) time.Duration {
	d := 100 * time.Millisecond
	if re.RawResponse != nil {
		if ms, err := strconv.Atoi(re.RawResponse.Header.Get("x-ms-retry-after-ms")); err == nil && ms > 0 {
			d = time.Duration(ms) * time.Millisecond
		}
	}
	return min(d, 5*time.Second)
}

// samplePlan is what one physical partition gives to a live sample.
type samplePlan struct {
	feed azcosmos.FeedRange
	tops []topQuota // its largest logical partitions, each its share
	rest int        // items from its change feed, other keys
}

type topQuota struct {
	key   string // JSON array, as the report writes it
	quota int
}

// planSample shares n items among the feed ranges: in proportion to their
// items (and within one, to its largest logical partitions) when parts,
// Partita's report, describes them; else equally.
func planSample(n int, ranges []azcosmos.FeedRange, parts []PartitionReport) []samplePlan {
	byRange := map[[2]string]PartitionReport{}
	var total int64
	for _, p := range parts {
		byRange[[2]string{p.MinInclusive, p.MaxExclusive}] = p
		total += p.Items
	}
	known := total > 0
	for _, r := range ranges {
		if _, ok := byRange[[2]string{r.MinInclusive, r.MaxExclusive}]; !ok {
			known = false
		}
	}
	var out []samplePlan
	for i, r := range ranges {
		pl := samplePlan{feed: r}
		if !known {
			// Equal shares, the remainder to the first ranges.
			pl.rest = n / len(ranges)
			if i < n%len(ranges) {
				pl.rest++
			}
			out = append(out, pl)
			continue
		}
		p := byRange[[2]string{r.MinInclusive, r.MaxExclusive}]
		share := func(items int64) int { return int(math.Round(float64(n) * float64(items) / float64(total))) }
		quota := share(p.Items)
		used := 0
		for _, t := range p.TopKeysByStorage {
			q := min(share(t.Items), quota-used)
			pl.tops = append(pl.tops, topQuota{key: t.Key, quota: q})
			used += q
		}
		pl.rest = quota - used
		out = append(out, pl)
	}
	return out
}

// partitionKeyFromJSON makes the SDK's partition key of a key as the
// report writes it, a JSON array ("[\"t1\",17]"); false if it holds
// anything but strings, numbers, booleans and nulls.
func partitionKeyFromJSON(s string) (azcosmos.PartitionKey, bool) {
	var vs []any
	if err := json.Unmarshal([]byte(s), &vs); err != nil || len(vs) == 0 {
		return azcosmos.PartitionKey{}, false
	}
	pk := azcosmos.NewPartitionKey()
	for _, v := range vs {
		switch v := v.(type) {
		case string:
			pk = pk.AppendString(v)
		case float64:
			pk = pk.AppendNumber(v)
		case bool:
			pk = pk.AppendBool(v)
		case nil:
			pk = pk.AppendNull()
		default:
			return azcosmos.PartitionKey{}, false
		}
	}
	return pk, true
}

// itemKey returns item's partition key values at paths as normKey writes
// them ("" if item is not an object).
func itemKey(item []byte, paths []string) string {
	var obj map[string]any
	if json.Unmarshal(item, &obj) != nil {
		return ""
	}
	vs := make([]any, 0, len(paths))
	for _, p := range paths {
		var v any = obj
		for seg := range strings.SplitSeq(strings.TrimPrefix(p, "/"), "/") {
			m, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = m[unescapeSegment(seg)]
		}
		vs = append(vs, v)
	}
	b, err := json.Marshal(vs)
	if err != nil {
		return ""
	}
	return string(b)
}

// PartitionReport is one physical partition in Partita's admin report
// (GET /_partita/dbs/{db}/colls/{coll}/partitions).
type PartitionReport struct {
	ID                string  `json:"id"`
	MinInclusive      string  `json:"minInclusive"`
	MaxExclusive      string  `json:"maxExclusive"`
	RUPerSecond       float64 `json:"ruPerSecond"` // 0: unlimited
	ChargedRU         float64 `json:"chargedRU"`   // since the server started
	Throttled         int64   `json:"throttled"`   // 429s since the server started
	StorageBytes      int64   `json:"storageBytes"`
	Items             int64   `json:"items"`
	LogicalPartitions int     `json:"logicalPartitions"`
	// Keys are partition key values as JSON arrays, e.g. `["dev7"]`.
	TopKeysByRU        []KeyWeight `json:"topKeysByRU"`
	TopKeysByThrottles []KeyWeight `json:"topKeysByThrottles"`
	// TopKeysByRUNow are the keys taking the most request units lately,
	// each weighed by its share (0 to 1) of the partition's charges lately
	// (a decaying sketch with a half-life of seconds).
	TopKeysByRUNow   []KeyWeight  `json:"topKeysByRUNow"`
	TopKeysByStorage []KeyStorage `json:"topKeysByStorage"`
}

// KeyWeight is a logical partition's estimated request units (or 429s).
type KeyWeight struct {
	Key    string  `json:"key"`
	Weight float64 `json:"weight"`
	Err    float64 `json:"maxOverestimate"`
}

// KeyStorage is a logical partition's storage.
type KeyStorage struct {
	Key   string `json:"key"`
	Bytes int64  `json:"bytes"`
	Items int64  `json:"items"`
}

// Partitions fetches the container's partition report. Errors: a
// *StatusError (wrapping ErrStatus) for an error response, else transport
// or decoding errors.
func (l *Live) Partitions(ctx context.Context) ([]PartitionReport, error) {
	path := "/_partita/dbs/" + url.PathEscape(l.Database) + "/colls/" + url.PathEscape(l.Container) + "/partitions"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(l.Endpoint, "/")+path, nil)
	if err != nil {
		return nil, err
	}
	key, err := base64.StdEncoding.DecodeString(l.Key)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	typ, link := resourceOf(path)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-11-05")
	req.Header.Set("Authorization", masterToken(key, http.MethodGet, typ, link, date))
	resp, err := l.httpClient().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read partition report: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{Code: resp.StatusCode, Body: clip(string(body))}
	}
	return decodePartitions(body)
}

// decodePartitions accepts {"partitions":[…]} or a bare array.
func decodePartitions(body []byte) ([]PartitionReport, error) {
	body = bytes.TrimSpace(body)
	var out []PartitionReport
	if len(body) > 0 && body[0] == '[' {
		if err := json.Unmarshal(body, &out); err != nil {
			return nil, fmt.Errorf("decode partition report: %w", err)
		}
		return out, nil
	}
	var wrap struct {
		Partitions []PartitionReport `json:"partitions"`
	}
	if err := json.Unmarshal(body, &wrap); err != nil {
		return nil, fmt.Errorf("decode partition report: %w", err)
	}
	return wrap.Partitions, nil
}

// resourceOf derives the signed resource type and link of a URL path as
// the server does (wire protocol §2.2): an odd number of segments is a
// feed (type: the last segment; link: the others), an even number a
// resource (type: the second-to-last; link: the whole path). Segments are
// percent-decoded once.
func resourceOf(rawPath string) (typ, link string) {
	p := strings.Trim(rawPath, "/")
	if p == "" {
		return "", ""
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if d, err := url.PathUnescape(s); err == nil {
			segs[i] = d
		}
	}
	n := len(segs)
	if n%2 == 1 {
		return segs[n-1], strings.Join(segs[:n-1], "/")
	}
	return segs[n-2], strings.Join(segs, "/")
}

// masterToken returns the Authorization header value of a master-key
// signed request (wire protocol §2.1).
func masterToken(key []byte, verb, typ, link, date string) string {
	payload := strings.ToLower(verb) + "\n" + strings.ToLower(typ) + "\n" + link + "\n" + strings.ToLower(date) + "\n\n"
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	sig := base64.StdEncoding.EncodeToString(m.Sum(nil))
	return url.QueryEscape("type=master&ver=1.0&sig=" + sig)
}

// HotKey is a logical partition taking a large share of its physical
// partition's request units (see HotNow).
type HotKey struct {
	Partition string `json:"partition"` // physical partition id
	// Key is the partition key value as the server reports it (JSON).
	Key string `json:"key"`
	// Share is the key's share of the partition's charged RU over Window;
	// RU the key's RU in it and Rate its RU/s (0: unknown).
	Share       float64 `json:"share"`
	RU          float64 `json:"ru"`
	Rate        float64 `json:"rate,omitempty"`
	Throttled   int64   `json:"throttled"`   // the partition's 429s in Window
	RUPerSecond float64 `json:"ruPerSecond"` // the partition's budget
	// Now reports whether the key is hot now: its partition was throttled
	// in Window, or it used half the partition's budget.
	Now bool `json:"now"`
	// Window is the period measured ("30s"); empty: since the server
	// started.
	Window string `json:"window,omitempty"`
	Advice string `json:"advice"`
}

// hotShare is the share of a partition's RU from which its top key is hot.
const hotShare = 0.5

// AddHotKeys adds hot to the report, each with advice in plain words: what
// the key is, and which suffix variant of the current key (or the
// recommendation) would spread it.
func (r *Report) AddHotKeys(hot []HotKey) {
	var fix *Candidate
	for _, c := range r.Candidates {
		if (c.Strategy == HashSuffix || c.Strategy == RandomSuffix) && len(r.CurrentKey) == 1 && c.Paths[0] == r.CurrentKey[0] {
			fix = c // the best-ranked suffix variant of the current key
			break
		}
	}
	for _, h := range hot {
		var b strings.Builder
		b.WriteString(describeHot(h))
		b.WriteString(". One logical partition cannot be split across physical partitions, so more throughput will not help it")
		switch {
		case fix != nil:
			fmt.Fprintf(&b, "; spread it with %s (%s, rank #%d)", fix.Key, fix.Build, fix.Rank)
		case len(r.Candidates) > 0 && !r.Candidates[0].Current:
			fmt.Fprintf(&b, "; move to %s (%s)", r.Candidates[0].Key, r.Candidates[0].Build)
		default:
			b.WriteString("; give it a synthetic key with a suffix (synthkey.HashSuffix or RandomSuffix)")
		}
		b.WriteString(".")
		h.Advice = b.String()
		r.HotKeys = append(r.HotKeys, h)
	}
}
