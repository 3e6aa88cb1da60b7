package middleware

import (
	"net/http"
	"net/url"
	"testing"
)

// The jar's shortcut: nothing is looked up until a cookie was stored, and
// once one is, the jar answers as cookiejar does.
func TestJarShortcut(t *testing.T) {
	j := newJar()
	u, _ := url.Parse("http://shop.example.com/cart")
	if cs := j.Cookies(u); cs != nil {
		t.Fatalf("empty jar: %v", cs)
	}
	j.SetCookies(u, nil)
	if j.stored.Load() {
		t.Fatal("storing no cookie marked the jar as used")
	}
	j.SetCookies(u, []*http.Cookie{{Name: "sid", Value: "1"}})
	cs := j.Cookies(u)
	if len(cs) != 1 || cs[0].Name != "sid" || cs[0].Value != "1" {
		t.Fatalf("after SetCookies: %v", cs)
	}
	other, _ := url.Parse("http://other.example.org/")
	if cs := j.Cookies(other); len(cs) != 0 {
		t.Fatalf("another site got %v", cs)
	}
}
