package metrics

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteSummary prints the politeness part of the end-of-crawl summary: one
// line for the crawl and one per scope for the top most requested scopes
// (all when top <= 0), with the outcome taxonomy, useful and raw
// throughput, peak in-flight and the observed start rate.
func WriteSummary(w io.Writer, s Snapshot, top int) error {
	shown := s.Top(top)
	width := len("scope")
	for _, sc := range shown {
		width = max(width, len(sc.Scope))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\t", width, "scope")
	fmt.Fprintln(tw, "requests\tok\t429\t4xx/5xx\ttimeouts\tnet err\tretries\tok/s\tdone/s\tpeak\tmax/1s\tmax/100ms\tfirst 500ms\tbackoff\t")
	line := func(name string, c Counts, backoff float64) {
		fmt.Fprintf(tw, "%-*s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t%d\t%d\t%d\t%d\t%s\t\n",
			width, name, c.Requests, c.OK, c.HTTP429, c.OtherErrors, c.Timeouts, c.NetworkErrors, c.Retries,
			c.OKPerSecond, c.CompletedPerSecond, c.PeakInFlight, c.MaxStarts1s, c.MaxStarts100ms, c.StartsFirst500ms,
			(time.Duration(backoff * float64(time.Second))).Round(time.Millisecond))
	}
	var backoff float64
	for _, sc := range s.Scopes {
		backoff += sc.BackoffSeconds
	}
	line("(all)", s.Global, backoff)
	for _, sc := range shown {
		line(sc.Scope, sc.Counts, sc.BackoffSeconds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(shown) < len(s.Scopes) {
		_, err := fmt.Fprintf(w, "(%d more scopes in the stats dump; set STATS_DUMP_FILE for the per-scope CSV)\n", len(s.Scopes)-len(shown))
		return err
	}
	return nil
}
