package engine

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/spider"
)

// badSite serves one good page linking to every kind of bad input.
func badSite(t *testing.T) string {
	mux := http.NewServeMux()
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<html><title>Not found</title></html>")
	})
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, pageHTML(0, "/image.png", "/latin1", "/sjis", "/truncated", "/huge", "/panic", "/after-panic", "/missing"))
	})
	mux.HandleFunc("/image.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=ISO-8859-1")
		w.Write([]byte("<html><head><title>Caf\xe9 cr\xe8me</title></head></html>"))
	})
	mux.HandleFunc("/sjis", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><head><meta charset=\"Shift_JIS\"><title>\x93\xfa\x96\x7b\x8c\xea</title></head></html>"))
	})
	mux.HandleFunc("/truncated", func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		writeTruncated(buf)
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><title>huge</title><body>"+strings.Repeat("x", 64<<10)+"</body></html>")
	})
	mux.HandleFunc("/panic", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, pageHTML(-1)) })
	mux.HandleFunc("/after-panic", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, pageHTML(2)) })
	return startServer(t, mux).URL
}

func writeTruncated(buf *bufio.ReadWriter) {
	buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n<html><title>cut")
	buf.Flush()
}

func TestBadInputIsLoggedCountedAndTheCrawlGoesOn(t *testing.T) {
	checkGoroutines(t)
	base := badSite(t)
	log, logs := testLogger()
	sp := newURLsSpider("not a url", base+"/", "ftp://example.com/file")
	sp.follow = true
	sp.onPage = func(_ context.Context, res *spider.Response) error {
		if res.URL.Path == "/panic" {
			var m map[string]int
			m["boom"]++ // nil map write: a runtime panic
		}
		return nil
	}
	e, err := New(sp, testSettings(t, "DOWNLOAD_MAXSIZE", 16<<10), Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != "finished" {
		t.Errorf("reason = %q", res.Reason)
	}
	st := res.Stats
	out := logs.String()

	// Invalid start URLs: logged by URL, counted, others crawled.
	for _, bad := range []string{"not a url", "ftp://example.com/file"} {
		if !strings.Contains(out, bad) {
			t.Errorf("log does not name the invalid start URL %q:\n%s", bad, out)
		}
	}
	if st["start_requests/invalid"] != 2 {
		t.Errorf("start_requests/invalid = %v, want 2", st["start_requests/invalid"])
	}
	// Non-UTF-8 pages decoded.
	sp.mu.Lock()
	for _, title := range []string{"Page 0", "Café crème", "日本語", "Page 2"} {
		if sp.titles[title] != 1 {
			t.Errorf("title %q parsed %d times, want 1 (titles: %v)", title, sp.titles[title], sp.titles)
		}
	}
	sp.mu.Unlock()
	// Non-HTML: the callback's Doc() error is a callback error, not a crash.
	if !strings.Contains(out, "/image.png") || !strings.Contains(out, "response is not HTML") {
		t.Errorf("non-HTML response not reported:\n%s", out)
	}
	// Truncated and oversize bodies are download errors of their kinds.
	for kind, want := range map[string]float64{"ResponseDataLossError": 1, "ResponseTooLargeError": 1} {
		if got := st["downloader/exception_type_count/"+kind]; got != want {
			t.Errorf("%s count = %v, want %v", kind, got, want)
		}
	}
	// The panic is recovered, logged with its stack, counted.
	if st["spider_exceptions/panic"] != 1 {
		t.Errorf("spider_exceptions/panic = %v, want 1", st["spider_exceptions/panic"])
	}
	if !strings.Contains(out, "callback panicked") || !strings.Contains(out, "assignment to entry in nil map") || !strings.Contains(out, "goroutine") {
		t.Errorf("panic not logged with its stack:\n%s", out)
	}
	// image.png and panic are callback errors.
	if st["spider_exceptions/count"] != 2 {
		t.Errorf("spider_exceptions/count = %v, want 2 (non-HTML, panic)", st["spider_exceptions/count"])
	}
	if st["downloader/response_status_count/404"] != 1 {
		t.Errorf("404 count = %v, want 1", st["downloader/response_status_count/404"])
	}
}

func TestEndOfCrawlStats(t *testing.T) {
	checkGoroutines(t)
	base := badSite(t)
	sp := newURLsSpider(base+"/", base+"/truncated", base+"/missing")
	e, err := New(sp, testSettings(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st := res.Stats
	for key, want := range map[string]float64{
		"downloader/request_count":                              3,
		"downloader/request_method_count/GET":                   3,
		"downloader/response_count":                             2,
		"downloader/response_status_count/200":                  1,
		"downloader/response_status_count/404":                  1,
		"downloader/response_ok_count":                          1,
		"downloader/exception_count":                            1,
		"downloader/exception_type_count/ResponseDataLossError": 1,
	} {
		if st[key] != want {
			t.Errorf("%s = %v, want %v", key, st[key], want)
		}
	}
	if st["item_scraped_count"] < 1 {
		t.Errorf("item_scraped_count = %v", st["item_scraped_count"])
	}
	if st["downloader/response_bytes"] < float64(len(pageHTML(0))) {
		t.Errorf("response_bytes = %v", st["downloader/response_bytes"])
	}
	for _, key := range []string{"elapsed_time_seconds", "ok_per_second", "completed_per_second", "start_time", "finish_time"} {
		if st[key] <= 0 {
			t.Errorf("%s = %v, want > 0", key, st[key])
		}
	}
	if r := st["ok_per_second"] / st["completed_per_second"]; r < 0.33 || r > 0.34 {
		t.Errorf("ok/s over completed/s = %v, want 1/3", r)
	}
}
