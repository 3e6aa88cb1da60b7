package feed_test

import (
	"context"
	"fmt"
	"os"

	"github.com/gocrawl/gocrawl/pipeline/feed"
)

// An exporter is an item pipeline: open it, pass it items, close it. In a
// crawl, give it to the engine with engine.Options{Pipelines: feed.Pipelines(ex)}.
func ExampleNewWriter() {
	ctx := context.Background()
	type Quote struct {
		Text   string   `json:"text"`
		Author string   `json:"author"`
		Tags   []string `json:"tags"`
	}
	ex, err := feed.NewWriter(os.Stdout, feed.Options{Format: feed.CSV})
	if err != nil {
		panic(err)
	}
	if err := ex.Open(ctx, nil); err != nil {
		panic(err)
	}
	ex.ProcessItem(ctx, Quote{Text: "Simplicity is prerequisite for reliability.", Author: "Edsger W. Dijkstra", Tags: []string{"simplicity"}})
	ex.ProcessItem(ctx, map[string]any{"author": "Alan Kay", "text": "Simple things should be simple."})
	if _, err := ex.ProcessItem(ctx, nil); err != nil {
		fmt.Println(err)
	}
	ex.Close(ctx)
	// Output:
	// cannot export item of type <nil>: the item is nil; send a struct or a map
	// text,author,tags
	// Simplicity is prerequisite for reliability.,Edsger W. Dijkstra,"[""simplicity""]"
	// Simple things should be simple.,Alan Kay,
}
