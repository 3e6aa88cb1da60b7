package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/gocrawl/gocrawl/bench/scenario"
)

// Report is a broad crawl measured from the server side, with the crawler
// process's CPU time and peak RSS.
type Report struct {
	Scenario string `json:"scenario"`
	Variant  string `json:"variant"`
	Hosts    int    `json:"hosts"`
	// Pages is how many distinct pages were answered 200, of Want.
	Pages int `json:"pages"`
	Want  int `json:"want"`
	// Requests counts every request that arrived (robots.txt included),
	// Robots the robots.txt ones.
	Requests int `json:"requests"`
	Robots   int `json:"robots"`
	// LastOKSeconds is the time from the crawler's start to the last 200;
	// LimitSeconds the physical limit (the slowest host's minimal time).
	LastOKSeconds float64 `json:"last_ok_s"`
	LimitSeconds  float64 `json:"limit_s"`
	// MedianDoneSeconds are, by host class, the median time at which a
	// host's last page was answered.
	MedianDoneSeconds map[string]float64 `json:"median_done_s"`
	// Refused counts the 429s; InRetryAfter the requests that arrived
	// while a Retry-After sent to the crawler still ran.
	Refused      int `json:"refused"`
	InRetryAfter int `json:"in_retry_after"`
	// GapHosts counts the hosts with a gap between two requests under the
	// delay's jitter range (half the host's delay: RANDOMIZE_DOWNLOAD_DELAY),
	// less Tolerance; Gaps counts those gaps; WorstGapMs is the largest
	// shortfall (how far under the range the worst gap was).
	// RobotsGapHosts counts, apart, the hosts whose only short gap is
	// between robots.txt and the request after it.
	RobotsGapHosts int `json:"robots_gap_hosts"`
	GapHosts       int `json:"gap_hosts"`
	// GapClasses counts the hosts with a short gap by class; GapsAfterDial
	// the short gaps whose first request came on a new connection.
	GapClasses    map[string]int `json:"gap_classes,omitempty"`
	GapsAfterDial int            `json:"gaps_after_dial"`
	// GapsAfterBatch counts the short gaps whose first request was
	// stamped in a batch: with at least batchShare times the run's mean
	// number of arrivals (at every host) within batchWindow of it. A
	// server starved of CPU stamps the requests that arrived meanwhile
	// together, late, and the next request of each of those hosts then
	// looks early.
	GapsAfterBatch int     `json:"gaps_after_batch"`
	Gaps           int     `json:"gaps"`
	WorstGapMs     float64 `json:"worst_gap_ms"`
	ToleranceMs    float64 `json:"tolerance_ms"`
	// GapStamp is what the gaps are measured on: "socket", each request's
	// arrival on the server's socket (the kernel's receive time of its
	// first bytes, on Linux), or "handler", when the server's handler
	// started (where the kernel gives no receive time). OtherGapHosts and
	// OtherRobotsGapHosts are GapHosts and RobotsGapHosts measured on the
	// other stamp.
	GapStamp            string `json:"gap_stamp"`
	OtherGapHosts       int    `json:"other_gap_hosts"`
	OtherRobotsGapHosts int    `json:"other_robots_gap_hosts"`
	// StampLateFreshMs and StampLateReusedMs are how long after its
	// arrival on the socket the handler stamped a request, for the first
	// request of a connection and for the others: median, 99th
	// percentile, largest. AcceptAfterArrivalMs is, for the first request
	// of a connection, how long after its arrival the connection was
	// accepted (negative: accepted before the request came).
	StampLateFreshMs     []float64 `json:"stamp_late_fresh_ms,omitempty"`
	StampLateReusedMs    []float64 `json:"stamp_late_reused_ms,omitempty"`
	AcceptAfterArrivalMs []float64 `json:"accept_after_arrival_ms,omitempty"`
	// Accepts is the connections the servers accepted.
	Accepts int64 `json:"accepts"`
	// FirstRequest are the median and the latest of the hosts' first
	// request times (any request, robots.txt included), from the start.
	FirstMedianSeconds float64 `json:"first_median_s"`
	FirstMaxSeconds    float64 `json:"first_max_s"`
	// Crawler process.
	WallSeconds float64 `json:"wall_s"`
	CPUSeconds  float64 `json:"cpu_s"`
	// CPUSystemSeconds is the part of CPUSeconds spent in the kernel.
	CPUSystemSeconds float64 `json:"cpu_sys_s"`
	CPUPerPage       float64 `json:"cpu_ms_per_page"`
	PeakRSSMB        float64 `json:"peak_rss_mb"`
	TimedOut         bool    `json:"timed_out,omitempty"`
	// Workers is the number of worker processes of a run on one Redis
	// (-workers; 0: one process without Redis). Their CPU is summed, their
	// peak RSS is the largest one's. RedisRoundTrips counts the requests
	// the Redis server read from the workers (INFO stats
	// total_reads_processed: a pipeline or a script call is one, as a
	// single command, and a request over 16 KB more), RedisCommands the commands it ran (a pipeline of n
	// commands counts n), RedisCPUSeconds its own CPU time;
	// VsOneProcess is the time to the last 200 over the one-process
	// crawl's in the same run.
	Workers           int              `json:"workers,omitempty"`
	RedisRoundTrips   int64            `json:"redis_round_trips,omitempty"`
	RoundTripsPerPage float64          `json:"redis_round_trips_per_page,omitempty"`
	RedisCommands     int64            `json:"redis_commands,omitempty"`
	RedisCommandCalls map[string]int64 `json:"redis_command_calls,omitempty"`
	RedisCPUSeconds   float64          `json:"redis_cpu_s,omitempty"`
	// ClientRoundTrips counts the round trips as the workers sent them
	// (a go-redis hook in each: a command sent alone, a script call
	// included, is one, a pipeline is one), RedisDials the connections
	// they opened.
	ClientRoundTrips        int64   `json:"redis_client_round_trips,omitempty"`
	ClientRoundTripsPerPage float64 `json:"redis_client_round_trips_per_page,omitempty"`
	RedisDials              int64   `json:"redis_dials,omitempty"`
	VsOneProcess            float64 `json:"vs_one_process,omitempty"`
	NoFile                  int     `json:"nofile,omitempty"`
}

// tolerance is how far under the jitter range a gap may be and still be
// counted polite: the server stamps a request when its handler starts, a
// little later for a request on a new connection (accept, a goroutine)
// than for one on an open connection.
const tolerance = 2 * time.Millisecond

// A batch of stamps (GapsAfterBatch): batchShare times the mean number of
// arrivals within batchWindow either side.
const (
	batchWindow = 5 * time.Millisecond
	batchShare  = 3
)

func (s *site) report(start time.Time) Report {
	b := s.b
	r := Report{Hosts: b.Hosts, Want: b.Hosts * b.Pages, LimitSeconds: b.PhysicalLimit().Seconds(),
		ToleranceMs: float64(tolerance) / float64(time.Millisecond), MedianDoneSeconds: map[string]float64{}, GapClasses: map[string]int{}}
	var firsts []float64
	done := map[string][]float64{}
	var all []time.Time
	for _, h := range s.hosts {
		h.mu.Lock()
		for _, a := range h.reqs {
			all = append(all, a.at)
		}
		h.mu.Unlock()
	}
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	batched := func(t time.Time) bool {
		if len(all) < 2 {
			return false
		}
		span := all[len(all)-1].Sub(all[0])
		if span <= 0 {
			return false
		}
		mean := float64(len(all)) * float64(2*batchWindow) / float64(span)
		lo, _ := slices.BinarySearchFunc(all, t.Add(-batchWindow), func(a, b time.Time) int { return a.Compare(b) })
		hi, _ := slices.BinarySearchFunc(all, t.Add(batchWindow+1), func(a, b time.Time) int { return a.Compare(b) })
		return float64(hi-lo) >= batchShare*max(mean, 1)
	}
	// Gaps are measured on the requests' arrival on the socket when the
	// kernel gave it for every request (Linux), else on the handler's
	// stamps; the handler's count is kept beside it.
	socket := true
	for _, h := range s.hosts {
		h.mu.Lock()
		for _, a := range h.reqs {
			socket = socket && !a.wire.IsZero()
		}
		h.mu.Unlock()
	}
	onSocket := func(a arrival) time.Time { return a.wire }
	onHandler := func(a arrival) time.Time { return a.at }
	main, other := onHandler, onSocket
	r.GapStamp = "handler"
	if socket {
		main, other = onSocket, onHandler
		r.GapStamp = "socket"
	}
	var lateFresh, lateReused, acceptLate []float64
	for _, h := range s.hosts {
		h.mu.Lock()
		r.Accepts += h.accepts.Load()
		r.Pages += len(h.okPages)
		r.Requests += len(h.reqs)
		r.Refused += h.refused
		r.InRetryAfter += h.inWindow
		if !h.lastOK.IsZero() {
			at := h.lastOK.Sub(start).Seconds()
			r.LastOKSeconds = max(r.LastOKSeconds, at)
			if len(h.okPages) == b.Pages {
				done[h.class] = append(done[h.class], at)
			}
		}
		if len(h.reqs) > 0 {
			firsts = append(firsts, h.reqs[0].at.Sub(start).Seconds())
		}
		lo := b.MinDelay(h.class) / 2
		bad, robotsBad := r.countGaps(h, lo, main, batched)
		if bad {
			r.GapHosts++
			r.GapClasses[h.class]++
		} else if robotsBad {
			r.RobotsGapHosts++
		}
		var o Report
		bad, robotsBad = o.countGaps(h, lo, other, func(time.Time) bool { return false })
		if bad {
			r.OtherGapHosts++
		} else if robotsBad {
			r.OtherRobotsGapHosts++
		}
		for _, a := range h.reqs {
			if a.robots {
				r.Robots++
			}
			if a.wire.IsZero() {
				continue
			}
			late := float64(a.at.Sub(a.wire)) / float64(time.Millisecond)
			if a.fresh {
				lateFresh = append(lateFresh, late)
				acceptLate = append(acceptLate, float64(a.accepted.Sub(a.wire))/float64(time.Millisecond))
			} else {
				lateReused = append(lateReused, late)
			}
		}
		h.mu.Unlock()
	}
	r.StampLateFreshMs = spread(lateFresh)
	r.StampLateReusedMs = spread(lateReused)
	r.AcceptAfterArrivalMs = spread(acceptLate)
	r.FirstMedianSeconds = median(firsts)
	if len(firsts) > 0 {
		r.FirstMaxSeconds = slices.Max(firsts)
	}
	for c, v := range done {
		r.MedianDoneSeconds[c] = median(v)
	}
	return r
}

// countGaps counts in r the short gaps of h (under lo less the
// tolerance) as stamp measures them, and reports whether h has one between
// pages and whether it has one next to robots.txt.
func (r *Report) countGaps(h *host, lo time.Duration, stamp func(arrival) time.Time, batched func(time.Time) bool) (bad, robotsBad bool) {
	for k := 1; k < len(h.reqs); k++ {
		gap := stamp(h.reqs[k]).Sub(stamp(h.reqs[k-1]))
		if gap >= lo-tolerance {
			continue
		}
		if h.reqs[k-1].robots || h.reqs[k].robots {
			robotsBad = true
			continue
		}
		r.Gaps++
		bad = true
		if h.reqs[k-1].fresh {
			r.GapsAfterDial++
		}
		if batched(stamp(h.reqs[k-1])) {
			r.GapsAfterBatch++
		}
		r.WorstGapMs = max(r.WorstGapMs, float64(lo-gap)/float64(time.Millisecond))
	}
	return bad, robotsBad
}

// spread returns the median, the 99th percentile and the largest of v
// (nil when v is empty).
func spread(v []float64) []float64 {
	if len(v) == 0 {
		return nil
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return []float64{v[len(v)/2], v[len(v)*99/100], v[len(v)-1]}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// ms3 formats a spread (median, p99, max) in milliseconds.
func ms3(v []float64) string {
	if len(v) < 3 {
		return "-"
	}
	return fmt.Sprintf("%.2f/%.2f/%.2f", v[0], v[1], v[2])
}

func (r Report) print(w io.Writer) {
	pct := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return 100 * a / b
	}
	fmt.Fprintf(w, "%s / %s: %d hosts", r.Scenario, r.Variant, r.Hosts)
	if r.NoFile > 0 {
		fmt.Fprintf(w, ", crawler under ulimit -n %d", r.NoFile)
	}
	if r.TimedOut {
		fmt.Fprintf(w, " (stopped at the time limit)")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  pages                 %d of %d (%.1f %%)\n", r.Pages, r.Want, pct(float64(r.Pages), float64(r.Want)))
	fmt.Fprintf(w, "  time to last 200      %.1f s (physical limit %.1f s: %.2fx)\n", r.LastOKSeconds, r.LimitSeconds, r.LastOKSeconds/r.LimitSeconds)
	fmt.Fprintf(w, "  hosts done (median)   ")
	for _, c := range []string{scenario.ClassNormal, scenario.ClassSlow, scenario.ClassStrict, scenario.ClassCrawlDelay} {
		if v, ok := r.MedianDoneSeconds[c]; ok {
			fmt.Fprintf(w, "%s %.1f s  ", c, v)
		} else {
			fmt.Fprintf(w, "%s -  ", c)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  requests              %d (%d robots.txt)\n", r.Requests, r.Robots)
	fmt.Fprintf(w, "  429s                  %d (%.2f %% of requests)\n", r.Refused, pct(float64(r.Refused), float64(r.Requests)))
	fmt.Fprintf(w, "  inside Retry-After    %d\n", r.InRetryAfter)
	fmt.Fprintf(w, "  gaps under jitter     %d hosts, %d gaps between pages (worst %.1f ms under; tolerance %.0f ms); %d more hosts only next to robots.txt\n",
		r.GapHosts, r.Gaps, r.WorstGapMs, r.ToleranceMs, r.RobotsGapHosts)
	if r.Gaps > 0 {
		fmt.Fprintf(w, "                        by class %v; %d of the gaps after a request on a new connection, %d after one stamped in a batch (%d+ times the mean arrivals within %v: the server's stall)\n",
			r.GapClasses, r.GapsAfterDial, r.GapsAfterBatch, batchShare, batchWindow)
	}
	other := map[string]string{"socket": "handler", "handler": "socket"}[r.GapStamp]
	fmt.Fprintf(w, "                        measured on each request's arrival at the %s; on the %s's stamps: %d hosts between pages, %d more next to robots.txt\n",
		r.GapStamp, other, r.OtherGapHosts, r.OtherRobotsGapHosts)
	if r.StampLateFreshMs != nil {
		fmt.Fprintf(w, "  handler after socket  new connection %s ms, open connection %s ms (median, p99, max); accepted %s ms after the first request's arrival\n",
			ms3(r.StampLateFreshMs), ms3(r.StampLateReusedMs), ms3(r.AcceptAfterArrivalMs))
	}
	fmt.Fprintf(w, "  connections accepted  %d (%.3f per request)\n", r.Accepts, float64(r.Accepts)/max(1, float64(r.Requests)))
	fmt.Fprintf(w, "  first request         median %.2f s, last host %.2f s\n", r.FirstMedianSeconds, r.FirstMaxSeconds)
	fmt.Fprintf(w, "  crawler               wall %.1f s, CPU %.1f s (%.3f ms/page; system %.1f s), peak RSS %.0f MB\n", r.WallSeconds, r.CPUSeconds, r.CPUPerPage, r.CPUSystemSeconds, r.PeakRSSMB)
	if r.Workers > 0 {
		fmt.Fprintf(w, "  workers               %d on one Redis: time to last 200 %.2fx the one-process crawl's\n", r.Workers, r.VsOneProcess)
		fmt.Fprintf(w, "  redis                 %d round trips (%.2f per page), %d commands (%.2f per page), server CPU %.1f s\n",
			r.RedisRoundTrips, r.RoundTripsPerPage, r.RedisCommands, float64(r.RedisCommands)/max(1, float64(r.Pages)), r.RedisCPUSeconds)
		fmt.Fprintf(w, "                        by command %v\n", r.RedisCommandCalls)
		fmt.Fprintf(w, "  redis (client)        %d round trips (%.2f per page) counted by the workers, %d connections opened\n",
			r.ClientRoundTrips, r.ClientRoundTripsPerPage, r.RedisDials)
	}
}
