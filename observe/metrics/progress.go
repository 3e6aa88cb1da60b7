package metrics

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/observe/stats"
)

// Rates are the progress of a crawl over one interval, per minute.
type Rates struct {
	Pages, Items, OK, HTTP429 int64   // totals so far
	PagesPerMin, ItemsPerMin  float64 // over the last interval
	OKPerMin, HTTP429PerMin   float64
	InFlight                  int64
}

// progress computes Rates from successive readings.
type progress struct {
	rec   *Recorder
	stats *stats.Collector
	last  Rates
	at    time.Time
}

func (p *progress) read(now time.Time) Rates {
	r := Rates{
		Pages:    p.rec.responses.Load(),
		OK:       p.rec.ok.Load(),
		HTTP429:  p.rec.r429.Load(),
		InFlight: p.rec.inflight.Load(),
	}
	if p.stats != nil {
		r.Items = p.stats.Int(stats.ItemScrapedCount)
	}
	if !p.at.IsZero() {
		if mins := now.Sub(p.at).Minutes(); mins > 0 {
			r.PagesPerMin = float64(r.Pages-p.last.Pages) / mins
			r.ItemsPerMin = float64(r.Items-p.last.Items) / mins
			r.OKPerMin = float64(r.OK-p.last.OK) / mins
			r.HTTP429PerMin = float64(r.HTTP429-p.last.HTTP429) / mins
		}
	}
	p.last, p.at = r, now
	return r
}

// LogProgress logs a progress line every interval until ctx ends, timed by
// clk: pages (responses) and items so far with their rates per minute over
// the interval, ok and 429 per minute, and requests in flight. It is the
// LOGSTATS_INTERVAL reporter; interval <= 0 returns at once.
func LogProgress(ctx context.Context, clk clock.Clock, interval time.Duration, rec *Recorder, st *stats.Collector, log zerolog.Logger) {
	if interval <= 0 {
		return
	}
	p := &progress{rec: rec, stats: st}
	p.read(clk.Now())
	t := clk.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		r := p.read(clk.Now())
		t.Reset(interval)
		log.Info().
			Int64("pages", r.Pages).Float64("pages_per_min", round1(r.PagesPerMin)).
			Int64("items", r.Items).Float64("items_per_min", round1(r.ItemsPerMin)).
			Float64("ok_per_min", round1(r.OKPerMin)).Float64("http_429_per_min", round1(r.HTTP429PerMin)).
			Int64("inflight", r.InFlight).
			Msgf("Crawled %d pages (at %.0f pages/min), scraped %d items (at %.0f items/min); ok %.0f/min, 429 %.0f/min",
				r.Pages, r.PagesPerMin, r.Items, r.ItemsPerMin, r.OKPerMin, r.HTTP429PerMin)
	}
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

// Live is a one-line progress display for a terminal, redrawn in place
// ("\r" and erase-line) a few times a second. Log output written to the same
// terminal must go through Writer, which erases the line before the log
// line and redraws it after, so the two never mix. Create it with NewLive.
type Live struct {
	mu    sync.Mutex
	out   io.Writer
	line  string
	shown bool
}

// NewLive returns a display drawing on out (a terminal).
func NewLive(out io.Writer) *Live { return &Live{out: out} }

// Writer returns an io.Writer for log output to the display's terminal.
func (l *Live) Writer() io.Writer { return liveWriter{l} }

type liveWriter struct{ l *Live }

func (w liveWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	if w.l.shown {
		io.WriteString(w.l.out, "\r\x1b[K")
	}
	n, err := w.l.out.Write(p)
	if w.l.shown {
		io.WriteString(w.l.out, w.l.line+"\r")
	}
	return n, err
}

// draw replaces the line. The cursor is left at the start of the line, so
// output that does not go through Writer overwrites the display instead of
// being appended to it.
func (l *Live) draw(line string) {
	l.mu.Lock()
	l.line, l.shown = line, true
	io.WriteString(l.out, "\r\x1b[K"+line+"\r")
	l.mu.Unlock()
}

// Clear erases the line; later log output is written as is.
func (l *Live) Clear() {
	l.mu.Lock()
	if l.shown {
		io.WriteString(l.out, "\r\x1b[K")
	}
	l.shown = false
	l.mu.Unlock()
}

// Run redraws the line every refresh (clk-timed) until ctx ends, then
// clears it.
func (l *Live) Run(ctx context.Context, clk clock.Clock, refresh time.Duration, rec *Recorder, st *stats.Collector) {
	defer l.Clear()
	start := clk.Now()
	p := &progress{rec: rec, stats: st}
	// Rates over a short refresh are noisy: show them over the last 5 s.
	hist, histAt := []Rates{p.read(start)}, []time.Time{start}
	t := clk.NewTimer(refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		now := clk.Now()
		t.Reset(refresh)
		r := p.read(now)
		hist, histAt = append(hist, r), append(histAt, now)
		for len(histAt) > 1 && now.Sub(histAt[0]) > 5*time.Second {
			hist, histAt = hist[1:], histAt[1:]
		}
		var okps, p429 float64
		if d := now.Sub(histAt[0]).Seconds(); d > 0 {
			okps = float64(r.OK-hist[0].OK) / d
			p429 = float64(r.HTTP429-hist[0].HTTP429) / d
		}
		l.draw(fmt.Sprintf("%s  pages %d  items %d  ok %d (%.0f/s)  429 %d (%.1f/s)  in flight %d  scopes %d",
			now.Sub(start).Round(time.Second), r.Pages, r.Items, r.OK, okps, r.HTTP429, p429, r.InFlight, rec.nscopes.Load()))
	}
}
