package throttling

import (
	"math"
	"net"
	"slices"
	"strings"
	"time"
)

// Scope is one throttling scope a request belongs to, with the amount of
// the scope's quota the request is expected to consume (0 when the scope
// has no quota or the request consumes none).
type Scope struct {
	Name   string
	Amount float64
}

// Scopes is the set of scopes of a request, sorted by name, without
// duplicates. A request is sent only when every one of its scopes allows it.
type Scopes []Scope

// Names returns the scope names.
func (s Scopes) Names() []string {
	out := make([]string, len(s))
	for i, sc := range s {
		out[i] = sc.Name
	}
	return out
}

// Has reports whether s contains the scope name.
func (s Scopes) Has(name string) bool {
	_, ok := slices.BinarySearchFunc(s, name, func(a Scope, n string) int { return strings.Compare(a.Name, n) })
	return ok
}

// Key returns a string that identifies the set of scope names (not the
// amounts): requests with the same Key share every throttling decision.
func (s Scopes) Key() string {
	if len(s) == 1 {
		return s[0].Name
	}
	return strings.Join(s.Names(), "\x00")
}

// AddScope returns scopes with name added (amounts add up when the scope is
// already present), keeping the set sorted. It is the Go form of the
// add_scope helper of Scrapy's throttling design (PR #6931), for use in
// custom ThrottlingManager.Scopes:
//
//	scopes, err := m.Default.Scopes(ctx, req)
//	return throttling.AddScope(scopes, "cost", estimate(req)), err
func AddScope(scopes Scopes, name string, amount float64) Scopes {
	i, found := slices.BinarySearchFunc(scopes, name, func(a Scope, n string) int { return strings.Compare(a.Name, n) })
	if found {
		out := slices.Clone(scopes)
		out[i].Amount += amount
		return out
	}
	out := make(Scopes, 0, len(scopes)+1)
	out = append(out, scopes[:i]...)
	out = append(out, Scope{Name: name, Amount: amount})
	return append(out, scopes[i:]...)
}

// ScopeKind says how a scope's default concurrency is chosen.
type ScopeKind int

const (
	// KindOther scopes (custom ones) default to THROTTLING_SCOPE_CONCURRENCY.
	KindOther ScopeKind = iota
	// KindDomain scopes (host names) default to CONCURRENT_REQUESTS_PER_DOMAIN.
	KindDomain
	// KindIP scopes (IP addresses) default to CONCURRENT_REQUESTS_PER_IP.
	KindIP
	// KindProxy scopes ("proxy:HOST:PORT", one per proxy of PROXY_LIST)
	// default to CONCURRENT_REQUESTS_PER_PROXY and PROXY_DOWNLOAD_DELAY.
	KindProxy
	// KindProxyHost scopes ("proxy:HOST:PORT|host", the requests to one
	// host through one proxy) default to CONCURRENT_REQUESTS_PER_PROXY_HOST
	// and PROXY_HOST_DOWNLOAD_DELAY.
	KindProxyHost
)

// proxyScopePrefix starts the names of proxy scopes (package proxypool).
const proxyScopePrefix = "proxy:"

// KindOfScope classifies a scope name: "proxy:HOST:PORT" is KindProxy and
// "proxy:HOST:PORT|host" KindProxyHost; a bare IP address ("10.0.0.1",
// "::1") is KindIP; a host name or an address with a port (a URL's host,
// "books.toscrape.com", "127.0.0.1:8080") is KindDomain; anything else
// (custom names, endpoint paths) is KindOther. IP scopes added from the
// DNS cache never carry a port, while host scopes keep a non-default one.
func KindOfScope(name string) ScopeKind {
	if rest, ok := strings.CutPrefix(name, proxyScopePrefix); ok && rest != "" {
		if strings.Contains(rest, "|") {
			return KindProxyHost
		}
		return KindProxy
	}
	host := name
	if h, _, err := net.SplitHostPort(name); err == nil {
		if net.ParseIP(h) != nil {
			return KindDomain
		}
		host = h
	}
	if net.ParseIP(strings.Trim(host, "[]")) != nil {
		return KindIP
	}
	if host == "localhost" || (strings.Contains(host, ".") && isHostname(host)) {
		return KindDomain
	}
	return KindOther
}

func isHostname(h string) bool {
	if len(h) == 0 || len(h) > 253 {
		return false
	}
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
		default:
			return false
		}
	}
	return true
}

// UntilSlotFree is the wait reported for a scope that is blocked only by
// its concurrency limit: it becomes ready when one of its requests
// completes, not at a known time.
const UntilSlotFree time.Duration = math.MaxInt64
