package throttling_test

import (
	"context"
	"fmt"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

// exampleThrottler builds a throttler from settings given as in a YAML
// file (name -> value); examples panic on configuration errors.
func exampleThrottler(kv map[string]any) *throttling.Throttler {
	s := settings.New()
	if err := s.SetMap(kv, settings.SourceFile, "example"); err != nil {
		panic(err)
	}
	t, err := throttling.New(s, throttling.Options{})
	if err != nil {
		panic(err)
	}
	return t
}

// printScopes prints the scopes the throttler gives each URL.
func printScopes(t *throttling.Throttler, urls ...string) {
	for _, u := range urls {
		sc, err := t.Scopes(context.Background(), spider.MustRequest(u, nil))
		if err != nil {
			fmt.Println(u, "error:", err)
			continue
		}
		fmt.Println(u, "->", sc.Names())
	}
}
