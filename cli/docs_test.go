package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/cli"
)

// TestExitStatusesDocumented reads the exit status table of docs/cli.md:
// its statuses must be the ones the code uses, and each row's example
// command must exit with its status.
func TestExitStatusesDocumented(t *testing.T) {
	md, err := os.ReadFile(filepath.Join("..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(md), "## Exit status\n")
	if !ok {
		t.Fatal("docs/cli.md has no Exit status section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| (\\d+) \\| .* \\| `gocrawl ([^`]*)` \\|$")
	var statuses []int
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		code, _ := strconv.Atoi(m[1])
		statuses = append(statuses, code)
		args := strings.Fields(m[2])
		t.Run(m[1], func(t *testing.T) {
			r := gocrawl(t, t.TempDir(), nil, args...)
			if r.code != code {
				t.Errorf("gocrawl %s: exit status %d, docs/cli.md says %d\n%s", m[2], r.code, code, r.stderr)
			}
		})
	}
	want := []int{cli.ExitOK, cli.ExitFatal, cli.ExitUsage, cli.ExitMonitor}
	slices.Sort(want)
	if !slices.Equal(statuses, want) {
		t.Errorf("docs/cli.md documents exit statuses %v, the code has %v", statuses, want)
	}
}
