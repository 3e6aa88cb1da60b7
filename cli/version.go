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
		Short: "Print gocrawl's version (also gocrawl --version)",
		Args:  ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(a.Stdout, versionString())
			return nil
		},
	}
}

// versionString is the answer of `gocrawl version` and `gocrawl --version`.
func versionString() string {
	return fmt.Sprintf("gocrawl %s (%s, %s/%s)", version.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
