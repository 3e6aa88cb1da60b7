package hostile

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// With SSRF_PROTECTION_ENABLED, a public page cannot
// send the crawl to an internal address, by redirect (checked when the
// redirect is followed) or by a name that resolves to one (checked when
// the downloader connects). The "public" site is 127.0.0.2, allowed with
// SSRF_PROTECTION_ALLOW; the internal one is 127.0.0.1.
func TestSSRFProtection(t *testing.T) {
	public := newServer(t, "127.0.0.2:0", 0)
	internal := newServer(t, "127.0.0.1:0", 0)
	port := internal.Listener.Addr().String()[strings.LastIndexByte(internal.Listener.Addr().String(), ':')+1:]
	redirect := func(to string) string { return public.URL + "/redirect?to=" + url.QueryEscape(to) }
	starts := []string{
		redirect(internal.URL + "/page/loopback"),
		redirect("http://169.254.169.254/latest/meta-data/"),
		redirect("http://localhost:" + port + "/page/by-name"),
		redirect("http://[::ffff:127.0.0.1]:" + port + "/page/mapped"),
		"http://localhost:" + port + "/page/start-by-name", // only the dial-time check sees it
		public.URL + "/page/public",
	}
	args := []string{"run", "follow", "-a", "start_urls=" + strings.Join(starts, ","),
		"-a", "allowed_domains=127.0.0.2,127.0.0.1,localhost,169.254.169.254", "-a", "max_depth=1",
		"-s", "ROBOTSTXT_OBEY=false"}

	r := gocrawl(t, time.Minute, append(args, "-s", "SSRF_PROTECTION_ENABLED=true", "-s", "SSRF_PROTECTION_ALLOW=127.0.0.2")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, tail(r.stderr))
	}
	if got := r.stats["engine/dropped/blocked_address"]; got != 5 {
		t.Errorf("engine/dropped/blocked_address = %v, want 5\n%s", got, tail(r.stderr))
	}
	if hits := internal.Hits(); len(hits) != 0 {
		t.Errorf("the internal server was reached: %v", hits)
	}
	if public.Count("/page/public") != 1 {
		t.Errorf("the public page was not crawled: %v", public.Hits())
	}
	if !strings.Contains(r.stderr, "SSRF") {
		t.Errorf("no log line names the SSRF protection:\n%s", tail(r.stderr))
	}

	// Off (the default), the same crawl reaches the internal server.
	r = gocrawl(t, time.Minute, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, tail(r.stderr))
	}
	if internal.Count("/page/loopback") == 0 {
		t.Errorf("without the protection the redirect to 127.0.0.1 was not followed: %v", internal.Hits())
	}
}
