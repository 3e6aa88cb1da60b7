package middleware

import (
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// The warcinfo record lists the settings changed from the defaults,
// redacted: secret settings masked, passwords in URLs masked, the rest as
// set.
func TestWarcInfoRedactsSettings(t *testing.T) {
	s := settings.New()
	for _, arg := range []string{
		"MONITOR_WEBHOOK_URL=https://hooks.example/services/s3cret",
		"REDIS_URL=redis://:s3cret@127.0.0.1:6379/0",
		"PROXY_LIST=[http://u:s3cret@p.example:8080]",
		`DEFAULT_REQUEST_HEADERS={Authorization: "Bearer s3cret"}`,
		"DOWNLOAD_DELAY=2",
	} {
		if err := s.SetOverride(arg); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]string{}
	for _, kv := range warcInfo(&spider.Crawler{Settings: s}) {
		if kv[0] == "setting" {
			name, v, _ := strings.Cut(kv[1], "=")
			got[name] = v
		}
	}
	want := map[string]string{
		"MONITOR_WEBHOOK_URL":     "***",
		"REDIS_URL":               "redis://:***@127.0.0.1:6379/0",
		"PROXY_LIST":              `["http://u:***@p.example:8080"]`,
		"DEFAULT_REQUEST_HEADERS": `{"Authorization":"***"}`,
		"DOWNLOAD_DELAY":          "2",
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("warcinfo %s=%s, want %s", name, got[name], w)
		}
	}
}
