package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gocrawl/gocrawl/middleware"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

func init() {
	addCommand(fetchCommand)
	addCommand(viewCommand)
}

// pageFlags are the flags fetch, view and shell share: settings, the
// spider whose settings apply, redirects.
type pageFlags struct {
	sf         SettingsFlags
	spiderName string
	noRedirect bool
}

func (f *pageFlags) add(cmd *cobra.Command) {
	f.sf.Add(cmd)
	cmd.Flags().StringVar(&f.spiderName, "spider", "", "use the settings of spider `NAME` (its Settings method) over gocrawl.yaml")
	cmd.Flags().BoolVar(&f.noRedirect, "no-redirect", false, "do not follow redirects: show the 3xx response itself")
}

// load returns the settings and logs of a page command.
func (f *pageFlags) load(a *App, command string) (*settings.Settings, *Logs, fetchOptions, error) {
	var sp spider.Spider
	if f.spiderName != "" {
		var err error
		if sp, err = a.Spider(f.spiderName); err != nil {
			return nil, nil, fetchOptions{}, err
		}
	}
	s, err := f.sf.Load(a, sp)
	if err != nil {
		return nil, nil, fetchOptions{}, err
	}
	if err := probeSettings(s, command); err != nil {
		return nil, nil, fetchOptions{}, err
	}
	l, err := OpenLogs(s, a.Stderr)
	if err != nil {
		return nil, nil, fetchOptions{}, err
	}
	return s, l, fetchOptions{NoRedirect: f.noRedirect, SpiderName: f.spiderName}, nil
}

func fetchCommand(a *App) *cobra.Command {
	var (
		pf      pageFlags
		headers bool
		out     string
	)
	cmd := &cobra.Command{
		Use:   "fetch URL",
		Short: "Download one page the way a crawl does and print it",
		Long: `Download URL through everything a crawl's request goes through (robots.txt,
throttling, the downloader middlewares: default headers, cookies, retries,
redirects, the HTTP cache) with the project's settings, and write the body to
standard output (decompressed, as callbacks see it), or to -o FILE.

--headers prints the request headers as sent and the response's status and
headers instead of the body. --no-redirect shows a 3xx response itself.
Every status is shown; a response that never came (network error after the
retries, robots.txt disallows the URL) is an error saying why, exit status 1.
Logs go to standard error, at WARNING unless LOG_LEVEL is set.`,
		Example: `  gocrawl fetch https://quotes.toscrape.com/ > page.html
  gocrawl fetch --headers --no-redirect http://example.com/
  gocrawl fetch --spider quotes -s ROBOTSTXT_OBEY=false https://quotes.toscrape.com/page/2/ -o page2.html`,
		Args: ExactArgs(1, "one URL"),
		RunE: func(cmd *cobra.Command, pos []string) error {
			s, l, o, err := pf.load(a, "fetch")
			if err != nil {
				return err
			}
			defer l.Close()
			res, err := a.fetchPage(cmd.Context(), pos[0], s, l, o)
			if err != nil {
				return err
			}
			w := bufio.NewWriter(a.Stdout)
			if headers {
				writeHeaders(w, res)
			}
			switch {
			case out != "":
				if err := os.WriteFile(out, res.Body, 0o644); err != nil {
					return UsageErrorf("-o %s: %v", out, unwrapPath(err))
				}
			case !headers:
				w.Write(res.Body)
			}
			return w.Flush()
		},
	}
	pf.add(cmd)
	cmd.Flags().BoolVar(&headers, "headers", false, "print the request and response headers instead of the body")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the body to `FILE` instead of standard output")
	return cmd
}

// writeHeaders prints the request as sent and the response's status and
// headers, curl style: "> " for the request, "< " for the response, and
// the redirects in between.
func writeHeaders(w io.Writer, res *spider.Response) {
	req := res.Request
	if req != nil {
		for _, u := range redirectChain(req) {
			fmt.Fprintf(w, "* redirected from %s\n", u)
		}
		fmt.Fprintf(w, "> %s %s\n", req.EffectiveMethod(), req.URL.Redacted())
		writeHeaderLines(w, "> ", req.Header)
		fmt.Fprintln(w, ">")
	}
	fmt.Fprintf(w, "< %d %s\n", res.Status, http.StatusText(res.Status))
	writeHeaderLines(w, "< ", res.Header)
	fmt.Fprintln(w, "<")
}

// redirectChain returns the URLs req was redirected from, first first.
func redirectChain(req *spider.Request) []string {
	switch chain := req.Get(middleware.MetaRedirectURLs).(type) {
	case []string:
		return chain
	case []any:
		out := make([]string, len(chain))
		for i, u := range chain {
			out[i] = fmt.Sprint(u)
		}
		return out
	}
	return nil
}

func writeHeaderLines(w io.Writer, prefix string, h http.Header) {
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range h {
			if !yield(k) {
				return
			}
		}
	}) {
		for _, v := range h[k] {
			fmt.Fprintf(w, "%s%s: %s\n", prefix, k, v)
		}
	}
}

func viewCommand(a *App) *cobra.Command {
	var (
		pf  pageFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "view URL",
		Short: "Save a page as the crawl sees it, for a browser",
		Long: `Fetch URL as fetch does and save the body to a file (a new temporary file,
or -o FILE), so that you can look at it in a browser: what a crawl gets is
often not what your browser shows (no JavaScript runs, other headers, a
consent page). An HTML page gets a <base> element, so that its relative links,
styles and images resolve against the original site.

The file's path is printed. When the BROWSER environment variable names a
browser (as on most Unix systems: a command, or several separated by ':'),
the page is opened in it.`,
		Example: `  gocrawl view https://quotes.toscrape.com/
  BROWSER=firefox gocrawl view --spider quotes https://quotes.toscrape.com/page/2/`,
		Args: ExactArgs(1, "one URL"),
		RunE: func(cmd *cobra.Command, pos []string) error {
			s, l, o, err := pf.load(a, "view")
			if err != nil {
				return err
			}
			defer l.Close()
			res, err := a.fetchPage(cmd.Context(), pos[0], s, l, o)
			if err != nil {
				return err
			}
			path, err := saveForBrowser(res, out)
			if err != nil {
				return err
			}
			fmt.Fprintln(a.Stdout, path)
			if err := openBrowser(a.Environ, path); err != nil {
				l.Warn().Err(err).Msg("could not open the page in $BROWSER")
			}
			return nil
		},
	}
	pf.add(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "save the page to `FILE` (default: a new file in the temporary directory)")
	return cmd
}

var headTag = regexp.MustCompile(`(?i)<head(\s[^>]*)?>`)

// saveForBrowser writes res's body to out, or to a new temporary file
// named after its type, with a <base href> in an HTML page; it returns the
// absolute path.
func saveForBrowser(res *spider.Response, out string) (string, error) {
	body := res.Body
	ext := ".html"
	ct := strings.ToLower(res.Header.Get("Content-Type"))
	html := strings.Contains(ct, "html") || ct == "" && bytes.Contains(bytes.ToLower(body[:min(len(body), 512)]), []byte("<html"))
	if html {
		base := []byte(`<base href="` + strings.ReplaceAll(res.URL.String(), `"`, "%22") + `">`)
		if loc := headTag.FindIndex(body); loc != nil {
			body = slices.Concat(body[:loc[1]], base, body[loc[1]:])
		} else {
			body = slices.Concat(base, body)
		}
	} else if i := strings.IndexByte(ct, '/'); i >= 0 {
		sub := strings.TrimSpace(strings.SplitN(ct[i+1:], ";", 2)[0])
		if sub != "" && !strings.ContainsAny(sub, `/\`) {
			ext = "." + strings.TrimPrefix(sub, "x-")
		}
	}
	if out == "" {
		f, err := os.CreateTemp("", "gocrawl-view-*"+ext)
		if err != nil {
			return "", err
		}
		out = f.Name()
		f.Close()
	}
	if err := os.WriteFile(out, body, 0o644); err != nil {
		return "", UsageErrorf("-o %s: %v", out, unwrapPath(err))
	}
	return filepath.Abs(out)
}

// openBrowser opens path with the first command of $BROWSER (a list
// separated by ':') that exists, without waiting for it. No BROWSER means
// nothing to do.
func openBrowser(environ []string, path string) error {
	var browser string
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "BROWSER="); ok {
			browser = v
		}
	}
	if strings.TrimSpace(browser) == "" {
		return nil
	}
	for _, c := range strings.Split(browser, ":") {
		fields := strings.Fields(c)
		if len(fields) == 0 {
			continue
		}
		bin, err := exec.LookPath(fields[0])
		if err != nil {
			continue
		}
		args := fields[1:]
		if i := slices.Index(args, "%s"); i >= 0 {
			args[i] = path
		} else {
			args = append(args, path)
		}
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			return err
		}
		return cmd.Process.Release()
	}
	return fmt.Errorf("no command of BROWSER=%q was found", browser)
}
