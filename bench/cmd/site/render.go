package main

import (
	"fmt"
	"io"
	"net/http"

	"github.com/gocrawl/gocrawl/devtools/simsite"
)

// content is what a site holds: every generated page of every host.
type content struct {
	Pages int   `json:"pages"`
	Bytes int64 `json:"bytes"`
}

// contentType is what the simulated site sends with every page, and what
// the nginx configuration sends with every file.
const contentType = "text/html; charset=utf-8"

// renderSite renders every generated page of every host of cfg with the
// simulated site's own handler, in process (simsite.NewLocal), as it
// answers a client that asked for hostHeaders[host] (the absolute links of
// a page carry that host and port), and hands each body to put (nil: only
// count). So the static files nginx serves are, byte for byte, the answers
// of the Go site.
func renderSite(cfg simsite.Config, hostHeaders map[string]string, put func(host, path string, body []byte) error) (content, error) {
	var c content
	cfg.MaxRecords = 16 // the records of this rendering are of no use
	local, err := simsite.NewLocal(cfg)
	if err != nil {
		return c, err
	}
	defer local.Close()
	rt := local.Transport()
	for _, h := range local.Hosts() {
		g := local.Graph(h)
		if g == nil {
			return c, fmt.Errorf("host %q: no generated pages", h)
		}
		for i := range g.Len() {
			path := simsite.PagePath(i)
			req, err := http.NewRequest(http.MethodGet, local.URL(h)+path, nil)
			if err != nil {
				return c, err
			}
			req.Host = hostHeaders[h]
			res, err := rt.RoundTrip(req)
			if err != nil {
				return c, fmt.Errorf("host %q, %s: %w", h, path, err)
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil {
				return c, fmt.Errorf("host %q, %s: %w", h, path, err)
			}
			if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != contentType {
				return c, fmt.Errorf("host %q, %s: status %d, type %q: not a generated page", h, path, res.StatusCode, res.Header.Get("Content-Type"))
			}
			c.Pages++
			c.Bytes += int64(len(body))
			if put != nil {
				if err := put(h, path, body); err != nil {
					return c, err
				}
			}
		}
	}
	return c, nil
}
