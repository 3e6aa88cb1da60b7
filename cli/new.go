package cli

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

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
		domain     string
		kind       string
		sourceDir  string
		noReplace  bool
	)
	cmd := &cobra.Command{
		Use:   "new DIR",
		Short: "Create a new crawler project (a Go module) in DIR",
		Long: `Create a Go module in DIR with:

  main.go             the command line (cli.Main) with the project's spiders
  spiders/spiders.go  the list of spiders: each spider's file registers itself
  spiders/NAME.go     a spider to edit (template -t KIND, default basic)
  spiders/NAME_test.go  a test of its callback (basic template)
  gocrawl.yaml        the project's settings (DOWNLOAD_DELAY: 1, ROBOTSTXT_OBEY: true)
  go.mod, go.sum      requiring gocrawl

The spider crawls --domain (default quotes.toscrape.com, the Scrapy tutorial's
site); add more with "go run . genspider NAME DOMAIN" in the project.

When this gocrawl was built from a source checkout, go.mod gets a replace
directive pointing at it (a relative path), so the project builds offline at
once; --no-replace requires the released module instead (run go mod tidy).`,
		Example: `  gocrawl new quotesbot && cd quotesbot && go run . run example -O items.jsonl
  gocrawl new shop --spider books --domain books.toscrape.com`,
		Args: ExactArgs(1, "the directory to create"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if modName == "" {
				modName = defaultModuleName(dir)
			}
			if err := module.CheckImportPath(modName); err != nil {
				return UsageErrorf("module path %q: %v; choose one with --module", modName, err)
			}
			d, err := newSpiderData(spiderName, domain, "spiders")
			if err != nil {
				return err
			}
			switch {
			case noReplace:
				sourceDir = ""
			case sourceDir == "":
				sourceDir = sourceCheckout()
			case !isCheckout(sourceDir):
				return UsageErrorf("--gocrawl-dir %s: not a gocrawl source checkout (no go.mod for %s there)", sourceDir, modulePath)
			}
			if err := checkNewDir(dir); err != nil {
				return err
			}
			files, err := scaffold(dir, modName, kind, d, sourceDir)
			if err != nil {
				return err
			}
			if err := writeFiles(dir, files); err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "Created %s (module %s) with the %s spider %q for %s.\n\n", dir, modName, kind, d.Name, d.Domain)
			if sourceDir == "" {
				fmt.Fprintf(a.Stdout, "  cd %s && go mod tidy   # downloads gocrawl and its dependencies\n", dir)
			} else {
				fmt.Fprintf(a.Stdout, "  cd %s                  # go.mod uses the gocrawl checkout in %s\n", dir, sourceDir)
			}
			fmt.Fprintf(a.Stdout, "  go run . run %s -O items.jsonl\n", d.Name)
			fmt.Fprintf(a.Stdout, "  go run . genspider NAME DOMAIN   # add a spider\n")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&modName, "module", "", "module path of the new project (default: the directory's name)")
	f.StringVar(&spiderName, "spider", "example", "`NAME` of the spider to create")
	f.StringVar(&domain, "domain", "quotes.toscrape.com", "the spider's `DOMAIN`, or its start URL")
	f.StringVarP(&kind, "template", "t", "basic", "spider template `KIND`: "+strings.Join(SpiderKinds(), ", "))
	f.StringVar(&sourceDir, "gocrawl-dir", "", "gocrawl source checkout to use with a replace directive (default: this binary's checkout, if any)")
	f.BoolVar(&noReplace, "no-replace", false, "require the released gocrawl module, without a replace directive")
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
func scaffold(dir, modName, kind string, d SpiderData, sourceDir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	spiderFile, err := renderSpider(kind, d)
	if err != nil {
		return nil, err
	}
	files["spiders/"+d.Name+".go"] = spiderFile
	data := struct {
		SpiderData
		Module string
	}{d, modName}
	for name, tmpl := range map[string]string{
		"main.go":            "main.go.tmpl",
		"spiders/spiders.go": "spiders.go.tmpl",
	} {
		if files[name], err = renderGo("templates/project/"+tmpl, data); err != nil {
			return nil, err
		}
	}
	if kind == "basic" {
		if files["spiders/"+d.Name+"_test.go"], err = renderGo("templates/project/spider_test.go.tmpl", data); err != nil {
			return nil, err
		}
	}
	for name, tmpl := range map[string]string{"gocrawl.yaml": "gocrawl.yaml.tmpl", ".gitignore": "gitignore.tmpl"} {
		if files[name], err = renderFile("templates/project/"+tmpl, data); err != nil {
			return nil, err
		}
	}
	gomod, gosum, err := projectGoMod(dir, modName, sourceDir, importsOf(files))
	if err != nil {
		return nil, err
	}
	files["go.mod"] = gomod
	if gosum != nil {
		files["go.sum"] = gosum
	}
	return files, nil
}

// importsOf returns the import paths of the Go files among files.
func importsOf(files map[string][]byte) []string {
	var out []string
	fset := token.NewFileSet()
	for name, src := range files {
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			continue
		}
		for _, imp := range f.Imports {
			if p, err := strconv.Unquote(imp.Path.Value); err == nil && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// projectGoMod writes go.mod requiring gocrawl. With a checkout, it adds a
// replace directive to it (relative to dir when possible) and copies its
// requirements and go.sum, so the project builds without downloading
// anything. Requirements the project's files import (gocrawl, goquery)
// are direct, the others indirect.
func projectGoMod(dir, modName, sourceDir string, imports []string) (gomod, gosum []byte, err error) {
	f := &modfile.File{}
	if err := f.AddModuleStmt(modName); err != nil {
		return nil, nil, err
	}
	goVersion := strings.TrimPrefix(runtime.Version(), "go")
	if i := strings.IndexAny(goVersion, " -"); i >= 0 {
		goVersion = goVersion[:i]
	}
	direct := func(mod string) bool {
		for _, p := range imports {
			if p == mod || strings.HasPrefix(p, mod+"/") {
				return true
			}
		}
		return false
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
			f.AddNewRequire(r.Mod.Path, r.Mod.Version, !direct(r.Mod.Path))
		}
		if err := f.AddReplace(modulePath, "", replacePath(dir, sourceDir), ""); err != nil {
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
	if err != nil {
		return nil, nil, err
	}
	if sourceDir != "" {
		gomod = append(gomod, []byte("\n// The replace directive above builds this project with the gocrawl\n"+
			"// checkout it was created from. To use a released gocrawl instead:\n"+
			"//   go mod edit -dropreplace "+modulePath+" && go mod tidy\n")...)
	}
	return gomod, gosum, nil
}

// replacePath is the checkout's path as seen from the project dir:
// relative when both are on the same volume (the project keeps building
// when the two move together), absolute otherwise. A relative path
// starts with ./ or ../, as go.mod requires.
func replacePath(dir, sourceDir string) string {
	absDir, err1 := filepath.Abs(dir)
	absSrc, err2 := filepath.Abs(sourceDir)
	if err1 != nil || err2 != nil {
		return sourceDir
	}
	rel, err := filepath.Rel(absDir, absSrc)
	if err != nil {
		return absSrc
	}
	rel = filepath.ToSlash(rel)
	if !strings.HasPrefix(rel, "../") && rel != ".." {
		rel = "./" + rel
	}
	return rel
}

// checkNewDir refuses a DIR that exists and is not empty.
func checkNewDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case err == nil && len(entries) > 0:
		return UsageErrorf("%s already exists and is not empty; choose a new directory", dir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return UsageErrorf("%s: %v", dir, err)
	}
	return nil
}

// writeFiles writes files (by slash-separated path) under dir.
func writeFiles(dir string, files map[string][]byte) error {
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	}) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}
