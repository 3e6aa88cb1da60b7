package service

import (
	"embed"
	"html/template"
	"net/http"
	"strings"
	"time"
)

//go:embed web/page.html web/page.js
var webFiles embed.FS

var pageTmpl = template.Must(template.New("page.html").Funcs(template.FuncMap{
	"when": func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	},
	"at":     func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
	"live":   func(s State) bool { return !s.Final() },
	"kv":     kvText,
	"figure": figure,
}).ParseFS(webFiles, "web/page.html"))

// kvText writes a map as NAME=VALUE lines, sorted.
func kvText(m map[string]string) string {
	var b strings.Builder
	for _, k := range sortedKeys(m) {
		b.WriteString(k + "=" + m[k] + " ")
	}
	return strings.TrimSpace(b.String())
}

// figure reads one number of a progress record for the page.
func figure(p map[string]any, name string) string {
	v, ok := p[name]
	if !ok {
		return "–"
	}
	if f, ok := v.(float64); ok {
		return strings.TrimSuffix(strings.TrimRight(strings.TrimRight(formatFloat(f), "0"), "."), ".")
	}
	return "–"
}

// pageData is what the page template shows.
type pageData struct {
	Jobs      []jobView
	Schedules []*Schedule
	Spiders   []string
	MaxJobs   int
	Job       *jobView // the job of ?job=ID
}

// page renders the web page: jobs, schedules, the forms to start a job and
// add a schedule, and with ?job=ID that job's live report and log tail.
// ?part=jobs and ?part=schedules render one table alone (the page's
// script refreshes them).
func (s *Service) page(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	jobs, err := s.db.jobs(ctx, JobFilter{Limit: 100})
	if err != nil {
		s.fail(w, err)
		return
	}
	d := pageData{Spiders: s.cfg.Jobs.Spiders(), MaxJobs: s.cfg.MaxJobs}
	for _, j := range jobs {
		d.Jobs = append(d.Jobs, s.view(j))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'self'")
	if d.Schedules, err = s.db.schedules(ctx); err != nil {
		s.fail(w, err)
		return
	}
	d.Schedules = redactedSchedules(d.Schedules)
	switch part := r.URL.Query().Get("part"); part {
	case "jobs", "schedules":
		pageTmpl.ExecuteTemplate(w, part, d)
		return
	}
	if id := r.URL.Query().Get("job"); id != "" {
		if j, err := s.db.job(ctx, id); err == nil {
			v := s.view(j)
			d.Job = &v
		}
	}
	if err := pageTmpl.Execute(w, d); err != nil {
		s.log.Error().Err(err).Msg("rendering the page")
	}
}

func (s *Service) pageScript(w http.ResponseWriter, r *http.Request) {
	b, _ := webFiles.ReadFile("web/page.js")
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Write(b)
}
