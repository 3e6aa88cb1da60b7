// Command gocrawl runs the spiders that come with gocrawl (the built-in
// follow spider and the examples: quotes, books, books_crawl,
// books_sitemap and quotes_html) and the project commands: run, list,
// settings, jobs, report, fetch, view, parse, shell, new, genspider,
// version, plus demo and sim, which only this binary has. Your own program
// gets the same command line for its spiders with cli.Main.
package main

import (
	"github.com/gocrawl/gocrawl/cli"
	"github.com/gocrawl/gocrawl/devtools/democmd"
	"github.com/gocrawl/gocrawl/examples/books"
	"github.com/gocrawl/gocrawl/examples/crawlspider"
	"github.com/gocrawl/gocrawl/examples/onhtml"
	"github.com/gocrawl/gocrawl/examples/quotes"
	"github.com/gocrawl/gocrawl/examples/sitemapspider"
	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/spiders/follow"
)

func main() {
	cli.Program{
		Spiders: []spider.Spider{follow.New(), quotes.New(), books.New(),
			crawlspider.New(), sitemapspider.New(), onhtml.New()},
		Commands: []cli.Command{democmd.Demo, democmd.Sim},
	}.Main()
}
