package cli

import (
	"github.com/spf13/cobra"
)

func (a *App) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "gocrawl",
		Short: "A polite web crawler framework",
		Long: `gocrawl runs spiders: Go types that say where a crawl starts and what to
extract from each page. Requests are throttled per host (DOWNLOAD_DELAY,
CONCURRENT_REQUESTS_PER_DOMAIN, backoff on 429/503, robots.txt Crawl-delay).

Settings come from defaults < gocrawl.yaml (or --settings FILE) < the
spider's own settings < GOCRAWL_<NAME> environment variables < -s NAME=VALUE.`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return UsageErrorf("%v (see '%s --help')", err, c.CommandPath())
	})
	// gocrawl --version prints what `gocrawl version` prints.
	root.Version = versionString()
	root.SetVersionTemplate("{{.Version}}\n")
	root.CompletionOptions.DisableDefaultCmd = true
	for _, build := range commands {
		root.AddCommand(build(a))
	}
	for _, build := range a.extra {
		root.AddCommand(build(a))
	}
	return root
}

// ExactArgs is cobra.ExactArgs with a usage error that says what to pass.
func ExactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return UsageErrorf("%s expects %s, got %d argument(s) (usage: %s)", cmd.Name(), what, len(args), cmd.UseLine())
		}
		return nil
	}
}
