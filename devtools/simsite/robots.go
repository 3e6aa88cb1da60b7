package simsite

import (
	"strconv"
	"strings"
)

// robotsBody renders the robots.txt of a RobotsConfig.
func robotsBody(r RobotsConfig) string {
	if r.Body != "" {
		return r.Body
	}
	var b strings.Builder
	b.WriteString("User-agent: ")
	b.WriteString(r.UserAgent)
	b.WriteByte('\n')
	if r.CrawlDelay > 0 {
		b.WriteString("Crawl-delay: ")
		b.WriteString(strconv.FormatFloat(r.CrawlDelay.Seconds(), 'f', -1, 64))
		b.WriteByte('\n')
	}
	for _, a := range r.Allow {
		b.WriteString("Allow: ")
		b.WriteString(a)
		b.WriteByte('\n')
	}
	for _, d := range r.Disallow {
		b.WriteString("Disallow: ")
		b.WriteString(d)
		b.WriteByte('\n')
	}
	if len(r.Disallow) == 0 {
		b.WriteString("Disallow:\n")
	}
	return b.String()
}
