// Package redact hides the credentials of URLs before they reach a log
// line or an error message: the password of the userinfo becomes "xxxxx".
// It is the one place the library does this, for request URLs, proxy URLs
// and Redis URLs alike.
//
// Only the userinfo is a credential here: the query is kept as it is (a
// crawled URL's query is what a log reader needs to tell requests apart).
package redact

import (
	"net/url"
	"strings"
)

// Mask replaces a hidden credential.
const Mask = "xxxxx"

// URL returns u with its password replaced by "xxxxx", or "" for nil.
func URL(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.Redacted()
}

// String returns the URL s with its password hidden. A URL that parses is
// shown as url.URL.Redacted shows it (user name kept, password "xxxxx");
// one that does not parse (a bad escape, a bad port) or has no "//"
// ("user:pass@host:port") keeps its
// scheme and whatever follows the last "@", and everything in between
// becomes "xxxxx": user name, password and any "@" inside them.
func String(s string) string {
	if u, err := url.Parse(s); err == nil {
		if u.User != nil {
			return u.Redacted()
		}
		if !strings.Contains(u.Opaque, "@") {
			return s // no userinfo; an "@" in the path or query is none
		}
		// "user:pass@host:port" parses as scheme "user" and an opaque
		// part: masked below like a URL that does not parse.
	}
	prefix, rest := "", s
	if i := strings.Index(s, "://"); i >= 0 {
		prefix, rest = s[:i+3], s[i+3:]
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = Mask + rest[i:]
	}
	return prefix + rest
}
