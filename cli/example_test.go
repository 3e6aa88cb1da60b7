package cli_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/spf13/cobra"

	"github.com/gocrawl/gocrawl/cli"
	"github.com/gocrawl/gocrawl/spider"
)

// pages outputs the path of every page it is given.
type pages struct{ spider.Base }

func (*pages) Name() string { return "pages" }

func (*pages) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	out.Item(map[string]string{"path": res.URL.Path})
	return nil
}

// A program's main is usually just cli.Main(&pages{}); Program.Run is the
// same command line with explicit arguments and writers. Here `run` crawls
// one page and writes its item as JSON lines to standard output (-O -),
// while logs and the end-of-crawl summary go to standard error.
func ExampleProgram_Run() {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html><title>hello</title></html>")
	}))
	defer site.Close()

	sp := &pages{Base: spider.Base{StartURLs: []string{site.URL + "/hello"}}}
	code := cli.Program{Spiders: []spider.Spider{sp}}.Run(context.Background(),
		[]string{"run", "pages", "-O", "-", "-t", "jsonl", "-s", "ROBOTSTXT_OBEY=false", "-s", "LOG_LEVEL=ERROR"},
		os.Stdout, io.Discard)
	fmt.Println("exit status", code)
	// Output:
	// {"path":"/hello"}
	// exit status 0
}

// A program adds commands of its own next to run, list, settings and the
// others; cli.ExactArgs and cli.UsageErrorf give them the same usage
// errors (exit status 2) as the built-in ones.
func ExampleCommand() {
	hello := func(a *cli.App) *cobra.Command {
		return &cobra.Command{
			Use:   "hello NAME",
			Short: "Greet someone",
			Args:  cli.ExactArgs(1, "a name"),
			RunE: func(cmd *cobra.Command, args []string) error {
				fmt.Fprintf(a.Stdout, "hello, %s; spiders: %v\n", args[0], a.SpiderNames())
				return nil
			},
		}
	}
	prog := cli.Program{Spiders: []spider.Spider{&pages{}}, Commands: []cli.Command{hello}}
	fmt.Println("exit status", prog.Run(context.Background(), []string{"hello", "world"}, os.Stdout, io.Discard))
	fmt.Println("exit status", prog.Run(context.Background(), []string{"hello"}, os.Stdout, io.Discard))
	// Output:
	// hello, world; spiders: [pages]
	// exit status 0
	// exit status 2
}
