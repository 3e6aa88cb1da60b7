package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

func init() { addCommand(settingsCommand) }

func settingsCommand(a *App) *cobra.Command {
	var (
		sf         SettingsFlags
		asJSON     bool
		spiderName string
	)
	cmd := &cobra.Command{
		Use:   "settings [SETTING...]",
		Short: "Print the effective settings and where each value comes from",
		Long: `Print the effective value of every setting (or of the named ones) and
where it comes from: default, the settings file with its line, the spider,
a GOCRAWL_ environment variable, or -s. With one setting name, only its
value is printed (as JSON for lists and mappings), for use in scripts.

The settings are checked the way ` + "`run`" + ` checks them before crawling
(types, throttling scopes, middlewares, item pipelines, feeds, ...): every
problem is listed at once, with the file and line or the variable or flag it
comes from, and the exit status is 2.`,
		Example: `  gocrawl settings
  gocrawl settings DOWNLOAD_DELAY
  gocrawl settings --spider quotes -s DOWNLOAD_DELAY=2 --json`,
		RunE: func(cmd *cobra.Command, names []string) error {
			var sp spider.Spider
			if spiderName != "" {
				var err error
				if sp, err = a.Spider(spiderName); err != nil {
					return err
				}
			}
			s, err := sf.Load(a, sp)
			if err != nil {
				return err
			}
			for _, w := range s.Warnings() {
				fmt.Fprintf(a.Stderr, "gocrawl: warning: %s\n", w)
			}
			for i, n := range names {
				names[i] = strings.ToUpper(n)
			}
			entries, err := s.Entries(names...)
			if err != nil {
				return SettingsError(err)
			}
			if asJSON {
				enc := json.NewEncoder(a.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(entries)
			}
			if len(names) == 1 {
				fmt.Fprintln(a.Stdout, formatValue(entries[0].Value))
				return nil
			}
			tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
			// The value comes last: mappings and lists can be long.
			fmt.Fprintln(tw, "NAME\tFROM\tVALUE")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, from(e), formatValue(e.Value))
			}
			return tw.Flush()
		},
	}
	sf.Add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print name, type, value, default, source, origin and doc of each setting as JSON")
	cmd.Flags().StringVar(&spiderName, "spider", "", "include the settings of spider `NAME`")
	return cmd
}

func from(e settings.Entry) string {
	if e.Origin != "" && e.Source != "default" {
		return e.Source + " (" + e.Origin + ")"
	}
	return e.Source
}

// formatValue prints strings as they are and everything else as JSON.
func formatValue(v any) string {
	if s, ok := v.(string); ok {
		if s == "" {
			return `""`
		}
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
