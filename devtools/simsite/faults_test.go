package simsite

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fetch does one GET with a fresh connection and reads the whole body,
// returning the first error (request or body).
func fetch(url string, timeout time.Duration) (*http.Response, []byte, error) {
	resp, err := newClient(timeout).Get(url)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

func TestFaultsSeenByNetHTTPClient(t *testing.T) {
	tests := []struct {
		name    string
		fault   FaultConfig
		timeout time.Duration
		check   func(t *testing.T, resp *http.Response, body []byte, err error)
	}{
		{
			name:  "reset is a connection error",
			fault: FaultConfig{Kind: FaultReset, PathPrefix: "/page/"},
			check: func(t *testing.T, _ *http.Response, _ []byte, err error) {
				var opErr *net.OpError
				if !errors.Is(err, syscall.ECONNRESET) || !errors.As(err, &opErr) {
					t.Errorf("err = %v, want a *net.OpError wrapping ECONNRESET", err)
				}
			},
		},
		{
			name:  "truncated body is an unexpected EOF",
			fault: FaultConfig{Kind: FaultTruncate, PathPrefix: "/page/"},
			check: func(t *testing.T, resp *http.Response, body []byte, err error) {
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("err = %v, want io.ErrUnexpectedEOF", err)
				}
				if resp == nil || resp.StatusCode != 200 || resp.ContentLength <= int64(len(body)) {
					t.Errorf("want a 200 declaring more than the %d bytes sent", len(body))
				}
			},
		},
		{
			name:    "slow body arrives whole",
			fault:   FaultConfig{Kind: FaultSlow, PathPrefix: "/page/", ChunkSize: 512, Interval: time.Millisecond},
			timeout: 10 * time.Second,
			check: func(t *testing.T, resp *http.Response, body []byte, err error) {
				if err != nil || !strings.Contains(string(body), "<title>h page 1</title>") || int64(len(body)) != resp.ContentLength {
					t.Errorf("err = %v, body %d bytes: want the whole page", err, len(body))
				}
			},
		},
		{
			name:    "slow body times out a short client timeout",
			fault:   FaultConfig{Kind: FaultSlow, PathPrefix: "/page/", ChunkSize: 16, Interval: time.Second},
			timeout: 200 * time.Millisecond,
			check:   wantTimeout,
		},
		{
			name:    "endless body needs a client timeout",
			fault:   FaultConfig{Kind: FaultEndless, PathPrefix: "/page/"},
			timeout: 300 * time.Millisecond,
			check: func(t *testing.T, resp *http.Response, body []byte, err error) {
				wantTimeout(t, resp, body, err)
				if resp == nil || resp.StatusCode != 200 {
					t.Errorf("want headers of a 200 before the timeout")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startT(t, Config{Hosts: []HostConfig{{Name: "h", Pages: PagesConfig{Size: 4000}, Faults: []FaultConfig{tt.fault}}}})
			// The root is outside the prefix: served normally.
			if _, _, err := fetch(s.URL("h")+"/", 5*time.Second); err != nil {
				t.Fatalf("GET / (no fault): %v", err)
			}
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 5 * time.Second
			}
			resp, body, err := fetch(s.URL("h")+"/page/1", timeout)
			tt.check(t, resp, body, err)
			_ = s.Close() // waits for the handlers, so the records are complete
			recs := s.Records()
			if len(recs) != 2 || recs[1].Fault != tt.fault.Kind || recs[0].Fault != "" {
				t.Errorf("records: %+v", recs)
			}
			if tt.fault.Kind == FaultReset && recs[1].Status != 0 {
				t.Errorf("reset record status = %d, want 0", recs[1].Status)
			}
		})
	}
}

func wantTimeout(t *testing.T, _ *http.Response, _ []byte, err error) {
	t.Helper()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("err = %v, want a client timeout", err)
	}
}

func TestFaultProbabilityIsSeededAndSparesRobots(t *testing.T) {
	faults := []FaultConfig{{Kind: FaultTruncate, Probability: 0.3}}
	count := func(seed int64) (hits int, seq string) {
		p := newFaultPicker(faults, seed)
		for range 1000 {
			if p.pick("/page/1") != nil {
				hits++
				seq += "x"
			} else {
				seq += "."
			}
		}
		return hits, seq
	}
	hits, seq := count(5)
	if hits < 200 || hits > 400 {
		t.Errorf("probability 0.3 fired %d/1000 times", hits)
	}
	if _, again := count(5); again != seq {
		t.Error("same seed, different fault sequence")
	}
	if _, other := count(6); other == seq {
		t.Error("different seeds, same fault sequence")
	}
	p := newFaultPicker(faults, 5)
	for range 100 {
		if p.pick("/robots.txt") != nil {
			t.Fatal("a fault without path_prefix fired on /robots.txt")
		}
	}
	p = newFaultPicker([]FaultConfig{{Kind: FaultReset, PathPrefix: "/robots.txt"}}, 5)
	if p.pick("/robots.txt") == nil || p.pick("/") != nil {
		t.Error("a path_prefix fault must fire (only) on its prefix")
	}
}
