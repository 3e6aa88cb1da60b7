package redisjob

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/pipeline/feed"
	"github.com/gocrawl/gocrawl/pqueue/redisq"
	"github.com/gocrawl/gocrawl/spider"
)

// ItemsPipelineName is the registered name of the item pipeline that
// pushes items to Redis: enable it with ITEM_PIPELINES, e.g.
// -s 'ITEM_PIPELINES={RedisItems: 900}'.
const ItemsPipelineName = "RedisItems"

func init() {
	pipeline.Register(ItemsPipelineName, func(c *spider.Crawler) (pipeline.Stage, error) {
		return NewItems(c)
	})
}

// Items is the RedisItems item pipeline: every item, encoded as JSON as
// the feed exports write it, is appended to a Redis list (RPUSH to
// REDIS_ITEMS_KEY, by default PREFIX:{JOB}:items) or stream (XADD to
// REDIS_ITEMS_STREAM, field "item", trimmed to about REDIS_ITEMS_MAXLEN
// entries), for a consumer to take, as scrapy-redis does. It connects to
// REDIS_URL; it works in a crawl alone as well as in a distributed one.
//
// An item is pushed before its request is acknowledged (one round trip per
// item, from the callback's goroutine), so a worker that dies loses no
// item: at worst a request fetched again pushes its items again.
type Items struct {
	url, list, stream string
	maxLen            int64
	timeout           time.Duration // REDIS_UNAVAILABLE_TIMEOUT

	mu sync.Mutex
	c  redis.UniversalClient
}

// NewItems builds the pipeline from the crawl's settings.
func NewItems(c *spider.Crawler) (*Items, error) {
	s := c.Settings
	p := &Items{url: s.String("REDIS_URL"), list: s.String("REDIS_ITEMS_KEY"), stream: s.String("REDIS_ITEMS_STREAM"),
		maxLen: int64(s.Int("REDIS_ITEMS_MAXLEN")), timeout: s.Seconds("REDIS_UNAVAILABLE_TIMEOUT")}
	if p.url == "" {
		return nil, fmt.Errorf("%s needs REDIS_URL (the Redis to push items to)", ItemsPipelineName)
	}
	if p.list != "" && p.stream != "" {
		return nil, fmt.Errorf("%s: set REDIS_ITEMS_KEY (a list) or REDIS_ITEMS_STREAM (a stream), not both", ItemsPipelineName)
	}
	if p.list == "" && p.stream == "" {
		job := s.String("JOB")
		if job == "" {
			job = c.Spider.Name()
		}
		l, err := redisq.NewLayout(s.String("REDIS_KEY_PREFIX"), job, 1)
		if err != nil {
			return nil, fmt.Errorf("%s: %v (set REDIS_ITEMS_KEY)", ItemsPipelineName, err)
		}
		p.list = l.JobKey("items")
	}
	return p, nil
}

// Open implements pipeline.Opener: it connects to REDIS_URL.
func (p *Items) Open(ctx context.Context, c *spider.Crawler) error {
	cl, err := redisq.Dial(ctx, p.url, redisq.DialOptions{})
	if err != nil {
		return fmt.Errorf("%s: %w", ItemsPipelineName, err)
	}
	p.mu.Lock()
	p.c = cl
	p.mu.Unlock()
	return nil
}

// ProcessItem implements pipeline.Stage: the item is pushed and
// passed on unchanged.
func (p *Items) ProcessItem(ctx context.Context, item any) (any, error) {
	b, err := feed.EncodeItem(item)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	c := p.c
	p.mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("%s: not opened", ItemsPipelineName)
	}
	// While Redis does not answer, retry (the callback waits, so its
	// request is not acknowledged without its items) for at most
	// REDIS_UNAVAILABLE_TIMEOUT.
	deadline := time.Now().Add(p.timeout)
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		if p.stream != "" {
			a := &redis.XAddArgs{Stream: p.stream, Values: []any{"item", b}}
			if p.maxLen > 0 {
				a.MaxLen, a.Approx = p.maxLen, true
			}
			err = c.XAdd(ctx, a).Err()
		} else {
			err = c.RPush(ctx, p.list, b).Err()
		}
		if err == nil || !redisq.IsUnavailable(err) || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: pushing an item: %w", ItemsPipelineName, err)
	}
	return item, nil
}

// Close implements pipeline.Closer.
func (p *Items) Close(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.c == nil {
		return nil
	}
	err := p.c.Close()
	p.c = nil
	return err
}
