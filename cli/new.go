package cli

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"text/template"

	"github.com/spf13/cobra"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/gocrawl/gocrawl/internal/version"
)

func init() { addCommand(newCommand) }

// modulePath is gocrawl's own module path.
const modulePath = "github.com/gocrawl/gocrawl"

func newCommand(a *App) *cobra.Command {
	var (
		modName    string
		spiderName string
		sourceDir  string
	)
	cmd := &cobra.Command{
		Use:   "new DIR",
		Short: "Create a new crawler project (a Go module) in DIR",
		Long: `Create a Go module in DIR with:

  main.go          the command line (cli.Main) with your spider registered
  spiders/NAME.go  a spider to edit: start URL, what to extract, what to follow
  gocrawl.yaml     the project's settings (DOWNLOAD_DELAY: 1, ROBOTSTXT_OBEY: true)
  go.mod, go.sum   requiring gocrawl

When this gocrawl runs from a source checkout, go.mod gets a replace
directive pointing at it, so the project builds offline right away:

  cd DIR && go run . run NAME -a start_url=https://example.com/`,
		Args: ExactArgs(1, "the directory to create"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if modName == "" {
				modName = defaultModuleName(dir)
			}
			if err := module.CheckImportPath(modName); err != nil {
				return UsageErrorf("module path %q: %v; choose one with --module", modName, err)
			}
			if !regexp.MustCompile(`^[a-z][a-z0-9_]*$`).MatchString(spiderName) {
				return UsageErrorf("spider name %q: use lower-case letters, digits and underscores, starting with a letter", spiderName)
			}
			if sourceDir == "" {
				sourceDir = sourceCheckout()
			} else if !isCheckout(sourceDir) {
				return UsageErrorf("--gocrawl-dir %s: not a gocrawl source checkout (no go.mod for %s there)", sourceDir, modulePath)
			}
			files, err := scaffold(modName, spiderName, sourceDir)
			if err != nil {
				return err
			}
			if err := writeProject(dir, files); err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "Created %s (module %s) with spider %q.\n\n", dir, modName, spiderName)
			if sourceDir == "" {
				fmt.Fprintf(a.Stdout, "  cd %s && go mod tidy   # downloads gocrawl and its dependencies\n", dir)
			} else {
				fmt.Fprintf(a.Stdout, "  cd %s                  # go.mod uses the gocrawl checkout in %s\n", dir, sourceDir)
			}
			fmt.Fprintf(a.Stdout, "  go run . run %s -a start_url=https://quotes.toscrape.com/ -O items.jsonl\n", spiderName)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&modName, "module", "", "module path of the new project (default: the directory's name)")
	f.StringVar(&spiderName, "spider", "example", "`NAME` of the spider to create")
	f.StringVar(&sourceDir, "gocrawl-dir", "", "gocrawl source checkout to use with a replace directive (default: this binary's checkout, if any)")
	return cmd
}

func defaultModuleName(dir string) string {
	base := strings.ToLower(filepath.Base(filepath.Clean(dir)))
	base = regexp.MustCompile(`[^a-z0-9._-]+`).ReplaceAllString(base, "-")
	base = strings.Trim(base, "-.")
	if base == "" {
		base = "crawler"
	}
	return base
}

// sourceCheckout returns the root of the gocrawl checkout this binary was
// built from, or "" when it was built from a module download (or with
// -trimpath).
func sourceCheckout() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	root := filepath.Dir(filepath.Dir(file))
	if strings.Contains(filepath.ToSlash(root), "/pkg/mod/") || !isCheckout(root) {
		return ""
	}
	return root
}

func isCheckout(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && modfile.ModulePath(data) == modulePath
}

// scaffold returns the new project's files by path.
func scaffold(modName, spiderName, sourceDir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	gomod, gosum, err := projectGoMod(modName, sourceDir)
	if err != nil {
		return nil, err
	}
	files["go.mod"] = gomod
	if gosum != nil {
		files["go.sum"] = gosum
	}
	data := struct {
		Module, Spider, Type string
	}{modName, spiderName, exportedName(spiderName)}
	for name, tmpl := range map[string]string{
		"main.go":                            mainTmpl,
		"spiders/" + spiderName + ".go":      spiderTmpl,
		"spiders/" + spiderName + "_test.go": spiderTestTmpl,
		"gocrawl.yaml":                       yamlTmpl,
		".gitignore":                         "*.jsonl\n*.csv\n*.json\n",
	} {
		var b bytes.Buffer
		if err := template.Must(template.New(name).Parse(tmpl)).Execute(&b, data); err != nil {
			return nil, err
		}
		out := b.Bytes()
		if strings.HasSuffix(name, ".go") {
			if out, err = format.Source(out); err != nil {
				return nil, fmt.Errorf("scaffold %s: %w", name, err)
			}
		}
		files[name] = out
	}
	return files, nil
}

// projectGoMod writes go.mod requiring gocrawl. With a checkout, it adds a
// replace directive to it and copies its requirements and go.sum, so the
// project builds without downloading anything.
func projectGoMod(modName, sourceDir string) (gomod, gosum []byte, err error) {
	f := &modfile.File{}
	if err := f.AddModuleStmt(modName); err != nil {
		return nil, nil, err
	}
	goVersion := strings.TrimPrefix(runtime.Version(), "go")
	if i := strings.IndexAny(goVersion, " -"); i >= 0 {
		goVersion = goVersion[:i]
	}
	if sourceDir != "" {
		data, err := os.ReadFile(filepath.Join(sourceDir, "go.mod"))
		if err != nil {
			return nil, nil, err
		}
		src, err := modfile.Parse("go.mod", data, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("gocrawl checkout %s: %w", sourceDir, err)
		}
		if src.Go != nil {
			goVersion = src.Go.Version
		}
		for _, r := range src.Require {
			f.AddNewRequire(r.Mod.Path, r.Mod.Version, true)
		}
		if err := f.AddReplace(modulePath, "", sourceDir, ""); err != nil {
			return nil, nil, err
		}
		gosum, err = os.ReadFile(filepath.Join(sourceDir, "go.sum"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
	}
	if err := f.AddGoStmt(goVersion); err != nil {
		return nil, nil, err
	}
	f.AddNewRequire(modulePath, "v"+version.Version, false)
	f.SetRequireSeparateIndirect(f.Require)
	f.Cleanup()
	gomod, err = f.Format()
	return gomod, gosum, err
}

func exportedName(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if r == '_' {
			up = true
			continue
		}
		if up {
			b.WriteString(strings.ToUpper(string(r)))
			up = false
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// writeProject creates dir (which must not exist or be empty) and files.
func writeProject(dir string, files map[string][]byte) error {
	entries, err := os.ReadDir(dir)
	switch {
	case err == nil && len(entries) > 0:
		return UsageErrorf("%s already exists and is not empty; choose a new directory", dir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return UsageErrorf("%s: %v", dir, err)
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

const mainTmpl = `// Command {{.Module}} runs this project's spiders:
//
//	go run . list
//	go run . run {{.Spider}} -a start_url=https://quotes.toscrape.com/ -O items.jsonl
//	go run . settings
package main

import (
	"github.com/gocrawl/gocrawl/cli"

	"{{.Module}}/spiders"
)

func main() {
	cli.Main(spiders.New{{.Type}}())
}
`

const spiderTmpl = `// Package spiders holds this project's spiders.
package spiders

import (
	"context"
	"errors"
	"iter"
	"strings"

	"github.com/gocrawl/gocrawl/spider"
)

// Page is the item {{.Spider}} emits for every page.
type Page struct {
	URL     string   ` + "`json:\"url\"`" + `
	Title   string   ` + "`json:\"title\"`" + `
	Heading string   ` + "`json:\"heading\"`" + `
	Links   int      ` + "`json:\"links\"`" + `
}

// {{.Type}} crawls one site from start_url, following its "next" links.
type {{.Type}} struct {
	StartURL string
}

// New{{.Type}} returns the spider; the start URL comes from -a start_url.
func New{{.Type}}() *{{.Type}} { return &{{.Type}}{} }

// Name is what you pass to ` + "`run`" + `.
func (*{{.Type}}) Name() string { return "{{.Spider}}" }

// SetArgs receives -a NAME=VALUE arguments.
func (s *{{.Type}}) SetArgs(args map[string]string) error {
	s.StartURL = strings.TrimSpace(args["start_url"])
	if s.StartURL == "" {
		return errors.New("pass the page to start from: -a start_url=https://...")
	}
	_, err := spider.ParseURL(s.StartURL)
	return err
}

// Settings are this spider's own settings; they override gocrawl.yaml.
func (*{{.Type}}) Settings() map[string]any {
	return map[string]any{"CONCURRENT_REQUESTS_PER_DOMAIN": 2}
}

// Start yields the first requests; Parse handles their responses.
func (s *{{.Type}}) Start(ctx context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) {
		yield(spider.NewRequest(s.StartURL, nil))
	}
}

// Parse extracts one Page per response and follows "next" links.
func (s *{{.Type}}) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	doc, err := res.Doc()
	if err != nil {
		return err // not HTML: logged and counted
	}
	out.Item(Page{
		URL:     res.URL.String(),
		Title:   strings.TrimSpace(doc.Find("title").First().Text()),
		Heading: strings.TrimSpace(doc.Find("h1").First().Text()),
		Links:   doc.Find("a[href]").Length(),
	})
	out.FollowAll(res, doc.Find("li.next a, a[rel=next]"), s.Parse)
	return nil
}
`

const spiderTestTmpl = `package spiders

import (
	"context"
	"net/http"
	"testing"

	"github.com/gocrawl/gocrawl/spider"
)

func TestParse(t *testing.T) {
	s := New{{.Type}}()
	if err := s.SetArgs(map[string]string{"start_url": "https://example.com/"}); err != nil {
		t.Fatal(err)
	}
	req := spider.MustRequest("https://example.com/", nil)
	res := &spider.Response{URL: req.URL, Status: 200, Request: req,
		Header: http.Header{"Content-Type": {"text/html"}},
		Body:   []byte(` + "`" + `<title>T</title><h1>H</h1><ul><li class="next"><a href="/page/2/">Next</a></li></ul>` + "`" + `)}
	var out spider.Collector
	if err := s.Parse(context.Background(), res, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 1 || out.Items[0].(Page).Title != "T" {
		t.Errorf("items = %+v", out.Items)
	}
	if len(out.Requests) != 1 || out.Requests[0].URL.String() != "https://example.com/page/2/" {
		t.Errorf("requests = %v", out.Requests)
	}
}
`

const yamlTmpl = `# Settings of this project, read by ` + "`go run . run ...`" + ` from the working
# directory. Override them per run with GOCRAWL_<NAME>=VALUE or -s NAME=VALUE;
# list every setting with ` + "`go run . settings`" + `.

# Wait at least one second between two requests to the same site: be polite.
DOWNLOAD_DELAY: 1
# Fetch robots.txt and respect its rules and Crawl-delay.
ROBOTSTXT_OBEY: true

# Write items here on every run (or pass -o / -O FILE).
# FEEDS:
#   items.jsonl: {format: jsonl, overwrite: true}
`
