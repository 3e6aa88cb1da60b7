package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/settings"
)

// hook is a local webhook receiver: every body it gets.
func hook(t *testing.T, status int) (string, <-chan Results) {
	t.Helper()
	got := make(chan Results, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("webhook got %s with Content-Type %q", r.Method, r.Header.Get("Content-Type"))
		}
		var res Results
		if err := json.Unmarshal(b, &res); err != nil {
			t.Errorf("webhook body %s: %v", b, err)
		}
		got <- res
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hooks/secret-token", got
}

// waitTimer waits until the monitor's loop waits on its timer.
func waitTimer(fake *clock.Fake) {
	for fake.Pending() == 0 {
		runtime.Gosched()
	}
}

func names(r Results) []string {
	var out []string
	for _, f := range r.Failures {
		out = append(out, f.Monitor)
	}
	return out
}

// The runs during the crawl happen every Interval of the crawl's clock,
// write the results file each time and call the webhook when the set of
// failing monitors changes; the final run always calls it.
func TestPeriodicRuns(t *testing.T) {
	fake := clock.NewFake(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	url, hooks := hook(t, http.StatusNoContent)
	file := filepath.Join(t.TempDir(), "monitors.json")
	col := stats.New()
	m := New(Options{
		Checks:   []Check{MinItems{Min: 5}, MaxDuration{Max: 25 * time.Second}, MaxErrorShare(0.1, 10)},
		Interval: 10 * time.Second, ResultsFile: file, WebhookURL: url, Clock: fake, Spider: "books",
	})
	runs := make(chan Results, 1)
	m.afterRun = func(r Results) { runs <- r }
	ctx := context.Background()
	m.Start(ctx, col)

	step := func(stat map[string]float64) Results {
		t.Helper()
		for k, v := range stat {
			col.Set(k, v)
		}
		waitTimer(fake)
		fake.Advance(10 * time.Second)
		r := <-runs
		onDisk, err := ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !onDisk.CheckedAt.Equal(r.CheckedAt) || onDisk.OK != r.OK || len(onDisk.Checks) != 3 {
			t.Errorf("results file %+v, run %+v", onDisk, r)
		}
		return r
	}
	// 10 s: 1 item (min_items waits for the end), 2 requests (below the sample).
	r := step(map[string]float64{"item_scraped_count": 1, "downloader/request_count": 2, "downloader/exception_count": 2})
	if !r.OK || r.Final || r.Spider != "books" || !r.CheckedAt.Equal(fake.Now()) {
		t.Errorf("first run: %+v", r)
	}
	// 20 s: 20 requests, 5 failed: max_error_share fails, webhook called.
	r = step(map[string]float64{"downloader/request_count": 20, "downloader/exception_count": 5})
	if !slices.Equal(names(r), []string{"max_error_share"}) {
		t.Fatalf("second run failures %v", r.Failures)
	}
	if h := <-hooks; !slices.Equal(names(h), []string{"max_error_share"}) || h.Final {
		t.Errorf("webhook got %+v", h)
	}
	// 30 s: same failure plus the duration: the set changed, webhook again.
	r = step(nil)
	if want := []string{"max_duration", "max_error_share"}; !slices.Equal(names(r), want) {
		t.Fatalf("third run failures %v, want %v", names(r), want)
	}
	if h := <-hooks; len(h.Failures) != 2 {
		t.Errorf("webhook got %+v", h)
	}
	// 40 s: the same set: no webhook call (checked below: the next body
	// received is the final one).
	step(nil)

	final := m.Finish(ctx, "finished", col.Snapshot(), 41*time.Second)
	if final.OK || !final.Final || !slices.Equal(names(final), []string{"min_items", "max_duration", "max_error_share"}) {
		t.Errorf("final: %+v", final)
	}
	if h := <-hooks; !h.Final {
		t.Errorf("the webhook call after the third run is not the final one: %+v", h)
	}
	if err := final.Err(); !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "min_items: 1 items, fewer than MONITOR_MIN_ITEMS 5") {
		t.Errorf("Err() = %v", err)
	}
	if fake.Pending() != 0 {
		t.Errorf("%d timers left after Finish", fake.Pending())
	}
	onDisk, err := ReadFile(file)
	if err != nil || !onDisk.Final || onDisk.OK {
		t.Errorf("final results file %+v %v", onDisk, err)
	}
}

// The results file has the shape the crawl service reads.
func TestResultsFileShape(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sub", "monitors.json")
	m := New(Options{Checks: []Check{MinItems{Min: 100}}, ResultsFile: file, Clock: clock.NewFake(time.Date(2026, 5, 1, 10, 0, 0, 500, time.UTC))})
	m.Finish(context.Background(), "finished", map[string]float64{"item_scraped_count": 12}, time.Second)
	var raw map[string]any
	b := mustRead(t, file)
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"ok": false, "final": true, "checked_at": "2026-05-01T10:00:00Z",
		"failures": []any{map[string]any{"monitor": "min_items", "reason": "12 items, fewer than MONITOR_MIN_ITEMS 100"}},
		"checks":   []any{map[string]any{"monitor": "min_items", "ok": false, "detail": "12 items, fewer than MONITOR_MIN_ITEMS 100"}},
	}
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(raw)
	if string(wb) != string(gb) {
		t.Errorf("got  %s\nwant %s", gb, wb)
	}
	// Passing: failures is an empty list, not null.
	m = New(Options{Checks: []Check{MinItems{Min: 1}}, ResultsFile: file})
	m.Finish(context.Background(), "finished", map[string]float64{"item_scraped_count": 12}, time.Second)
	if b := mustRead(t, file); !strings.Contains(string(b), `"failures": []`) || !strings.Contains(string(b), `"ok": true`) {
		t.Errorf("passing results: %s", b)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	r, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	return b
}

// A webhook that fails is logged, naming its host but not its path (which
// often holds the secret), and changes nothing else.
func TestWebhookFailureIsLogged(t *testing.T) {
	url, hooks := hook(t, http.StatusInternalServerError)
	var log strings.Builder
	m := New(Options{Checks: []Check{MinItems{Min: 1}}, WebhookURL: url, Log: zerolog.New(&log)})
	r := m.Finish(context.Background(), "finished", nil, 0)
	<-hooks
	if r.OK || !strings.Contains(log.String(), "answered 500 Internal Server Error") || strings.Contains(log.String(), "secret-token") {
		t.Errorf("ok=%v log: %s", r.OK, log.String())
	}
	log.Reset()
	m = New(Options{Checks: []Check{MinItems{Min: 1}}, WebhookURL: "http://127.0.0.1:1/hooks/secret-token", Log: zerolog.New(&log)})
	m.Finish(context.Background(), "finished", nil, 0)
	if !strings.Contains(log.String(), "webhook http://127.0.0.1:1") || strings.Contains(log.String(), "secret-token") {
		t.Errorf("log: %s", log.String())
	}
}

// A panicking check fails alone; a nil Monitor does nothing.
func TestPanicAndNil(t *testing.T) {
	m := New(Options{Checks: []Check{NewCheck("boom", func(context.Context, Snapshot) Outcome { panic("oops") }), MinItems{Min: 0}}})
	r := m.Finish(context.Background(), "finished", nil, 0)
	if r.OK || len(r.Checks) != 2 || r.Failures[0].Reason != "the check panicked: oops" || !r.Checks[1].OK {
		t.Errorf("%+v", r)
	}
	var none *Monitor
	none.Start(context.Background(), stats.New())
	if r := none.Finish(context.Background(), "finished", nil, 0); !r.OK || none.Pipelines() != nil || none.ResultsFile() != "" {
		t.Errorf("nil monitor: %+v", r)
	}
	none.Stop()
}

func load(t *testing.T, kv map[string]any) (*settings.Settings, error) {
	t.Helper()
	s := settings.New()
	for k, v := range kv {
		if err := s.Set(k, v, settings.SourceCommandLine, ""); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func TestFromSettings(t *testing.T) {
	schema := writeSchema(t, bookSchema)
	for _, tc := range []struct {
		name    string
		set     map[string]any
		checks  []string
		file    string
		wantErr string
	}{
		{"nothing configured", nil, nil, "", ""},
		{"interval alone configures nothing", map[string]any{"MONITOR_INTERVAL": 5}, nil, "", ""},
		{"thresholds", map[string]any{"MONITOR_MIN_ITEMS": 10, "MONITOR_MAX_ERROR_SHARE": 0.05, "MONITOR_MAX_429_SHARE": "2%", "MONITOR_MAX_DROP_SHARE": 0, "MONITOR_MAX_DURATION": 60},
			[]string{"min_items", "max_error_share", "max_429_share", "max_drop_share", "max_duration"}, "", ""},
		{"schema and struct, JOBDIR", map[string]any{"MONITOR_ITEM_SCHEMA": schema, "MONITOR_ITEM_STRUCT": true, "JOBDIR": "/tmp/job"},
			[]string{"item_validation"}, "/tmp/job/monitors.json", ""},
		{"explicit results file", map[string]any{"MONITOR_MIN_ITEMS": 1, "JOBDIR": "/tmp/job", "MONITOR_RESULTS_FILE": "/tmp/r.json"},
			[]string{"min_items"}, "/tmp/r.json", ""},
		{"disabled", map[string]any{"MONITOR_MIN_ITEMS": 1, "MONITOR_ENABLED": false}, nil, "", ""},
		{"bad schema", map[string]any{"MONITOR_ITEM_SCHEMA": filepath.Join(t.TempDir(), "none.json")}, nil, "", "MONITOR_ITEM_SCHEMA"},
		{"share above 1", map[string]any{"MONITOR_MAX_ERROR_SHARE": 1.5}, nil, "", "1.5 is not a share between 0 and 1"},
		{"bad percentage", map[string]any{"MONITOR_MAX_429_SHARE": "five%"}, nil, "", `"five%" is not a percentage`},
		{"negative minimum", map[string]any{"MONITOR_MIN_ITEMS": -1}, nil, "", "-1 is negative"},
		{"bad webhook (a secret: its value is not shown)", map[string]any{"MONITOR_WEBHOOK_URL": "hooks.example.com/x"}, nil, "", "MONITOR_WEBHOOK_URL: the value is not a valid http or https URL (not shown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := load(t, tc.set)
			var m *Monitor
			if err == nil {
				if err = settings.Validate(s); err == nil {
					m, err = FromSettings(s, nil, zerolog.Nop(), nil, "books")
				}
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range m.Checks() {
				got = append(got, c.Name())
			}
			if !slices.Equal(got, tc.checks) || m.ResultsFile() != tc.file {
				t.Errorf("checks %v file %q, want %v %q", got, m.ResultsFile(), tc.checks, tc.file)
			}
			if (m.Pipelines() != nil) != slices.Contains(tc.checks, "item_validation") {
				t.Errorf("pipelines %v", m.Pipelines())
			}
		})
	}
}

// A spider's own checks run after those of the settings, even when the
// settings configure none.
func TestFromSettingsExtra(t *testing.T) {
	s, _ := load(t, nil)
	m, err := FromSettings(s, []Check{MinItems{Min: 3}}, zerolog.Nop(), nil, "books")
	if err != nil || len(m.Checks()) != 1 {
		t.Fatalf("%v %v", m.Checks(), err)
	}
}

// The results of an earlier crawl are removed when a crawl starts.
func TestStartRemovesOldResults(t *testing.T) {
	file := filepath.Join(t.TempDir(), "monitors.json")
	if err := (Results{OK: false, Final: true}).WriteFile(file); err != nil {
		t.Fatal(err)
	}
	m := New(Options{Checks: []Check{MinItems{Min: 1}}, ResultsFile: file})
	m.Start(context.Background(), stats.New())
	if _, err := ReadFile(file); err == nil {
		t.Fatal("the old results file is still there")
	}
	if r := m.Finish(context.Background(), "finished", map[string]float64{"item_scraped_count": 1}, 0); !r.OK {
		t.Errorf("%+v", r)
	}
	if r, err := ReadFile(file); err != nil || !r.OK {
		t.Errorf("%+v %v", r, err)
	}
}

// A failure that went away and comes back alerts again.
func TestWebhookAfterRecovery(t *testing.T) {
	url, hooks := hook(t, http.StatusOK)
	m := New(Options{Checks: []Check{MaxErrorShare(0.1, 0)}, WebhookURL: url})
	bad := Snapshot{Stats: map[string]float64{"downloader/request_count": 10, "downloader/exception_count": 5}}
	good := Snapshot{Stats: map[string]float64{"downloader/request_count": 100, "downloader/exception_count": 5}}
	ctx := context.Background()
	var calls []bool
	for _, s := range []Snapshot{bad, bad, good, bad} {
		m.Run(ctx, s)
		select {
		case <-hooks:
			calls = append(calls, true)
		default:
			calls = append(calls, false)
		}
	}
	if want := []bool{true, false, false, true}; !slices.Equal(calls, want) {
		t.Errorf("webhook calls %v, want %v", calls, want)
	}
}
