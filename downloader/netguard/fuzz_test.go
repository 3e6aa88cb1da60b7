package netguard

import (
	"net/netip"
	"strings"
	"testing"
)

// FuzzCheckHost: any host of a redirect's Location is judged without
// panicking, and an address literal gets the same answer as CheckAddr.
func FuzzCheckHost(f *testing.F) {
	for _, s := range []string{"169.254.169.254", "[::ffff:127.0.0.1]", "LOCALHOST.", "fe80::1%25eth0", "0x7f.1", "127.1",
		"2130706433", "xn--localhost", "a.localhost.", "[64:ff9b::a9fe:a9fe]", "::", "%", "[", "example.com"} {
		f.Add(s)
	}
	g, _ := New([]string{"10.1.0.0/16"})
	f.Fuzz(func(t *testing.T, host string) {
		err := g.CheckHost(host)
		h := strings.Trim(host, "[]")
		if ip, perr := netip.ParseAddr(h); perr == nil && ip.Zone() == "" {
			if (err == nil) != (g.CheckAddr(ip) == nil) {
				t.Fatalf("CheckHost(%q) = %v but CheckAddr = %v", host, err, g.CheckAddr(ip))
			}
		}
	})
}
