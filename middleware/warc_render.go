package middleware

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/persist/warc"
	"github.com/gocrawl/gocrawl/spider"
)

// archiveRendered archives the exchanges the browser made to render req
// (its document, each redirect hop, each subresource), one request and
// one response (or revisit) record each, all carrying the same
// WARC-Page-ID and each its WARC-Resource-Type. See docs/archive.md.
func (m *Warc) archiveRendered(req *spider.Request, c *downloader.Capture) error {
	page := strings.TrimSuffix(strings.TrimPrefix(warc.NewRecordID(), "<urn:uuid:"), ">")
	for i := range c.Browser {
		ex, err := renderedExchange(&c.Browser[i], page)
		if err != nil {
			m.log.Warn().Str("page", req.URL.Redacted()).Err(err).Msg("WARC: an exchange of a rendered page is not archived")
			continue
		}
		if err := m.write(req, ex, true); err != nil {
			return err
		}
	}
	return nil
}

// renderedExchange turns what the browser exchanged into what the writer
// archives.
func renderedExchange(b *downloader.BrowserExchange, page string) (*warc.Exchange, error) {
	u, err := url.Parse(b.URL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("the browser requested %q, not an absolute URL", b.URL)
	}
	ex := &warc.Exchange{
		URL: b.URL, Date: b.Date, IP: b.IP, Method: b.Method, Status: b.StatusCode,
		Request:   warc.RequestBytes(b.Method, u.RequestURI(), u.Host, b.RequestHeader, b.RequestBody),
		Payload:   b.Payload,
		Truncated: b.Truncated,
		Fields:    warc.Header{{"WARC-Page-ID", page}, {"WARC-Resource-Type", b.ResourceType}},
	}
	proto := b.Proto
	if ex.Protocol = warc.ProtocolOf(proto); ex.Protocol != "" {
		proto = "HTTP/1.1"
	}
	ex.ResponseHead = warc.ResponseHeadBytes(proto, b.Status, b.Header)
	ex.MIME, _, _ = strings.Cut(b.Header.Get("Content-Type"), ";")
	ex.MIME = strings.ToLower(strings.TrimSpace(ex.MIME))
	return ex, nil
}
