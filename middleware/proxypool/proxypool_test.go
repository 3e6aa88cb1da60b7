package proxypool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "proxies.txt")
	os.WriteFile(file, []byte("# our proxies\nhttp://a:8080\n\n  b:3128  # bare host:port is http\nhttp://u:s3cret@c:1\n"), 0o644)
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("http://a:1\nftp://u:s3cret@x:2\nhttp://a:1\nhttp://nohost\n"), 0o644)
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, []byte("# nothing\n"), 0o644)
	for _, tc := range []struct {
		name   string
		list   []string
		labels []string
		errs   []string
	}{
		{"list", []string{"http://a:8080", "https://b:443", "socks5://c:1080"}, []string{"a:8080", "b:443", "c:1080"}, nil},
		{"file", []string{file}, []string{"a:8080", "b:3128", "c:1"}, nil},
		{"bad file", []string{bad}, []string{"a:1"}, []string{
			"bad.txt:2", `scheme "ftp"`, "bad.txt:3: proxy a:1 is listed twice (first at PROXY_LIST: " + bad + ":1)", "bad.txt:4"}},
		{"empty file", []string{empty}, nil, []string{"lists no proxy"}},
		{"bad list item", []string{"http://a:1", "http://user:pw@:9"}, []string{"a:1"}, []string{"PROXY_LIST[1]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := Load(tc.list)
			var labels []string
			for _, p := range ps {
				labels = append(labels, p.Label)
			}
			if strings.Join(labels, ",") != strings.Join(tc.labels, ",") {
				t.Errorf("labels %v, want %v", labels, tc.labels)
			}
			if len(tc.errs) == 0 && err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.errs {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want it to contain %q", err, want)
				}
			}
			if err != nil && (strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), ":pw@")) {
				t.Errorf("the error shows a password: %v", err)
			}
		})
	}
	ps, _ := Load([]string{"http://u:s3cret@c:1"})
	if ps[0].Scope() != "proxy:c:1" || ps[0].HostScope("example.com") != "proxy:c:1|example.com" {
		t.Errorf("scopes %q %q", ps[0].Scope(), ps[0].HostScope("example.com"))
	}
	if pw, _ := ps[0].URL.User.Password(); pw != "s3cret" {
		t.Error("the URL lost its credentials")
	}
}

func newTestPool(labels ...string) *Pool {
	var ps []Proxy
	for _, l := range labels {
		p, _ := ParseProxy(l)
		ps = append(ps, p)
	}
	return New(ps, Options{RestMin: 10 * time.Second, RestMax: 35 * time.Second})
}

func TestPickRotatesAndSkipsResting(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newTestPool("a:1", "b:1", "c:1")
	var got []string
	for range 4 {
		px, _ := p.Pick(now, nil, nil)
		got = append(got, px.Label)
	}
	if strings.Join(got, " ") != "a:1 b:1 c:1 a:1" {
		t.Errorf("rotation %v", got)
	}
	if rest := p.Failed("b:1", now, now); rest != 10*time.Second {
		t.Errorf("first rest %v", rest)
	}
	got = nil
	for range 4 {
		px, _ := p.Pick(now.Add(5*time.Second), nil, nil)
		got = append(got, px.Label)
	}
	if strings.Contains(strings.Join(got, " "), "b:1") {
		t.Errorf("a resting proxy was picked: %v", got)
	}
	// After its rest it is picked again.
	seen := false
	for range 3 {
		if px, _ := p.Pick(now.Add(11*time.Second), nil, nil); px.Label == "b:1" {
			seen = true
		}
	}
	if !seen {
		t.Error("b:1 was not picked after its rest")
	}
}

func TestPickAvoidsTriedAndPrefersFree(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newTestPool("a:1", "b:1", "c:1")
	for range 5 {
		if px, _ := p.Pick(now, []string{"a:1", "b:1"}, nil); px.Label != "c:1" {
			t.Fatalf("picked %s, want the one not tried", px.Label)
		}
	}
	// Only tried ones left: one of them rather than nothing.
	if px, _ := p.Pick(now, []string{"a:1", "b:1", "c:1"}, nil); px == nil {
		t.Fatal("nothing picked though proxies are available")
	}
	busy := func(px *Proxy) bool { return px.Label == "b:1" }
	for range 3 {
		if px, _ := p.Pick(now, nil, busy); px.Label != "b:1" {
			t.Fatalf("picked %s, want the one with room", px.Label)
		}
	}
	// Nobody has room: still a proxy (the request then waits for its scope).
	if px, _ := p.Pick(now, nil, func(*Proxy) bool { return false }); px == nil {
		t.Fatal("nothing picked")
	}
}

func TestAllRestingReportsWait(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newTestPool("a:1", "b:1")
	p.Failed("a:1", now, now)
	p.Failed("b:1", now.Add(4*time.Second), now.Add(4*time.Second))
	px, wait := p.Pick(now.Add(5*time.Second), nil, nil)
	if px != nil || wait != 5*time.Second {
		t.Errorf("Pick = %v, %v; want nil and the 5 s left of a:1's rest", px, wait)
	}
}

func TestRestDoublesAndCaps(t *testing.T) {
	now := time.Unix(1000, 0)
	p := newTestPool("a:1")
	var rests []time.Duration
	for range 4 {
		now = now.Add(time.Hour)
		rests = append(rests, p.Failed("a:1", now, now))
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 35 * time.Second, 35 * time.Second}
	for i := range want {
		if rests[i] != want[i] {
			t.Fatalf("rests %v, want %v", rests, want)
		}
	}
	// Refusals of requests sent before the rest began count for it once.
	now = now.Add(time.Hour)
	p.Succeeded("a:1")
	first := p.Failed("a:1", now, now.Add(-time.Second))
	second := p.Failed("a:1", now.Add(time.Second), now.Add(-time.Second))
	if first != 10*time.Second || second != 9*time.Second {
		t.Errorf("burst: rests %v then %v, want 10s then the 9s left", first, second)
	}
	if st := p.Statuses()[0]; st.Failures != 1 {
		t.Errorf("failures in a row %d, want 1", st.Failures)
	}
}
