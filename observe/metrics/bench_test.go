package metrics

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// BenchmarkRecorder measures one request's observer calls (RequestStarted
// then RequestFinished) from parallel goroutines, over one hot scope or
// spread over 1,000 scopes.
func BenchmarkRecorder(b *testing.B) {
	for _, nscopes := range []int{1, 1000} {
		b.Run(fmt.Sprintf("scopes=%d", nscopes), func(b *testing.B) {
			rec := NewRecorder(RecorderOptions{BackoffCodes: []int{429}})
			reqs := make([]*spider.Request, nscopes)
			scopes := make([]throttling.Scopes, nscopes)
			for i := range nscopes {
				host := fmt.Sprintf("h%d.example", i)
				reqs[i] = spider.MustRequest("http://"+host+"/", nil)
				scopes[i] = throttling.Scopes{{Name: host}}
			}
			res := &spider.Response{Status: 200}
			var next atomic.Int64
			now := time.Now()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(next.Add(1)) % nscopes
					t := now.Add(time.Duration(i) * time.Microsecond)
					rec.RequestStarted(t, reqs[i], scopes[i])
					rec.RequestFinished(t, reqs[i], scopes[i], res, nil)
				}
			})
		})
	}
}

// BenchmarkSeriesSample measures one sample of the time series (what the
// monitor does every METRICS_SERIES_INTERVAL) when the crawl has touched
// 100 or 100,000 scopes, 10 of which have a series.
func BenchmarkSeriesSample(b *testing.B) {
	for _, nscopes := range []int{100, 100000} {
		b.Run(fmt.Sprintf("scopes=%d", nscopes), func(b *testing.B) {
			rec := NewRecorder(RecorderOptions{BackoffCodes: []int{429}})
			res := &spider.Response{Status: 200}
			now := time.Now()
			for i := range nscopes {
				host := fmt.Sprintf("h%d.example", i)
				req := spider.MustRequest("http://"+host+"/", nil)
				sc := throttling.Scopes{{Name: host}}
				for range 1 + i%7 {
					rec.RequestStarted(now, req, sc)
					rec.RequestFinished(now, req, sc, res, nil)
				}
			}
			sr := NewSeriesRecorder(rec, SeriesOptions{Scopes: 10, Points: 1 << 30,
				State: func(string) (ScopeState, bool) { return ScopeState{Delay: 1, Concurrency: 8}, true }})
			sr.Begin(now)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				sr.Sample(now.Add(time.Duration(i+1) * time.Second))
			}
		})
	}
}
