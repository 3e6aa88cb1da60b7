package simsite

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/rs/zerolog"
)

// ErrInvalidConfig is matched (errors.Is) by every error that Validate,
// LoadConfig and Start return for a bad configuration.
var ErrInvalidConfig = errors.New("simsite: invalid config")

// FieldError names one bad field of a Config, e.g.
// `hosts[1].limit.burst = -3: must be >= 0`.
type FieldError struct {
	Field  string // dotted path of the field, e.g. "hosts[0].latency.max"
	Value  any    // the offending value
	Reason string // what is wrong with it
}

// Error implements error.
func (e *FieldError) Error() string {
	return fmt.Sprintf("simsite: %s = %v: %s", e.Field, e.Value, e.Reason)
}

// Is reports true for ErrInvalidConfig.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidConfig }

// Config describes a whole simulated site: one or more virtual hosts, each on
// its own 127.0.0.1 port. Its zero-valued fields mean "use the default"
// (see EnsureDefaults); the struct carries yaml tags so it can be loaded from a
// file with LoadConfig.
type Config struct {
	// Hosts are the virtual hosts to serve. At least one is required.
	Hosts []HostConfig `yaml:"hosts"`

	// Shared, when true, also opens one extra listener that routes each
	// request to a virtual host by its Host header (port ignored). See
	// Server.SharedURL.
	Shared bool `yaml:"shared"`
	// SharedPort is the port of the shared listener; 0 picks a free one.
	SharedPort int `yaml:"shared_port"`

	// MaxRecords bounds the request records kept in memory, for long
	// manual runs; past it the oldest half is forgotten (see
	// Server.DroppedRecords). 0 keeps every record.
	MaxRecords int `yaml:"max_records"`

	// Now is the time source of the limiters, the Retry-After computations
	// and the request records. Nil means time.Now. Tests inject a fake clock
	// to exercise the limiters without sleeping; latency, slow and endless
	// bodies always run in real time.
	Now func() time.Time `yaml:"-"`

	// Logger receives debug events (listeners opened, faults injected). The
	// zero Logger is disabled, so the server is quiet by default.
	Logger zerolog.Logger `yaml:"-"`
}

// HostConfig describes one virtual host. The zero value (with a Name) serves
// 100 generated pages in a tree of fanout 10, with no latency, no limits, no
// robots.txt (404) and no faults.
type HostConfig struct {
	// Name identifies the host in Server.URL, in the records, and in the
	// Host header on the shared listener. Letters, digits, '.', '-' only.
	Name string `yaml:"name"`
	// Port to listen on (127.0.0.1); 0 picks a free port.
	Port int `yaml:"port"`
	// Seed makes the random graph, latencies and probabilistic faults
	// deterministic. Hosts with the same seed behave alike.
	Seed int64 `yaml:"seed"`

	Pages   PagesConfig   `yaml:"pages"`
	Latency LatencyConfig `yaml:"latency"`
	Limit   LimitConfig   `yaml:"limit"`
	Robots  RobotsConfig  `yaml:"robots"`
	// Faults are tried in order on every request; the first that fires wins.
	Faults []FaultConfig `yaml:"faults"`

	// Content, when set, serves every path instead of the generated page
	// graph (robots.txt too, unless Robots is configured). It is still
	// wrapped by recording, the limiter, latency, faults and robots.
	Content http.Handler `yaml:"-"`
}

// GraphKind selects how generated pages link to each other.
type GraphKind string

// The link graphs a host can generate. Every page is reachable from "/".
const (
	// GraphTree links page i to pages i*Fanout+1 ... i*Fanout+Fanout.
	GraphTree GraphKind = "tree"
	// GraphRandom gives each page a random earlier page as parent (so
	// every page is reachable), then adds random links until each page
	// has at least OutDegree links; the same Seed gives the same graph.
	GraphRandom GraphKind = "random"
	// GraphChain links page i to page i+1 only: one long chain.
	GraphChain GraphKind = "chain"
)

// LinkStyle selects how links are written in the generated HTML.
type LinkStyle string

// Link styles.
const (
	// LinksMixed cycles through "/page/N", "../page/N" and
	// "http://<Host header>/page/N" so crawlers must join URLs properly.
	LinksMixed LinkStyle = "mixed"
	// LinksRelative writes root-relative links "/page/N" only.
	LinksRelative LinkStyle = "relative"
	// LinksAbsolute writes absolute links "http://<Host header>/page/N" only.
	LinksAbsolute LinkStyle = "absolute"
)

// PagesConfig describes the generated pages of a host. Page 0 is "/", page
// N > 0 is "/page/N"; any other path answers 404.
type PagesConfig struct {
	// Count of pages, default 100.
	Count int `yaml:"count"`
	// Graph kind, default GraphTree.
	Graph GraphKind `yaml:"graph"`
	// Fanout of GraphTree, default 10.
	Fanout int `yaml:"fanout"`
	// OutDegree of GraphRandom, default 5.
	OutDegree int `yaml:"out_degree"`
	// Size pads each page body to this many bytes (when the page is
	// shorter). 0 means no padding.
	Size int `yaml:"size"`
	// Links is the link style, default LinksMixed.
	Links LinkStyle `yaml:"links"`
}

// LatencyKind selects a latency distribution.
type LatencyKind string

// Latency distributions, sampled from the host's Seed. Samples are clamped
// to [0, Max] when Max > 0.
const (
	LatencyNone        LatencyKind = "none"        // no delay (the default)
	LatencyFixed       LatencyKind = "fixed"       // always Fixed
	LatencyUniform     LatencyKind = "uniform"     // uniform in [Min, Max]
	LatencyNormal      LatencyKind = "normal"      // normal(Mean, StdDev), at least Min
	LatencyExponential LatencyKind = "exponential" // Min + exponential with mean Mean
)

// LatencyConfig delays every admitted request before its headers are sent.
// Limited requests are answered at once, as a front-end limiter would.
type LatencyConfig struct {
	Kind   LatencyKind   `yaml:"kind"`   // distribution, default LatencyNone
	Fixed  time.Duration `yaml:"fixed"`  // LatencyFixed: the delay
	Min    time.Duration `yaml:"min"`    // lower bound (uniform, normal) or offset (exponential)
	Max    time.Duration `yaml:"max"`    // upper bound; 0 means none except for uniform
	Mean   time.Duration `yaml:"mean"`   // normal and exponential: the mean
	StdDev time.Duration `yaml:"stddev"` // normal: the standard deviation
}

// LimitKey says how clients are told apart by the limiter.
type LimitKey string

// Limiter keys.
const (
	// KeyIP gives each remote IP its own bucket, window and slot count.
	KeyIP LimitKey = "ip"
	// KeyGlobal shares one bucket, window and slot count among all clients.
	KeyGlobal LimitKey = "global"
)

// RetryAfterFormat selects how Retry-After is written on limited answers.
type RetryAfterFormat string

// Retry-After formats.
const (
	RetryAfterSeconds  RetryAfterFormat = "seconds"   // "Retry-After: 2"
	RetryAfterHTTPDate RetryAfterFormat = "http-date" // "Retry-After: Mon, 30 Nov 2026 15:04:05 GMT"
	RetryAfterNone     RetryAfterFormat = "none"      // no header
)

// LimitConfig is a host's per-client rate limiter. Each configured kind
// (token bucket, concurrency, fixed window) must admit a request; a rejected
// request consumes nothing. The zero value limits nothing.
type LimitConfig struct {
	// Key separates clients, default KeyIP.
	Key LimitKey `yaml:"key"`

	// Rate of the token bucket in requests per second; 0 disables it.
	Rate float64 `yaml:"rate"`
	// Burst is the bucket size, default max(1, ceil(Rate)). The bucket
	// starts full.
	Burst int `yaml:"burst"`

	// MaxConcurrent requests in progress per client; 0 means unlimited.
	MaxConcurrent int `yaml:"max_concurrent"`

	// WindowLimit requests per fixed Window (aligned on the clock); both
	// must be set to enable the fixed window.
	Window      time.Duration `yaml:"window"`
	WindowLimit int           `yaml:"window_limit"`

	// Status of a limited answer: 429 (default) or 503.
	Status int `yaml:"status"`
	// RetryAfter format, default RetryAfterSeconds.
	RetryAfter RetryAfterFormat `yaml:"retry_after"`
	// RetryAfterValue, when > 0, is announced instead of the computed wait
	// (time until the request would be admitted, rounded up to whole
	// seconds, at least 1 s).
	RetryAfterValue time.Duration `yaml:"retry_after_value"`
	// RateLimitHeaders adds RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset (delta seconds, draft-polli-ratelimit-headers-02) to
	// every answer that went through the limiter.
	RateLimitHeaders bool `yaml:"ratelimit_headers"`
	// SoftBlock answers limited requests with a 200 "under maintenance"
	// page instead of Status (headers as configured above).
	SoftBlock bool `yaml:"soft_block"`
}

// Enabled reports whether any limiter kind is configured.
func (l LimitConfig) Enabled() bool {
	return l.Rate > 0 || l.MaxConcurrent > 0 || (l.Window > 0 && l.WindowLimit > 0)
}

// RobotsConfig describes /robots.txt. The zero value serves none (404, or
// the Content handler's answer when Content is set).
type RobotsConfig struct {
	// Status forces the status of /robots.txt, e.g. 404 or 500. 0 means 200
	// when any rule (or Body) is configured, otherwise no robots.txt.
	Status int `yaml:"status"`
	// UserAgent of the single group, default "*".
	UserAgent string `yaml:"user_agent"`
	// CrawlDelay, when > 0, adds "Crawl-delay: <seconds>".
	CrawlDelay time.Duration `yaml:"crawl_delay"`
	// Disallow and Allow path prefixes, e.g. "/page/4".
	Disallow []string `yaml:"disallow"`
	Allow    []string `yaml:"allow"`
	// Body, when set, is served verbatim instead of the generated rules.
	Body string `yaml:"body"`
}

func (r RobotsConfig) configured() bool {
	return r.Status != 0 || r.CrawlDelay > 0 || len(r.Disallow) > 0 || len(r.Allow) > 0 || r.Body != ""
}

// FaultKind is a kind of injected failure.
type FaultKind string

// Fault kinds and what a net/http client observes.
const (
	// FaultReset closes the connection with a TCP RST before any response:
	// the client gets a connection error (ECONNRESET or EOF).
	FaultReset FaultKind = "reset"
	// FaultTruncate declares a Content-Length larger than the body it sends,
	// then closes: the client gets io.ErrUnexpectedEOF reading the body.
	FaultTruncate FaultKind = "truncate"
	// FaultSlow sends the real body in ChunkSize pieces every Interval.
	FaultSlow FaultKind = "slow"
	// FaultEndless sends a 200 with a chunked body that never ends (until
	// the client goes away or the server closes): clients need a timeout.
	FaultEndless FaultKind = "endless"
)

// FaultConfig injects one kind of fault. It fires on requests whose path
// starts with PathPrefix (all paths but /robots.txt when empty), each with
// Probability (1 when 0 and PathPrefix is set).
type FaultConfig struct {
	Kind        FaultKind `yaml:"kind"`
	Probability float64   `yaml:"probability"`
	PathPrefix  string    `yaml:"path_prefix"`
	// ChunkSize in bytes of slow and endless bodies, default 64.
	ChunkSize int `yaml:"chunk_size"`
	// Interval between chunks of slow and endless bodies, default 100 ms
	// (slow) and 10 ms (endless).
	Interval time.Duration `yaml:"interval"`
}

func (f FaultConfig) probability() float64 {
	if f.Probability == 0 && f.PathPrefix != "" {
		return 1
	}
	return f.Probability
}

// EnsureDefaults fills zero-valued fields of every host with their defaults.
func (c *Config) EnsureDefaults() {
	for i := range c.Hosts {
		c.Hosts[i].EnsureDefaults()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// EnsureDefaults fills zero-valued fields with their defaults.
func (h *HostConfig) EnsureDefaults() {
	p := &h.Pages
	if p.Count == 0 {
		p.Count = 100
	}
	if p.Graph == "" {
		p.Graph = GraphTree
	}
	if p.Fanout == 0 {
		p.Fanout = 10
	}
	if p.OutDegree == 0 {
		p.OutDegree = 5
	}
	if p.Links == "" {
		p.Links = LinksMixed
	}
	if h.Latency.Kind == "" {
		h.Latency.Kind = LatencyNone
	}
	l := &h.Limit
	if l.Key == "" {
		l.Key = KeyIP
	}
	if l.Rate > 0 && l.Burst == 0 {
		l.Burst = max(1, int(l.Rate+0.999999))
	}
	if l.Status == 0 {
		l.Status = http.StatusTooManyRequests
	}
	if l.RetryAfter == "" {
		l.RetryAfter = RetryAfterSeconds
	}
	if h.Robots.UserAgent == "" {
		h.Robots.UserAgent = "*"
	}
	for i := range h.Faults {
		f := &h.Faults[i]
		if f.ChunkSize == 0 {
			f.ChunkSize = 64
		}
		if f.Interval == 0 {
			f.Interval = 100 * time.Millisecond
			if f.Kind == FaultEndless {
				f.Interval = 10 * time.Millisecond
			}
		}
	}
}

// fieldErrs collects FieldErrors under a prefix.
type fieldErrs struct {
	prefix string
	errs   []error
}

func (v *fieldErrs) add(field string, value any, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Field: v.prefix + field, Value: value, Reason: fmt.Sprintf(format, args...)})
}

// Validate reports every bad field of the config (joined), each a
// *FieldError matching ErrInvalidConfig. Zero values are valid: they mean
// the defaults.
func (c Config) Validate() error {
	v := &fieldErrs{}
	if len(c.Hosts) == 0 {
		v.add("hosts", "[]", "at least one host is required")
	}
	if c.MaxRecords < 0 {
		v.add("max_records", c.MaxRecords, "must be >= 0")
	}
	if c.SharedPort < 0 || c.SharedPort > 65535 {
		v.add("shared_port", c.SharedPort, "must be a port number in [0, 65535]")
	}
	seen := map[string]int{}
	for i, h := range c.Hosts {
		prefix := fmt.Sprintf("hosts[%d].", i)
		if err := h.Validate(); err != nil {
			for _, e := range unjoin(err) {
				var fe *FieldError
				if errors.As(e, &fe) {
					v.errs = append(v.errs, &FieldError{Field: prefix + fe.Field, Value: fe.Value, Reason: fe.Reason})
				} else {
					v.errs = append(v.errs, e)
				}
			}
		}
		key := strings.ToLower(h.Name)
		if j, dup := seen[key]; dup && key != "" {
			v.add(prefix+"name", h.Name, "duplicate of hosts[%d].name", j)
		}
		seen[key] = i
	}
	return errors.Join(v.errs...)
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Validate reports every bad field of the host (joined), each a *FieldError
// whose Field is relative to the host, e.g. "limit.burst".
func (h HostConfig) Validate() error {
	v := &fieldErrs{}
	if h.Name == "" {
		v.add("name", `""`, "is required")
	} else if !validName(h.Name) {
		v.add("name", h.Name, "may hold only letters, digits, '.' and '-'")
	}
	if h.Port < 0 || h.Port > 65535 {
		v.add("port", h.Port, "must be a port number in [0, 65535]")
	}
	p := h.Pages
	if p.Count < 0 {
		v.add("pages.count", p.Count, "must be >= 0")
	}
	switch p.Graph {
	case "", GraphTree, GraphRandom, GraphChain:
	default:
		v.add("pages.graph", p.Graph, "must be one of tree, random, chain")
	}
	if p.Fanout < 0 {
		v.add("pages.fanout", p.Fanout, "must be >= 0")
	}
	if p.OutDegree < 0 {
		v.add("pages.out_degree", p.OutDegree, "must be >= 0")
	}
	if p.Size < 0 {
		v.add("pages.size", p.Size, "must be >= 0")
	}
	switch p.Links {
	case "", LinksMixed, LinksRelative, LinksAbsolute:
	default:
		v.add("pages.links", p.Links, "must be one of mixed, relative, absolute")
	}

	lat := h.Latency
	for name, d := range map[string]time.Duration{"fixed": lat.Fixed, "min": lat.Min, "max": lat.Max, "mean": lat.Mean, "stddev": lat.StdDev} {
		if d < 0 {
			v.add("latency."+name, d, "must be >= 0")
		}
	}
	switch lat.Kind {
	case "", LatencyNone, LatencyFixed:
	case LatencyUniform:
		if lat.Max < lat.Min {
			v.add("latency.max", lat.Max, "must be >= latency.min (%v)", lat.Min)
		}
	case LatencyNormal, LatencyExponential:
		if lat.Mean <= 0 {
			v.add("latency.mean", lat.Mean, "must be > 0 for kind %s", lat.Kind)
		}
		if lat.Max > 0 && lat.Max < lat.Min {
			v.add("latency.max", lat.Max, "must be >= latency.min (%v)", lat.Min)
		}
	default:
		v.add("latency.kind", lat.Kind, "must be one of none, fixed, uniform, normal, exponential")
	}

	l := h.Limit
	switch l.Key {
	case "", KeyIP, KeyGlobal:
	default:
		v.add("limit.key", l.Key, "must be ip or global")
	}
	if l.Rate < 0 {
		v.add("limit.rate", l.Rate, "must be >= 0")
	}
	if l.Burst < 0 {
		v.add("limit.burst", l.Burst, "must be >= 0")
	}
	if l.Burst > 0 && l.Rate == 0 {
		v.add("limit.burst", l.Burst, "needs limit.rate > 0")
	}
	if l.MaxConcurrent < 0 {
		v.add("limit.max_concurrent", l.MaxConcurrent, "must be >= 0")
	}
	if l.Window < 0 {
		v.add("limit.window", l.Window, "must be >= 0")
	}
	if l.WindowLimit < 0 {
		v.add("limit.window_limit", l.WindowLimit, "must be >= 0")
	}
	if (l.Window > 0) != (l.WindowLimit > 0) {
		v.add("limit.window", l.Window, "limit.window and limit.window_limit (%d) must be set together", l.WindowLimit)
	}
	switch l.Status {
	case 0, http.StatusTooManyRequests, http.StatusServiceUnavailable:
	default:
		v.add("limit.status", l.Status, "must be 429 or 503")
	}
	switch l.RetryAfter {
	case "", RetryAfterSeconds, RetryAfterHTTPDate, RetryAfterNone:
	default:
		v.add("limit.retry_after", l.RetryAfter, "must be seconds, http-date or none")
	}
	if l.RetryAfterValue < 0 {
		v.add("limit.retry_after_value", l.RetryAfterValue, "must be >= 0")
	}

	r := h.Robots
	if r.Status != 0 && (r.Status < 100 || r.Status > 599) {
		v.add("robots.status", r.Status, "must be an HTTP status in [100, 599]")
	}
	if r.CrawlDelay < 0 {
		v.add("robots.crawl_delay", r.CrawlDelay, "must be >= 0")
	}
	for i, d := range append(append([]string{}, r.Disallow...), r.Allow...) {
		if d != "" && !strings.HasPrefix(d, "/") {
			name := fmt.Sprintf("robots.disallow[%d]", i)
			if i >= len(r.Disallow) {
				name = fmt.Sprintf("robots.allow[%d]", i-len(r.Disallow))
			}
			v.add(name, d, "must start with '/'")
		}
	}

	for i, f := range h.Faults {
		name := fmt.Sprintf("faults[%d].", i)
		switch f.Kind {
		case FaultReset, FaultTruncate, FaultSlow, FaultEndless:
		default:
			v.add(name+"kind", f.Kind, "must be one of reset, truncate, slow, endless")
		}
		if f.Probability < 0 || f.Probability > 1 {
			v.add(name+"probability", f.Probability, "must be in [0, 1]")
		}
		if f.Probability == 0 && f.PathPrefix == "" {
			v.add(name+"probability", f.Probability, "set a probability, a path_prefix, or both")
		}
		if f.PathPrefix != "" && !strings.HasPrefix(f.PathPrefix, "/") {
			v.add(name+"path_prefix", f.PathPrefix, "must start with '/'")
		}
		if f.ChunkSize < 0 {
			v.add(name+"chunk_size", f.ChunkSize, "must be >= 0")
		}
		if f.Interval < 0 {
			v.add(name+"interval", f.Interval, "must be >= 0")
		}
	}
	return errors.Join(v.errs...)
}

func validName(s string) bool {
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// LoadConfig reads a YAML config (field names as in the yaml tags, durations
// as Go duration strings like "250ms"), rejects unknown fields, and
// validates it.
func LoadConfig(r io.Reader) (Config, error) {
	var c Config
	if err := yaml.NewDecoder(r, yaml.DisallowUnknownField()).Decode(&c); err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// LoadConfigFile is LoadConfig on the named file.
func LoadConfigFile(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("simsite: %w", err)
	}
	defer f.Close()
	c, err := LoadConfig(f)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// DefaultDemoConfig is a useful three-host site for manual use and demos:
//
//   - "lenient": 500 pages, 5-20 ms latency, no limits (the control host);
//   - "strict": 500 pages, 5-20 ms latency, a per-IP token bucket of 10
//     requests/s with burst 5, answering 429 with Retry-After (seconds) and
//     RateLimit-* headers;
//   - "polite": 50 pages, robots.txt with Crawl-delay: 1 and Disallow: /page/4.
func DefaultDemoConfig() Config {
	latency := LatencyConfig{Kind: LatencyUniform, Min: 5 * time.Millisecond, Max: 20 * time.Millisecond}
	return Config{Hosts: []HostConfig{
		{
			Name:    "lenient",
			Seed:    1,
			Pages:   PagesConfig{Count: 500, Graph: GraphTree, Fanout: 10, Size: 4096},
			Latency: latency,
		},
		{
			Name:    "strict",
			Seed:    2,
			Pages:   PagesConfig{Count: 500, Graph: GraphTree, Fanout: 10, Size: 4096},
			Latency: latency,
			Limit: LimitConfig{
				Rate: 10, Burst: 5,
				Status: http.StatusTooManyRequests, RetryAfter: RetryAfterSeconds,
				RateLimitHeaders: true,
			},
			Robots: RobotsConfig{Status: http.StatusOK},
		},
		{
			Name:    "polite",
			Seed:    3,
			Pages:   PagesConfig{Count: 50, Graph: GraphRandom, OutDegree: 4, Size: 2048},
			Latency: latency,
			Robots:  RobotsConfig{CrawlDelay: time.Second, Disallow: []string{"/page/4"}},
		},
	}}
}
