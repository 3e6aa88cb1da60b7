// Package domainset matches host names against a set of domains: a host
// is in the set when it is one of the domains or a subdomain of one
// ("www.example.com" is in {example.com}, "badexample.com" is not).
//
// A lookup costs one map probe per label of the host, whatever the size
// of the set: a broad crawl that allows the hosts of its thousands of
// start URLs checks every link and request against all of them.
package domainset

import "strings"

// Set is a set of domains, lower case, in IDNA ASCII form, without a
// trailing dot (the callers normalise them). The zero Set is empty.
type Set struct {
	m map[string]struct{}
}

// New returns the set of domains.
func New(domains []string) Set {
	if len(domains) == 0 {
		return Set{}
	}
	m := make(map[string]struct{}, len(domains))
	for _, d := range domains {
		m[d] = struct{}{}
	}
	return Set{m: m}
}

// Len returns the number of distinct domains in s.
func (s Set) Len() int { return len(s.m) }

// Contains reports whether host (normalised as the domains are) is one of
// the domains of s or a subdomain of one.
func (s Set) Contains(host string) bool {
	if len(s.m) == 0 {
		return false
	}
	for {
		if _, ok := s.m[host]; ok {
			return true
		}
		i := strings.IndexByte(host, '.')
		if i < 0 {
			return false
		}
		host = host[i+1:]
	}
}
