package redisjob_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/devtools/redistest"
	"github.com/gocrawl/gocrawl/devtools/simsite"
)

// BenchmarkCrawl measures crawled pages per second with 1, 2 and 4 worker
// processes on one Redis against a simulated site without limits (8 hosts,
// GOCRAWL_BENCH_PAGES pages each, 1,000 by default; no latency, no delay,
// concurrency per host unlimited, 16 requests in flight per worker), and
// one process without Redis for reference. Each worker is a gocrawl
// process running the follow spider (it parses every page). It also
// reports the CPU time per page of the workers (user + system, all of
// them) and of the Redis server: on one machine the workers and Redis
// share its cores, so the CPU per page is the stable number.
//
//	go test -run '^$' -bench Crawl -benchtime 1x -timeout 30m ./redisjob/
func BenchmarkCrawl(b *testing.B) {
	pages := 1000
	if v := envInt("GOCRAWL_BENCH_PAGES"); v > 0 {
		pages = v
	}
	for _, workers := range []int{0, 1, 2, 4} {
		name := fmt.Sprintf("workers=%d", workers)
		if workers == 0 {
			name = "alone"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				srv := site(b, 8, pages)
				url := redistest.Shared(b).URL()
				redisCPU := func() float64 { return cpuOf(b, redistest.Shared(b).Addr) }
				r0 := redisCPU()
				job := nextJob()
				extra := []string{"CONCURRENT_REQUESTS_PER_DOMAIN=0", "CONCURRENT_REQUESTS=16"}
				t0 := time.Now()
				var ps []*proc
				for w := range max(workers, 1) {
					set := extra
					if workers > 0 {
						set = append(set, "REDIS_URL="+url, "JOB="+job, fmt.Sprintf("REDIS_WORKER_ID=w%d", w))
					}
					args := []string{"run", "follow", "-a", "start_urls=" + strings.Join(starts(srv), ","), "-s", "ROBOTSTXT_OBEY=false",
						"-s", "LOG_LEVEL=ERROR", "-s", "LOGSTATS_INTERVAL=0", "-s", "STATS_DUMP=false", "-s", "PROGRESS_DISPLAY=off"}
					for _, kv := range set {
						args = append(args, "-s", kv)
					}
					ps = append(ps, start(b, fmt.Sprintf("w%d", w), b.TempDir(), args...))
				}
				for _, p := range ps {
					if code := p.wait(b, 30*time.Minute); code != 0 {
						b.Fatalf("%s exited %d:\n%s", p.name, code, p.out.String())
					}
				}
				el := time.Since(t0)
				var workerCPU time.Duration
				for _, p := range ps {
					workerCPU += p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
				}
				n := 0
				for _, r := range srv.Records() {
					if r.Status == 200 {
						n++
					}
				}
				if n != 8*pages {
					b.Fatalf("%d pages fetched, want %d", n, 8*pages)
				}
				b.ReportMetric(float64(n)/el.Seconds(), "pages/s")
				b.ReportMetric(float64(workerCPU.Microseconds())/float64(n), "worker-cpu-µs/page")
				if workers > 0 {
					b.ReportMetric((redisCPU()-r0)*1e6/float64(n), "redis-cpu-µs/page")
				}
			}
		})
	}
}

// BenchmarkEndToEnd is TestEndToEnd at full size: 1,000
// pages per host (about 200 s per crawl, politeness-bound), then the same
// with the strict host.
//
//	go test -run '^$' -bench EndToEnd -benchtime 1x -timeout 60m -v ./redisjob/
func BenchmarkEndToEnd(b *testing.B) {
	b.Run("lenient", func(b *testing.B) {
		for range b.N {
			e2e{pages: 1000}.run(b)
		}
	})
	b.Run("strict", func(b *testing.B) {
		for range b.N {
			e2e{pages: 300, strict: &simsite.LimitConfig{Rate: 3, Burst: 2, Status: 429, RetryAfter: simsite.RetryAfterSeconds}}.run(b)
		}
	})
}

// cpuOf returns the CPU seconds (user + system) the Redis server at addr
// has used.
func cpuOf(b *testing.B, addr string) float64 {
	info, err := redistest.Command(addr, "INFO", "cpu")
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(info, "\r\n") {
		for _, k := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				x, _ := strconv.ParseFloat(v, 64)
				total += x
			}
		}
	}
	return total
}

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}
