package demosite

import (
	"fmt"
	"html"
	"net/http"
	"strings"
)

// robotsTxt allows every path to every user agent; serveRobots adds the
// Sitemap: line.
const robotsTxt = "User-agent: *\nAllow: /\n"

func serveHTML(w http.ResponseWriter, r *http.Request, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if r.Method == http.MethodHead {
		return
	}
	fmt.Fprint(w, body)
}

func notFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprint(w, "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>\n")
}

// esc escapes text for HTML content and attribute values.
func esc(s string) string { return html.EscapeString(s) }

// slugify turns "Albert Einstein" into sep-joined lower or title words:
// slugify("Albert Einstein", "-", false) = "Albert-Einstein".
func slugify(s, sep string, lower bool) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteString(sep)
			}
			dash = false
			if lower && r >= 'A' && r <= 'Z' {
				r += 'a' - 'A'
			}
			b.WriteRune(r)
		default:
			dash = true
		}
	}
	return b.String()
}
