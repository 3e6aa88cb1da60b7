package cli

import (
	"bytes"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

func init() { addCommand(genspiderCommand) }

func genspiderCommand(a *App) *cobra.Command {
	var (
		kind  string
		list  bool
		force bool
		dir   string
	)
	cmd := &cobra.Command{
		Use:   "genspider NAME DOMAIN",
		Short: "Add a spider to the project in the working directory",
		Long: `Add spiders/NAME.go to the project (made by gocrawl new) that holds the
working directory, from the template -t KIND (` + strings.Join(SpiderKinds(), ", ") + `;
--list shows them). DOMAIN is the site's domain (the spider stays on it and
its subdomains and starts at https://DOMAIN/), or a start URL.

The new file registers the spider with the project's command line (the
register function of spiders/spiders.go), so it is listed by "go run . list"
right away; an existing file is kept unless --force.`,
		Example: `  go run . genspider books books.toscrape.com
  gocrawl genspider catalog https://shop.example.com/catalog/ -t basic
  gocrawl genspider --list`,
		Args: func(cmd *cobra.Command, args []string) error {
			if list {
				return nil
			}
			return ExactArgs(2, "a spider name and a domain")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if list {
				for _, k := range SpiderKinds() {
					fmt.Fprintln(a.Stdout, k)
				}
				return nil
			}
			root, err := projectRoot(dir)
			if err != nil {
				return err
			}
			spidersDir := filepath.Join(root, "spiders")
			pkg, err := packageOf(spidersDir)
			if err != nil {
				return err
			}
			d, err := newSpiderData(args[0], args[1], pkg)
			if err != nil {
				return err
			}
			path := filepath.Join(spidersDir, d.Name+".go")
			if _, err := os.Stat(path); err == nil && !force {
				return UsageErrorf("%s already exists; choose another name or add --force to replace it", path)
			}
			if other, ok := findSpiderName(spidersDir, d.Name, path); ok {
				return UsageErrorf("a spider named %q is already in %s", d.Name, other)
			}
			src, err := renderSpider(kind, d)
			if err != nil {
				return err
			}
			if err := os.WriteFile(path, src, 0o644); err != nil {
				return err
			}
			rel, _ := filepath.Rel(mustGetwd(), path)
			fmt.Fprintf(a.Stdout, "Created %s: the %s spider %q for %s.\n", rel, kind, d.Name, d.Domain)
			if !hasRegister(spidersDir) {
				fmt.Fprintf(a.Stdout, "%s has no register function (a project not made by gocrawl new?): add New%s() to the spiders given to cli.Main.\n",
					spidersDir, d.Type)
			}
			fmt.Fprintf(a.Stdout, "  go run . run %s -O %s.jsonl\n", d.Name, d.Name)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&kind, "template", "t", "basic", "spider template `KIND`: "+strings.Join(SpiderKinds(), ", "))
	f.BoolVarP(&list, "list", "l", false, "list the spider templates")
	f.BoolVar(&force, "force", false, "replace spiders/NAME.go if it exists")
	f.StringVar(&dir, "project", "", "the project's `DIR` (default: the one holding the working directory)")
	return cmd
}

// projectRoot finds the directory holding go.mod, from dir (or the working
// directory) up, and checks it has a spiders directory.
func projectRoot(dir string) (string, error) {
	if dir == "" {
		dir = mustGetwd()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if st, err := os.Stat(filepath.Join(d, "spiders")); err != nil || !st.IsDir() {
				return "", UsageErrorf("%s has no spiders directory: genspider adds spiders to a project made by gocrawl new", d)
			}
			return d, nil
		}
		if d == filepath.Dir(d) {
			return "", UsageErrorf("%s is not inside a Go module: run genspider in a project made by gocrawl new (or pass --project DIR)", abs)
		}
	}
}

// packageOf returns the package name of the Go files in dir ("spiders"
// when there are none).
func packageOf(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.PackageClauseOnly)
		if err == nil {
			return f.Name.Name, nil
		}
	}
	return "spiders", nil
}

// findSpiderName looks for another file of dir whose Name method returns
// name; it returns that file.
func findSpiderName(dir, name, except string) (string, bool) {
	needle := []byte(`return "` + name + `"`)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !strings.HasSuffix(e.Name(), ".go") || p == except {
			continue
		}
		src, err := os.ReadFile(p)
		if err == nil && bytes.Contains(src, []byte(") Name() string")) && bytes.Contains(src, needle) {
			return p, true
		}
	}
	return "", false
}

// hasRegister reports whether the package in dir declares register.
func hasRegister(dir string) bool {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil && bytes.Contains(src, []byte("func register(")) {
			return true
		}
	}
	return false
}

func mustGetwd() string {
	wd, err := os.Getwd()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "."
	}
	return wd
}
