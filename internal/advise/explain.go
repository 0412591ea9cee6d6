package advise

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxExplained is how many runners-up the summary explains.
const maxExplained = 6

// explain sets rep.Recommendation, rep.Summary, and each explained
// candidate's Why.
func explain(rep *Report, w *Workload) {
	if len(rep.Candidates) == 0 {
		return
	}
	best := rep.Candidates[0]
	rep.Recommendation = best.Key
	best.Why = strengths(rep, best, w)
	rep.Summary = append(rep.Summary, fmt.Sprintf("Recommended: %s (%s, score %.1f).", best.Key, describe(best), best.Score))
	for _, s := range best.Why {
		rep.Summary = append(rep.Summary, "  - "+s)
	}
	rep.Summary = append(rep.Summary, "  Build it with "+best.Build+".")
	if best.Score == 0 {
		rep.Summary = append(rep.Summary, "  No candidate is good: every path in the sample has a single value or fails the limits.")
	}

	// Runners-up: the next few by rank, then the intuitive choices (the
	// current key, the workload's filter paths, the time path) if they
	// rank lower.
	var others []*Candidate
	add := func(c *Candidate) {
		if c != best && !slices.Contains(others, c) && len(others) < maxExplained {
			others = append(others, c)
		}
	}
	for _, c := range rep.Candidates[1:min(4, len(rep.Candidates))] {
		add(c)
	}
	for _, c := range rep.Candidates {
		if c.Current {
			add(c)
		}
	}
	intuitive := []string{rep.TimePath}
	if w != nil {
		for _, q := range w.Queries {
			intuitive = append(intuitive, q.Filters...)
		}
	}
	var lowest *Candidate // the single path with fewest values: a status, a type
	for _, c := range rep.Candidates {
		if c.Strategy == Single && slices.Contains(intuitive, c.Paths[0]) {
			add(c)
		}
		if c.Strategy == Single && c.Distinct >= 2 && c.Spread < 0.5 && (lowest == nil || c.Distinct < lowest.Distinct) {
			lowest = c
		}
	}
	if lowest != nil {
		add(lowest)
	}
	slices.SortStableFunc(others, func(x, y *Candidate) int { return x.Rank - y.Rank })
	if len(others) > 0 {
		rep.Summary = append(rep.Summary, "Why not:")
	}
	for _, c := range others {
		c.Why = []string{weakness(rep, c, best, w)}
		rep.Summary = append(rep.Summary, fmt.Sprintf("  - %s (#%d, %.1f): %s.", c.Key, c.Rank, c.Score, c.Why[0]))
	}
}

// describe names a candidate's strategy in words.
func describe(c *Candidate) string {
	switch c.Strategy {
	case Concat:
		if c.TimeBucket != "" {
			return fmt.Sprintf("concatenation of %s and the %s of its write time", c.Paths[0], c.TimeBucket)
		}
		return "concatenation of " + c.Paths[0] + " and " + c.Paths[1]
	case Hierarchical:
		return fmt.Sprintf("hierarchical key of %d levels, %s", len(c.Paths), strings.Join(c.Paths, " then "))
	case HashSuffix:
		return fmt.Sprintf("%s plus a suffix 1..%d computed from a hash of %s", c.Paths[0], c.Buckets, c.HashPaths[0])
	case RandomSuffix:
		return fmt.Sprintf("%s plus a random suffix 1..%d", c.Paths[0], c.Buckets)
	}
	return "a single property"
}

// windowWord names a write window: "day", "hour", or "24m0s window".
func windowWord(window string) string {
	d, _ := time.ParseDuration(window)
	switch d {
	case 24 * time.Hour:
		return "day"
	case time.Hour:
		return "hour"
	case time.Minute:
		return "minute"
	case time.Second:
		return "second"
	case 7 * 24 * time.Hour:
		return "week"
	}
	return window + " window"
}

// strengths says in plain words why c is a good key.
func strengths(rep *Report, c *Candidate, w *Workload) []string {
	var out []string
	out = append(out, fmt.Sprintf("%d distinct values in %d sampled items; the largest logical partition (%s) holds %s of them",
		c.Distinct, rep.Items, quoteKey(c.LargestKey), pct(c.LargestShare)))
	if c.WriteSkew != nil {
		out = append(out, fmt.Sprintf("spreads each %s's writes over many keys: the hottest takes %s of them (%s at most)",
			c.skewUnit, pct(*c.WriteSkew), pct(*c.WriteSkewMax)))
	}
	if c.SinglePartition != nil {
		var single []string
		for _, q := range w.Queries {
			if !slices.Contains(c.FanOut, q.Name) {
				single = append(single, fmt.Sprintf("%q", q.Name))
			}
		}
		if c.Targeted != nil && *c.Targeted > 0 {
			out = append(out, fmt.Sprintf("keeps %s of the query weight single-partition and %s targeted by a prefix of the key (%s): a query naming %s is routed to that prefix's partitions only",
				pct(*c.SinglePartition), pct(*c.Targeted), strings.Join(single, ", "), c.Paths[0]))
		} else if len(single) > 0 {
			out = append(out, fmt.Sprintf("keeps %s of the query weight single-partition (%s)", pct(*c.SinglePartition), strings.Join(single, ", ")))
		} else {
			out = append(out, "no query of the workload names it: every query fans out (a better key may not exist for these queries)")
		}
		if len(c.FanOut) > 0 && len(single) > 0 {
			out = append(out, fmt.Sprintf("%s would still fan out", quoteList(c.FanOut)))
		}
	}
	verb := "is"
	if rep.ProjectedBytes > 0 {
		verb = "is projected at"
	}
	out = append(out, fmt.Sprintf("its largest logical partition %s %s, %s of the %s limit", verb, formatBytes(c.LargestBytes), pct(c.CapShare), formatBytes(rep.LogicalPartitionCap)))
	if c.Strategy == Hierarchical && c.LargestPrefixBytes > 0 {
		s := fmt.Sprintf("the largest %s (%s) %s %s", c.Paths[0], quoteKey(c.LargestPrefix), verb, formatBytes(c.LargestPrefixBytes))
		if c.LargestPrefixBytes > rep.LogicalPartitionCap {
			s += fmt.Sprintf(", past the %s limit for one key but fine as a prefix: it spreads over about %d physical partitions", formatBytes(rep.LogicalPartitionCap), c.PrefixPartitions)
		}
		out = append(out, s)
	}
	if c.TimeBucket != "" {
		out = append(out, fmt.Sprintf("a %s bucket is the coarsest that keeps a key's %s within half the limit at this rate and size", c.TimeBucket, c.TimeBucket))
	}
	if c.HotKeyRU != nil {
		out = append(out, fmt.Sprintf("its hottest key needs about %.0f RU/s (95%%: %.0f-%.0f) of the %d RU/s one logical partition can get, %s",
			*c.HotKeyRU, *c.HotKeyRULow, *c.HotKeyRUHigh, PartitionMaxRU, c.HotKeyBasis))
	}
	switch c.Strategy {
	case Concat:
		out = append(out, fmt.Sprintf("a query stays single-partition when it names both %s and %s", c.Paths[0], c.Paths[1]))
	case Hierarchical:
		out = append(out, fmt.Sprintf("a query naming %s is targeted; one naming every level is single-partition; the 20 GB limit applies to each full key", c.Paths[0]))
	case HashSuffix:
		out = append(out, fmt.Sprintf("a reader who knows %s and %s recomputes the one key; one who knows only %s fans out over %d keys",
			c.Paths[0], c.HashPaths[0], c.Paths[0], c.Buckets))
	case RandomSuffix:
		out = append(out, fmt.Sprintf("every read that filters on %s must fan out over %d keys", c.Paths[0], c.Buckets))
	}
	if c.Missing > 0 {
		out = append(out, fmt.Sprintf("%s of the items lack it and would share one logical partition", pct(c.Missing)))
	}
	return out
}

// weakness says in plain words the main reason c ranks below best.
func weakness(rep *Report, c, best *Candidate, w *Workload) string {
	name := c.Key
	ww := c.skewUnit
	if ww == "" {
		ww = windowWord(rep.Window)
	}
	switch {
	case c.Distinct <= 1:
		return fmt.Sprintf("%s has a single value: every item would be in one logical partition", name)
	case c.CapShare > 1:
		s := fmt.Sprintf("its largest logical partition (%s) would reach %s, past the %s limit: writes to it would fail",
			quoteKey(c.LargestKey), formatBytes(c.LargestBytes), formatBytes(rep.LogicalPartitionCap))
		if c.WriteSkew != nil && *c.WriteSkew >= 0.9 {
			s += fmt.Sprintf("; and it puts %s of each %s's writes on one key", pct(*c.WriteSkew), ww)
		}
		return s
	case c.HotKeyRU != nil && *c.HotKeyRU > PartitionMaxRU:
		s := fmt.Sprintf("its hottest key would need about %.0f RU/s (95%%: %.0f-%.0f), but one logical partition lives on one physical partition and gets at most %d RU/s (%s)",
			*c.HotKeyRU, *c.HotKeyRULow, *c.HotKeyRUHigh, PartitionMaxRU, c.HotKeyBasis)
		if c.WriteSkew != nil && *c.WriteSkew >= 0.9 {
			s += fmt.Sprintf("; it puts %s of each %s's writes on one key", pct(*c.WriteSkew), ww)
		}
		return s
	case c.Missing >= 0.2:
		return fmt.Sprintf("%s is missing in %s of the items: they would all share one logical partition", name, pct(c.Missing))
	case c.WriteSkew != nil && *c.WriteSkew >= 0.9:
		return fmt.Sprintf("%s puts %s of each %s's writes on one key: one physical partition takes them all while the others idle",
			name, pct(*c.WriteSkew), ww)
	case c.Spread < 0.5 && c.Distinct < storageTarget:
		s := fmt.Sprintf("%s has %d values: %d logical partitions can use at most %d physical partitions' throughput and storage",
			name, c.Distinct, c.Distinct, c.Distinct)
		if c.LargestShare >= 0.3 {
			s += fmt.Sprintf(", and %s alone holds %s of the items", quoteKey(c.LargestKey), pct(c.LargestShare))
		}
		if c.WriteSkew != nil && *c.WriteSkew >= 0.5 {
			s += fmt.Sprintf("; it puts %s of each %s's writes on one key", pct(*c.WriteSkew), ww)
		}
		return s
	case c.WriteSkew != nil && *c.WriteSkew >= 0.5:
		return fmt.Sprintf("%s puts %s of each %s's writes on one key (%s of the writes of %s)",
			name, pct(*c.WriteSkew), ww, pct(*c.WriteSkewMax), c.HotWindow)
	case c.SinglePartition != nil && best.SinglePartition != nil && *c.SinglePartition < *best.SinglePartition:
		if c.Strategy == RandomSuffix {
			return fmt.Sprintf("every read that filters on %s must fan out over %d keys: no query stays single-partition", c.Paths[0], c.Buckets)
		}
		if c.Targeted != nil && *c.Targeted > 0 {
			s := fmt.Sprintf("%s of the query weight would only be targeted by its prefix %s, not single-partition", pct(*c.Targeted), c.Paths[0])
			if len(c.FanOut) > 0 {
				s += fmt.Sprintf("; %s would fan out", quoteList(c.FanOut))
			}
			return s
		}
		if *c.SinglePartition == 0 {
			return fmt.Sprintf("no query would be single-partition: %s would fan out", quoteList(c.FanOut))
		}
		return fmt.Sprintf("only %s of the query weight would be single-partition: %s would fan out",
			pct(*c.SinglePartition), quoteList(c.FanOut))
	case c.QueryFit != nil && best.QueryFit != nil && *c.QueryFit < *best.QueryFit && best.Targeted != nil && *best.Targeted > 0 && len(c.FanOut) > 0:
		where := "to every partition"
		if c.Strategy == HashSuffix || c.Strategy == RandomSuffix {
			where = fmt.Sprintf("over %d keys", c.Buckets)
		}
		return fmt.Sprintf("%s would fan out %s, where %s routes them by its prefix %s", quoteList(c.FanOut), where, best.Key, best.Paths[0])
	case c.CapShare > 0.5:
		return fmt.Sprintf("its largest logical partition would reach %s, over half the %s limit",
			formatBytes(c.LargestBytes), formatBytes(rep.LogicalPartitionCap))
	case c.WriteSkew != nil && best.WriteSkew != nil && c.WriteSpread != nil && best.WriteSpread != nil && *c.WriteSpread < *best.WriteSpread:
		return fmt.Sprintf("spreads writes less evenly: its hottest key takes %s of each %s's writes (vs %s)", pct(*c.WriteSkew), ww, pct(*best.WriteSkew))
	case c.Spread < best.Spread:
		return fmt.Sprintf("spreads storage less evenly: its largest logical partition holds %s of the items (vs %s)", pct(c.LargestShare), pct(best.LargestShare))
	case c.Score == best.Score:
		return "as good on this sample, but " + best.Key + " is simpler or comes first"
	}
	return fmt.Sprintf("scores lower (%.1f vs %.1f)", c.Score, best.Score)
}

// quoteList quotes names and joins them, at most three.
func quoteList(names []string) string {
	var q []string
	for i, n := range names {
		if i == 3 {
			q = append(q, fmt.Sprintf("and %d more", len(names)-3))
			break
		}
		q = append(q, fmt.Sprintf("%q", n))
	}
	return strings.Join(q, ", ")
}

// quoteKey quotes a key value for a message: a hierarchical key's JSON
// array as it is, another value in quotes; clipped.
func quoteKey(s string) string {
	if strings.HasPrefix(s, "[") {
		return clip(s)
	}
	return strconv.Quote(clip(s))
}

// clip shortens a key value for a message.
func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	cut := 37
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
