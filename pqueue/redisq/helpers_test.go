package redisq_test

import (
	"context"
	"fmt"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/gocrawl/gocrawl/devtools/redistest"
	"github.com/gocrawl/gocrawl/persist/reqcodec"
	"github.com/gocrawl/gocrawl/pqueue/redisq"
	"github.com/gocrawl/gocrawl/spider"
)

func TestMain(m *testing.M) { redistest.Main(m) }

type testSpider struct{ spider.Base }

func (*testSpider) Name() string { return "test" }
func (*testSpider) Parse(context.Context, *spider.Response, spider.Output) error {
	return nil
}

var codec = reqcodec.Codec{Spider: &testSpider{}}

var jobSeq atomic.Int64

var unsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// jobName returns a job name no other test uses.
func jobName(t testing.TB) string {
	n := unsafe.ReplaceAllString(t.Name(), "-")
	if len(n) > 60 {
		n = n[len(n)-60:]
	}
	return fmt.Sprintf("t%d-%s", jobSeq.Add(1), n)
}

// dial connects to the package's shared standalone server.
func dial(t testing.TB) redis.UniversalClient {
	t.Helper()
	return dialURL(t, redistest.Shared(t).URL())
}

func dialURL(t testing.TB, url string) redis.UniversalClient {
	t.Helper()
	c, err := redisq.Dial(context.Background(), url, redisq.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func layout(t testing.TB, shards int) *redisq.Layout {
	t.Helper()
	l, err := redisq.NewLayout("gocrawl", jobName(t), shards)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func newStore(t testing.TB, c redis.UniversalClient, l *redisq.Layout, owner string) *redisq.Store {
	t.Helper()
	s, err := redisq.NewStore(redisq.Options{Client: c, Layout: l, Codec: codec, Owner: owner})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type layoutOf interface{ Layout() *redisq.Layout }
