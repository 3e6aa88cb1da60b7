package metrics

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func req(t *testing.T, raw string) *spider.Request {
	t.Helper()
	r, err := spider.NewRequest(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func scopesOf(names ...string) throttling.Scopes {
	var s throttling.Scopes
	for _, n := range names {
		s = throttling.AddScope(s, n, 0)
	}
	return s
}

func TestRecorderTaxonomy(t *testing.T) {
	clk := clock.NewFake(t0)
	rec := NewRecorder(RecorderOptions{Clock: clk, BackoffCodes: []int{429, 503}})
	rec.Begin(t0)
	a, b := scopesOf("a.example"), scopesOf("b.example")
	timeout := &downloader.Error{Kind: errkind.DownloadTimeout, URL: "http://a.example/", Err: context.DeadlineExceeded}
	reset := &downloader.Error{Kind: errkind.DownloadFailed, URL: "http://a.example/", Err: fmt.Errorf("connection reset")}
	type step struct {
		scopes throttling.Scopes
		status int   // 0: err
		err    error // when status == 0
		retry  int
	}
	steps := []step{
		{a, 200, nil, 0}, {a, 200, nil, 0}, {a, 429, nil, 0}, {a, 429, nil, 1}, {a, 404, nil, 0}, {a, 503, nil, 0},
		{a, 0, timeout, 0}, {a, 0, reset, 2}, {a, 0, context.Canceled, 0}, {a, 301, nil, 0},
		{b, 200, nil, 0},
	}
	for i, s := range steps {
		r := req(t, fmt.Sprintf("http://%s/%d", s.scopes[0].Name, i))
		if s.retry > 0 {
			r.Set(spider.MetaRetryTimes, s.retry)
		}
		clk.Advance(10 * time.Millisecond)
		rec.RequestStarted(clk.Now(), r, s.scopes)
		clk.Advance(5 * time.Millisecond)
		var res *spider.Response
		if s.status != 0 {
			res = &spider.Response{Status: s.status, Request: r}
		}
		rec.RequestFinished(clk.Now(), r, s.scopes, res, s.err)
	}
	rec.End(clk.Now())
	snap := rec.Snapshot(nil)
	sa, ok := snap.Scope("a.example")
	if !ok {
		t.Fatal("no snapshot of scope a.example")
	}
	want := Counts{Requests: 10, Retries: 2, Responses: 7, OK: 2, HTTP429: 2, OtherErrors: 2, Timeouts: 1, NetworkErrors: 1, Cancelled: 1, PeakInFlight: 1}
	got := sa.Counts
	got.Statuses, got.First, got.Last, got.Seconds, got.OKPerSecond, got.CompletedPerSecond = nil, time.Time{}, time.Time{}, 0, 0, 0
	got.MaxStarts1s, got.MaxStarts100ms, got.StartsFirst500ms = 0, 0, 0
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scope a:\n got %+v\nwant %+v", got, want)
	}
	if snap.Global.Requests != 11 || snap.Global.OK != 3 || snap.Global.Retries != 2 || snap.Global.Completed() != 10 {
		t.Errorf("global = %+v", snap.Global)
	}
	if snap.ErrorKinds["DownloadTimeoutError"] != 1 || snap.ErrorKinds["DownloadFailedError"] != 1 || len(snap.ErrorKinds) != 2 {
		t.Errorf("error kinds = %v", snap.ErrorKinds)
	}
	if sa.Statuses[429] != 2 || sa.Statuses[301] != 1 {
		t.Errorf("statuses = %v", sa.Statuses)
	}
	if snap.Scopes[0].Scope != "a.example" || snap.Scopes[1].Scope != "b.example" {
		t.Errorf("scopes not sorted by requests: %v, %v", snap.Scopes[0].Scope, snap.Scopes[1].Scope)
	}
	// a: first start at +10ms, last finish at 10*15ms = +150ms: 140 ms.
	if d := sa.Seconds; d < 0.139 || d > 0.141 {
		t.Errorf("scope seconds = %v, want 0.14", d)
	}
	if got, want := sa.OKPerSecond, 2/sa.Seconds; got != want {
		t.Errorf("ok/s = %v, want %v", got, want)
	}
	if got, want := snap.Global.Seconds, (11 * 15 * time.Millisecond).Seconds(); got != want {
		t.Errorf("global seconds = %v, want %v", got, want)
	}
	// Backoff: triggers at the two 429s, the 503, the timeout and the
	// reset; each pause lasts until the next start of the scope: 10 ms.
	if got := sa.BackoffSeconds; got < 0.0499 || got > 0.0501 {
		t.Errorf("backoff = %v s, want 0.05", got)
	}
}

func TestRecorderInFlightAndStartRate(t *testing.T) {
	clk := clock.NewFake(t0)
	rec := NewRecorder(RecorderOptions{Clock: clk})
	sc := scopesOf("h.example")
	var reqs []*spider.Request
	// A burst of 20 starts in the first 50 ms, then one every 200 ms.
	for i := range 20 {
		r := req(t, fmt.Sprintf("http://h.example/%d", i))
		reqs = append(reqs, r)
		rec.RequestStarted(t0.Add(time.Duration(i)*2500*time.Microsecond), r, sc)
	}
	snap := rec.Snapshot(nil)
	if snap.Global.InFlight != 20 || snap.Global.PeakInFlight != 20 {
		t.Errorf("inflight=%d peak=%d, want 20 20", snap.Global.InFlight, snap.Global.PeakInFlight)
	}
	for _, r := range reqs {
		rec.RequestFinished(t0.Add(100*time.Millisecond), r, sc, &spider.Response{Status: 200}, nil)
	}
	for i := range 10 {
		r := req(t, fmt.Sprintf("http://h.example/late/%d", i))
		at := t0.Add(200*time.Millisecond + time.Duration(i)*200*time.Millisecond)
		rec.RequestStarted(at, r, sc)
		rec.RequestFinished(at.Add(time.Millisecond), r, sc, &spider.Response{Status: 200}, nil)
	}
	snap = rec.Snapshot(nil)
	h, _ := snap.Scope("h.example")
	for name, c := range map[string]Counts{"global": snap.Global, "scope": h.Counts} {
		if c.InFlight != 0 || c.PeakInFlight != 20 {
			t.Errorf("%s: inflight=%d peak=%d, want 0 20", name, c.InFlight, c.PeakInFlight)
		}
		// 20 in the burst + starts at 200 and 400 ms.
		if c.StartsFirst500ms != 22 || c.MaxStarts100ms != 20 {
			t.Errorf("%s: first500=%d max100ms=%d, want 22 20", name, c.StartsFirst500ms, c.MaxStarts100ms)
		}
		// Worst second: [0, 1s) holds 20 + starts at 200..800 ms = 24.
		if c.MaxStarts1s != 24 {
			t.Errorf("%s: max1s=%d, want 24", name, c.MaxStarts1s)
		}
	}
}

// A request with several scopes (host and a custom scope) counts in each.
func TestRecorderSeveralScopes(t *testing.T) {
	rec := NewRecorder(RecorderOptions{Clock: clock.NewFake(t0)})
	r := req(t, "http://h.example/")
	sc := scopesOf("h.example", "api-cost")
	rec.RequestStarted(t0, r, sc)
	rec.RequestFinished(t0.Add(time.Second), r, sc, &spider.Response{Status: 200}, nil)
	rec.RequestStarted(t0, req(t, "http://noscope.example/"), nil)
	snap := rec.Snapshot(nil)
	if len(snap.Scopes) != 3 || snap.Global.Requests != 2 {
		t.Fatalf("scopes=%d requests=%d, want 3 2", len(snap.Scopes), snap.Global.Requests)
	}
	for _, n := range []string{"h.example", "api-cost"} {
		if s, _ := snap.Scope(n); s.OK != 1 {
			t.Errorf("%s: ok=%d, want 1", n, s.OK)
		}
	}
	if s, ok := snap.Scope("noscope.example"); !ok || s.InFlight != 1 {
		t.Errorf("a request without scopes is not measured under its host: %+v", s)
	}
}

type fakeStates []throttling.ScopeSnapshot

func (f fakeStates) Snapshot() []throttling.ScopeSnapshot { return f }

func sampleSnapshot(t *testing.T) (*Recorder, Snapshot) {
	clk := clock.NewFake(t0)
	rec := NewRecorder(RecorderOptions{Clock: clk, BackoffCodes: []int{429}})
	rec.Begin(t0)
	for i := range 30 {
		host := "big.example"
		if i%3 == 0 {
			host = "small.example"
		}
		status := 200
		if i%5 == 0 {
			status = 429
		}
		r := req(t, fmt.Sprintf("http://%s/%d", host, i))
		clk.Advance(100 * time.Millisecond)
		rec.RequestStarted(clk.Now(), r, scopesOf(host))
		clk.Advance(50 * time.Millisecond)
		rec.RequestFinished(clk.Now(), r, scopesOf(host), &spider.Response{Status: status}, nil)
	}
	rec.End(clk.Now())
	return rec, rec.Snapshot(fakeStates{{Scope: "big.example", Delay: 2.5, BackoffLevel: 3}})
}

func TestWriteStats(t *testing.T) {
	_, snap := sampleSnapshot(t)
	st := stats.New()
	WriteStats(st, snap, 1)
	want := map[string]float64{
		"metrics/requests":                        30,
		"metrics/ok":                              24,
		"metrics/http_429":                        6,
		"metrics/scopes":                          2,
		"metrics/peak_inflight":                   1,
		"metrics/scope/big.example/requests":      20,
		"metrics/scope/big.example/http_429":      4,
		"metrics/admissions_per_second":           30 / 4.5,
		"metrics/scope/big.example/ok_per_second": 16 / snap.Scopes[0].Seconds,
	}
	for k, v := range want {
		if got := st.Get(k); got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	for _, k := range st.Keys() {
		if strings.Contains(k, "small.example") {
			t.Errorf("scope past the limit written: %s", k)
		}
	}
	if snap.Scopes[0].Delay != 2500*time.Millisecond || snap.Scopes[0].BackoffLevel != 3 {
		t.Errorf("throttler state not applied: %+v", snap.Scopes[0])
	}
}

func TestWriteDump(t *testing.T) {
	_, snap := sampleSnapshot(t)
	path := filepath.Join(t.TempDir(), "stats.json")
	st := stats.New()
	WriteStats(st, snap, 0)
	if err := WriteDump(path, Dump{Reason: "finished", Stats: st.Snapshot(), Metrics: snap}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back Dump
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("stats JSON does not parse: %v", err)
	}
	if back.Reason != "finished" || back.Stats["metrics/ok"] != 24 || len(back.Metrics.Scopes) != 2 || back.Metrics.Global.HTTP429 != 6 {
		t.Errorf("round trip lost data: reason=%q ok=%v scopes=%d", back.Reason, back.Stats["metrics/ok"], len(back.Metrics.Scopes))
	}
	f, err := os.Open(filepath.Join(filepath.Dir(path), "stats.scopes.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0][0] != "scope" || rows[1][0] != "big.example" || rows[2][0] != "small.example" {
		t.Fatalf("csv rows = %v", rows)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	if rows[1][col["requests"]] != "20" || rows[1][col["http_429"]] != "4" || rows[1][col["delay_seconds"]] != "2.5" || rows[1][col["backoff_level"]] != "3" {
		t.Errorf("big.example row = %v", rows[1])
	}
	// A missing folder is created; a path under a file is an error.
	if err := WriteDump(filepath.Join(t.TempDir(), "missing-dir", "x.json"), Dump{}); err != nil {
		t.Errorf("writing into a missing folder: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	if err := WriteDump(filepath.Join(file, "x.json"), Dump{}); err == nil || !strings.Contains(err.Error(), "STATS_DUMP_FILE") {
		t.Errorf("writing under a file: err = %v, want an error naming STATS_DUMP_FILE", err)
	}
}

func TestWriteSummary(t *testing.T) {
	_, snap := sampleSnapshot(t)
	var buf bytes.Buffer
	if err := WriteSummary(&buf, snap, 1); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("summary has %d lines, want header, (all), big.example, 'more scopes':\n%s", len(lines), out)
	}
	for i, want := range []string{"requests", "(all)", "big.example", "1 more scopes"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %q, want it to contain %q", i, lines[i], want)
		}
	}
	if f := strings.Fields(lines[2]); f[1] != "20" || f[2] != "16" || f[3] != "4" {
		t.Errorf("big.example line = %q, want requests 20, ok 16, 429 4", lines[2])
	}
}

// Snapshots taken while requests keep bringing new scopes see every scope
// recorded before them, and neither blocks the other (run with -race).
func TestRecorderSnapshotWhileScopesArrive(t *testing.T) {
	rec := NewRecorder(RecorderOptions{Clock: clock.NewFake(t0)})
	rec.Begin(t0)
	const workers, perWorker = 3, 300
	done := make(chan struct{})
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range perWorker {
				sc := scopesOf(fmt.Sprintf("h%d-%d.example", w, i))
				r := req(t, "http://"+sc[0].Name+"/")
				rec.RequestStarted(t0, r, sc)
				rec.RequestFinished(t0, r, sc, &spider.Response{Status: 200, Request: r}, nil)
			}
		}()
	}
	for finished, last := 0, 0; finished < workers; {
		select {
		case <-done:
			finished++
		default:
		}
		n := len(rec.Snapshot(nil).Scopes)
		if n < last {
			t.Fatalf("a snapshot has %d scopes, the one before %d", n, last)
		}
		last = n
	}
	snap := rec.Snapshot(nil)
	if len(snap.Scopes) != workers*perWorker {
		t.Fatalf("%d scopes, want %d", len(snap.Scopes), workers*perWorker)
	}
	for _, s := range snap.Scopes {
		if s.Requests != 1 || s.OK != 1 {
			t.Fatalf("scope %s: %d requests, %d ok; want 1 and 1", s.Scope, s.Requests, s.OK)
		}
	}
}
