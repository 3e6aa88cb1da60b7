package spider_test

import (
	"bytes"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"text/template"
)

// The templates `gocrawl genspider -t crawl|sitemap|html` renders (from
// cli/templates/spider) must give Go that compiles against this checkout:
// render each with text/template into a temporary module whose go.mod
// points at the checkout (replace), and run go vet on it.
func TestSpiderTemplatesCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := map[string]string{"Package": "spiders", "Domain": "quotes.toscrape.com", "StartURL": "https://quotes.toscrape.com/"}
	var checks strings.Builder
	checks.WriteString("package spiders\n\nimport \"github.com/gocrawl/gocrawl/spider\"\n\nvar _ = []spider.Spider{\n")
	for _, kind := range []string{"crawl", "sitemap", "html"} {
		src, err := os.ReadFile(filepath.Join(root, "cli", "templates", "spider", kind+".go.tmpl"))
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := template.New(kind).Option("missingkey=error").Parse(string(src))
		if err != nil {
			t.Fatalf("%s template: %v", kind, err)
		}
		data["Name"], data["Type"] = "my_"+kind, "My"+strings.ToUpper(kind[:1])+kind[1:]
		var b bytes.Buffer
		if err := tmpl.Execute(&b, data); err != nil {
			t.Fatalf("%s template: %v", kind, err)
		}
		formatted, err := format.Source(b.Bytes())
		if err != nil {
			t.Fatalf("%s template renders Go that gofmt rejects: %v\n%s", kind, err, b.String())
		}
		if !bytes.Equal(formatted, b.Bytes()) {
			t.Errorf("%s template does not render gofmt-formatted Go", kind)
		}
		writeFile(t, filepath.Join(dir, "spiders", kind+".go"), formatted)
		checks.WriteString("\tNew" + data["Type"] + "(),\n")
	}
	checks.WriteString("}\n")
	writeFile(t, filepath.Join(dir, "spiders", "check.go"), []byte(checks.String()))
	// The module requires what the checkout requires, so go vet finds
	// every module it builds in the cache that `go mod download` filled;
	// no go mod tidy, which would also want the test dependencies of our
	// dependencies (absent from a new machine's cache).
	rootMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gomod := strings.Replace(string(rootMod), "module github.com/gocrawl/gocrawl\n", "module example.com/tmpl\n", 1)
	if gomod == string(rootMod) {
		t.Fatal("go.mod of the checkout does not start with its module line")
	}
	gomod += "\nrequire github.com/gocrawl/gocrawl v0.0.0\n\nreplace github.com/gocrawl/gocrawl => " + root + "\n"
	writeFile(t, filepath.Join(dir, "go.mod"), []byte(gomod))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "go.sum"), sum)
	cmd := exec.Command(goBin, "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet: %v\n%s", err, out)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
