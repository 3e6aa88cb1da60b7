package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/gocrawl/gocrawl/internal/version"
)

func init() { addCommand(versionCommand) }

func versionCommand(a *App) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print gocrawl's version",
		Args:  ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(a.Stdout, "gocrawl %s (%s, %s/%s)\n", version.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
