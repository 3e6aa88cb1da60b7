// Package netguard decides which network addresses a crawl may connect
// to: the guard against server-side request forgery (SSRF_PROTECTION_ENABLED).
//
// A crawler that follows links and redirects from sites it does not trust
// can be made to request internal addresses: the cloud metadata service at
// 169.254.169.254 (which hands out credentials), an admin panel on
// 127.0.0.1, a database on 10.0.0.5. With the guard on, gocrawl refuses
// such targets twice: when a redirect points to an address literal or a
// localhost name (middleware Redirect and MetaRefresh), and when the
// downloader connects, after DNS resolution, on the address actually
// dialed, so a name that resolves (or re-resolves, "DNS rebinding") to an
// internal address is refused too. Refused requests are dropped with the
// reason "blocked_address" (stats engine/dropped/blocked_address).
//
// Blocked, for IPv4 and IPv6 (IPv4-mapped and NAT64 IPv6 addresses are
// judged by the IPv4 address they carry): loopback (127.0.0.0/8, ::1),
// link-local (169.254.0.0/16, fe80::/10), private (10.0.0.0/8,
// 172.16.0.0/12, 192.168.0.0/16, fc00::/7, the deprecated site-local
// fec0::/10), shared carrier-grade NAT space (100.64.0.0/10), unspecified
// and "this network" (0.0.0.0/8, ::), broadcast (255.255.255.255) and
// multicast (224.0.0.0/4, ff00::/8). Networks in the allow-list
// (SSRF_PROTECTION_ALLOW) pass: the internal hosts a crawl is meant to
// reach.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/gocrawl/gocrawl/settings"
)

// DropReason is the reason of the drop of a request the guard refuses
// (stats key engine/dropped/blocked_address).
const DropReason = "blocked_address"

// ErrBlocked is the kind of every refusal, for errors.Is.
var ErrBlocked = errors.New("address refused by the SSRF guard (SSRF_PROTECTION_ENABLED)")

// BlockedError says which address was refused and why.
type BlockedError struct {
	// Host is the host name or literal as requested (may be empty at dial
	// time).
	Host string
	// Addr is the address refused (invalid for a refused name).
	Addr netip.Addr
	// Class says what kind of address it is: "loopback", "link-local",
	// "private", "shared (carrier-grade NAT)", "unspecified", "broadcast",
	// "multicast", or "localhost name".
	Class string
}

func (e *BlockedError) Error() string {
	what := e.Host
	if e.Addr.IsValid() {
		what = e.Addr.String()
		if e.Host != "" && e.Host != what {
			what = e.Host + " (" + what + ")"
		}
	}
	return fmt.Sprintf("%s: %s is a %s address; allow it with SSRF_PROTECTION_ALLOW if the crawl is meant to reach it", ErrBlocked, what, e.Class)
}

// Is makes errors.Is(err, ErrBlocked) true.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// Guard checks addresses. A nil *Guard allows everything. It is safe for
// concurrent use.
type Guard struct {
	allow []netip.Prefix
}

// New returns a guard that lets the networks in allow through: CIDR
// prefixes ("10.1.0.0/16", "fd00::/8") or single addresses ("10.0.0.5").
// A malformed entry is an error naming it.
func New(allow []string) (*Guard, error) {
	g := &Guard{}
	for _, a := range allow {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if p, err := netip.ParsePrefix(a); err == nil {
			g.allow = append(g.allow, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a network (10.1.0.0/16) nor an address (10.0.0.5)", a)
		}
		g.allow = append(g.allow, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
	}
	return g, nil
}

// FromSettings returns the guard of SSRF_PROTECTION_ENABLED and
// SSRF_PROTECTION_ALLOW, or nil when the guard is off.
func FromSettings(s *settings.Settings) (*Guard, error) {
	if !s.Bool("SSRF_PROTECTION_ENABLED") {
		return nil, nil
	}
	g, err := New(s.Strings("SSRF_PROTECTION_ALLOW"))
	if err != nil {
		return nil, fmt.Errorf("SSRF_PROTECTION_ALLOW: %w", err)
	}
	return g, nil
}

// CheckAddr returns a *BlockedError when ip may not be connected to, nil
// otherwise.
func (g *Guard) CheckAddr(ip netip.Addr) error {
	if g == nil || !ip.IsValid() {
		return nil
	}
	ip = ip.Unmap()
	class := Classify(ip)
	if class == "" {
		return nil
	}
	for _, p := range g.allow {
		if p.Contains(ip) {
			return nil
		}
	}
	return &BlockedError{Addr: ip, Class: class}
}

// CheckHost checks a URL's host (without port) before any DNS lookup: an
// address literal is checked like CheckAddr, and "localhost" names
// (localhost and *.localhost, RFC 6761) are refused unless the loopback
// addresses are allowed. Other names are left to the check at dial time.
func (g *Guard) CheckHost(host string) error {
	if g == nil {
		return nil
	}
	h := strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if i := strings.IndexByte(h, '%'); i >= 0 { // zone of fe80::1%eth0
		h = h[:i]
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		if err := g.CheckAddr(ip); err != nil {
			err.(*BlockedError).Host = host
			return err
		}
		return nil
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		if g.CheckAddr(netip.MustParseAddr("127.0.0.1")) == nil && g.CheckAddr(netip.IPv6Loopback()) == nil {
			return nil
		}
		return &BlockedError{Host: host, Class: "localhost name"}
	}
	return nil
}

// Resolver looks up a host name's addresses; net.DefaultResolver.LookupNetIP
// with network "ip" is one.
type Resolver func(ctx context.Context, host string) ([]netip.Addr, error)

// CheckName is CheckHost followed, for a name, by a DNS lookup whose
// every address is checked: for clients that resolve and connect on their
// own (an HTTP proxy, a browser), where the guard cannot see the address
// actually dialed. The client may resolve the name differently (DNS
// rebinding), so this narrows the gap without closing it. A failed lookup
// is not a refusal: the client reports what it cannot resolve. A nil
// resolve uses net.DefaultResolver.
func (g *Guard) CheckName(ctx context.Context, host string, resolve Resolver) error {
	if g == nil {
		return nil
	}
	if err := g.CheckHost(host); err != nil {
		return err
	}
	h := strings.Trim(host, "[]")
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i]
	}
	if _, err := netip.ParseAddr(h); err == nil || h == "" {
		return nil
	}
	if resolve == nil {
		resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	addrs, err := resolve(ctx, h)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if err := g.CheckAddr(a); err != nil {
			err.(*BlockedError).Host = host
			return err
		}
	}
	return nil
}

var (
	sharedNAT = netip.MustParsePrefix("100.64.0.0/10")
	thisNet   = netip.MustParsePrefix("0.0.0.0/8")
	siteLocal = netip.MustParsePrefix("fec0::/10")
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	broadcast = netip.AddrFrom4([4]byte{255, 255, 255, 255})
)

// Classify returns what kind of internal address ip is ("loopback",
// "link-local", "private", "shared (carrier-grade NAT)", "unspecified",
// "broadcast", "multicast"), or "" for an address the guard lets through.
// IPv4-mapped and NAT64 (64:ff9b::/96) addresses are classified by the
// IPv4 address they carry.
func Classify(ip netip.Addr) string {
	ip = ip.Unmap()
	if ip.Is6() && nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsPrivate(), siteLocal.Contains(ip):
		return "private"
	case sharedNAT.Contains(ip):
		return "shared (carrier-grade NAT)"
	case ip.IsUnspecified(), thisNet.Contains(ip):
		return "unspecified"
	case ip == broadcast:
		return "broadcast"
	case ip.IsMulticast():
		return "multicast"
	}
	return ""
}
