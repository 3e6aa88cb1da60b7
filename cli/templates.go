package cli

import (
	"bytes"
	"embed"
	"fmt"
	"go/format"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"text/template"
)

// Spider templates: `gocrawl new` and `gocrawl genspider NAME DOMAIN -t KIND`
// render templates/spider/KIND.go.tmpl (Go text/template) with SpiderData.
// A template makes one file of the project's spiders package that declares
// the spider type and its constructor, New{{.Type}}() returning a
// spider.Spider, and may register it with the project's command line
// itself:
//
//	func init() { register(New{{.Type}}()) }
//
// (register is the project's, templates/project/spiders.go.tmpl); when the
// rendered file does not call register, that line is added. A kind is
// added by adding a file to templates/spider; `gocrawl genspider --list`
// shows the kinds found, and a test renders every template into a project
// and builds and runs it.
//
//go:embed templates/spider/*.go.tmpl templates/project/*.tmpl
var templateFS embed.FS

// SpiderData is what a spider template is rendered with.
type SpiderData struct {
	// Name is the spider's name, as `run` takes it: "quotes".
	Name string
	// Type is the Go type name: "Quotes" (from the name: "book_shop" ->
	// "BookShop").
	Type string
	// Package is the Go package of the file: "spiders".
	Package string
	// Domain is the site's domain: "quotes.toscrape.com".
	Domain string
	// StartURL is where the spider starts: "https://quotes.toscrape.com/".
	StartURL string
}

// SpiderKinds returns the kinds of spider templates, sorted: "basic" and
// whatever else templates/spider holds.
func SpiderKinds() []string {
	entries, _ := fs.ReadDir(templateFS, "templates/spider")
	var kinds []string
	for _, e := range entries {
		if k, ok := strings.CutSuffix(e.Name(), ".go.tmpl"); ok {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	return kinds
}

// renderSpider renders the template of kind with d, gofmt-ed.
func renderSpider(kind string, d SpiderData) ([]byte, error) {
	if !slices.Contains(SpiderKinds(), kind) {
		return nil, UsageErrorf("-t %s: no such spider template; the kinds are %s", kind, strings.Join(SpiderKinds(), ", "))
	}
	src, err := renderGo("templates/spider/"+kind+".go.tmpl", d)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(src, []byte("register(")) {
		if !bytes.Contains(src, []byte("func New"+d.Type+"(")) {
			return nil, fmt.Errorf("template %s declares no New%s constructor to register", kind, d.Type)
		}
		src = append(src, []byte("\n// Registered with the project's command line (see spiders.go).\nfunc init() { register(New"+d.Type+"()) }\n")...)
	}
	return src, nil
}

// renderFile renders a template of templateFS with data.
func renderFile(name string, data any) ([]byte, error) {
	src, err := templateFS.ReadFile(name)
	if err != nil {
		return nil, err
	}
	t, err := template.New(path.Base(name)).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// renderGo is renderFile for Go source, formatted.
func renderGo(name string, data any) ([]byte, error) {
	out, err := renderFile(name, data)
	if err != nil {
		return nil, err
	}
	formatted, err := format.Source(out)
	if err != nil {
		return nil, fmt.Errorf("template %s gives invalid Go: %w", name, err)
	}
	return formatted, nil
}

var spiderNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// newSpiderData checks a spider name and a domain (or start URL) and
// returns the template data. domain may be a host name ("example.com") or
// an absolute URL ("https://example.com/catalog/"), which becomes the
// start URL.
func newSpiderData(name, domain, pkg string) (SpiderData, error) {
	if !spiderNameRE.MatchString(name) {
		return SpiderData{}, UsageErrorf("spider name %q: use lower-case letters, digits and underscores, starting with a letter", name)
	}
	d := SpiderData{Name: name, Type: exportedName(name), Package: pkg}
	domain = strings.TrimSpace(domain)
	if strings.Contains(domain, "://") {
		u, err := url.Parse(domain)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			return SpiderData{}, UsageErrorf("%q: give a domain (example.com) or an absolute http(s) URL", domain)
		}
		if u.Path == "" {
			u.Path = "/"
		}
		d.Domain, d.StartURL = u.Hostname(), u.String()
	} else {
		host := strings.ToLower(strings.TrimSuffix(domain, "/"))
		if host == "" || strings.ContainsAny(host, "/?# \t") {
			return SpiderData{}, UsageErrorf("%q: give a domain (example.com) or an absolute http(s) URL", domain)
		}
		if _, err := url.Parse("https://" + host + "/"); err != nil {
			return SpiderData{}, UsageErrorf("%q is not a domain: %v", domain, err)
		}
		d.Domain, d.StartURL = host, "https://"+host+"/"
		if h, _, ok := strings.Cut(host, ":"); ok {
			d.Domain = h
		}
	}
	// Go string literals in the templates: the values must not break them.
	if strings.ContainsAny(d.StartURL+d.Domain, "\"\\`\n") {
		return SpiderData{}, UsageErrorf("%q: quotes and backslashes are not allowed in a domain or URL", domain)
	}
	return d, nil
}

// exportedName turns a spider name into a Go type name: "book_shop" ->
// "BookShop".
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
