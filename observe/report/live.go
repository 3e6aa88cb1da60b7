package report

import (
	"bytes"
	"net/http"
	"time"
)

// Handler serves the live report of a running crawl: each GET renders the
// page from data() (the crawl's stats, measurements and series as of now),
// marked live so that it refreshes itself every refresh (at least 1 s).
// metrics.Monitor mounts it at "/" of METRICS_ADDR, beside /metrics.
func Handler(data func() *Data, opts Options, refresh time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		d := data()
		d.Live, d.Refresh = true, max(refresh, time.Second)
		var buf bytes.Buffer
		if err := Write(&buf, d, opts); err != nil {
			http.Error(w, "rendering the report: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(buf.Bytes())
	})
}
