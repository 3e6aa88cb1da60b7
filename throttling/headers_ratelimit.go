package throttling

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
)

// RateLimit is what a response's RateLimit headers say about the quota a
// server grants this client, in either form of the IETF drafts:
//
//   - the current one (draft-ietf-httpapi-ratelimit-headers), two
//     structured fields: `RateLimit-Policy: "default";q=100;w=60` (q units
//     per w seconds) and `RateLimit: "default";r=50;t=30` (r left, reset
//     in t seconds); several policies may be listed;
//   - the older one (draft-polli-ratelimit-headers), three fields:
//     `RateLimit-Limit: 100` (optionally `100, 100;w=60`),
//     `RateLimit-Remaining: 50` and `RateLimit-Reset: 30`; and the
//     dictionary form some servers send, `RateLimit: limit=100,
//     remaining=50, reset=30`.
//
// Parsing is lenient: values of the wrong type, negative numbers and
// unparsable fields are ignored, field by field.
type RateLimit struct {
	// Remaining is how many requests (quota units) are left before Reset;
	// meaningful only when HasRemaining.
	Remaining    float64
	HasRemaining bool
	// Reset is the time until the quota resets; 0 when not said.
	Reset time.Duration
	// Limit is the quota of the current window (RateLimit-Limit); 0 when
	// not said.
	Limit float64
	// Quota and Window are the quota policy: Quota units per Window; zero
	// when not said.
	Quota  float64
	Window time.Duration
	// Policy names the policy the values belong to (structured form).
	Policy string
}

// Rate is the long-run rate the quota policy allows, in units per second;
// 0 when no policy was given.
func (r RateLimit) Rate() float64 {
	if r.Quota > 0 && r.Window > 0 {
		return r.Quota / r.Window.Seconds()
	}
	return 0
}

// maxHeaderSeconds bounds the delta-seconds values accepted (about 31 years).
const maxHeaderSeconds = 1e9

// The RateLimit header names in their canonical form (as net/http stores
// them): http.Header.Get and Values allocate to canonicalize any other
// spelling, on every response.
const (
	hdrRateLimit          = "Ratelimit"
	hdrRateLimitPolicy    = "Ratelimit-Policy"
	hdrRateLimitRemaining = "Ratelimit-Remaining"
	hdrRateLimitReset     = "Ratelimit-Reset"
	hdrRateLimitLimit     = "Ratelimit-Limit"
)

// ParseRateLimit reads the RateLimit headers of h (see RateLimit). It
// returns false when none holds anything usable.
func ParseRateLimit(h http.Header) (RateLimit, bool) {
	// The names are canonical, so h[name] is h.Values(name) without
	// canonicalizing the name again on every response.
	var rl RateLimit
	ok := false
	if v := h[hdrRateLimit]; len(v) > 0 {
		ok = parseStructuredRateLimit(v, &rl) || parseDictionaryRateLimit(v, &rl)
	}
	if v := h[hdrRateLimitPolicy]; len(v) > 0 {
		ok = parsePolicies(v, &rl) || ok
	}
	if v := h[hdrRateLimitRemaining]; len(v) > 0 {
		if n, good := ParseRateLimitReset(v[0]); good {
			rl.Remaining, rl.HasRemaining, ok = n.Seconds(), true, true
		}
	}
	if v := h[hdrRateLimitReset]; len(v) > 0 {
		if d, good := ParseRateLimitReset(v[0]); good {
			rl.Reset, ok = d, true
		}
	}
	if v := h[hdrRateLimitLimit]; len(v) > 0 {
		ok = parseLimit(v, &rl) || ok
	}
	return rl, ok
}

// parseStructuredRateLimit reads `"name";r=..;t=..` items, keeping the
// most constraining one (fewest units left).
func parseStructuredRateLimit(v []string, rl *RateLimit) bool {
	list, err := httpsfv.UnmarshalList(v)
	if err != nil {
		return false
	}
	found := false
	for _, m := range list {
		it, isItem := m.(httpsfv.Item)
		if !isItem || it.Params == nil {
			continue
		}
		r, hasR := paramNumber(it.Params, "r")
		t, hasT := paramNumber(it.Params, "t")
		if !hasR && !hasT {
			continue
		}
		if found && (!hasR || (rl.HasRemaining && r >= rl.Remaining)) {
			continue
		}
		found = true
		rl.Policy = nameOf(it.Value)
		rl.Remaining, rl.HasRemaining = r, hasR
		rl.Reset = 0
		if hasT {
			rl.Reset = secondsDuration(t)
		}
	}
	return found
}

// parseDictionaryRateLimit reads `limit=.., remaining=.., reset=..`.
func parseDictionaryRateLimit(v []string, rl *RateLimit) bool {
	d, err := httpsfv.UnmarshalDictionary(v)
	if err != nil {
		return false
	}
	ok := false
	get := func(k string) (float64, bool) {
		m, found := d.Get(k)
		if !found {
			return 0, false
		}
		it, isItem := m.(httpsfv.Item)
		if !isItem {
			return 0, false
		}
		return number(it.Value)
	}
	if n, good := get("remaining"); good {
		rl.Remaining, rl.HasRemaining, ok = n, true, true
	}
	if n, good := get("reset"); good {
		rl.Reset, ok = secondsDuration(n), true
	}
	if n, good := get("limit"); good {
		rl.Limit, ok = n, true
	}
	return ok
}

// parsePolicies reads RateLimit-Policy: the policy named like the
// RateLimit item, else the most constraining one (lowest rate).
func parsePolicies(v []string, rl *RateLimit) bool {
	list, err := httpsfv.UnmarshalList(v)
	if err != nil {
		return false
	}
	var best RateLimit
	found := false
	for _, m := range list {
		it, isItem := m.(httpsfv.Item)
		if !isItem || it.Params == nil {
			continue
		}
		q, hasQ := paramNumber(it.Params, "q")
		if !hasQ {
			// The older draft's form: "10;w=1" (the quota as the item).
			if q, hasQ = number(it.Value); !hasQ {
				continue
			}
		}
		w, hasW := paramNumber(it.Params, "w")
		if !hasW || w <= 0 || q <= 0 {
			continue
		}
		cand := RateLimit{Quota: q, Window: secondsDuration(w), Policy: nameOf(it.Value)}
		if rl.Policy != "" && cand.Policy == rl.Policy {
			best, found = cand, true
			break
		}
		if !found || cand.Rate() < best.Rate() {
			best, found = cand, true
		}
	}
	if found {
		rl.Quota, rl.Window = best.Quota, best.Window
		if rl.Policy == "" {
			rl.Policy = best.Policy
		}
	}
	return found
}

// parseLimit reads RateLimit-Limit: "100", or "100, 100;w=60" whose first
// item with a w parameter is the quota policy.
func parseLimit(v []string, rl *RateLimit) bool {
	list, err := httpsfv.UnmarshalList(v)
	if err != nil {
		n, good := leadingNumber(strings.Join(v, ","))
		if good {
			rl.Limit = n
		}
		return good
	}
	ok := false
	for i, m := range list {
		it, isItem := m.(httpsfv.Item)
		if !isItem {
			continue
		}
		n, good := number(it.Value)
		if !good {
			continue
		}
		if i == 0 {
			rl.Limit, ok = n, true
		}
		if w, hasW := paramNumber(it.Params, "w"); hasW && w > 0 && n > 0 && rl.Quota == 0 {
			rl.Quota, rl.Window, ok = n, secondsDuration(w), true
		}
	}
	return ok
}

func paramNumber(p *httpsfv.Params, k string) (float64, bool) {
	if p == nil {
		return 0, false
	}
	v, ok := p.Get(k)
	if !ok {
		return 0, false
	}
	return number(v)
}

// number accepts a non-negative integer or decimal.
func number(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case int64:
		f = float64(x)
	case float64:
		f = x
	default:
		return 0, false
	}
	if f < 0 || f > maxHeaderSeconds || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

func nameOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case httpsfv.Token:
		return string(x)
	}
	return ""
}

// leadingNumber reads a non-negative integer at the start of s (after
// spaces), ignoring what follows ("10, 10;w=1"); false when there is none.
func leadingNumber(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == 0 || end > 10 {
		return 0, false
	}
	n, err := strconv.ParseInt(s[:end], 10, 64)
	if err != nil || n > maxHeaderSeconds {
		return 0, false
	}
	return float64(n), true
}

func secondsDuration(s float64) time.Duration {
	return time.Duration(s * float64(time.Second))
}
