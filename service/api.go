package service

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gocrawl/gocrawl/observe/report"
)

// tokenCookie carries the token for the page (a browser cannot add an
// Authorization header to a navigation).
const tokenCookie = "gocrawl_serve_token"

// Handler returns the service's HTTP handler: the API under /api/, the
// page at /, Prometheus metrics at /metrics.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/jobs", s.postJob)
	mux.HandleFunc("GET /api/jobs", s.listJobs)
	mux.HandleFunc("GET /api/jobs/{id}", s.getJob)
	mux.HandleFunc("POST /api/jobs/{id}/cancel", s.cancelJob)
	mux.HandleFunc("GET /api/jobs/{id}/items", s.jobItems)
	mux.HandleFunc("GET /api/jobs/{id}/log", s.jobLog)
	mux.HandleFunc("GET /api/jobs/{id}/report", s.jobReport)
	mux.HandleFunc("GET /api/jobs/{id}/stats", s.jobStats)
	mux.HandleFunc("GET /api/spiders", s.listSpiders)
	mux.HandleFunc("POST /api/schedules", s.postSchedule)
	mux.HandleFunc("GET /api/schedules", s.listSchedules)
	mux.HandleFunc("DELETE /api/schedules/{id}", s.deleteSchedule)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.met.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /static/page.js", s.pageScript)
	return s.guard(mux)
}

// guard checks every request: the token (when set) in constant time, the
// Host of a tokenless service (a loopback name, against DNS rebinding),
// for writes the Origin (none, or the service's own) and a JSON body (a
// cross-site form cannot send one), and caps the body.
func (s *Service) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.token != nil {
			if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet && r.URL.Path == "/" {
				// The page's sign-in link: keep the token in a cookie and
				// drop it from the address bar.
				if !s.tokenOK(t) {
					unauthorized(w)
					return
				}
				http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
				http.Redirect(w, r, "/", http.StatusSeeOther)
				return
			}
			if !s.authorized(r) {
				unauthorized(w)
				return
			}
		} else if !loopbackHost(r.Host) {
			httpError(w, http.StatusForbidden, "this service has no SERVE_TOKEN and answers loopback names only (Host %q)", r.Host)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// A page of another site may post a form here (a browser
			// sends it with its Origin): only the service's own page may.
			if o := r.Header.Get("Origin"); o != "" {
				if u, err := url.Parse(o); err != nil || u.Host != r.Host {
					httpError(w, http.StatusForbidden, "cross-origin request refused (Origin %q)", o)
					return
				}
			}
			if r.ContentLength != 0 && !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				httpError(w, http.StatusUnsupportedMediaType, "send the body as JSON (Content-Type: application/json)")
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Service) tokenOK(t string) bool { return subtle.ConstantTimeCompare([]byte(t), s.token) == 1 }

func (s *Service) authorized(r *http.Request) bool {
	if h := r.Header.Get("Authorization"); h != "" {
		t, ok := strings.CutPrefix(h, "Bearer ")
		return ok && s.tokenOK(t)
	}
	if c, err := r.Cookie(tokenCookie); err == nil {
		return s.tokenOK(c.Value)
	}
	return false
}

// unauthorized answers 401 without saying what was wrong.
func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="gocrawl"`)
	httpError(w, http.StatusUnauthorized, "unauthorized")
}

func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func httpError(w http.ResponseWriter, code int, format string, a ...any) {
	writeJSON(w, code, map[string]string{"error": fmt.Sprintf(format, a...)})
}

// fail answers err: 400 for a bad request, 404, 413 for a body too large,
// 500 otherwise.
func (s *Service) fail(w http.ResponseWriter, err error) {
	var bad *BadRequest
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		httpError(w, http.StatusRequestEntityTooLarge, "request body larger than SERVE_MAX_BODY (%d bytes)", tooBig.Limit)
	case errors.As(err, &bad):
		httpError(w, http.StatusBadRequest, "%s", bad.Msg)
	case errors.Is(err, errNotFound):
		httpError(w, http.StatusNotFound, "no such job or schedule")
	default:
		s.log.Error().Err(err).Msg("API error")
		httpError(w, http.StatusInternalServerError, "internal error: %v", err)
	}
}

// jobRequest is the body of POST /api/jobs and POST /api/schedules.
// Settings values may be any JSON value; each is passed to the crawl as
// YAML (JSON is YAML), as `-s NAME=VALUE` would.
type jobRequest struct {
	Spider   string                     `json:"spider"`
	Args     map[string]string          `json:"args"`
	Settings map[string]json.RawMessage `json:"settings"`
	Cron     string                     `json:"cron"`
	Overlap  bool                       `json:"overlap"`
}

func decodeJob(r *http.Request, schedule bool) (*jobRequest, map[string]string, error) {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	var req jobRequest
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, nil, err
		}
		return nil, nil, badRequest("request body: %v (want JSON such as {\"spider\": \"follow\", \"args\": {\"start_urls\": \"https://example.com/\"}, \"settings\": {\"DOWNLOAD_DELAY\": 1}})", err)
	}
	if !schedule && (req.Cron != "" || req.Overlap) {
		return nil, nil, badRequest("cron and overlap belong to POST /api/schedules, not to a job")
	}
	sets := map[string]string{}
	for k, raw := range req.Settings {
		var str string
		if json.Unmarshal(raw, &str) == nil {
			// A JSON string is the value's YAML text, as after -s NAME=.
			sets[k] = str
			continue
		}
		sets[k] = string(raw)
	}
	return &req, sets, nil
}

func (s *Service) postJob(w http.ResponseWriter, r *http.Request) {
	req, sets, err := decodeJob(r, false)
	if err != nil {
		s.fail(w, err)
		return
	}
	j, err := s.Submit(r.Context(), req.Spider, req.Args, sets, "")
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Location", "/api/jobs/"+j.ID)
	writeJSON(w, http.StatusCreated, map[string]string{"id": j.ID})
}

func (s *Service) listJobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := JobFilter{State: State(q.Get("state")), Spider: q.Get("spider"), Schedule: q.Get("schedule")}
	if f.State != "" && !slices.Contains(States, f.State) {
		httpError(w, http.StatusBadRequest, "state %q: want one of queued, running, finished, failed, cancelled", f.State)
		return
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			httpError(w, http.StatusBadRequest, "limit %q: want a positive integer", l)
			return
		}
		f.Limit = n
	}
	jobs, err := s.db.jobs(r.Context(), f)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := make([]jobView, len(jobs))
	for i, j := range jobs {
		out[i] = s.view(j)
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out})
}

// jobView is a job as the API shows it: with its live progress while it
// runs, its final figures once it ended, and its settings redacted.
type jobView struct {
	*Job
	Progress map[string]any `json:"progress,omitempty"`
	Result   *JobResult     `json:"result,omitempty"`
	// Stopping is true once a running job was asked to cancel: the next
	// cancel aborts it.
	Stopping bool `json:"stopping,omitempty"`
}

func (s *Service) view(j *Job) jobView {
	c := *j
	c.Settings = redactedSettings(j.Settings)
	v := jobView{Job: &c, Result: s.result(j)}
	s.mu.Lock()
	p := s.running[j.ID]
	s.mu.Unlock()
	if p != nil {
		_, v.Progress = p.snapshot()
		p.mu.Lock()
		v.Stopping = p.cancels > 0
		p.mu.Unlock()
	}
	return v
}

func (s *Service) getJob(w http.ResponseWriter, r *http.Request) {
	j, err := s.db.job(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	out := struct {
		jobView
		Stats         map[string]any `json:"stats,omitempty"`
		SettingsUsed  any            `json:"settings_used,omitempty"`
		SettingsError string         `json:"settings_error,omitempty"`
	}{jobView: s.view(j)}
	out.Stats, _ = s.finalStats(j.ID)
	// The settings as the crawl sees them, with their origin (the job's
	// own -s, GOCRAWL_ variables, gocrawl.yaml, the spider).
	if entries, err := s.cfg.Jobs.Check(j.Spider, j.Args, overrides(j.Settings)); err != nil {
		out.SettingsError = err.Error()
	} else {
		out.SettingsUsed = entries
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Service) cancelJob(w http.ResponseWriter, r *http.Request) {
	j, what, err := s.Cancel(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	code := http.StatusAccepted // stopping, aborting
	switch what {
	case "cancelled":
		code = http.StatusOK
	case "ended":
		code = http.StatusConflict
	}
	writeJSON(w, code, map[string]string{"id": j.ID, "state": string(j.State), "cancel": what})
}

// ended reports whether job id has reached a final state.
func (s *Service) ended(ctx context.Context, id string) bool {
	j, err := s.db.job(ctx, id)
	return err != nil || j.State.Final()
}

// jobItems streams the job's items as JSON lines: what is written so
// far, then each new line as the crawl writes it, until the job ends.
func (s *Service) jobItems(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.db.job(r.Context(), id); err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	s.follow(w, r, filepath.Join(s.jobDir(id), itemsName), id)
}

// follow copies whole lines of path to w, flushing, until the job has
// ended and everything is copied, or the client goes away.
func (s *Service) follow(w http.ResponseWriter, r *http.Request, path, id string) {
	fl := http.NewResponseController(w)
	var off int64
	var pending []byte
	buf := make([]byte, 64<<10)
	for {
		end := s.ended(r.Context(), id) // read before the file: what it wrote before ending is there
		if f, err := os.Open(path); err == nil {
			f.Seek(off, io.SeekStart)
			for {
				n, rerr := f.Read(buf)
				off += int64(n)
				pending = append(pending, buf[:n]...)
				if i := lastNewline(pending); i >= 0 {
					if _, err := w.Write(pending[:i+1]); err != nil {
						f.Close()
						return
					}
					pending = append(pending[:0], pending[i+1:]...)
				}
				if rerr != nil {
					break
				}
			}
			f.Close()
			fl.Flush()
		}
		if end {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func lastNewline(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return i
		}
	}
	return -1
}

// jobLog returns the crawl's log (JSON lines); ?tail=N returns its last N
// lines, ?follow=1 streams it until the job ends.
func (s *Service) jobLog(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.db.job(r.Context(), id); err != nil {
		s.fail(w, err)
		return
	}
	path := filepath.Join(s.jobDir(id), logName)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.URL.Query().Get("follow") != "" {
		s.follow(w, r, path, id)
		return
	}
	n := 0
	if t := r.URL.Query().Get("tail"); t != "" {
		var err error
		if n, err = strconv.Atoi(t); err != nil || n < 1 {
			httpError(w, http.StatusBadRequest, "tail %q: want a positive number of lines", t)
			return
		}
	}
	b, err := tailFile(path, n)
	if err != nil && !os.IsNotExist(err) {
		s.fail(w, err)
		return
	}
	w.Write(b)
}

// tailFile returns the last n lines of path (all of it when n is 0),
// reading at most its last 4 MiB.
func tailFile(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	const most = 4 << 20
	start := max(0, st.Size()-most)
	b := make([]byte, st.Size()-start)
	if _, err := f.ReadAt(b, start); err != nil && err != io.EOF {
		return nil, err
	}
	if start > 0 { // drop the partial first line
		if i := strings.IndexByte(string(b), '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	if n > 0 {
		lines := 0
		for i := len(b) - 2; i >= 0; i-- {
			if b[i] == '\n' {
				lines++
				if lines == n {
					return b[i+1:], nil
				}
			}
		}
	}
	return b, nil
}

// jobReport serves the HTML report: the crawl's live report while it
// runs, the report of its stats dump once it ended.
func (s *Service) jobReport(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	j, err := s.db.job(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.mu.Lock()
	p := s.running[id]
	s.mu.Unlock()
	if p != nil {
		if live, _ := p.snapshot(); live != "" {
			target, err := url.Parse(live)
			if err == nil {
				rp := &httputil.ReverseProxy{
					Rewrite: func(pr *httputil.ProxyRequest) {
						pr.SetURL(target)
						pr.Out.URL.Path = "/"
						pr.Out.Header.Del("Authorization")
						pr.Out.Header.Del("Cookie")
					},
					// The crawl has just ended: its dump is, or will be, there.
					ErrorHandler: func(w http.ResponseWriter, r *http.Request, _ error) { s.finalReport(w, j) },
				}
				rp.ServeHTTP(w, r)
				return
			}
		}
	}
	s.finalReport(w, j)
}

// finalReport renders the report of job j's stats dump, or a page that
// says there is none yet and reloads itself.
func (s *Service) finalReport(w http.ResponseWriter, j *Job) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	d, err := report.Load(filepath.Join(s.jobDir(j.ID), statsName))
	if err != nil {
		w.Header().Set("Refresh", "3")
		fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>report</title><p>No report yet: the job is %s.</p>", j.State)
		return
	}
	report.Write(w, d, report.Options{Scopes: 50})
}

// finalStats reads the stats of the job's stats dump (written when the
// crawl ends).
func (s *Service) finalStats(id string) (map[string]any, error) {
	b, err := os.ReadFile(filepath.Join(s.jobDir(id), statsName))
	if err != nil {
		return nil, err
	}
	var dump struct {
		Stats map[string]any `json:"stats"`
	}
	if err := json.Unmarshal(b, &dump); err != nil {
		return nil, err
	}
	return dump.Stats, nil
}

// jobStats returns the job's stats: the latest progress line while it
// runs, the stats of its dump once it ended.
func (s *Service) jobStats(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	j, err := s.db.job(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	v := s.view(j)
	st, _ := s.finalStats(id)
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "state": j.State, "progress": v.Progress, "stats": st})
}

func (s *Service) listSpiders(w http.ResponseWriter, r *http.Request) {
	type sp struct {
		Name string `json:"name"`
	}
	names := s.cfg.Jobs.Spiders()
	out := make([]sp, len(names))
	for i, n := range names {
		out[i] = sp{n}
	}
	writeJSON(w, http.StatusOK, map[string]any{"spiders": out})
}

func (s *Service) postSchedule(w http.ResponseWriter, r *http.Request) {
	req, sets, err := decodeJob(r, true)
	if err != nil {
		s.fail(w, err)
		return
	}
	sc, err := s.AddSchedule(r.Context(), Schedule{Spider: req.Spider, Cron: req.Cron, Args: req.Args, Settings: sets, Overlap: req.Overlap})
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": sc.ID, "next_run": sc.NextRun})
}

func (s *Service) listSchedules(w http.ResponseWriter, r *http.Request) {
	scs, err := s.db.schedules(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	if scs == nil {
		scs = []*Schedule{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedules": redactedSchedules(scs)})
}

func (s *Service) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	if err := s.db.deleteSchedule(r.Context(), r.PathValue("id")); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
