package pqueue_test

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/pqueue"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// A host that is backing off does not hold up requests for other hosts:
// Pop skips it and says when it is worth asking again.
func ExampleThrottlingAware() {
	ctx := context.Background()
	thr, _ := throttling.New(settings.New(), throttling.Options{})
	q, _ := pqueue.NewThrottlingAware(pqueue.NewMemoryStore(), thr, zerolog.Nop())
	q.Open(ctx)

	for _, u := range []string{"https://slow.example/1", "https://slow.example/2", "https://fast.example/1"} {
		req := spider.MustRequest(u, nil)
		scopes, _ := thr.Scopes(ctx, req)
		q.Push(ctx, time.Now(), req, scopes, 0)
	}
	thr.DelayScope("slow.example", 30*time.Second) // e.g. a 429 with Retry-After: 30

	// Time is passed in: the example moves it forward instead of sleeping.
	now := time.Now()
	for {
		p, wake, _ := q.Pop(ctx, now)
		if p == nil {
			if wake == 0 || q.Len() == 0 {
				break
			}
			fmt.Println("nothing ready; ask again in", wake.Round(time.Second))
			now = now.Add(wake)
			continue
		}
		fmt.Println("send", p.Req.URL)
		thr.Done(ctx, p.Req, p.Scopes, p.SentAt, nil, nil)
		q.Ack(ctx, p.ID)
	}
	// Output:
	// send https://fast.example/1
	// nothing ready; ask again in 30s
	// send https://slow.example/1
	// send https://slow.example/2
}
