package importrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gocrawl/gocrawl"

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath   string
	Imports      []string // direct, non-test
	Deps         []string // transitive, non-test
	TestImports  []string
	XTestImports []string
}

// rel is p's path inside the module ("" for the module root, p itself for
// other modules).
func rel(p string) string {
	if p == module {
		return ""
	}
	return strings.TrimPrefix(p, module+"/")
}

// under reports whether p (module-relative) is dir or inside it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// backends are the third-party modules only a backend package may link.
var backends = []string{
	"github.com/chromedp/",           // downloader/render
	"github.com/cockroachdb/pebble/", // persist/jobdir, pqueue/spillq, pqueue/pebbleq, httpcache/pebblecache
	"github.com/redis/go-redis/",     // persist/redisjob, pqueue/redisq
	"github.com/aws/",                // pipeline/feed/s3feed
	"github.com/johannesboyne/",      // devtools/s3server
	"github.com/jackc/",              // pipeline/feed/pgsink (pgx), devtools/pgtest
	"modernc.org/",                   // pipeline/feed/sqlitesink (SQLite in pure Go)
}

// ownBackend are the backend packages inside the author API (pipeline/):
// each may link its own driver, and nothing else a backend brings. The
// feed package itself links none: the command line imports the sinks and
// the storages.
var ownBackend = map[string]string{
	"pipeline/feed/s3feed":     "github.com/aws/",
	"pipeline/feed/pgsink":     "github.com/jackc/",
	"pipeline/feed/sqlitesink": "modernc.org/",
}

// backendOf returns the backend module prefix dep belongs to, or "".
func backendOf(dep string) string {
	for _, b := range backends {
		if strings.HasPrefix(dep, b) {
			return b
		}
	}
	return ""
}

// depViolations returns the deps of p that break a rule, by check, each
// backend named once (by its first package) rather than by all of them.
func depViolations(p pkg, bad func(dep string) bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, dep := range p.Deps {
		if b := backendOf(dep); b != "" {
			if seen[b] || b == ownBackend[rel(p.ImportPath)] {
				continue
			}
			seen[b] = true
			out = append(out, dep)
			continue
		}
		if bad(dep) {
			out = append(out, dep)
		}
	}
	return out
}

// authorAPI are the packages spider authors build on; forbidden are the
// module folders they must not depend on, even indirectly.
var (
	authorAPI = []string{"spider", "pipeline", "settings"}
	forbidden = []string{"engine", "scheduler", "downloader", "pqueue", "persist", "middleware", "cli", "devtools"}
	// allowed are the exceptions, each with its reason: the sitemap spider
	// sets the downloader's download_maxsize meta by its constant, which
	// brings the HTTP downloader's own leaves.
	allowed = map[string][]string{
		"spider/sitemap": {"downloader", "downloader/dnscache", "downloader/netguard"},
	}
)

// violations checks pkgs against the module's rules and returns one line
// per broken rule.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		path := rel(p.ImportPath)
		if slices.ContainsFunc(authorAPI, func(d string) bool { return under(path, d) }) {
			bad := func(dep string) bool {
				d := rel(dep)
				return d != dep && slices.ContainsFunc(forbidden, func(f string) bool { return under(d, f) }) && !slices.Contains(allowed[path], d)
			}
			for _, dep := range depViolations(p, bad) {
				out = append(out, fmt.Sprintf("%s depends on %s: spider, pipeline and settings must not depend on the engine's packages or a backend", path, dep))
			}
		}
		if path == "engine" {
			for _, dep := range depViolations(p, func(string) bool { return false }) {
				out = append(out, fmt.Sprintf("engine depends on %s: a backend must plug in from the program (a registry or an Options field), not be linked by the engine", dep))
			}
		}
		if !under(path, "cmd") && !under(path, "devtools") {
			for _, imp := range p.Imports {
				if under(rel(imp), "devtools") {
					out = append(out, fmt.Sprintf("%s imports %s: only cmd/, devtools/ and tests may import the development tools", path, imp))
				}
			}
		}
	}
	return out
}

// TestImportRules lists the module's packages with `go list` and checks
// the rules above.
func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 20 || !slices.ContainsFunc(pkgs, func(p pkg) bool { return p.ImportPath == module+"/engine" }) {
		t.Fatalf("go list gave %d packages, without the engine: the check would prove nothing", len(pkgs))
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestViolations checks that each rule catches what it is about, on a
// made-up module.
func TestViolations(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	for _, tc := range []struct {
		name string
		p    pkg
		want string // in the one violation; "" for none
	}{
		{"spider imports the engine", pkg{ImportPath: m("spider"), Deps: []string{m("engine")}}, "spider depends on " + m("engine")},
		{"pipeline/feed reaches pqueue indirectly", pkg{ImportPath: m("pipeline/feed"), Deps: []string{m("observe/stats"), m("pqueue/spillq")}}, "pqueue/spillq"},
		{"settings links Pebble", pkg{ImportPath: m("settings"), Deps: []string{"github.com/cockroachdb/pebble/v2"}}, "pebble"},
		{"pipeline/feed links the AWS SDK", pkg{ImportPath: m("pipeline/feed"), Deps: []string{"github.com/aws/aws-sdk-go-v2/service/s3"}}, "aws-sdk-go-v2"},
		{"s3feed links the AWS SDK", pkg{ImportPath: m("pipeline/feed/s3feed"), Deps: []string{"github.com/aws/aws-sdk-go-v2/service/s3", m("pipeline/feed")}}, ""},
		{"s3feed links Pebble", pkg{ImportPath: m("pipeline/feed/s3feed"), Deps: []string{"github.com/cockroachdb/pebble/v2"}}, "pebble"},
		{"the sitemap spider's allowed downloader", pkg{ImportPath: m("spider/sitemap"), Deps: []string{m("downloader"), m("downloader/netguard")}}, ""},
		{"the sitemap spider's renderer", pkg{ImportPath: m("spider/sitemap"), Deps: []string{m("downloader/render")}}, "downloader/render"},
		{"the engine links chromedp", pkg{ImportPath: m("engine"), Deps: []string{"github.com/chromedp/chromedp"}}, "engine depends on github.com/chromedp/chromedp"},
		{"the PostgreSQL sink links pgx", pkg{ImportPath: m("pipeline/feed/pgsink"), Deps: []string{"github.com/jackc/pgx/v5"}}, ""},
		{"the PostgreSQL sink links SQLite", pkg{ImportPath: m("pipeline/feed/pgsink"), Deps: []string{"modernc.org/sqlite"}}, "modernc.org/sqlite"},
		{"the feed package links pgx", pkg{ImportPath: m("pipeline/feed"), Deps: []string{"github.com/jackc/pgx/v5"}}, "pipeline/feed depends on github.com/jackc/pgx/v5"},
		{"the engine links the scheduler", pkg{ImportPath: m("engine"), Deps: []string{m("scheduler")}}, ""},
		{"a library package imports devtools", pkg{ImportPath: m("middleware"), Imports: []string{m("devtools/simsite")}}, "middleware imports " + m("devtools/simsite")},
		{"a test imports devtools", pkg{ImportPath: m("middleware"), TestImports: []string{m("devtools/simsite")}}, ""},
		{"cmd imports devtools", pkg{ImportPath: m("cmd/gocrawl"), Imports: []string{m("devtools/democmd")}}, ""},
		{"devtools imports devtools", pkg{ImportPath: m("devtools/democmd"), Imports: []string{m("devtools/simsite")}}, ""},
	} {
		got := violations([]pkg{tc.p})
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("%s: violations %q, want none", tc.name, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s: violations %q, want one naming %s", tc.name, got, tc.want)
		}
	}
}

// listPackages runs `go list -json` over the module (the bench module,
// bench/, is a module of its own and is not listed).
func listPackages(t *testing.T) []pkg {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goBin, "list", "-e", "-json=ImportPath,Imports,Deps,TestImports,XTestImports", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading go list's output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}
