package advise

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// HotNow finds the logical partitions hot now from successive partition
// reports. A report's counters (charged RU, 429s, each key's RU) are totals
// since the server started, so what a partition did in the last Window is
// the difference between the newest report and the last one taken at least
// Window before it (or the oldest kept); a key's part of it is its share
// of what the partition took lately (topKeysByRUNow) when the report has
// them, else the difference of its totals. A key hot a minute ago and idle
// since is therefore not hot now, and a key needs a minimum volume in the
// window: one write at start-up is nobody's hot key.
//
// HotNow is deterministic: the caller says when each report was taken
// (Observe), so tests drive it with a fake clock. It is not safe for
// concurrent use. The zero value uses DefaultHotWindow and
// DefaultHotMinRU.
type HotNow struct {
	// Window is how far back "now" reaches; 0 means DefaultHotWindow.
	Window time.Duration
	// MinRU is the least rate (RU/s, over the window) at which a key can
	// be hot; 0 means DefaultHotMinRU. A partition with a budget also asks
	// for at least hotMinBudgetShare of it.
	MinRU float64
	snaps []hotSnap
}

type hotSnap struct {
	at    time.Time
	parts map[string]PartitionReport
}

// Defaults of HotNow.
const (
	DefaultHotWindow = 30 * time.Second
	DefaultHotMinRU  = 10 // RU/s: about two 1 KB writes a second
	// minHotTotalRU is the least RU a key takes since start-up to be named
	// by HotKeys (no window): about twenty 1 KB writes.
	minHotTotalRU = 100
	// hotMinBudgetShare is the least share of its partition's budget a hot
	// key uses over the window.
	hotMinBudgetShare = 0.05
)

func (h *HotNow) window() time.Duration {
	if h.Window > 0 {
		return h.Window
	}
	return DefaultHotWindow
}

// Observe records parts, a partition report taken at at (times must not go
// backwards). It keeps only the reports Hot may still need.
func (h *HotNow) Observe(at time.Time, parts []PartitionReport) {
	m := make(map[string]PartitionReport, len(parts))
	for _, p := range parts {
		m[p.ID] = p
	}
	h.snaps = append(h.snaps, hotSnap{at: at, parts: m})
	// Keep the newest report at or before at-Window (the baseline) and all
	// after it.
	cut := at.Add(-h.window())
	keep := 0
	for i, s := range h.snaps {
		if !s.at.After(cut) {
			keep = i
		}
	}
	h.snaps = h.snaps[keep:]
}

// span returns the baseline and newest reports; ok is false before two.
func (h *HotNow) span() (base, last hotSnap, ok bool) {
	if len(h.snaps) < 2 {
		return hotSnap{}, hotSnap{}, false
	}
	return h.snaps[0], h.snaps[len(h.snaps)-1], true
}

// RUPerSecond returns the container's request units per second over the
// window (all partitions), and false before two reports.
func (h *HotNow) RUPerSecond() (float64, bool) {
	base, last, ok := h.span()
	sec := last.at.Sub(base.at).Seconds()
	if !ok || sec <= 0 {
		return 0, false
	}
	var ru float64
	for id, p := range last.parts {
		ru += p.ChargedRU - base.parts[id].ChargedRU
	}
	return max(ru, 0) / sec, true
}

// Hot names, per physical partition, the logical partition hot over the
// window: throttled in it (the key refused most often in it, else the one
// taking the most RU in it), or taking at least half the partition's RU in
// it; either way at the minimum rate. Throttled partitions come first.
// Before two reports it returns nil. Advice is left empty for
// Report.AddHotKeys.
func (h *HotNow) Hot() []HotKey {
	base, last, ok := h.span()
	if !ok {
		return nil
	}
	d := last.at.Sub(base.at)
	if d <= 0 {
		return nil
	}
	minRate := h.MinRU
	if minRate <= 0 {
		minRate = DefaultHotMinRU
	}
	return hotBetween(base.parts, last.parts, d, minRate)
}

// HotKeys is Hot over one report alone: what each partition's busiest key
// did since the server started (so no rate and no minimum volume; Window
// is empty). Prefer HotNow.
func HotKeys(parts []PartitionReport) []HotKey {
	m := make(map[string]PartitionReport, len(parts))
	for _, p := range parts {
		m[p.ID] = p
	}
	return hotBetween(nil, m, 0, 0)
}

// hotBetween compares the reports last and base (nil: all zero), taken d
// apart (0: unknown).
func hotBetween(base, last map[string]PartitionReport, d time.Duration, minRate float64) []HotKey {
	sec := d.Seconds()
	var out []HotKey
	for id, p := range last {
		b := base[id] // a partition new since the baseline: its counters started at 0
		total := p.ChargedRU - b.ChargedRU
		throttled := p.Throttled - b.Throttled
		if total <= 0 {
			continue
		}
		ru := deltas(p.TopKeysByRU, b.TopKeysByRU)
		if sec > 0 && len(p.TopKeysByRUNow) > 0 {
			// What each key takes lately, as the server weighs it: the
			// deltas of its totals miss a key that turns hot after others
			// were busy long ago (it is listed only once its total passes
			// theirs).
			ru = make([]KeyWeight, len(p.TopKeysByRUNow))
			for i, k := range p.TopKeysByRUNow {
				ru[i] = KeyWeight{Key: k.Key, Weight: k.Weight * total}
			}
		}
		refused := deltas(p.TopKeysByThrottles, b.TopKeysByThrottles)
		if len(ru) == 0 {
			continue
		}
		top := ru[0]
		if throttled > 0 && len(refused) > 0 {
			// The key refused most often in the window is the one hot now.
			for _, r := range ru {
				if normKey(r.Key) == normKey(refused[0].Key) {
					top = r
				}
			}
		}
		share := min(1, top.Weight/total)
		hk := HotKey{Partition: id, Key: top.Key, Share: share, RU: top.Weight,
			Throttled: throttled, RUPerSecond: p.RUPerSecond, Now: throttled > 0}
		if sec == 0 && top.Weight < minHotTotalRU {
			continue // a handful of requests since start-up is nobody's hot key
		}
		if sec > 0 {
			hk.Rate = top.Weight / sec
			hk.Window = formatDuration(d.Round(time.Second))
			if hk.Rate < max(minRate, hotMinBudgetShare*p.RUPerSecond) {
				continue
			}
			hk.Now = hk.Now || (p.RUPerSecond > 0 && hk.Rate >= p.RUPerSecond/2)
		}
		if !hk.Now && share < hotShare {
			continue
		}
		out = append(out, hk)
	}
	slices.SortFunc(out, func(x, y HotKey) int {
		return cmp.Or(-cmp.Compare(boolInt(x.Now), boolInt(y.Now)), cmp.Compare(y.Share, x.Share), cmp.Compare(x.Partition, y.Partition))
	})
	return out
}

// deltas returns each key's weight in now less its weight in before (the
// sketches' totals since start), heaviest first, never below 0. A key
// before does not list weighed at most before's lightest listed key then
// (the server lists its heaviest), and its weight now is at least Weight -
// maxOverestimate: its change is taken at the least those allow.
func deltas(now, before []KeyWeight) []KeyWeight {
	prev := map[string]float64{}
	floor := 0.0
	for i, k := range before {
		prev[normKey(k.Key)] = k.Weight
		if i == 0 || k.Weight < floor {
			floor = k.Weight
		}
	}
	var out []KeyWeight
	for _, k := range now {
		d := k.Weight
		if w, ok := prev[normKey(k.Key)]; ok {
			d -= w
		} else {
			d -= k.Err + floor
		}
		if d > 0 {
			out = append(out, KeyWeight{Key: k.Key, Weight: d})
		}
	}
	slices.SortStableFunc(out, func(x, y KeyWeight) int { return cmp.Compare(y.Weight, x.Weight) })
	return out
}

// normKey normalises a partition key as JSON (spacing, number forms), so
// that reports and items compare equal.
func normKey(s string) string {
	var v []any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return s
	}
	return string(b)
}

// describeHot says what h is in plain words, before the advice.
func describeHot(h HotKey) string {
	over := "since the server started"
	if h.Window != "" {
		over = "over the last " + h.Window
	}
	rate := ""
	if h.Rate > 0 {
		rate = fmt.Sprintf(", %.0f RU/s", h.Rate)
		if h.RUPerSecond > 0 {
			rate += fmt.Sprintf(" of its %.0f RU/s", h.RUPerSecond)
		}
	}
	if h.Now {
		s := fmt.Sprintf("%s is hot now: %s it took %s of physical partition %s's request units%s", h.Key, over, pct(h.Share), h.Partition, rate)
		if h.Throttled > 0 {
			s += fmt.Sprintf(", which was throttled %d times", h.Throttled)
		}
		return s
	}
	return fmt.Sprintf("%s is the busiest logical partition: %s it took %s of physical partition %s's request units%s (not throttled)",
		h.Key, over, pct(h.Share), h.Partition, rate)
}
