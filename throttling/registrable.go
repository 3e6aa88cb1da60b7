package throttling

import (
	"context"
	"net"
	"strings"

	"golang.org/x/net/publicsuffix"

	"github.com/gocrawl/gocrawl/spider"
)

// RegistrableDomain returns the registrable domain (eTLD+1, from the
// Public Suffix List) of host: "books.toscrape.com" -> "toscrape.com",
// "a.b.example.co.uk" -> "example.co.uk". IP addresses, single-label hosts
// ("localhost") and public suffixes themselves are returned unchanged.
func RegistrableDomain(host string) string {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if net.ParseIP(strings.Trim(h, "[]")) != nil || !strings.Contains(h, ".") {
		return h
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(h)
	if err != nil {
		return h
	}
	return d
}

// RegistrableDomainManager (THROTTLING_MANAGER "RegistrableDomainManager")
// gives every request the scope of its registrable domain instead of its
// host, so books.toscrape.com and toscrape.com share one budget. A
// non-default port is kept ("toscrape.com:8080"). Backoff works as in
// DefaultManager.
type RegistrableDomainManager struct {
	*DefaultManager
}

// Scopes implements Manager.
func (m *RegistrableDomainManager) Scopes(ctx context.Context, req *spider.Request) (Scopes, error) {
	sc, err := m.DefaultManager.Scopes(ctx, req)
	if err != nil {
		return nil, err
	}
	host := req.Host()
	name := RegistrableDomain(req.URL.Hostname())
	if port := portOf(host); port != "" {
		name = net.JoinHostPort(name, port)
	}
	out := Scopes{}
	for _, s := range sc {
		if s.Name == host {
			s.Name = name
		}
		out = AddScope(out, s.Name, s.Amount)
	}
	return out, nil
}

func portOf(hostKey string) string {
	if _, p, err := net.SplitHostPort(hostKey); err == nil {
		return p
	}
	return ""
}
