package middleware

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"

	"github.com/gocrawl/gocrawl/internal/domainset"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/spider"
)

func init() {
	RegisterDownloader("Offsite", newOffsiteDownloader)
	RegisterSpider("Offsite", newOffsiteSpider)
}

// Offsite keeps a crawl on the spider's allowed domains
// (spider.AllowedDomainser, e.g. spider.Base.Domains): a request is
// allowed when its host is an allowed domain or a subdomain of one
// ("example.com" allows "www.example.com", never "badexample.com").
// Spiders without allowed domains, or with an empty list, are not
// filtered; neither are requests with the allow_offsite meta.
//
// It runs on both sides. The spider middleware filters the requests
// callbacks produce, before they take room in the scheduler; the
// downloader middleware checks every request just before it is sent,
// which covers start requests and every redirect hop (a redirect is a new
// request through the chain). Filtered requests are dropped with reason
// "offsite"; stats offsite/filtered and offsite/domains (distinct hosts
// filtered). The first filtered request of the crawl is logged at info
// level, the first one of each other host at debug level.
//
// Allowed domains are checked when the crawl starts: an entry that is a
// URL or has a port is an error naming it, and an entry that is a public
// suffix ("com", "co.uk"), which would allow every site under it, is an
// error too. Hosts are compared in their IDNA ASCII form, case-insensitively.
type Offsite struct {
	domains domainset.Set
	stats   *stats.Collector
	log     zerolog.Logger
	seen    sync.Map // host -> struct{}: hosts already logged
	logged  atomic.Bool
}

func newOffsite(c *spider.Crawler) (*Offsite, error) {
	if !c.Settings.Bool("OFFSITE_ENABLED") {
		return nil, nil
	}
	ad, ok := c.Spider.(spider.AllowedDomainser)
	if !ok {
		return nil, nil
	}
	domains, err := ParseAllowedDomains(ad.AllowedDomains())
	if err != nil {
		return nil, err
	}
	if len(domains) == 0 {
		return nil, nil
	}
	return &Offsite{domains: domainset.New(domains), stats: c.Stats, log: c.Log}, nil
}

// ParseAllowedDomains checks and normalises allowed domains (see
// Offsite): lower case, IDNA ASCII, no trailing dot. Errors name the entry.
func ParseAllowedDomains(in []string) ([]string, error) {
	var out []string
	for _, d := range in {
		raw := d
		d = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
		switch {
		case d == "":
			continue
		case strings.Contains(d, "://") || strings.ContainsAny(d, "/?#"):
			return nil, fmt.Errorf("allowed domain %q: want a domain such as example.com, not a URL", raw)
		}
		if _, _, err := net.SplitHostPort(d); err == nil {
			return nil, fmt.Errorf("allowed domain %q: ports are not allowed; list the domain only", raw)
		}
		if net.ParseIP(strings.Trim(d, "[]")) != nil {
			out = append(out, strings.Trim(d, "[]"))
			continue
		}
		a, err := idna.Lookup.ToASCII(d)
		if err != nil {
			return nil, fmt.Errorf("allowed domain %q: %v", raw, err)
		}
		// An ICANN public suffix (com, co.uk) would allow every site under
		// it. A single label that is not one (localhost, an intranet host
		// name) is a host of its own and allowed.
		if ps, icann := publicsuffix.PublicSuffix(a); ps == a && icann {
			return nil, fmt.Errorf("allowed domain %q is a public suffix: it would allow every site under it", raw)
		}
		out = append(out, a)
	}
	return out, nil
}

// Allowed reports whether u's host is an allowed domain or a subdomain of
// one.
func (o *Offsite) Allowed(req *spider.Request) bool {
	if metaBool(req, MetaAllowOffsite) {
		return true
	}
	host := strings.TrimSuffix(strings.ToLower(req.URL.Hostname()), ".")
	if a, err := idna.Lookup.ToASCII(host); err == nil {
		host = a
	}
	return o.domains.Contains(host)
}

func (o *Offsite) filtered(req *spider.Request) *DropError {
	host := req.URL.Hostname()
	if o.stats != nil {
		o.stats.Inc("offsite/filtered", 1)
	}
	if _, dup := o.seen.LoadOrStore(host, struct{}{}); !dup {
		if o.stats != nil {
			o.stats.Inc("offsite/domains", 1)
		}
		ev, msg := o.log.Debug(), "filtered offsite request"
		if o.logged.CompareAndSwap(false, true) {
			ev, msg = o.log.Info(), "filtered offsite request; the first one of each other host is logged at DEBUG, all are counted in the summary"
		}
		ev.Str("host", host).Str("request", RedactedRequest(req)).Msg(msg)
	}
	return &DropError{Reason: "offsite", Err: fmt.Errorf("host %s is not in the spider's allowed domains", host)}
}

func newOffsiteDownloader(c *spider.Crawler) (Downloader, error) {
	o, err := newOffsite(c)
	if o == nil || err != nil {
		return nil, err
	}
	return DownloaderFunc(func(next Fetcher) Fetcher {
		return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
			if !o.Allowed(req) {
				return nil, o.filtered(req)
			}
			return next.Fetch(ctx, req)
		})
	}), nil
}

func newOffsiteSpider(c *spider.Crawler) (Spider, error) {
	o, err := newOffsite(c)
	if o == nil || err != nil {
		return nil, err
	}
	return SpiderFunc(func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, res *spider.Response, out spider.Output) error {
			return next.Handle(ctx, res, hook(out, offsiteHook{o}))
		})
	}), nil
}

// offsiteHook drops the requests for hosts outside the allowed domains.
type offsiteHook struct{ o *Offsite }

func (h offsiteHook) onRequest(r *spider.Request) *spider.Request {
	if !h.o.Allowed(r) {
		h.o.filtered(r)
		return nil
	}
	return r
}
