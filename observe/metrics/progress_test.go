package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/devtools/syncbuf"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/spider"
)

// lines is an io.Writer that hands every write to the test.
type lines chan string

func (l lines) Write(p []byte) (int, error) { l <- string(p); return len(p), nil }

// waitTimer returns when the reporter has armed its timer.
func waitTimer(clk *clock.Fake) {
	for clk.Pending() == 0 {
		runtime.Gosched()
	}
}

func respond(t *testing.T, rec *Recorder, at time.Time, n, status int) {
	for i := range n {
		r := req(t, fmt.Sprintf("http://h.example/%d-%d", status, i))
		rec.RequestStarted(at, r, scopesOf("h.example"))
		rec.RequestFinished(at, r, scopesOf("h.example"), &spider.Response{Status: status}, nil)
	}
}

func TestLogProgress(t *testing.T) {
	clk := clock.NewFake(t0)
	rec := NewRecorder(RecorderOptions{Clock: clk})
	st := stats.New()
	out := make(lines, 4)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		LogProgress(ctx, clk, 30*time.Second, rec, st, zerolog.New(out))
		close(done)
	}()
	waitTimer(clk)
	// First interval (30 s): 40 ok, 10 429, 25 items.
	respond(t, rec, clk.Now(), 40, 200)
	respond(t, rec, clk.Now(), 10, 429)
	st.Inc(stats.ItemScrapedCount, 25)
	clk.Advance(30 * time.Second)
	var ev map[string]any
	if err := json.Unmarshal([]byte(<-out), &ev); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"pages": 50, "pages_per_min": 100, "items": 25, "items_per_min": 50, "ok_per_min": 80, "http_429_per_min": 20, "inflight": 0}
	for k, v := range want {
		if ev[k] != v {
			t.Errorf("%s = %v, want %v (line %v)", k, ev[k], v, ev)
		}
	}
	if msg, _ := ev["message"].(string); !strings.Contains(msg, "Crawled 50 pages (at 100 pages/min)") {
		t.Errorf("message = %q", msg)
	}
	// Second interval: rates are over the interval only.
	waitTimer(clk)
	respond(t, rec, clk.Now(), 15, 200)
	clk.Advance(30 * time.Second)
	if err := json.Unmarshal([]byte(<-out), &ev); err != nil {
		t.Fatal(err)
	}
	if ev["pages"] != 65.0 || ev["ok_per_min"] != 30.0 || ev["http_429_per_min"] != 0.0 {
		t.Errorf("second line: %v", ev)
	}
	cancel()
	<-done

	// Interval 0: no reporter at all.
	LogProgress(t.Context(), clk, 0, rec, st, zerolog.New(out))
}

func TestLiveDisplay(t *testing.T) {
	clk := clock.NewFake(t0)
	rec := NewRecorder(RecorderOptions{Clock: clk})
	var term syncbuf.Buffer
	live := NewLive(&term)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		live.Run(ctx, clk, time.Second, rec, nil)
		close(done)
	}()
	waitTimer(clk)
	respond(t, rec, clk.Now(), 12, 200)
	respond(t, rec, clk.Now(), 3, 429)
	clk.Advance(time.Second)
	waitTimer(clk) // redrawn and re-armed
	for !strings.Contains(term.String(), "pages 15") {
		runtime.Gosched()
	}
	// A log line written through Writer erases the display first and
	// redraws it after.
	fmt.Fprintln(live.Writer(), "a log line")
	cancel()
	<-done
	got := term.String()
	want := "\r\x1b[K1s  pages 15  items 0  ok 12 (12/s)  429 3 (3.0/s)  in flight 0  scopes 1\r" +
		"\r\x1b[Ka log line\n1s  pages 15  items 0  ok 12 (12/s)  429 3 (3.0/s)  in flight 0  scopes 1\r" +
		"\r\x1b[K"
	if got != want {
		t.Errorf("terminal got\n%q\nwant\n%q", got, want)
	}
}
