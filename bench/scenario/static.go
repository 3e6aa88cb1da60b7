package scenario

import (
	"errors"
	"fmt"

	"github.com/gocrawl/gocrawl/devtools/simsite"
)

// Servers are the values of the bench's -server flag: who serves a
// scenario's site.
const (
	// ServerGo is the simulated site (devtools/simsite) in its own Go
	// process: every scenario, with its limits, latency and faults.
	ServerGo = "go"
	// ServerNginx is nginx serving the same pages written as static
	// files: only scenarios whose site is static (see Static).
	ServerNginx = "nginx"
)

// ErrNotStatic is the kind of Static's errors.
var ErrNotStatic = errors.New("site is not static")

// Static reports whether s's site can be written out as static files and
// served by a plain web server (nginx) with the same answers as the
// simulated site: generated pages only, with no latency, no rate limit, no
// faults, no robots.txt and no custom content. The error names the first
// host and feature that stand in the way.
func (s Scenario) Static() error {
	if s.Site.Shared {
		return fmt.Errorf("%w: scenario %s uses the shared listener", ErrNotStatic, s.Name)
	}
	for _, h := range s.Site.Hosts {
		why := ""
		switch {
		case h.Content != nil:
			why = "custom content"
		case h.Latency.Kind != "" && h.Latency.Kind != simsite.LatencyNone:
			why = "latency " + string(h.Latency.Kind)
		case h.Limit.Enabled():
			why = "a rate limit"
		case len(h.Faults) > 0:
			why = "injected faults"
		case h.Robots.Status != 0 || h.Robots.CrawlDelay > 0 || len(h.Robots.Disallow) > 0 || len(h.Robots.Allow) > 0 || h.Robots.Body != "":
			why = "a robots.txt"
		}
		if why != "" {
			return fmt.Errorf("%w: scenario %s, host %q has %s (only the Go site serves it)", ErrNotStatic, s.Name, h.Name, why)
		}
	}
	return nil
}
