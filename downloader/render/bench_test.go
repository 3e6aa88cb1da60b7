package render

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

// BenchmarkRender renders a simple page (a title, a paragraph and a small
// script that adds a list) with BROWSER_CONCURRENCY 2 and 4 tabs in one
// browser process, each tab kept busy by its own goroutine. It reports
// rendered pages per second, the CPU time the browser spent per page (the
// stable number on a shared machine), and the memory: of the browser's
// process tree (proportional set size) once its tabs are open and idle,
// its peak while rendering (sampled every 50 ms), and the peak with this
// Go process's own RSS added. Run it with
//
//	go test ./downloader/render -run '^$' -bench Render -benchtime 100x
//
// BENCH_ARGS adds browser flags (space-separated), to compare them.
func BenchmarkRender(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writePage(w, `<h1>Simple page</h1><p>Some text.</p><ul id="l"></ul><script>
for (let i = 0; i < 20; i++) { const li = document.createElement("li"); li.textContent = "item " + i; document.getElementById("l").appendChild(li) }
</script>`)
	}))
	defer srv.Close()
	for _, tabs := range []int{2, 4} {
		b.Run(fmt.Sprintf("tabs=%d", tabs), func(b *testing.B) {
			r, err := New(Options{Tabs: tabs, Processes: 1, Timeout: 30 * time.Second, Args: strings.Fields(os.Getenv("BENCH_ARGS"))})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			// Warm up: start the browser and open every tab.
			var wg sync.WaitGroup
			for range tabs {
				wg.Go(func() {
					if _, err := r.Fetch(context.Background(), spider.MustRequest(srv.URL, nil)); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
			idle := r.RSS()
			var peak atomic.Int64
			stop := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				t := time.NewTicker(50 * time.Millisecond)
				defer t.Stop()
				for {
					if v := r.RSS(); v > peak.Load() {
						peak.Store(v)
					}
					select {
					case <-stop:
						return
					case <-t.C:
					}
				}
			}()
			cpu0 := treeCPU(r.PIDs())
			var left atomic.Int64
			left.Store(int64(b.N))
			b.ResetTimer()
			start := time.Now()
			for range tabs {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						if _, err := r.Fetch(context.Background(), spider.MustRequest(srv.URL, nil)); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			el := time.Since(start)
			b.StopTimer()
			close(stop)
			<-sampled
			own := selfRSS()
			cpu := treeCPU(r.PIDs()) - cpu0
			b.ReportMetric(float64(b.N)/el.Seconds(), "pages/s")
			b.ReportMetric(float64(peak.Load())/(1<<20), "browser-peak-MiB")
			b.ReportMetric(float64(idle)/(1<<20), "browser-idle-MiB")
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "browser-cpu-ms/page")
			b.ReportMetric(float64(peak.Load()+own)/(1<<20), "total-peak-MiB")
		})
	}
}

// selfRSS is this process's own resident memory (its children, the
// browsers, are measured apart).
func selfRSS() int64 { return rssOf(os.Getpid()) }

// treeCPU is the CPU time (user + system) of the process trees rooted at
// pids, from /proc (clock ticks of 10 ms).
func treeCPU(pids []int) time.Duration {
	var ticks int64
	for _, pid := range pids {
		for _, p := range tree(pid) {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
			if err != nil {
				continue
			}
			s := string(b)
			f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
			if len(f) > 12 {
				u, _ := strconv.ParseInt(f[11], 10, 64)
				k, _ := strconv.ParseInt(f[12], 10, 64)
				ticks += u + k
			}
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// tree lists pid and its descendants.
func tree(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			if pp := ppid(n); pp > 0 {
				children[pp] = append(children[pp], n)
			}
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}
