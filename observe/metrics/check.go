package metrics

import (
	"net"

	"github.com/gocrawl/gocrawl/settings"
)

func init() { settings.RegisterCheck("metrics", checkSettings) }

// checkSettings is the metrics part of settings.Validate: METRICS_ADDR
// must be a host:port (the port may be 0 for any free port). Whether the
// address can be listened on is only known when the crawl starts.
func checkSettings(s *settings.Settings) error {
	addr := s.String("METRICS_ADDR")
	if addr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return settings.Invalid(s, "METRICS_ADDR", "want host:port such as 127.0.0.1:9410 (port 0 picks a free one): "+err.Error())
	}
	return nil
}
