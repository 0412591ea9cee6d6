package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/partitadb/partita/internal/engine"
	"github.com/partitadb/partita/internal/status"
)

// changeFeed serves GET …/docs with A-IM: Incremental Feed, the
// latest-version change feed of a range, sub-range or logical partition.
// If-None-Match is the position (the etag of the previous page, or "*" for
// now) and wins over If-Modified-Since, the start time. A page with items
// is 200; none is 304. Both carry the position to continue from as etag.
func (h *Handler) changeFeed(w http.ResponseWriter, r *http.Request) error {
	if aim := strings.TrimSpace(r.Header.Get(hdrAIM)); !strings.EqualFold(aim, "Incremental Feed") {
		return status.NotSupported("the change feed mode A-IM: " + aim + " (only the latest-version mode, A-IM: Incremental Feed)")
	}
	req, err := changeFeedRequest(r)
	if err != nil {
		return err
	}
	p, err := h.eng.ReadChanges(r.Context(), r.PathValue("db"), r.PathValue("coll"), req)
	if err != nil {
		return err
	}
	setHeader(w, "etag", changeFeedETag(p.Position))
	setHeader(w, "x-ms-content-path", p.ContainerRID)
	if p.Session != "" {
		setHeader(w, "x-ms-session-token", p.Session)
	}
	if p.RangeID != "" {
		setHeader(w, hdrPKRangeID, p.RangeID)
	}
	if len(p.Items) == 0 {
		setCharge(w, p.RU)
		setHeader(w, "x-ms-item-count", "0")
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	return h.writeFeed(w, p.ContainerRID, "Documents", engine.Page{Items: p.Items, RU: p.RU})
}

// changeFeedRequest reads a change-feed request's headers.
func changeFeedRequest(r *http.Request) (engine.ChangeFeed, error) {
	var req engine.ChangeFeed
	var err error
	if req.Scope, err = scope(r); err != nil {
		return req, err
	}
	if req.MaxItems, err = maxItemCount(r); err != nil {
		return req, err
	}
	switch v := strings.TrimSpace(r.Header.Get("If-None-Match")); v {
	case "":
	case "*":
		req.Start.Now = true
	default:
		if req.After, err = parseChangeFeedETag(v); err != nil {
			return req, err
		}
		req.HasAfter = true
	}
	if v := strings.TrimSpace(r.Header.Get("If-Modified-Since")); v != "" {
		if req.Start.Since, err = parseHTTPTime(v); err != nil {
			return req, status.BadRequest("invalid If-Modified-Since header %q: want an RFC 1123 time such as %q", v, "Mon, 02 Jan 2006 15:04:05 GMT")
		}
	}
	return req, nil
}

// changeFeedETag formats a change-feed position (engine.ChangePage's
// Position: an LSN, or "<range>:<lsn>;…", where a start time "t<unix>"
// stands for the LSN of a range not read yet, and "t<unix>_<lsn>" is an
// LSN read while the start time is ahead) as its etag, quoted.
func changeFeedETag(pos string) string {
	return `"` + pos + `"`
}

// parseChangeFeedETag parses a change-feed etag, quoted or not, into the
// position it holds; the engine checks that it is one it made.
func parseChangeFeedETag(v string) (string, error) {
	s := strings.TrimPrefix(v, "W/")
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if s == "" || strings.Trim(s, "0123456789:;t_") != "" {
		return "", status.BadRequest("invalid change feed continuation If-None-Match %q: want the etag of a previous change feed response, or *", v)
	}
	return s, nil
}

// parseHTTPTime parses an RFC 1123 time in GMT, or in UTC as the Go SDK
// writes it.
func parseHTTPTime(v string) (time.Time, error) {
	if t, err := http.ParseTime(v); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC1123, v)
	if err != nil {
		return time.Time{}, err
	}
	if name, off := t.Zone(); off != 0 || (name != "UTC" && name != "GMT") {
		return time.Time{}, status.BadRequest("time zone %s", name)
	}
	return t, nil
}
