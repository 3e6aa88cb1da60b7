// Command runner crawls a benchmark scenario's site with one crawler, in its
// own process so that its CPU time and peak RSS can be measured alone (the
// orchestrator reads them from the process's rusage). It prints one JSON
// line: a Result.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/gocrawl/gocrawl/bench/scenario"
	"github.com/gocrawl/gocrawl/persist/jobdir"
)

// Result is what a runner reports; the server-side view (per-host status
// counts, peak concurrency, start rate, Retry-After violations) comes from
// the site process.
type Result struct {
	Crawler  string  `json:"crawler"`
	Variant  string  `json:"variant"`
	Scenario string  `json:"scenario"`
	Seconds  float64 `json:"seconds"`
	// Responses is how many responses (any status) the crawler handled.
	Responses int64 `json:"responses"`
	// OK is how many 2xx responses it parsed.
	OK int64 `json:"ok"`
	// Errors counts non-2xx statuses and download errors.
	Errors int64 `json:"errors"`
	// Bytes is the sum of the response bodies the crawler received, as
	// its parser got them: with Pages, the check that every crawler and
	// every server mode crawled the same content.
	Bytes int64 `json:"bytes"`
	// JobSyncs is how many times a JOBDIR variant's job synced its log
	// (fsyncs of the write-ahead log; 0 without JOBDIR).
	JobSyncs uint64 `json:"job_syncs,omitempty"`
	// RSS is the memory curve (with -rss-every).
	RSS []RSSPoint `json:"rss,omitempty"`
	// Redis are the worker's Redis round trips counted at the client
	// (with -redis-url).
	Redis *RedisClientStats `json:"redis,omitempty"`
}

func main() {
	name := flag.String("scenario", "", "scenario name")
	variant := flag.String("variant", "", "variant of the scenario (gocrawl, colly, ...)")
	urlsJSON := flag.String("urls", "", `JSON object of host name -> base URL, as printed by the site command`)
	flag.Float64Var(&closeAfter, "close-after", 0, "gocrawl: stop the crawl after this many seconds (CLOSESPIDER_TIMEOUT), so a long run still reports")
	urlsFile := flag.String("urls-file", "", "file holding the -urls JSON (for sites of many hosts)")
	rssEvery := flag.Int64("rss-every", 0, "record the resident set size every N responses (0: never)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the crawl to this file")
	memProfile := flag.String("memprofile", "", "write an allocation profile of the crawl to this file")
	heapProfile := flag.String("heapprofile", "", "write a heap profile (memory in use) to this file when -heapprofile-at responses are reached")
	heapAt := flag.Int64("heapprofile-at", 100000, "responses after which -heapprofile is written")
	blockProfile := flag.String("blockprofile", "", "write a profile of where goroutines waited (channels, locks, select) to this file; slows the crawl")
	mutexProfile := flag.String("mutexprofile", "", "write a profile of contended mutexes to this file; slows the crawl")
	flag.DurationVar(&jobSyncDelay, "jobdir-sync-delay", jobdir.DefaultSyncDelay, "jobdir.Options.SyncDelay of the JOBDIR variants (JOBDIR_SYNC_DELAY; default as gocrawl run; 0: sync right after writes)")
	flag.StringVar(&redisURL, "redis-url", "", "gocrawl: join the distributed job of this Redis (REDIS_URL) as one of its workers")
	flag.StringVar(&redisJob, "redis-job", "", "gocrawl with -redis-url: the job's name (JOB; default: the spider's)")
	flag.Var(&extraSettings, "set", "gocrawl: a setting over the variant's, KEY=VALUE (repeatable): -set THROTTLING_DEBUG=true")
	flag.StringVar(&logLevel, "log", "", "gocrawl: log the crawl to stderr at this level (debug, info, warn; with -set THROTTLING_DEBUG=true, every throttling decision); default silent")
	flag.Parse()
	if *blockProfile != "" {
		runtime.SetBlockProfileRate(int((100 * time.Microsecond).Nanoseconds())) // a sample per 100 µs blocked
	}
	if *mutexProfile != "" {
		runtime.SetMutexProfileFraction(10)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "runner: -cpuprofile:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		runtime.MemProfileRate = 64 << 10
	}
	if *urlsFile != "" {
		b, err := os.ReadFile(*urlsFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "runner: -urls-file:", err)
			os.Exit(2)
		}
		*urlsJSON = string(b)
	}
	counter := newProgress(*rssEvery)
	if *heapProfile != "" {
		counter.heapAt, counter.heapFile = *heapAt, *heapProfile
	}
	err := run(*name, *variant, *urlsJSON, counter)
	if err == nil && *memProfile != "" {
		err = writeProfile("allocs", *memProfile)
	}
	if err == nil && *blockProfile != "" {
		err = writeProfile("block", *blockProfile)
	}
	if err == nil && *mutexProfile != "" {
		err = writeProfile("mutex", *mutexProfile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func run(name, variant, urlsJSON string, counter *progress) error {
	sc, err := scenario.Find(name)
	if err != nil {
		return err
	}
	v, err := sc.Variant(variant)
	if err != nil {
		return err
	}
	var urls map[string]string
	if err := json.Unmarshal([]byte(urlsJSON), &urls); err != nil {
		return fmt.Errorf("-urls: %w", err)
	}
	var starts []string
	for _, h := range sc.Hosts() {
		u, ok := urls[h]
		if !ok {
			return fmt.Errorf("-urls: no URL for host %q", h)
		}
		starts = append(starts, u+"/")
	}
	slices.Sort(starts)
	ctx := context.Background()
	t0 := time.Now()
	var res Result
	switch v.Crawler {
	case "gocrawl":
		res, err = runGocrawl(ctx, sc, v, urls, starts, counter)
	case "colly":
		res, err = runColly(ctx, sc, v, starts, counter)
	case "bare":
		get, closeIdle := netHTTPGet(sc)
		res, err = runBare(ctx, sc, starts, counter, get)
		closeIdle()
	case "bare-fasthttp":
		res, err = runBare(ctx, sc, starts, counter, fastHTTPGet(sc))
	default:
		err = fmt.Errorf("unknown crawler %q", v.Crawler)
	}
	if err != nil {
		return err
	}
	res.RSS = counter.curve()
	res.Bytes = counter.bytes.Load()
	res.Crawler, res.Variant, res.Scenario, res.Seconds = v.Crawler, v.Name, sc.Name, time.Since(t0).Seconds()
	return json.NewEncoder(os.Stdout).Encode(res)
}
