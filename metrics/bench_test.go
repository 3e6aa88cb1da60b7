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
