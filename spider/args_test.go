package spider_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/spider"
)

func TestBaseSetArgs(t *testing.T) {
	defaults := []string{"https://default.example/"}
	tests := []struct {
		name    string
		args    map[string]string
		want    []string // StartURLs after SetArgs
		wantErr []string // parts of the error message; nil means no error
	}{
		{"no arguments keep the defaults", nil, defaults, nil},
		{"one URL", map[string]string{"start_urls": "http://127.0.0.1:8080/"}, []string{"http://127.0.0.1:8080/"}, nil},
		{"commas", map[string]string{"start_urls": "https://a.example/,https://b.example/x"},
			[]string{"https://a.example/", "https://b.example/x"}, nil},
		{"spaces, commas and blanks", map[string]string{"start_urls": " https://a.example/ ,, https://b.example/\n\thttps://c.example/ "},
			[]string{"https://a.example/", "https://b.example/", "https://c.example/"}, nil},
		{"empty", map[string]string{"start_urls": " , "}, defaults, []string{"start_urls is empty", "-a start_urls=URL"}},
		{"relative and wrong scheme, both named", map[string]string{"start_urls": "/relative,ftp://x/,https://ok.example/"}, defaults,
			[]string{`"/relative": not absolute`, `"ftp://x/": scheme "ftp" is not http or https`}},
		{"no host", map[string]string{"start_urls": "http:///path"}, defaults, []string{"missing host"}},
		{"unknown argument", map[string]string{"start_url": "https://a.example/"}, defaults,
			[]string{`unknown argument "start_url"`, "takes only start_urls"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &spider.Base{StartURLs: slices.Clone(defaults)}
			err := b.SetArgs(tt.args)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("SetArgs: %v", err)
			case tt.wantErr != nil && err == nil:
				t.Fatalf("SetArgs accepted %v", tt.args)
			}
			for _, part := range tt.wantErr {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q does not say %q", err, part)
				}
			}
			if !slices.Equal(b.StartURLs, tt.want) {
				t.Errorf("StartURLs = %q, want %q", b.StartURLs, tt.want)
			}
		})
	}
}

func TestParseStartURLsErrorKind(t *testing.T) {
	if _, err := spider.ParseStartURLs("example.com"); !errors.Is(err, spider.ErrInvalidURL) {
		t.Errorf("error %v is not ErrInvalidURL", err)
	}
}

func TestStartHosts(t *testing.T) {
	b := spider.Base{StartURLs: []string{"https://A.example/x", "https://a.example:8443/y", "http://127.0.0.1:8080/", "not a URL"}}
	if got, want := b.StartHosts(), []string{"a.example", "127.0.0.1"}; !slices.Equal(got, want) {
		t.Errorf("StartHosts() = %q, want %q", got, want)
	}
	if got := (&spider.Base{}).StartHosts(); got != nil {
		t.Errorf("StartHosts() of no URLs = %q, want nil", got)
	}
}
