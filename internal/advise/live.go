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
	"net/http"
	"net/url"
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

// Sample reads up to n items (n ≤ 0: all) of the container into a with
// "SELECT * FROM c" (a cross-partition query, in the server's order, so not
// a uniform sample) and sets a's current key from the container's
// partition key definition. Errors are the SDK's or a's (a malformed item
// is skipped or stops as a's ReadOptions say).
func (l *Live) Sample(ctx context.Context, a *Analyzer, n int) error {
	cred, err := azcosmos.NewKeyCredential(l.Key)
	if err != nil {
		return fmt.Errorf("key: %w", err)
	}
	client, err := azcosmos.NewClientWithKey(l.Endpoint, cred, &azcosmos.ClientOptions{
		ClientOptions: azcore.ClientOptions{Transport: l.httpClient()},
	})
	if err != nil {
		return err
	}
	c, err := client.NewContainer(l.Database, l.Container)
	if err != nil {
		return err
	}
	props, err := c.Read(ctx, nil)
	if err != nil {
		return fmt.Errorf("read container %s/%s: %w", l.Database, l.Container, err)
	}
	if props.ContainerProperties != nil {
		a.SetCurrentKey(props.ContainerProperties.PartitionKeyDefinition.Paths)
	}
	page := int32(1000)
	if n > 0 && n < 1000 {
		page = int32(n)
	}
	pager := c.NewQueryItemsPager("SELECT * FROM c", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PageSizeHint: page})
	got := 0
	for pager.More() && (n <= 0 || got < n) {
		resp, err := pager.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("query %s/%s: %w", l.Database, l.Container, err)
		}
		for _, item := range resp.Items {
			if n > 0 && got >= n {
				break
			}
			got++
			if err := a.Add(item); err != nil {
				le := &LineError{Line: got, Err: err}
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
			a.opts.Progress(Progress{Phase: "read", Done: int64(got), Total: int64(max(n, 0)), Items: a.seen})
		}
	}
	return nil
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
	TopKeysByRU        []KeyWeight  `json:"topKeysByRU"`
	TopKeysByThrottles []KeyWeight  `json:"topKeysByThrottles"`
	TopKeysByStorage   []KeyStorage `json:"topKeysByStorage"`
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
// partition's request units.
type HotKey struct {
	Partition string `json:"partition"` // physical partition id
	// Key is the partition key value as the server reports it (JSON).
	Key string `json:"key"`
	// Share is the key's share of the partition's charged RU; RU the
	// estimate itself.
	Share       float64 `json:"share"`
	RU          float64 `json:"ru"`
	Throttled   int64   `json:"throttled"`   // the partition's 429s
	RUPerSecond float64 `json:"ruPerSecond"` // the partition's budget
	// Now reports whether the partition is throttled, so the key is hot now
	// rather than merely the busiest.
	Now    bool   `json:"now"`
	Advice string `json:"advice"`
}

// hotShare is the share of a partition's RU from which its top key is hot.
const hotShare = 0.5

// HotKeys names, per physical partition, the logical partition taking the
// most request units if it is hot: the partition has been throttled (a key
// named by the 429 counts, when the report has them) or the key takes at
// least half its RU. Throttled partitions come first. Advice is left
// empty for Report.AddHotKeys.
func HotKeys(parts []PartitionReport) []HotKey {
	var out []HotKey
	for _, p := range parts {
		if len(p.TopKeysByRU) == 0 || p.ChargedRU <= 0 {
			continue
		}
		top := p.TopKeysByRU[0]
		if p.Throttled > 0 && len(p.TopKeysByThrottles) > 0 {
			// The key refused most often is the one hot now.
			k := p.TopKeysByThrottles[0].Key
			for _, r := range p.TopKeysByRU {
				if r.Key == k {
					top = r
				}
			}
		}
		share := min(1, top.Weight/p.ChargedRU)
		if p.Throttled == 0 && share < hotShare {
			continue
		}
		out = append(out, HotKey{Partition: p.ID, Key: top.Key, Share: share, RU: top.Weight,
			Throttled: p.Throttled, RUPerSecond: p.RUPerSecond, Now: p.Throttled > 0})
	}
	// Throttled first, then by share.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && hotLess(out[j], out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func hotLess(x, y HotKey) bool {
	if x.Now != y.Now {
		return x.Now
	}
	return x.Share > y.Share
}

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
		if h.Now {
			fmt.Fprintf(&b, "%s is hot now: it takes %s of physical partition %s's request units, which has been throttled %d times",
				h.Key, pct(h.Share), h.Partition, h.Throttled)
			if h.RUPerSecond > 0 {
				fmt.Fprintf(&b, " at %.0f RU/s", h.RUPerSecond)
			}
		} else {
			fmt.Fprintf(&b, "%s is the busiest logical partition: %s of physical partition %s's request units (not throttled yet)",
				h.Key, pct(h.Share), h.Partition)
		}
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
