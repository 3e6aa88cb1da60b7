package middleware

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/spider"
)

func TestRetry(t *testing.T) {
	timeout := &downloader.Error{Kind: errkind.DownloadTimeout, URL: "u", Err: context.DeadlineExceeded}
	tooBig := &downloader.Error{Kind: errkind.ResponseTooLarge, URL: "u", Err: errors.New("big")}
	tests := []struct {
		name        string
		set         map[string]any
		meta        map[string]any
		status      int   // answer with this status...
		err         error // ...or this error
		wantRetries int   // reschedules before the outcome
		wantStatus  int   // final response status (0: error)
		wantReason  string
		wantMax     float64
	}{
		{name: "503 retried twice then passed on", status: 503, wantRetries: 2, wantStatus: 503, wantReason: "503 Service Unavailable", wantMax: 1},
		{name: "429 is retried", status: 429, wantRetries: 2, wantStatus: 429, wantReason: "429 Too Many Requests", wantMax: 1},
		{name: "404 is not", status: 404, wantStatus: 404},
		{name: "timeout retried then the error", err: timeout, wantRetries: 2, wantReason: "DownloadTimeoutError", wantMax: 1},
		{name: "too large is not in RETRY_EXCEPTIONS", err: tooBig},
		{name: "RETRY_TIMES", set: map[string]any{"RETRY_TIMES": 5}, status: 500, wantRetries: 5, wantStatus: 500, wantReason: "500 Internal Server Error", wantMax: 1},
		{name: "max_retry_times meta", meta: map[string]any{MetaMaxRetryTimes: 1.0}, status: 500, wantRetries: 1, wantStatus: 500, wantReason: "500 Internal Server Error", wantMax: 1},
		{name: "dont_retry meta", meta: map[string]any{MetaDontRetry: true}, status: 503, wantStatus: 503},
		{name: "RETRY_ENABLED false", set: map[string]any{"RETRY_ENABLED": false}, status: 503, wantStatus: 503},
		{name: "custom codes", set: map[string]any{"RETRY_HTTP_CODES": []int{404}}, status: 404, wantRetries: 2, wantStatus: 404, wantReason: "404 Not Found", wantMax: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newCrawler(t, nil, only(tt.set, "Retry"))
			inner := FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
				if tt.err != nil {
					return nil, tt.err
				}
				return &spider.Response{URL: req.URL, Status: tt.status, Header: http.Header{}, Request: req}, nil
			})
			ch := chainFor(t, c, inner)
			req := spider.MustRequest("http://127.0.0.1/p", nil)
			req.Priority = 10
			req.Set("throttling_scopes", "api")
			for k, v := range tt.meta {
				req.Set(k, v)
			}
			res, err, seen := follow(context.Background(), ch, req, 20)
			if got := len(seen) - 1; got != tt.wantRetries {
				t.Fatalf("retries = %d, want %d", got, tt.wantRetries)
			}
			for i, r := range seen[1:] {
				n, _ := metaInt(r, spider.MetaRetryTimes)
				if n != i+1 || !r.DontFilter || r.Priority != 10-(i+1) || r.Get("throttling_scopes") != "api" {
					t.Errorf("retry %d: retry_times=%v DontFilter=%v priority=%d scopes=%v", i+1, r.Get(spider.MetaRetryTimes), r.DontFilter, r.Priority, r.Get("throttling_scopes"))
				}
			}
			switch {
			case tt.wantStatus != 0 && (err != nil || res.Status != tt.wantStatus):
				t.Errorf("outcome = %v, %v; want status %d", res, err, tt.wantStatus)
			case tt.wantStatus == 0 && err != tt.err:
				t.Errorf("error = %v, want the original %v", err, tt.err)
			}
			if got := c.Stats.Get("retry/count"); got != float64(tt.wantRetries) {
				t.Errorf("retry/count = %v", got)
			}
			if tt.wantReason != "" && c.Stats.Get("retry/reason_count/"+tt.wantReason) != float64(tt.wantRetries) {
				t.Errorf("retry/reason_count/%s = %v (stats %v)", tt.wantReason, c.Stats.Get("retry/reason_count/"+tt.wantReason), c.Stats.Snapshot())
			}
			if got := c.Stats.Get("retry/max_reached"); got != tt.wantMax {
				t.Errorf("retry/max_reached = %v, want %v", got, tt.wantMax)
			}
		})
	}
}

func TestRetryDoesNotRetryCancelled(t *testing.T) {
	c, _ := newCrawler(t, nil, only(nil, "Retry"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dlErr := &downloader.Error{Kind: errkind.DownloadFailed, URL: "u", Err: context.Canceled}
	ch := chainFor(t, c, FetcherFunc(func(context.Context, *spider.Request) (*spider.Response, error) { return nil, dlErr }))
	if _, err := ch.Fetch(ctx, spider.MustRequest("http://127.0.0.1/", nil)); err != dlErr {
		t.Errorf("error = %v, want the download error (no retry of an aborted crawl)", err)
	}
}

func TestRetryRequestForCallbacks(t *testing.T) {
	req := spider.MustRequest("http://127.0.0.1/", nil)
	c, _ := newCrawler(t, nil, nil)
	r1 := RetryRequest(req, "soft block", 1, -1, c.Stats, c.Log)
	if r1 == nil || r1.Get(spider.MetaRetryTimes) != 1 {
		t.Fatalf("first retry = %v", r1)
	}
	if r2 := RetryRequest(r1, "soft block", 1, -1, c.Stats, c.Log); r2 != nil {
		t.Fatalf("second retry allowed past max: %v", r2)
	}
	if c.Stats.Get("retry/reason_count/soft block") != 1 || c.Stats.Get("retry/max_reached") != 1 {
		t.Errorf("stats = %v", c.Stats.Snapshot())
	}
	if req.Get(spider.MetaRetryTimes) != nil {
		t.Error("the original request was modified")
	}
}

// A host's refusal by rate limit (429 or 503 with Retry-After) is not a
// failure: it is rescheduled without spending RETRY_TIMES nor lowering the
// priority, up to RETRY_REFUSED_TIMES; a status without Retry-After (or
// not a refusal status) is retried as before.
func TestRetryRefusalsDoNotSpendTheRetries(t *testing.T) {
	ra := http.Header{"Retry-After": {"2"}}
	tests := []struct {
		name string
		set  map[string]any
		// answers, in turn; the last one repeats.
		answers      []int
		headers      []http.Header
		wantRefusals int // reschedules counted as refusals
		wantRetries  int // counted against RETRY_TIMES
		wantStatus   int
		wantRefMax   float64
		wantMax      float64
	}{
		{name: "five 429s with Retry-After, then 200", answers: []int{429, 429, 429, 429, 429, 200}, headers: []http.Header{ra, ra, ra, ra, ra, nil},
			wantRefusals: 5, wantStatus: 200},
		{name: "503 with Retry-After is a refusal", answers: []int{503, 200}, headers: []http.Header{ra, nil}, wantRefusals: 1, wantStatus: 200},
		{name: "refusals and failures are counted apart", answers: []int{429, 500, 429, 500, 429, 500}, headers: []http.Header{ra, nil, ra, nil, ra, nil},
			wantRefusals: 3, wantRetries: 2, wantStatus: 500, wantMax: 1},
		{name: "a host that refuses forever ends", set: map[string]any{"RETRY_REFUSED_TIMES": 4}, answers: []int{429}, headers: []http.Header{ra},
			wantRefusals: 4, wantStatus: 429, wantRefMax: 1},
		{name: "429 without Retry-After spends the retries", answers: []int{429}, headers: []http.Header{nil}, wantRetries: 2, wantStatus: 429, wantMax: 1},
		{name: "500 with Retry-After is a failure", answers: []int{500}, headers: []http.Header{ra}, wantRetries: 2, wantStatus: 500, wantMax: 1},
		{name: "429 not in RETRY_HTTP_CODES", set: map[string]any{"RETRY_HTTP_CODES": []int{503}}, answers: []int{429}, headers: []http.Header{ra}, wantStatus: 429},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newCrawler(t, nil, only(tt.set, "Retry"))
			calls := 0
			inner := FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
				i := min(calls, len(tt.answers)-1)
				calls++
				h := http.Header{}
				if tt.headers[i] != nil {
					h = tt.headers[i].Clone()
				}
				return &spider.Response{URL: req.URL, Status: tt.answers[i], Header: h, Request: req}, nil
			})
			req := spider.MustRequest("http://127.0.0.1/p", nil)
			req.Priority = 10
			res, err, seen := follow(context.Background(), chainFor(t, c, inner), req, 50)
			if err != nil || res.Status != tt.wantStatus {
				t.Fatalf("outcome = %v, %v; want status %d", res, err, tt.wantStatus)
			}
			last := seen[len(seen)-1]
			refusals, _ := metaInt(last, MetaRetryRefusals)
			retries, _ := metaInt(last, spider.MetaRetryTimes)
			if refusals != tt.wantRefusals || retries != tt.wantRetries {
				t.Errorf("retry_refusals = %d, retry_times = %d; want %d, %d", refusals, retries, tt.wantRefusals, tt.wantRetries)
			}
			if want := 10 - tt.wantRetries; last.Priority != want {
				t.Errorf("priority = %d, want %d (only failures lower it)", last.Priority, want)
			}
			if got := c.Stats.Get("retry/refused_count"); got != float64(tt.wantRefusals) {
				t.Errorf("retry/refused_count = %v, want %d", got, tt.wantRefusals)
			}
			if got := c.Stats.Get("retry/count"); got != float64(tt.wantRetries) {
				t.Errorf("retry/count = %v, want %d", got, tt.wantRetries)
			}
			if got := c.Stats.Get("retry/refused_max_reached"); got != tt.wantRefMax {
				t.Errorf("retry/refused_max_reached = %v, want %v", got, tt.wantRefMax)
			}
			if got := c.Stats.Get("retry/max_reached"); got != tt.wantMax {
				t.Errorf("retry/max_reached = %v, want %v", got, tt.wantMax)
			}
		})
	}
}
