package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gocrawl/gocrawl/observe/report"
)

func init() { addCommand(reportCommand) }

func reportCommand(a *App) *cobra.Command {
	var (
		out    string
		scopes int
	)
	cmd := &cobra.Command{
		Use:   "report RUN",
		Short: "Write an HTML report of a crawl from its stats dump or job directory",
		Long: `Write one self-contained HTML file (no network, no script) about a crawl:
per scope over time, ok and refused responses per second, requests in
flight, delay and backoff level with the configured limits drawn on the
plots; the status, error and dropped-request tables; the slowest scopes.

RUN is what a crawl leaves behind:

  the STATS_DUMP_FILE of a run (JSON: stats, per-scope measurements and
  time series; run with -s STATS_DUMP_FILE=run.json),
  its per-scope CSV (run.scopes.csv: the scope table only), or
  a JOBDIR directory (a paused crawl: stats, queued requests, throttling
  state; no time series).

The page is written to RUN with the extension .html (RUN.html for a
directory), or -o FILE (- for standard output), and its path is printed.
During a crawl, the same page is served live at METRICS_ADDR.`,
		Example: `  gocrawl run quotes -s STATS_DUMP_FILE=run.json && gocrawl report run.json
  gocrawl report crawls/job1 -o job1.html`,
		Args: ExactArgs(1, "a stats dump (.json), a per-scope CSV or a job directory"),
		RunE: func(cmd *cobra.Command, pos []string) error {
			src := pos[0]
			d, err := report.Load(src)
			if err != nil {
				return UsageErrorf("report %s: %v", src, err)
			}
			if out == "" {
				out = defaultReportPath(src)
			}
			opts := report.Options{Scopes: scopes}
			if out == "-" {
				w := bufio.NewWriter(a.Stdout)
				if err := report.Write(w, d, opts); err != nil {
					return err
				}
				return w.Flush()
			}
			if err := writeFileAtomic(out, func(f *os.File) error { return report.Write(f, d, opts) }); err != nil {
				return UsageErrorf("-o %s: %v", out, err)
			}
			fmt.Fprintln(a.Stdout, out)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the page to `FILE` (- for standard output; default: RUN with .html)")
	cmd.Flags().IntVar(&scopes, "scopes", 50, "list the `N` most requested scopes in the scope table")
	return cmd
}

// defaultReportPath is where `report RUN` writes without -o: run.json ->
// run.html, run.scopes.csv -> run.scopes.html, crawls/job1 -> crawls/job1.html.
func defaultReportPath(src string) string {
	src = filepath.Clean(src)
	if st, err := os.Stat(src); err == nil && st.IsDir() {
		return src + ".html"
	}
	return strings.TrimSuffix(src, filepath.Ext(src)) + ".html"
}

// writeFileAtomic writes path through a temporary file in its directory,
// renamed when complete, so that a reader never sees half a page.
func writeFileAtomic(path string, fill func(*os.File) error) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return unwrapPath(err)
	}
	tmp := f.Name()
	err = fill(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
