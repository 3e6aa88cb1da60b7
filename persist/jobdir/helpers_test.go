package jobdir

import (
	"context"

	"github.com/gocrawl/gocrawl/spider"
)

// testSpider is the smallest spider the job tests crawl with.
type testSpider struct{ spider.Base }

func (*testSpider) Name() string { return "test" }
func (*testSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	return nil
}
