package advise

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Report is the result of Analyze: the sample's description, the ranked
// candidates (best first) and the advice in plain words. Its JSON encoding
// (WriteJSON) is the --json output.
type Report struct {
	Items      int   `json:"items"`      // items analysed
	InputItems int64 `json:"inputItems"` // well-formed items read (more when sampled)
	Malformed  int   `json:"malformed"`  // lines skipped
	Bytes      int64 `json:"bytes"`      // size of the items analysed
	Paths      int   `json:"paths"`      // property paths seen
	// PathsIgnored counts properties past ReadOptions.MaxPaths.
	PathsIgnored int `json:"pathsIgnored,omitempty"`
	// ProjectedBytes is the data set size the shares are projected onto
	// (0: none; sizes are the sample's own).
	ProjectedBytes      int64  `json:"projectedBytes,omitempty"`
	LogicalPartitionCap int64  `json:"logicalPartitionCap"`
	Buckets             int    `json:"buckets"`
	TimePath            string `json:"timePath,omitempty"` // "" when write skew is not measured
	// TimeResolution is the time path's resolution ("24h" for dates, "1s",
	// "1ms"): writes of one moment share its value only down to it.
	TimeResolution string `json:"timeResolution,omitempty"`
	Window         string `json:"window,omitempty"`
	Windows        int    `json:"windows,omitempty"`
	Queries        int    `json:"queries"` // kinds of query in the workload
	// WritesPerSecond is the workload's stated write rate and MeasuredRU
	// the live container's measured request rate (0: not given).
	WritesPerSecond float64 `json:"writesPerSecond,omitempty"`
	MeasuredRU      float64 `json:"measuredRU,omitempty"`
	// CurrentKey is the container's partition key (live mode), and
	// CurrentKind its kind: "Hash" (one path) or "MultiHash" (hierarchical).
	CurrentKey  []string `json:"currentKey,omitempty"`
	CurrentKind string   `json:"currentKind,omitempty"`
	// NotKeys are the property paths left out as keys, with why: fractional
	// measurements and long payload strings that no query filters on.
	NotKeys []string `json:"notKeys,omitempty"`
	// Recommendation is the best candidate's key; Summary explains it and
	// why the runners-up lose, one sentence per line.
	Recommendation string       `json:"recommendation"`
	Summary        []string     `json:"summary"`
	Candidates     []*Candidate `json:"candidates"`
	// HotKeys are the logical partitions hot now (live mode only), over
	// HotWindow ("10s"; empty: since the server started or not measured).
	HotKeys   []HotKey `json:"hotKeys,omitempty"`
	HotWindow string   `json:"hotWindow,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteTable writes r for people: a summary of the sample, the top
// candidates as a table (top ≤ 0: all), and the advice.
func (r *Report) WriteTable(w io.Writer, top int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Sample: %d items, %s, %d property paths", r.Items, formatBytes(r.Bytes), r.Paths)
	if r.InputItems > int64(r.Items) {
		fmt.Fprintf(&b, " (sampled from %d items)", r.InputItems)
	}
	if r.Malformed > 0 {
		fmt.Fprintf(&b, "; %d malformed %s skipped", r.Malformed, plural(r.Malformed, "line"))
	}
	b.WriteString(".\n")
	if r.ProjectedBytes > 0 {
		fmt.Fprintf(&b, "Projected onto %s of data; logical partition limit %s.\n", formatBytes(r.ProjectedBytes), formatBytes(r.LogicalPartitionCap))
	} else {
		fmt.Fprintf(&b, "Sizes are the sample's own (give --total-bytes or --total-items to project); logical partition limit %s.\n", formatBytes(r.LogicalPartitionCap))
	}
	if r.TimePath != "" {
		fmt.Fprintf(&b, "Write time: %s (resolution %s), %d %s of %s.\n", r.TimePath, r.TimeResolution, r.Windows, plural(r.Windows, "window"), r.Window)
	} else {
		b.WriteString("Write time: none found (set writes.timePath in the workload); write skew not measured.\n")
	}
	if r.Queries > 0 {
		fmt.Fprintf(&b, "Workload: %d %s.\n", r.Queries, plural(r.Queries, "kind of query"))
	} else {
		b.WriteString("Workload: none given (--workload); query routing not judged.\n")
	}
	switch {
	case r.WritesPerSecond > 0:
		fmt.Fprintf(&b, "Write rate: %s writes/s (stated); each key's share of it is estimated from the sample.\n", formatRate(r.WritesPerSecond))
	case r.MeasuredRU > 0:
		fmt.Fprintf(&b, "Request rate: %s RU/s (measured); each key's share of it is estimated from the sample.\n", formatRate(r.MeasuredRU))
	}
	if len(r.CurrentKey) > 1 {
		fmt.Fprintf(&b, "Current partition key: hierarchical (MultiHash) [%s] (marked *).\n", strings.Join(r.CurrentKey, ", "))
	} else if len(r.CurrentKey) > 0 {
		fmt.Fprintf(&b, "Current partition key: %s (marked *).\n", strings.Join(r.CurrentKey, ", "))
	}
	if len(r.NotKeys) > 0 {
		fmt.Fprintf(&b, "Not keys: %s.\n", strings.Join(r.NotKeys, "; "))
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RANK\tKEY\tSTRATEGY\tDISTINCT\tMISSING\tLARGEST LP\tLARGEST LP SIZE\tOF LIMIT\tWRITE SKEW (TYP/MAX)\tHOT KEY RU/S\tSINGLE-PARTITION\tSCORE")
	for i, c := range r.Candidates {
		if top > 0 && i >= top {
			break
		}
		mark := ""
		if c.Current {
			mark = "*"
		}
		skew := "-"
		if c.WriteSkew != nil {
			skew = pct(*c.WriteSkew) + "/" + pct(*c.WriteSkewMax)
		}
		single := "-"
		if c.SinglePartition != nil {
			single = pct(*c.SinglePartition)
			if c.Targeted != nil && *c.Targeted > 0 {
				single += " (+" + pct(*c.Targeted) + " by prefix)"
			}
		}
		hot := "-"
		if c.HotKeyRU != nil {
			hot = fmt.Sprintf("%.0f (%.0f-%.0f)", *c.HotKeyRU, *c.HotKeyRULow, *c.HotKeyRUHigh)
		}
		fmt.Fprintf(tw, "%d%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\n", c.Rank, mark, c.Key, c.Strategy,
			c.Distinct, pct(c.Missing), pct(c.LargestShare), formatBytes(c.LargestBytes), pct(c.CapShare), skew, hot, single, c.Score)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if top > 0 && len(r.Candidates) > top {
		fmt.Fprintf(&b, "(%d more candidates: --top 0 lists all)\n", len(r.Candidates)-top)
	}
	b.WriteString("\n")
	for _, s := range r.Summary {
		b.WriteString(s)
		b.WriteString("\n")
	}
	if len(r.HotKeys) == 0 && r.HotWindow != "" {
		fmt.Fprintf(&b, "\nHot now: no key over the last %s.\n", r.HotWindow)
	}
	if len(r.HotKeys) > 0 {
		b.WriteString("\nHot now:\n")
		for _, h := range r.HotKeys {
			fmt.Fprintf(&b, "  %s\n", h.Advice)
		}
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", s)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// pct formats a share as a percentage.
func pct(x float64) string {
	switch {
	case x == 0:
		return "0%"
	case x >= 0.1:
		return fmt.Sprintf("%.0f%%", 100*x)
	case x >= 0.001:
		return fmt.Sprintf("%.1f%%", 100*x)
	case x >= 0.0001:
		return fmt.Sprintf("%.2f%%", 100*x)
	default:
		return "<0.01%"
	}
}

// formatBytes formats n bytes with binary units written KB, MB, GB, TB as
// Cosmos DB does ("20 GB" is 20 << 30).
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	for _, u := range []string{"KB", "MB", "GB", "TB"} {
		f /= unit
		if f < unit || u == "TB" {
			if f == float64(int64(f)) {
				return fmt.Sprintf("%d %s", int64(f), u)
			}
			return fmt.Sprintf("%.1f %s", f, u)
		}
	}
	return "" // unreachable
}

// plural returns noun for n == 1, else its plural.
func plural(n int, noun string) string {
	switch {
	case n == 1:
		return noun
	case strings.HasPrefix(noun, "kind of "):
		return "kinds of " + strings.TrimPrefix(noun, "kind of ")
	}
	return noun + "s"
}
