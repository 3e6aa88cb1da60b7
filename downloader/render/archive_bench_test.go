package render

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/spider"
)

// BenchmarkRenderArchive renders, in one tab, a page with a stylesheet, a
// script and four images of 16 KiB (sent with Cache-Control: no-store,
// so each render fetches them all: the most an archive collects), without
// and with the exchanges collected for the archive (WARC_DIR: the network
// events kept and every body fetched from the browser). It reports pages
// per second, the CPU time per page of the browser and of this process,
// and the bytes collected per page. Writing the WARC records is measured
// by BenchmarkWrite in persist/warc. Run it with
//
//	go test ./downloader/render -run '^$' -bench RenderArchive -benchtime 30x
func BenchmarkRenderArchive(b *testing.B) {
	img := noisePNG(64) // 16 KiB
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		switch {
		case r.URL.Path == "/":
			imgs := ""
			for i := range 4 {
				imgs += fmt.Sprintf(`<img src="/img%d.png">`, i)
			}
			writePage(w, `<link rel="stylesheet" href="/s.css"><script src="/a.js"></script><h1>Page</h1>`+imgs)
		case r.URL.Path == "/s.css":
			w.Header().Set("Content-Type", "text/css")
			fmt.Fprint(w, strings.Repeat("h1 { color: #123; }\n", 100))
		case r.URL.Path == "/a.js":
			w.Header().Set("Content-Type", "application/javascript")
			fmt.Fprint(w, strings.Repeat("var x = 1;\n", 100))
		default:
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(img)
		}
	}))
	defer srv.Close()
	for _, archive := range []bool{false, true} {
		b.Run(fmt.Sprintf("archive=%v", archive), func(b *testing.B) {
			r, err := New(Options{Tabs: 1, Processes: 1, Timeout: 30 * time.Second, Archive: archive})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			fetch := func() int {
				ctx, c := context.Background(), &downloader.Capture{}
				if archive {
					ctx = downloader.WithCapture(ctx, c)
				}
				if _, err := r.Fetch(ctx, spider.MustRequest(srv.URL+"/", nil)); err != nil {
					b.Fatal(err)
				}
				n := 0
				for _, ex := range c.Browser {
					n += len(ex.Payload)
				}
				return n
			}
			fetch() // start the browser and open the tab
			cpu0, own0 := treeCPU(r.PIDs()), selfCPU()
			collected := 0
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				collected += fetch()
			}
			el := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/el.Seconds(), "pages/s")
			b.ReportMetric(float64((treeCPU(r.PIDs())-cpu0).Milliseconds())/float64(b.N), "browser-cpu-ms/page")
			b.ReportMetric(float64((selfCPU()-own0).Microseconds())/1000/float64(b.N), "go-cpu-ms/page")
			b.ReportMetric(float64(collected)/1024/float64(b.N), "collected-KiB/page")
		})
	}
}

// noisePNG is a square PNG image of side n, of noise (it does not
// compress: about 4n² bytes).
func noisePNG(n int) []byte {
	rnd := rand.New(rand.NewPCG(1, 2))
	m := image.NewNRGBA(image.Rect(0, 0, n, n))
	for i := range m.Pix {
		m.Pix[i] = byte(rnd.Uint32())
	}
	var b bytes.Buffer
	_ = png.Encode(&b, m)
	return b.Bytes()
}

// selfCPU is the CPU time (user + system) this process used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
