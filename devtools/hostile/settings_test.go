package hostile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Bad local input costs bounded memory and time
// and is refused with exit status 2 and a message naming where it is; huge
// values behave as huge, never as zero.

const aliasBomb = `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
`

func TestYAMLAliasBombs(t *testing.T) {
	srv := newServer(t, "", 0)
	dir := t.TempDir()
	file := "FEEDS:\n" + indent(aliasBomb)
	if err := os.WriteFile(filepath.Join(dir, "gocrawl.yaml"), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	flow := "{a: &a [1,1,1,1,1,1,1,1,1,1], b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a], c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b], d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c], e: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]}"
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"file", nil, "gocrawl.yaml:6:"}, // the line of "e", where the budget is crossed
		{"-s", []string{"--settings", os.DevNull, "-s", "FEEDS=" + flow}, "-s FEEDS="},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "follow", "-a", "start_urls=" + srv.URL + "/page/0"}, tt.args...)
			r := gocrawlIn(t, dir, time.Minute, nil, args...)
			t.Logf("exit %d in %v, peak RSS %s: %s", r.code, r.elapsed, mb(r.maxRSS), strings.TrimSpace(r.stderr))
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "alias") {
				t.Errorf("exit %d, want 2 and a message naming %q and the aliases:\n%s", r.code, tt.want, r.stderr)
			}
			if r.maxRSS > 128*mib {
				t.Errorf("peak RSS %s", mb(r.maxRSS))
			}
		})
	}
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = "  " + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestNonFiniteAndHugeNumbers(t *testing.T) {
	srv := newServer(t, "", 0)
	for _, v := range []string{"DOWNLOAD_DELAY=.inf", "DOWNLOAD_TIMEOUT=.inf", "DOWNLOAD_TIMEOUT=1e400", "CLOSESPIDER_TIMEOUT=.nan"} {
		r := gocrawl(t, time.Minute, "run", "follow", "-a", "start_urls="+srv.URL+"/page/0", "-s", v)
		name, _, _ := strings.Cut(v, "=")
		if r.code != 2 || !strings.Contains(r.stderr, name) {
			t.Errorf("-s %s: exit %d, want 2 naming the setting:\n%s", v, r.code, r.stderr)
		}
	}
	if srv.Count("/page/0") != 0 {
		t.Errorf("a crawl ran with a refused setting")
	}
	// Huge but finite: a delay of 1e10 s is "forever", not zero. The first
	// page is fetched; its links wait; SIGINT ends the crawl at once.
	start := time.Now()
	hook, _ := interrupt(t, func() bool { return time.Since(start) > 1500*time.Millisecond })
	r := gocrawlIn(t, t.TempDir(), time.Minute, hook, "run", "follow", "-a", "start_urls="+srv.URL+"/page/1?links=2_3_4",
		"-s", "DOWNLOAD_DELAY=1e10", "-s", "DOWNLOAD_TIMEOUT=1e300", "-s", "ROBOTSTXT_OBEY=false")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, tail(r.stderr))
	}
	if n := srv.Count("/page/2") + srv.Count("/page/3") + srv.Count("/page/4"); n != 0 || srv.Count("/page/1") != 1 {
		t.Errorf("DOWNLOAD_DELAY=1e10 let %d more requests through: %v", n, srv.Hits())
	}
	// Refresh: 10000000000 is a delay of 317 years, beyond
	// METAREFRESH_MAXDELAY: not followed (it overflowed to "now").
	r = gocrawl(t, time.Minute, "run", "follow", "-a", "start_urls="+srv.URL+"/refresh?secs=10000000000", "-s", "ROBOTSTXT_OBEY=false")
	if r.code != 0 || srv.Count("/page/refreshed") != 0 {
		t.Errorf("Refresh: 10000000000 was followed (exit %d, hits %v)", r.code, srv.Hits())
	}
}
