package spider

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestNewRequestErrorsNameTheURL(t *testing.T) {
	for _, tc := range []struct {
		in      string
		wantErr string // substring; "" means valid
	}{
		{"http://example.com/", ""},
		{"  https://example.com/a?b=c  ", ""},
		{"HTTP://EXAMPLE.com/", ""},
		{"ftp://example.com/f", `scheme "ftp"`},
		{"/relative/path", "not absolute"},
		{"example.com/page", "not absolute"},
		{"http://", "missing host"},
		{"http://[::1", "invalid URL"},
		{"", "not absolute"},
		{"mailto:a@example.com", `scheme "mailto"`},
	} {
		req, err := NewRequest(tc.in, nil)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("NewRequest(%q): %v", tc.in, err)
			} else if req.EffectiveMethod() != "GET" || req.URL.Host == "" {
				t.Errorf("NewRequest(%q) = %+v", tc.in, req)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidURL) {
			t.Errorf("NewRequest(%q) error = %v, want ErrInvalidURL", tc.in, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `"`+tc.in+`"`) {
			t.Errorf("NewRequest(%q) error %q should name the URL and say %q", tc.in, err, tc.wantErr)
		}
	}
}

func TestMustRequestPanicsOnInvalidURL(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustRequest did not panic")
		}
	}()
	MustRequest("nope", nil)
}

func TestCloneIsDeep(t *testing.T) {
	orig := MustRequest("http://user:pw@example.com/a?q=1", nil)
	orig.Header = http.Header{"X-A": {"1"}}
	orig.Body = []byte("body")
	orig.Meta = Meta{
		"n":      1.0,
		"nested": map[string]any{"k": "v", "list": []any{"a", map[string]any{"deep": true}}},
		"names":  []string{"x"},
	}
	c := orig.Clone()
	c.URL.Path = "/changed"
	c.URL.User = nil
	c.Header.Set("X-A", "2")
	c.Body[0] = 'B'
	c.Meta["n"] = 2.0
	c.Meta["nested"].(map[string]any)["k"] = "changed"
	c.Meta["nested"].(map[string]any)["list"].([]any)[1].(map[string]any)["deep"] = false
	c.Meta["names"].([]string)[0] = "y"

	if orig.URL.Path != "/a" || orig.URL.User == nil || orig.URL.User.Username() != "user" {
		t.Errorf("URL shared: %s", orig.URL)
	}
	if orig.Header.Get("X-A") != "1" || string(orig.Body) != "body" || orig.Meta["n"] != 1.0 {
		t.Errorf("header, body or meta shared: %v %q %v", orig.Header, orig.Body, orig.Meta)
	}
	nested := orig.Meta["nested"].(map[string]any)
	if nested["k"] != "v" || nested["list"].([]any)[1].(map[string]any)["deep"] != true || orig.Meta["names"].([]string)[0] != "x" {
		t.Errorf("nested meta shared: %v", orig.Meta)
	}
}

func TestRequestHelpers(t *testing.T) {
	r := MustRequest("http://Example.COM:80/x", nil)
	if r.Host() != "example.com" {
		t.Errorf("Host() = %q", r.Host())
	}
	if HostKey(MustRequest("https://a.com:443/", nil).URL) != "a.com" || HostKey(MustRequest("https://a.com:8443/", nil).URL) != "a.com:8443" {
		t.Error("HostKey does not drop only the default port")
	}
	if r.Get("missing") != nil {
		t.Error("Get on nil meta")
	}
	if r.Set("k", "v").Get("k") != "v" {
		t.Error("Set/Get")
	}
	if r.String() != "GET http://Example.COM:80/x" {
		t.Errorf("String() = %q", r.String())
	}
	var nilReq *Request
	if nilReq.String() != "<nil request>" {
		t.Error("nil String")
	}
}
