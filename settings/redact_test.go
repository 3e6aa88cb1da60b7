package settings_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/settings"
)

func TestRedactText(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"redis password", "redis://:s3cret@10.0.0.5:6379/0", "redis://:***@10.0.0.5:6379/0"},
		{"redis user and password", "rediss://crawler:s3cret@redis.internal:6380", "rediss://crawler:***@redis.internal:6380"},
		{"database URI", "postgresql://crawl:s3cret@db.internal:5432/items?sslmode=disable", "postgresql://crawl:***@db.internal:5432/items?sslmode=disable"},
		{"password with an @", "http://user:p@ss@proxy.example:8080/", "http://user:***@proxy.example:8080/"},
		{"proxy without scheme", "user:s3cret@proxy.example:8080", "user:***@proxy.example:8080"},
		{"user alone is no secret", "http://user@host.example/", "http://user@host.example/"},
		{"port is no password", "http://host.example:8080/a@b", "http://host.example:8080/a@b"},
		{"secret query parameters", "https://hooks.example/x?token=s3cret&channel=ops&api_key=s3cret", "https://hooks.example/x?token=***&channel=ops&api_key=***"},
		{"key=value pairs", "host=db password=s3cret sslmode=disable", "host=db password=*** sslmode=disable"},
		{"URL inside YAML text", `{"postgresql://u:s3cret@db/x": {format: jsonl}}`, `{"postgresql://u:***@db/x": {format: jsonl}}`},
		{"plain text", "gocrawl/1.0 (+https://example.com)", "gocrawl/1.0 (+https://example.com)"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := settings.RedactText(tt.in)
			if got != tt.want {
				t.Errorf("RedactText(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if strings.Contains(got, "s3cret") || strings.Contains(got, "p@ss") {
				t.Errorf("RedactText(%q) = %q shows the secret", tt.in, got)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	tests := []struct {
		name    string
		setting string
		in      any
		want    any
	}{
		{"webhook URL is secret as a whole", "MONITOR_WEBHOOK_URL", "https://hooks.slack.com/services/T0/B0/s3cret", "***"},
		{"an empty secret stays empty", "MONITOR_WEBHOOK_URL", "", ""},
		{"serve token", "SERVE_TOKEN", "s3cret", "***"},
		{"a setting named as a secret", "MYSPIDER_API_KEY", "s3cret", "***"},
		{"a boolean is no secret", "HTTP_AUTH", true, true},
		{"Redis URL password", "REDIS_URL", "redis://:s3cret@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"},
		{"proxy list", "PROXY_LIST", []string{"http://u:s3cret@p1.example:8080", "http://p2.example:8080"},
			[]string{"http://u:***@p1.example:8080", "http://p2.example:8080"}},
		{"feeds keyed by database URIs", "FEEDS",
			map[string]any{"postgresql://crawl:s3cret@db/items": map[string]any{"format": "jsonl", "table": "items"}, "out.jsonl": map[string]any{"overwrite": true}},
			map[string]any{"postgresql://crawl:***@db/items": map[string]any{"format": "jsonl", "table": "items"}, "out.jsonl": map[string]any{"overwrite": true}}},
		{"headers under secret names", "DEFAULT_REQUEST_HEADERS",
			map[string]any{"Authorization": "Bearer s3cret", "X-Api-Key": "s3cret", "Cookie": "sid=s3cret", "Accept": "text/html"},
			map[string]any{"Authorization": "***", "X-Api-Key": "***", "Cookie": "***", "Accept": "text/html"}},
		{"nested lists", "THROTTLING_SCOPES", []any{map[string]any{"proxy": "http://u:s3cret@p.example:1"}, 2.0},
			[]any{map[string]any{"proxy": "http://u:***@p.example:1"}, 2.0}},
		{"numbers are kept", "DOWNLOAD_DELAY", 2.5, 2.5},
		{"a plain setting is kept", "USER_AGENT", "gocrawl/1 (+https://example.com)", "gocrawl/1 (+https://example.com)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := settings.Redact(tt.setting, tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Redact(%s, %#v) = %#v, want %#v", tt.setting, tt.in, got, tt.want)
			}
		})
	}
	// The value given is not modified.
	in := map[string]any{"Authorization": "Bearer s3cret"}
	settings.Redact("DEFAULT_REQUEST_HEADERS", in)
	if in["Authorization"] != "Bearer s3cret" {
		t.Error("Redact modified its argument")
	}
}

// Entries (`gocrawl settings`) shows every value and origin redacted.
func TestEntriesRedacted(t *testing.T) {
	s := settings.New()
	for _, arg := range []string{
		"MONITOR_WEBHOOK_URL=https://hooks.example/services/s3cret",
		"REDIS_URL=redis://:s3cret@127.0.0.1:6379/0",
		"PROXY_LIST=[http://u:s3cret@p.example:8080]",
		`FEEDS={"postgresql://u:s3cret@db/x": {format: jsonl}}`,
	} {
		if err := s.SetOverride(arg); err != nil {
			t.Fatal(err)
		}
	}
	es, err := s.Entries("MONITOR_WEBHOOK_URL", "REDIS_URL", "PROXY_LIST", "FEEDS")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		shown := e.Origin + " " + fmt.Sprint(e.Value)
		if strings.Contains(shown, "s3cret") {
			t.Errorf("%s shown as %s: the secret is in clear", e.Name, shown)
		}
		if !strings.Contains(fmt.Sprint(e.Value), "***") || !strings.Contains(e.Origin, "***") {
			t.Errorf("%s shown as %s: value or origin not masked", e.Name, shown)
		}
	}
}

func TestRedactArg(t *testing.T) {
	tests := []struct{ setting, in, want string }{
		{"SERVE_TOKEN", "s3cret", "***"},
		{"REDIS_URL", "redis://:s3cret@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"},
		{"DEFAULT_REQUEST_HEADERS", "{Authorization: Bearer s3cret, Accept: text/html}", `{"Accept":"text/html","Authorization":"***"}`},
		{"FEEDS", `{"postgresql://u:s3cret@db/x": {format: jsonl}}`, `{"postgresql://u:***@db/x":{"format":"jsonl"}}`},
		{"DOWNLOAD_DELAY", "2", "2"},
		{"THROTTLING_SCOPES", `{"a.com": {delay: 2}}`, `{"a.com": {delay: 2}}`},
	}
	for _, tt := range tests {
		if got := settings.RedactArg(tt.setting, tt.in); got != tt.want {
			t.Errorf("RedactArg(%s, %q) = %q, want %q", tt.setting, tt.in, got, tt.want)
		}
	}
}

// A value its type refuses is not quoted in the error when the setting is
// a secret, and is redacted otherwise.
func TestTypeErrorsRedacted(t *testing.T) {
	tests := []struct {
		name string
		set  func(*settings.Settings) error
	}{
		{"MONITOR_WEBHOOK_URL", func(s *settings.Settings) error {
			return s.SetOverride("MONITOR_WEBHOOK_URL=hooks.example/services/s3cret")
		}},
		{"SERVE_TOKEN", func(s *settings.Settings) error {
			return s.Set("SERVE_TOKEN", []any{"s3cret"}, settings.SourceFile, "gocrawl.yaml:3")
		}},
		{"REDIS_URL", func(s *settings.Settings) error {
			return s.Set("REDIS_URL", map[string]any{"url": "redis://:s3cret@127.0.0.1:6379/0"}, settings.SourceFile, "gocrawl.yaml:4")
		}},
	}
	for _, tt := range tests {
		err := tt.set(settings.New())
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: the error shows the secret: %v", tt.name, err)
		}
		if !strings.Contains(err.Error(), tt.name) {
			t.Errorf("%s: the error does not name the setting: %v", tt.name, err)
		}
	}
}
