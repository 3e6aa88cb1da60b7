package redact

import (
	"net/url"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"user and password", "http://user:s3cret@proxy.example:8080", "http://user:xxxxx@proxy.example:8080"},
		{"password with an @", "http://user:p@ss@proxy.example:8080/", "http://user:xxxxx@proxy.example:8080/"},
		{"user alone is no secret", "http://user@host.example/", "http://user@host.example/"},
		{"redis URL with a database", "redis://:s3cret@10.0.0.5:6379/0", "redis://:xxxxx@10.0.0.5:6379/0"},
		{"no userinfo", "https://example.com/a?b=1#c", "https://example.com/a?b=1#c"},
		{"an @ in the path is no userinfo", "https://example.com/@alice", "https://example.com/@alice"},
		{"the query is kept", "https://u:s3cret@example.com/?token=abc&password=x", "https://u:xxxxx@example.com/?token=abc&password=x"},
		{"malformed: bad escape in the password", "http://user:s3%zzret@proxy.example:8080", "http://xxxxx@proxy.example:8080"},
		{"malformed: no scheme", "user:s3cret@proxy.example:8080", "xxxxx@proxy.example:8080"},
		{"malformed: bad port", "redis://u:s3cret@host:port/0", "redis://xxxxx@host:port/0"},
		{"malformed without credentials", "http://[::1", "http://[::1"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := String(tt.in)
			if got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if strings.Contains(got, "s3cret") || strings.Contains(got, "s3%zzret") {
				t.Errorf("String(%q) = %q shows the password", tt.in, got)
			}
		})
	}
}

func TestURL(t *testing.T) {
	tests := []struct {
		name string
		u    *url.URL
		want string
	}{
		{"nil", nil, ""},
		{"password", &url.URL{Scheme: "https", User: url.UserPassword("u", "s3cret"), Host: "h.example", Path: "/x"}, "https://u:xxxxx@h.example/x"},
		{"user alone", &url.URL{Scheme: "https", User: url.User("u"), Host: "h.example"}, "https://u@h.example"},
		{"no userinfo, query kept", &url.URL{Scheme: "http", Host: "h.example", RawQuery: "key=v"}, "http://h.example?key=v"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := URL(tt.u); got != tt.want {
				t.Errorf("URL() = %q, want %q", got, tt.want)
			}
		})
	}
}
