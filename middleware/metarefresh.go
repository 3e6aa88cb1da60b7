package middleware

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

func init() { RegisterDownloader("MetaRefresh", newMetaRefresh) }

// MetaRefresh follows HTML <meta http-equiv="refresh" content="N; url=...">
// tags (outside METAREFRESH_IGNORE_TAGS elements) and Refresh response
// headers of GET responses, like Redirect follows 3xx: as a new GET request
// through the scheduler and throttling, with redirect_reasons "meta
// refresh". A refresh whose delay is above METAREFRESH_MAXDELAY is not
// followed (the page goes to the callback); shorter delays are honoured, up
// to REDIRECT_MAX_DELAY, as a throttling_delay on the new request. The
// dont_redirect meta opts out.
type MetaRefresh struct {
	*redirector
	maxDelay   time.Duration
	ignoreTags []string
}

func newMetaRefresh(c *spider.Crawler) (Downloader, error) {
	s := c.Settings
	if !s.Bool("METAREFRESH_ENABLED") {
		return nil, nil
	}
	r, err := newRedirector(c)
	if err != nil {
		return nil, err
	}
	return &MetaRefresh{redirector: r, maxDelay: s.Seconds("METAREFRESH_MAXDELAY"), ignoreTags: s.Strings("METAREFRESH_IGNORE_TAGS")}, nil
}

// WrapFetcher implements Downloader.
func (m *MetaRefresh) WrapFetcher(next Fetcher) Fetcher {
	return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		res, err := next.Fetch(ctx, req)
		if err != nil || req.EffectiveMethod() == http.MethodHead || metaBool(req, MetaDontRedirect) {
			return res, err
		}
		delay, target, ok := m.refresh(res)
		if !ok || delay > m.maxDelay {
			return res, nil
		}
		nr, err := m.follow(req, target, "meta refresh", true, delay)
		if err != nil {
			return nil, err
		}
		return nil, &RescheduleError{Requests: []*spider.Request{nr}, Reason: "redirect"}
	})
}

// refresh finds the response's refresh instruction: a Refresh header, or
// the first meta refresh tag of an HTML body.
func (m *MetaRefresh) refresh(res *spider.Response) (time.Duration, string, bool) {
	if h := res.Header.Get("Refresh"); h != "" {
		if d, u, ok := parseRefresh(h); ok {
			return d, u, true
		}
	}
	// Parse only pages that may hold a refresh tag: most do not, and the
	// callbacks that never parse HTML should not pay for it.
	if !containsFold(res.Body, "http-equiv") || !containsFold(res.Body, "refresh") || !res.IsHTML() {
		return 0, "", false
	}
	doc, err := res.Doc()
	if err != nil {
		return 0, "", false
	}
	var (
		delay  time.Duration
		target string
		found  bool
	)
	doc.Find("meta[http-equiv]").EachWithBreak(func(_ int, s *goquery.Selection) bool {
		if v, _ := s.Attr("http-equiv"); !strings.EqualFold(strings.TrimSpace(v), "refresh") {
			return true
		}
		for _, tag := range m.ignoreTags {
			if s.Closest(tag).Length() > 0 {
				return true
			}
		}
		content, _ := s.Attr("content")
		delay, target, found = parseRefresh(content)
		return !found
	})
	return delay, target, found
}

// parseRefresh parses "5; url=/next" (and the lenient forms browsers
// accept: "5;URL='/next'", "0, /next", "5 url=/next"). A refresh without a
// URL reloads the same page and is not followed.
func parseRefresh(v string) (time.Duration, string, bool) {
	v = strings.TrimSpace(v)
	i := 0
	for i < len(v) && (v[i] >= '0' && v[i] <= '9' || v[i] == '.') {
		i++
	}
	if i == 0 {
		return 0, "", false
	}
	secs, err := strconv.ParseFloat(v[:i], 64)
	if err != nil || secs < 0 {
		return 0, "", false
	}
	rest := strings.TrimLeft(v[i:], " \t\r\n;,")
	if len(rest) >= 3 && strings.EqualFold(rest[:3], "url") {
		after := strings.TrimLeft(rest[3:], " \t\r\n")
		if strings.HasPrefix(after, "=") {
			rest = strings.TrimLeft(after[1:], " \t\r\n")
		}
	}
	if len(rest) > 0 && (rest[0] == '\'' || rest[0] == '"') {
		q := rest[0]
		rest = rest[1:]
		if j := strings.IndexByte(rest, q); j >= 0 {
			rest = rest[:j]
		}
	}
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return 0, "", false
	}
	return settings.Duration(secs), rest, true
}

// containsFold reports whether b contains the ASCII string sub (lower
// case, not empty), ignoring ASCII case, without allocating. Candidates
// are found with bytes.IndexByte on sub's first byte in both cases (a
// vectorised scan), so a page without the string costs little more than
// two passes over its bytes.
func containsFold(b []byte, sub string) bool {
	n := len(sub)
	if n == 0 {
		return true
	}
	lo, up := sub[0], sub[0]
	if 'a' <= lo && lo <= 'z' {
		up = lo - ('a' - 'A')
	}
	nextLo, nextUp := -1, -1 // next position of each case at or after i, -2 when none is left
	for i := 0; i+n <= len(b); {
		if nextLo != -2 && nextLo < i {
			if k := bytes.IndexByte(b[i:], lo); k >= 0 {
				nextLo = i + k
			} else {
				nextLo = -2
			}
		}
		if up != lo && nextUp != -2 && nextUp < i {
			if k := bytes.IndexByte(b[i:], up); k >= 0 {
				nextUp = i + k
			} else {
				nextUp = -2
			}
		}
		switch {
		case nextLo == -2 && (up == lo || nextUp == -2):
			return false
		case nextLo == -2:
			i = nextUp
		case up == lo || nextUp == -2:
			i = nextLo
		default:
			i = min(nextLo, nextUp)
		}
		if i+n > len(b) {
			return false
		}
		if equalFoldASCII(b[i+1:i+n], sub[1:]) {
			return true
		}
		i++
	}
	return false
}

// equalFoldASCII reports whether b equals the lower-case ASCII s, ignoring
// ASCII case.
func equalFoldASCII(b []byte, s string) bool {
	for j := range len(s) {
		c := b[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[j] {
			return false
		}
	}
	return true
}
