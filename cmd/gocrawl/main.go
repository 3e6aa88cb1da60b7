// Command gocrawl runs the spiders that come with gocrawl (the built-in
// follow spider and the quotes and books examples) and the project
// commands: run, list, settings, version, new, demo. Your own program gets
// the same command line for its spiders with cli.Main.
package main

import (
	"github.com/gocrawl/gocrawl/cli"
	"github.com/gocrawl/gocrawl/examples/books"
	"github.com/gocrawl/gocrawl/examples/quotes"
	"github.com/gocrawl/gocrawl/spiders/follow"
)

func main() {
	cli.Main(follow.New(), quotes.New(), books.New())
}
