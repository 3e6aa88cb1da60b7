package throttling

import (
	"context"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

// TestGateGiveBack: a request that never reached the server gives its turn
// back only while it is the scope's last send, and only once, so the next
// request is never earlier than the delay after a send that did reach it.
func TestGateGiveBack(t *testing.T) {
	const d = 10 * time.Second
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type send struct {
		at     time.Time
		amount float64
	}
	tests := []struct {
		name      string
		sends     []send
		giveBack  []int // indexes into sends, in order
		wantNext  time.Time
		wantQuota float64
	}{
		{"the only send given back: no delay at all",
			[]send{{at(0), 1}}, []int{0}, time.Time{}, 0},
		{"the last send given back: the delay runs from the one before",
			[]send{{at(0), 1}, {at(10), 1}}, []int{1}, at(10), 1},
		{"a send followed by another is not given back",
			[]send{{at(0), 1}, {at(10), 1}}, []int{0}, at(20), 2},
		{"two turns in a row: only the last comes back",
			[]send{{at(0), 1}, {at(10), 1}, {at(20), 1}}, []int{2, 1}, at(20), 2},
		{"a given-back turn is not given back twice",
			[]send{{at(0), 1}, {at(10), 1}}, []int{1, 1}, at(10), 1},
		{"the quota amount comes back with the turn",
			[]send{{at(0), 2}, {at(10), 5}}, []int{1}, at(10), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := Gate{Params: GateParams{Delay: d, Quota: 100, Window: time.Hour}}
			for _, s := range tt.sends {
				g.RecordSent(s.at, s.amount, 0.5)
			}
			for _, i := range tt.giveBack {
				g.GiveBack(tt.sends[i].at, tt.sends[i].amount)
			}
			if got := g.NextByDelay(); !got.Equal(tt.wantNext) {
				t.Errorf("next send by delay at %v, want %v", got.Sub(t0), tt.wantNext.Sub(t0))
			}
			if g.State.QuotaUsed != tt.wantQuota {
				t.Errorf("quota used %v, want %v", g.State.QuotaUsed, tt.wantQuota)
			}
		})
	}
}

// TestThrottlerNotSentKeepsCrawlDelay is the robots.txt case end to end on
// the throttler: on a scope with a 10 s delay and concurrency 1, URLs
// dropped before they reach the server (NotSent) cost no delay, while a
// request that was answered keeps it.
func TestThrottlerNotSentKeepsCrawlDelay(t *testing.T) {
	thr, clk := newTestThrottler(t, "DOWNLOAD_DELAY", 10.0, "CONCURRENT_REQUESTS_PER_DOMAIN", 1)
	req := spider.MustRequest("http://h.test/", nil)
	okResponse := func(req *spider.Request) *spider.Response {
		return &spider.Response{URL: req.URL, Status: 200, Request: req}
	}
	sc := Scopes{{Name: "h.test", Amount: 1}}
	ctx := context.Background()
	admit := func() time.Time {
		t.Helper()
		if w := thr.Wait(clk.Now(), sc); w != 0 {
			t.Fatalf("at +%v: must wait %v, want to send now", clk.Now().Sub(t0), w)
		}
		thr.Sent(clk.Now(), sc)
		return clk.Now()
	}
	sent := admit()
	thr.Done(ctx, req, sc, sent, okResponse(req), nil)
	clk.Advance(10 * time.Second)
	for range 3 { // three disallowed URLs in a row, each sent and dropped at once
		thr.NotSent(ctx, req, sc, admit())
	}
	if w := thr.Wait(clk.Now(), sc); w != 0 {
		t.Fatalf("after three URLs that never reached the server: wait %v, want none", w)
	}
	sent = admit()
	thr.Done(ctx, req, sc, sent, okResponse(req), nil)
	if w := thr.Wait(clk.Now(), sc); w != 10*time.Second {
		t.Fatalf("after an answered request: wait %v, want the 10s delay", w)
	}
}
