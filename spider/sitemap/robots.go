package sitemap

import (
	"bufio"
	"bytes"
	"net/url"
	"strings"
)

// RobotsSitemaps returns the URLs of the "Sitemap:" lines of a robots.txt
// body, resolved against robotsURL, in order and without duplicates. The
// directive is case-insensitive and may appear anywhere in the file;
// comments are ignored, and so is every other line, so a robots.txt with
// rules this package does not understand still gives its sitemaps. Values
// that are not http(s) URLs are skipped. At most maxURLs are returned (0:
// DefaultMaxURLs).
func RobotsSitemaps(body []byte, robotsURL *url.URL, maxURLs int) []string {
	if maxURLs <= 0 {
		maxURLs = DefaultMaxURLs
	}
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), 64<<10) // longer lines are skipped
	for sc.Scan() && len(out) < maxURLs {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(key), "sitemap") {
			continue
		}
		ref, err := url.Parse(strings.TrimSpace(val))
		if err != nil {
			continue
		}
		u := ref
		if robotsURL != nil {
			u = robotsURL.ResolveReference(ref)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		u.Fragment, u.RawFragment = "", ""
		if s := u.String(); !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// RobotsTxt returns the URL of the robots.txt of siteURL's host
// ("https://example.com/shop/" -> "https://example.com/robots.txt"), where
// sites list their sitemaps. An unparsable siteURL is returned as it is, so
// that the request for it reports the problem.
func RobotsTxt(siteURL string) string {
	u, err := url.Parse(strings.TrimSpace(siteURL))
	if err != nil || u.Host == "" {
		return siteURL
	}
	return (&url.URL{Scheme: u.Scheme, User: u.User, Host: u.Host, Path: "/robots.txt"}).String()
}
