package main

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gocrawl/gocrawl/bench/scenario"
	"github.com/gocrawl/gocrawl/devtools/simsite"
)

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       nginxStatus
		err        bool
	}{
		{"counters", "Active connections: 1 \nserver accepts handled requests\n 7 7 42 \nReading: 0 Writing: 1 Waiting: 0 \n", nginxStatus{accepts: 7, requests: 42}, false},
		{"not stub_status", "<html>hello</html>\n", nginxStatus{}, true},
		{"short counters", "Active connections: 1 \nserver accepts handled requests\n 7 7\n", nginxStatus{}, true},
		{"not a number", "Active connections: 1 \nserver accepts handled requests\n 7 7 x\n", nginxStatus{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatus([]byte(tc.body))
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("parseStatus = %+v, %v; want %+v, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestNginxRefusesDynamicScenarios(t *testing.T) {
	for _, name := range []string{"S2", "S3", "S4-mixed"} {
		sc, err := scenario.Find(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := startNginx(sc, nginxOptions{workers: "1"}); !errors.Is(err, scenario.ErrNotStatic) {
			t.Errorf("%s: startNginx error = %v, want ErrNotStatic", name, err)
		}
	}
	sc, _ := scenario.Find("S1")
	if _, err := startNginx(sc, nginxOptions{workers: "0"}); !errors.Is(err, errUsage) {
		t.Errorf("-nginx-workers 0: error = %v, want a usage error", err)
	}
}

// TestNginxServesTheGoSitesPages starts both servers of S1 and compares
// every page, byte for byte: nginx's static files against the Go site's
// answers to a client that sent nginx's Host header (absolute links carry
// it). It needs nginx (bench/run.sh -server nginx installs it).
func TestNginxServesTheGoSitesPages(t *testing.T) {
	if _, err := findNginx(""); err != nil {
		t.Skip(err)
	}
	if testing.Short() {
		t.Skip("fetches S1's 20,000 pages from two servers")
	}
	tmp, err := os.MkdirTemp("", "gocrawl-bench-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	// nginx's workers run as nobody when the test runs as root.
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(tmpEnv, tmp)
	sc, err := scenario.Find("S1")
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		t.Run("unreachable folder", func(t *testing.T) {
			t.Setenv(tmpEnv, t.TempDir()) // mode 0700
			if _, err := startNginx(sc, nginxOptions{workers: "1"}); err == nil || !strings.Contains(err.Error(), "cannot enter") {
				t.Errorf("startNginx in a folder nobody can enter: %v, want an error saying so", err)
			}
		})
	}
	ng, err := startNginx(sc, nginxOptions{workers: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := ng.Close(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(ng.dir); !os.IsNotExist(err) {
			t.Errorf("nginx folder %s still there after Close: %v", ng.dir, err)
		}
	}()
	gs, err := startGo(sc)
	if err != nil {
		t.Fatal(err)
	}
	defer gs.Close()

	nginxURL, goURL := ng.URLs()["one"], gs.URLs()["one"]
	host := strings.TrimPrefix(nginxURL, "http://")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	get := func(u, host string) (int, string, []byte, error) {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			return 0, "", nil, err
		}
		req.Host = host
		res, err := client.Do(req)
		if err != nil {
			return 0, "", nil, err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Content-Type"), b, err
	}

	n := sc.Site.Hosts[0].Pages.Count
	paths := make(chan string)
	go func() {
		defer close(paths)
		for i := range n {
			paths <- simsite.PagePath(i)
		}
	}()
	var mu sync.Mutex
	var fails []string
	var bytesSeen int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for p := range paths {
				ns, nt, nb, err1 := get(nginxURL+p, host)
				gs, gt, gb, err2 := get(goURL+p, host)
				mu.Lock()
				switch {
				case err1 != nil || err2 != nil:
					fails = append(fails, p+": "+errors.Join(err1, err2).Error())
				case ns != http.StatusOK || gs != http.StatusOK || nt != gt || !bytes.Equal(nb, gb):
					fails = append(fails, p+": nginx "+http.StatusText(ns)+" "+nt+", go "+http.StatusText(gs)+" "+gt+", bodies differ or fail")
				}
				bytesSeen += int64(len(nb))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(fails) > 0 {
		t.Fatalf("%d of %d pages differ, first: %s", len(fails), n, fails[0])
	}
	if want := ng.content.Bytes; bytesSeen != want {
		t.Errorf("nginx served %d bytes, the site holds %d", bytesSeen, want)
	}
	// Paths that are not pages are 404 on both.
	for _, p := range []string{"/page/" + strconv.Itoa(n), "/robots.txt", "/nope"} {
		ns, _, _, err1 := get(nginxURL+p, host)
		gs, _, _, err2 := get(goURL+p, host)
		if err1 != nil || err2 != nil || ns != http.StatusNotFound || gs != http.StatusNotFound {
			t.Errorf("%s: nginx %d, go %d (%v), want 404 on both", p, ns, gs, errors.Join(err1, err2))
		}
	}
	sv, err := ng.Served()
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(n + 3); sv.Requests != want {
		t.Errorf("nginx counted %d requests, want %d", sv.Requests, want)
	}
	if sv.Pages != n {
		t.Errorf("served pages = %d, want %d", sv.Pages, n)
	}
}

func TestTreeCPU(t *testing.T) {
	self, err := treeCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := treeCPU(1 << 30); err == nil {
		t.Error("treeCPU of a process that does not exist: no error")
	}
	if self < 0 {
		t.Errorf("treeCPU(self) = %v", self)
	}
}
