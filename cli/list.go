package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func init() { addCommand(listCommand) }

func listCommand(a *App) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the spiders this program can run",
		Args:  ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, n := range a.SpiderNames() {
				fmt.Fprintln(a.Stdout, n)
			}
			return nil
		},
	}
}
