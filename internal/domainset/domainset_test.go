package domainset

import (
	"fmt"
	"strings"
	"testing"
)

// contains is the definition: host is d or ends with "." + d.
func contains(host string, domains []string) bool {
	for _, d := range domains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

func TestContains(t *testing.T) {
	domains := []string{"example.com", "shop.example.org", "localhost", "127.1.0.1", "xn--bcher-kva.example"}
	s := New(domains)
	hosts := []string{
		"example.com", "www.example.com", "a.b.example.com", "badexample.com", "example.com.evil.net", "com",
		"shop.example.org", "www.shop.example.org", "example.org", "myshop.example.org",
		"localhost", "notlocalhost", "127.1.0.1", "127.1.0.10", "27.1.0.1", "xn--bcher-kva.example", "",
	}
	for _, h := range hosts {
		if got, want := s.Contains(h), contains(h, domains); got != want {
			t.Errorf("Contains(%q) = %v, want %v", h, got, want)
		}
	}
	if New(nil).Contains("example.com") || (Set{}).Contains("") {
		t.Error("an empty set contains a host")
	}
	if n := New([]string{"a.com", "a.com", "b.com"}).Len(); n != 2 {
		t.Errorf("Len = %d, want 2", n)
	}
}

func FuzzContains(f *testing.F) {
	f.Add("www.example.com", "example.com")
	f.Add("badexample.com", "example.com")
	f.Fuzz(func(t *testing.T, host, domain string) {
		if got, want := New([]string{domain, "other.net"}).Contains(host), contains(host, []string{domain, "other.net"}); got != want {
			t.Errorf("Contains(%q) in {%q, other.net} = %v, want %v", host, domain, got, want)
		}
	})
}

// BenchmarkContains checks a host against the allowed domains of a broad
// crawl, the hosts of its 2,000 start URLs.
func BenchmarkContains(b *testing.B) {
	var domains []string
	for i := range 2000 {
		domains = append(domains, fmt.Sprintf("127.1.%d.%d", i/250, i%250+1))
	}
	s := New(domains)
	b.Run("set", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			_ = s.Contains(domains[i%len(domains)])
		}
	})
	b.Run("scan", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			_ = contains(domains[i%len(domains)], domains)
		}
	})
}
