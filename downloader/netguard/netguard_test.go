package netguard

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/gocrawl/gocrawl/settings"
)

func TestClassify(t *testing.T) {
	tests := []struct{ addr, want string }{
		{"127.0.0.1", "loopback"}, {"127.255.0.9", "loopback"}, {"::1", "loopback"},
		{"169.254.169.254", "link-local"}, {"fe80::1", "link-local"},
		{"10.0.0.5", "private"}, {"172.16.0.1", "private"}, {"172.31.255.255", "private"}, {"192.168.1.1", "private"},
		{"fc00::1", "private"}, {"fd12:3456::1", "private"}, {"fec0::1", "private"},
		{"100.64.0.1", "shared (carrier-grade NAT)"}, {"100.100.100.200", "shared (carrier-grade NAT)"},
		{"0.0.0.0", "unspecified"}, {"0.1.2.3", "unspecified"}, {"::", "unspecified"},
		{"255.255.255.255", "broadcast"}, {"224.0.0.1", "multicast"}, {"ff02::1", "multicast"},
		{"::ffff:127.0.0.1", "loopback"}, {"::ffff:169.254.169.254", "link-local"},
		{"64:ff9b::7f00:1", "loopback"}, {"64:ff9b::a9fe:a9fe", "link-local"},
		{"93.184.216.34", ""}, {"172.32.0.1", ""}, {"100.128.0.1", ""}, {"2606:4700::1111", ""}, {"64:ff9b::5db8:d822", ""},
	}
	for _, tt := range tests {
		if got := Classify(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("Classify(%s) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

func TestGuardAllowList(t *testing.T) {
	g, err := New([]string{"10.1.0.0/16", "127.0.0.2", "fd00::/8", " "})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		addr    string
		blocked bool
	}{
		{"10.1.2.3", false}, {"10.2.0.1", true}, {"127.0.0.2", false}, {"::ffff:127.0.0.2", false},
		{"127.0.0.1", true}, {"fd00::5", false}, {"fc00::5", true}, {"8.8.8.8", false},
	}
	for _, tt := range tests {
		err := g.CheckAddr(netip.MustParseAddr(tt.addr))
		if (err != nil) != tt.blocked {
			t.Errorf("CheckAddr(%s) = %v, want blocked %v", tt.addr, err, tt.blocked)
		}
		if err != nil && !errors.Is(err, ErrBlocked) {
			t.Errorf("CheckAddr(%s): %v is not ErrBlocked", tt.addr, err)
		}
	}
	if _, err := New([]string{"10.0.0.0/33"}); err == nil {
		t.Error("a bad prefix was accepted")
	}
	if _, err := New([]string{"intranet"}); err == nil {
		t.Error("a name was accepted")
	}
	var none *Guard
	if err := none.CheckAddr(netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Errorf("a nil guard blocked: %v", err)
	}
}

func TestCheckHost(t *testing.T) {
	g, _ := New(nil)
	tests := []struct {
		host    string
		blocked bool
	}{
		{"169.254.169.254", true}, {"[::1]", true}, {"::ffff:127.0.0.1", true}, {"fe80::1%eth0", true},
		{"localhost", true}, {"LOCALHOST.", true}, {"api.localhost", true},
		{"example.com", false}, {"localhost.example.com", false}, {"93.184.216.34", false},
	}
	for _, tt := range tests {
		err := g.CheckHost(tt.host)
		if (err != nil) != tt.blocked {
			t.Errorf("CheckHost(%q) = %v, want blocked %v", tt.host, err, tt.blocked)
		}
	}
	loop, _ := New([]string{"127.0.0.0/8", "::1"})
	if err := loop.CheckHost("localhost"); err != nil {
		t.Errorf("localhost with loopback allowed: %v", err)
	}
}

func TestFromSettings(t *testing.T) {
	s := settings.New()
	if g, err := FromSettings(s); g != nil || err != nil {
		t.Fatalf("off by default: %v %v", g, err)
	}
	if err := s.Set("SSRF_PROTECTION_ENABLED", true, settings.SourceCommandLine, "test"); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("SSRF_PROTECTION_ALLOW", "10.0.0.0/8, 127.0.0.2", settings.SourceCommandLine, "test"); err != nil {
		t.Fatal(err)
	}
	g, err := FromSettings(s)
	if err != nil || g == nil || g.CheckAddr(netip.MustParseAddr("10.9.9.9")) != nil {
		t.Fatalf("guard = %v, %v", g, err)
	}
	if err := s.Set("SSRF_PROTECTION_ALLOW", []any{"10.0.0.0/8", "not-a-network"}, settings.SourceCommandLine, "test"); err == nil {
		t.Error("SSRF_PROTECTION_ALLOW accepted a name")
	}
}

// TestCheckName: names are resolved and every address checked; literals
// and lookup failures are not looked up (or refused).
func TestCheckName(t *testing.T) {
	g, err := New([]string{"10.9.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	dns := map[string][]netip.Addr{
		"public.test":   {netip.MustParseAddr("93.184.216.34")},
		"metadata.test": {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("169.254.169.254")},
		"allowed.test":  {netip.MustParseAddr("10.9.1.1")},
	}
	var looked []string
	resolve := func(_ context.Context, h string) ([]netip.Addr, error) {
		looked = append(looked, h)
		if a, ok := dns[h]; ok {
			return a, nil
		}
		return nil, errors.New("no such host")
	}
	for _, tc := range []struct {
		host    string
		blocked bool
	}{
		{"public.test", false},
		{"metadata.test", true},
		{"allowed.test", false},
		{"unknown.test", false},
		{"127.0.0.1", true},
		{"[::1]", true},
		{"localhost", true},
		{"93.184.216.34", false},
	} {
		err := g.CheckName(context.Background(), tc.host, resolve)
		if got := errors.Is(err, ErrBlocked); got != tc.blocked {
			t.Errorf("CheckName(%q) = %v, want blocked %v", tc.host, err, tc.blocked)
		}
	}
	if want := []string{"public.test", "metadata.test", "allowed.test", "unknown.test"}; !slices.Equal(looked, want) {
		t.Errorf("looked up %q, want %q (never a literal or a localhost name)", looked, want)
	}
	var nilGuard *Guard
	if err := nilGuard.CheckName(context.Background(), "127.0.0.1", resolve); err != nil {
		t.Errorf("nil guard: %v", err)
	}
}
