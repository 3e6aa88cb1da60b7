package monitor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/observe/stats"
)

// Snapshot is what a check reads: the crawl's stats at one moment.
type Snapshot struct {
	// Stats are the crawl's counters (the keys of package stats:
	// "item_scraped_count", "downloader/response_status_count/429", ...).
	Stats map[string]float64
	// Elapsed is how long the crawl has run.
	Elapsed time.Duration
	// Final is true for the run when the crawl has ended; false for the
	// runs every MONITOR_INTERVAL while it runs.
	Final bool
	// Reason is why the crawl ended, in the final run ("finished",
	// "shutdown" for a stop by a signal, "closespider_timeout", ...).
	Reason string
}

// Interrupted reports whether the final run follows a crawl stopped
// before its end by a signal (Ctrl-C, a pause of a JOBDIR job, a cancel)
// rather than one that ran out of work or hit a CLOSESPIDER_* limit.
func (s Snapshot) Interrupted() bool { return s.Reason == "shutdown" || s.Reason == "aborted" }

// Get returns the stat key, 0 when it was never counted.
func (s Snapshot) Get(key string) float64 { return s.Stats[key] }

// sumPrefix adds up the stats whose key starts with prefix and whose rest
// satisfies keep.
func (s Snapshot) sumPrefix(prefix string, keep func(rest string) bool) float64 {
	var n float64
	for k, v := range s.Stats {
		if rest, ok := strings.CutPrefix(k, prefix); ok && keep(rest) {
			n += v
		}
	}
	return n
}

// Outcome is what one check found.
type Outcome struct {
	// OK is false when the check failed.
	OK bool
	// Detail says what was measured against what, in a sentence; for a
	// failed check it is the reason of the failure.
	Detail string
}

// Pass returns a passing Outcome; Fail a failing one.
func Pass(format string, args ...any) Outcome {
	return Outcome{OK: true, Detail: fmt.Sprintf(format, args...)}
}

// Fail returns a failing Outcome with the reason.
func Fail(format string, args ...any) Outcome {
	return Outcome{OK: false, Detail: fmt.Sprintf(format, args...)}
}

// Check is one monitor: it looks at a Snapshot and says whether the crawl
// is fine. Name is the monitor's name in the results ("min_items"): short,
// lower case, unique within a crawl. Check is called from one goroutine at
// a time, during the crawl (Final false) and once at its end.
type Check interface {
	Name() string
	Check(ctx context.Context, s Snapshot) Outcome
}

// NewCheck makes a Check of a function, for monitors of your own:
//
//	monitor.NewCheck("few_404", func(ctx context.Context, s monitor.Snapshot) monitor.Outcome {
//		if n := s.Get("downloader/response_status_count/404"); n > 10 {
//			return monitor.Fail("%.0f pages not found, more than 10", n)
//		}
//		return monitor.Pass("at most 10 pages not found")
//	})
func NewCheck(name string, fn func(ctx context.Context, s Snapshot) Outcome) Check {
	return funcCheck{name, fn}
}

type funcCheck struct {
	name string
	fn   func(context.Context, Snapshot) Outcome
}

func (f funcCheck) Name() string                                  { return f.name }
func (f funcCheck) Check(ctx context.Context, s Snapshot) Outcome { return f.fn(ctx, s) }

// MinItems fails a crawl that ended with fewer than Min items
// (item_scraped_count). During the crawl it always passes: the count is
// only final at the end; so does it after a crawl stopped by a signal
// (Snapshot.Interrupted), which resumes or is cancelled.
type MinItems struct{ Min int }

// Name returns "min_items".
func (MinItems) Name() string { return "min_items" }

// Check compares item_scraped_count with Min.
func (c MinItems) Check(_ context.Context, s Snapshot) Outcome {
	n := int64(s.Get(stats.ItemScrapedCount))
	switch {
	case !s.Final:
		return Pass("%d items so far; MONITOR_MIN_ITEMS %d is checked when the crawl ends", n, c.Min)
	case s.Interrupted():
		return Pass("%d items; MONITOR_MIN_ITEMS %d is not checked: the crawl was stopped before its end (%s)", n, c.Min, s.Reason)
	case n < int64(c.Min):
		return Fail("%d items, fewer than MONITOR_MIN_ITEMS %d", n, c.Min)
	}
	return Pass("%d items, at least MONITOR_MIN_ITEMS %d", n, c.Min)
}

// MaxShare fails when Part/Whole of the stats is above Max. The runs
// during the crawl skip it until Whole reaches MinSample, so that the
// first few requests do not decide; the run at the end always checks it.
// MaxErrorShare, Max429Share and MaxDropShare build the usual ones.
type MaxShare struct {
	// Monitor is the name in the results ("max_error_share").
	Monitor string
	// Setting is the setting Max came from, named in the details.
	Setting string
	// PartName and WholeName say what is counted ("failed requests",
	// "requests").
	PartName, WholeName string
	// Part and Whole read the counts from a snapshot.
	Part, Whole func(Snapshot) float64
	// Max is the highest share allowed, from 0 to 1.
	Max float64
	// MinSample is the smallest Whole the runs during the crawl check.
	MinSample int
}

// Name returns c.Monitor.
func (c MaxShare) Name() string { return c.Monitor }

// Check compares Part/Whole with Max.
func (c MaxShare) Check(_ context.Context, s Snapshot) Outcome {
	part, whole := c.Part(s), c.Whole(s)
	if whole == 0 {
		return Pass("no %s yet", c.WholeName)
	}
	share := part / whole
	if !s.Final && whole < float64(c.MinSample) {
		return Pass("%.0f of %.0f %s are %s (%s); checked from %d %s on", part, whole, c.WholeName, c.PartName, pct(share), c.MinSample, c.WholeName)
	}
	if share > c.Max {
		return Fail("%.0f of %.0f %s are %s (%s), more than %s %s", part, whole, c.WholeName, c.PartName, pct(share), c.Setting, pct(c.Max))
	}
	return Pass("%.0f of %.0f %s are %s (%s), at most %s %s", part, whole, c.WholeName, c.PartName, pct(share), c.Setting, pct(c.Max))
}

func pct(f float64) string {
	s := fmt.Sprintf("%.2f", f*100)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "%"
}

// MaxErrorShare fails when more than max of the requests failed: no
// response (downloader/exception_count) or a 5xx status. Each attempt of a
// retried request counts.
func MaxErrorShare(max float64, minSample int) MaxShare {
	return MaxShare{
		Monitor: "max_error_share", Setting: "MONITOR_MAX_ERROR_SHARE",
		PartName: "failed", WholeName: "requests",
		Part: func(s Snapshot) float64 {
			return s.Get("downloader/exception_count") + s.sumPrefix("downloader/response_status_count/", func(code string) bool {
				return len(code) == 3 && code[0] == '5'
			})
		},
		Whole: func(s Snapshot) float64 { return s.Get("downloader/request_count") },
		Max:   max, MinSample: minSample,
	}
}

// Max429Share fails when more than max of the responses have status 429
// Too Many Requests: the crawl is too fast for a site, or banned.
func Max429Share(max float64, minSample int) MaxShare {
	return MaxShare{
		Monitor: "max_429_share", Setting: "MONITOR_MAX_429_SHARE",
		PartName: "429 Too Many Requests", WholeName: "responses",
		Part:  func(s Snapshot) float64 { return s.Get("downloader/response_status_count/429") },
		Whole: func(s Snapshot) float64 { return s.Get("downloader/response_count") },
		Max:   max, MinSample: minSample,
	}
}

// MaxDropShare fails when item pipelines dropped more than max of the
// items (item_dropped_count out of dropped plus scraped).
func MaxDropShare(max float64, minSample int) MaxShare {
	return MaxShare{
		Monitor: "max_drop_share", Setting: "MONITOR_MAX_DROP_SHARE",
		PartName: "dropped", WholeName: "items",
		Part: func(s Snapshot) float64 { return s.Get(stats.ItemDroppedCount) },
		Whole: func(s Snapshot) float64 {
			return s.Get(stats.ItemDroppedCount) + s.Get(stats.ItemScrapedCount)
		},
		Max: max, MinSample: minSample,
	}
}

// MaxDuration fails a crawl running longer than Max, during the crawl as
// soon as a run sees it, and at the end.
type MaxDuration struct{ Max time.Duration }

// Name returns "max_duration".
func (MaxDuration) Name() string { return "max_duration" }

// Check compares the crawl's elapsed time with Max.
func (c MaxDuration) Check(_ context.Context, s Snapshot) Outcome {
	el := s.Elapsed.Round(time.Second)
	if s.Elapsed > c.Max {
		return Fail("ran %s, longer than MONITOR_MAX_DURATION %s", el, c.Max)
	}
	return Pass("ran %s, within MONITOR_MAX_DURATION %s", el, c.Max)
}
