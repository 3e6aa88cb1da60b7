package simsite

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/rs/zerolog"
)

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
	// Capacity, when > 0, makes the host slow down under load: it serves
	// Capacity requests at once at full speed, and beyond that each
	// request's latency is multiplied by (requests in progress on the
	// host, this one included) / Capacity, as a server sharing its
	// workers among them would. Its throughput then stops growing at about
	// Capacity / latency while its latency keeps growing with the load. It
	// never refuses a request.
	Capacity int `yaml:"capacity"`
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

// RateLimitFormat selects which RateLimit headers a host sends.
type RateLimitFormat string

// RateLimit header formats.
const (
	// RateLimitSeparate sends the older draft's three fields
	// (draft-polli-ratelimit-headers): "RateLimit-Limit: 5",
	// "RateLimit-Remaining: 2", "RateLimit-Reset: 1" (delta seconds).
	RateLimitSeparate RateLimitFormat = "separate"
	// RateLimitStructured sends the current IETF draft's structured fields
	// (draft-ietf-httpapi-ratelimit-headers): `RateLimit-Policy:
	// "default";q=10;w=1` (q units per w seconds) and `RateLimit:
	// "default";r=2;t=1` (r left, t seconds until reset).
	RateLimitStructured RateLimitFormat = "structured"
)

// RateChange changes a token bucket's rate at a given time.
type RateChange struct {
	// After is the time since the host's first request at which the
	// change takes effect.
	After time.Duration `yaml:"after"`
	// Rate is the new rate of the bucket, in requests per second (> 0).
	Rate float64 `yaml:"rate"`
}

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
	// Schedule changes Rate during a run (a limit that drops or rises
	// mid-crawl), in ascending order of After; tokens already in the
	// bucket are kept. Needs Rate > 0 (the rate until the first change).
	Schedule []RateChange `yaml:"schedule"`

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
	// RateLimitHeaders adds RateLimit headers (RateLimitFormat) to every
	// answer that went through the limiter.
	RateLimitHeaders bool `yaml:"ratelimit_headers"`
	// RateLimitFormat is the format of the RateLimit headers, default
	// RateLimitSeparate (RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset).
	RateLimitFormat RateLimitFormat `yaml:"ratelimit_format"`
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
	if l.RateLimitFormat == "" {
		l.RateLimitFormat = RateLimitSeparate
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
