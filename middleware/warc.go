package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/clock"
	"github.com/gocrawl/gocrawl/downloader"
	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/internal/redact"
	"github.com/gocrawl/gocrawl/internal/version"
	"github.com/gocrawl/gocrawl/observe/stats"
	"github.com/gocrawl/gocrawl/persist/warc"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

func init() { RegisterDownloader("Warc", newWarc) }

// Warc (the "Warc" downloader middleware) archives the crawl as WARC files
// (WARC_DIR), or answers it from an archive instead of the network
// (WARC_REPLAY). See docs/archive.md.
//
// Archiving: every exchange that reaches the network, each redirect hop
// and each retry included, is written as a request record and a response
// record: the request as sent, the response's header fields as received
// and its body as received (content coding kept, transfer coding
// removed), with the server's address. Its place in the chain (950, after
// HttpCache) makes it see only what went over the wire: answers from the
// HTTP cache are not archived again. Identical payloads become revisit
// records (WARC_DEDUP); a response cut at DOWNLOAD_MAXSIZE is archived as
// far as it was read, flagged WARC-Truncated: length. An HTTP/2 exchange
// is written in HTTP/1.1 form and marked WARC-Protocol: h2. A rendered
// page (RENDER_JS) is archived as the browser received it: its document
// and every subresource, linked by WARC-Page-ID (archiveRendered). When
// the archive cannot be written (a full disk) the crawl stops with reason
// warc_error.
//
// Replay: WARC_REPLAY names a folder of WARC files (or one file); every
// request is answered from it (the last capture of its method, URL and
// body), flagged "replayed", and nothing is sent:
// a request the archive lacks fails with an error naming its URL. A
// replayed request skips throttling, as a cached one does.
//
// Stats: warc/exchanges, warc/rendered_exchanges, warc/revisits,
// warc/truncated, warc/errors, warc/replayed, warc/replay_missing.
type Warc struct {
	w           *warc.Writer
	archive     *warc.Archive
	compression bool
	clock       clock.Clock
	stats       *stats.Collector
	log         zerolog.Logger
}

func newWarc(c *spider.Crawler) (Downloader, error) {
	s := c.Settings
	if s.String("WARC_DIR") == "" && s.String("WARC_REPLAY") == "" {
		return nil, nil
	}
	return NewWarc(c, WarcOptions{})
}

// WarcOptions configure NewWarc beyond the settings.
type WarcOptions struct {
	// Clock dates the records; the real clock when nil.
	Clock clock.Clock
	// Create replaces how WARC files are created (tests simulate a full
	// disk with it).
	Create func(path string) (warc.File, error)
}

// NewWarc builds the Warc middleware from the crawl's settings. Close it
// when done.
func NewWarc(c *spider.Crawler, o WarcOptions) (*Warc, error) {
	s := c.Settings
	m := &Warc{clock: o.Clock, stats: c.Stats, log: c.Log, compression: s.Bool("COMPRESSION_ENABLED")}
	if m.clock == nil {
		m.clock = clock.Real
	}
	dir, replay := s.String("WARC_DIR"), s.String("WARC_REPLAY")
	switch {
	case dir != "" && replay != "":
		return nil, errors.New("WARC_DIR and WARC_REPLAY are both set: a replay sends nothing that could be archived; unset one")
	case replay != "":
		a, err := warc.LoadArchive(replay)
		if err != nil {
			return nil, fmt.Errorf("WARC_REPLAY: %w", err)
		}
		m.archive = a
		m.log.Info().Str("archive", a.Describe()).Msg("replaying the crawl from a web archive: nothing is sent")
		return m, nil
	}
	dedup, err := warc.ParseDedup(s.String("WARC_DEDUP"))
	if err != nil {
		return nil, fmt.Errorf("WARC_DEDUP: %w", err)
	}
	level := s.Int("WARC_GZIP_LEVEL")
	if level == 0 {
		level = warc.GzipStore
	}
	prefix := s.String("WARC_PREFIX")
	if prefix == "" && c.Spider != nil {
		prefix = c.Spider.Name()
	}
	w, repairs, err := warc.NewWriter(warc.Options{
		Dir: dir, Prefix: prefix, MaxSize: int64(s.Int("WARC_MAX_SIZE")), SyncInterval: s.Seconds("WARC_SYNC_INTERVAL"),
		Dedup: dedup, GzipLevel: level, Software: "gocrawl/" + version.Version, Info: warcInfo(c), Clock: o.Clock, Create: o.Create,
	})
	for _, r := range repairs {
		m.log.Warn().Str("file", r.File).Int("records", r.Records).Int64("cut_bytes", r.Cut).Bool("removed", r.Removed).
			Msg("WARC file left open by an interrupted crawl: repaired (a partial last record is cut)")
	}
	if err != nil {
		return nil, fmt.Errorf("WARC_DIR %s: %w", dir, err)
	}
	m.w = w
	return m, nil
}

// Close closes the WARC file being written (synced, indexed).
func (m *Warc) Close(context.Context) error {
	if m.w == nil {
		return nil
	}
	return m.w.Close()
}

// WillAnswer implements Answerer: a replay answers every request.
func (m *Warc) WillAnswer(context.Context, *spider.Request) bool { return m.archive != nil }

// WrapFetcher implements Downloader.
func (m *Warc) WrapFetcher(next Fetcher) Fetcher {
	if m.archive != nil {
		return FetcherFunc(m.replay)
	}
	return FetcherFunc(func(ctx context.Context, req *spider.Request) (*spider.Response, error) {
		c := &downloader.Capture{}
		sent := m.clock.Now()
		res, err := next.Fetch(downloader.WithCapture(ctx, c), req)
		defer c.Release() // the copy of an encoded body, once archived
		if len(c.Browser) > 0 {
			// A rendered page: what the browser exchanged.
			if werr := m.archiveRendered(req, c); werr != nil {
				return nil, werr
			}
			return res, err
		}
		if !c.Responded || c.Request == nil {
			return res, err // nothing went over the wire (cache, render, refused)
		}
		ex := m.exchange(req, c, sent, res, err)
		if werr := m.write(req, ex, false); werr != nil {
			return nil, werr
		}
		return res, err
	})
}

// write archives ex, an exchange of req (one the browser made to render
// req when rendered is true), and counts it; an error is the crawl's
// end (warc_error).
func (m *Warc) write(req *spider.Request, ex *warc.Exchange, rendered bool) error {
	revisit, err := m.w.Write(ex)
	if err != nil {
		m.inc("warc/errors")
		what := req.URL.Redacted()
		if rendered {
			what = redact.String(ex.URL) + " (rendering " + what + ")"
		}
		return &FatalError{Reason: "warc_error", Err: fmt.Errorf("archiving %s: %w%s", what, err, diskHint(err))}
	}
	m.inc("warc/exchanges")
	if rendered {
		m.inc("warc/rendered_exchanges")
	}
	if revisit {
		m.inc("warc/revisits")
	}
	if ex.Truncated != "" {
		m.inc("warc/truncated")
	}
	return nil
}

func diskHint(err error) string {
	if strings.Contains(err.Error(), "no space left") {
		return "; free some space (the archive's last file is repaired when the crawl runs again)"
	}
	return ""
}

func (m *Warc) inc(key string) {
	if m.stats != nil {
		m.stats.Inc(key, 1)
	}
}

// exchange turns a capture into what the writer archives.
func (m *Warc) exchange(req *spider.Request, c *downloader.Capture, sent time.Time, res *spider.Response, err error) *warc.Exchange {
	hr := c.Request
	ex := &warc.Exchange{
		URL: req.URL.String(), Parsed: req.URL, Date: sent, Method: hr.Method, Status: c.StatusCode,
		Request: warc.RequestBytes(hr.Method, hr.URL.RequestURI(), hr.Host, hr.Header, c.RequestBody),
		Payload: c.Payload,
	}
	// WARC has no HTTP/2 form: an HTTP/2 exchange is written as HTTP/1.1,
	// the way readers parse records, and WARC-Protocol says what it was.
	proto := c.Proto
	if ex.Protocol = warc.ProtocolOf(proto); ex.Protocol != "" {
		proto = "HTTP/1.1"
	}
	ex.ResponseHead = warc.ResponseHeadBytes(proto, c.Status, c.Header)
	ex.MIME, _, _ = strings.Cut(c.Header.Get("Content-Type"), ";")
	ex.MIME = strings.ToLower(strings.TrimSpace(ex.MIME))
	if host, _, serr := net.SplitHostPort(c.Remote()); serr == nil {
		ex.IP = host
	}
	switch {
	case err == nil:
		if res != nil && slices.Contains(res.Flags, "truncated") {
			ex.Truncated = warc.TruncatedDisconnect
		}
	case errors.Is(err, errkind.ResponseTooLarge):
		ex.Truncated = warc.TruncatedLength
	case errors.Is(err, errkind.DownloadTimeout):
		ex.Truncated = warc.TruncatedTime
	case errors.Is(err, errkind.ResponseDataLoss):
		ex.Truncated = warc.TruncatedDisconnect
	default:
		ex.Truncated = warc.TruncatedUnknown
	}
	return ex
}

// replay answers req from the archive.
func (m *Warc) replay(ctx context.Context, req *spider.Request) (*spider.Response, error) {
	u := req.URL.String()
	c, err := m.archive.LookupRequest(req.EffectiveMethod(), u, req.Body)
	if err != nil {
		if errors.Is(err, warc.ErrNotArchived) {
			m.inc("warc/replay_missing")
			m.log.Error().Str("url", req.URL.Redacted()).Msg("WARC_REPLAY: the archive does not hold this URL; nothing is sent")
		}
		return nil, fmt.Errorf("WARC_REPLAY: %w", err)
	}
	if c.Truncated == warc.TruncatedLength {
		// The crawl that archived it gave up at its size limit: so does
		// the replay.
		return nil, &downloader.Error{Kind: errkind.ResponseTooLarge, URL: req.URL.Redacted(),
			Err: fmt.Errorf("archived cut at %d bytes, over the crawl's size limit (WARC-Truncated: length, %s at offset %d)", len(c.Payload), c.File, c.Offset)}
	}
	h := c.Header
	body := c.Payload
	if enc := h.Get("Content-Encoding"); enc != "" && m.compression && req.EffectiveMethod() != http.MethodHead {
		r, err := downloader.Decode(enc, bytes.NewReader(body))
		if err == nil {
			body, err = io.ReadAll(r)
		}
		if err != nil && !(errors.Is(err, io.ErrUnexpectedEOF) && c.Truncated != "") {
			return nil, fmt.Errorf("WARC_REPLAY: %s (%s at offset %d): decoding its %s body: %w", u, c.File, c.Offset, enc, err)
		}
		h = h.Clone()
		h.Del("Content-Encoding")
		h.Del("Content-Length")
	}
	m.inc("warc/replayed")
	res := &spider.Response{URL: req.URL, Status: c.Status.Code, Header: h, Body: body, Request: req,
		Protocol: c.Status.Proto, Flags: []string{"replayed"}}
	switch c.Protocol {
	case "h2":
		res.Protocol = "HTTP/2.0"
	case "h3":
		res.Protocol = "HTTP/3.0"
	}
	if c.Truncated != "" {
		res.Flags = append(res.Flags, "truncated")
	}
	return res, nil
}

// warcInfo lists the crawl's settings that differ from the defaults, for
// the warcinfo record of each file, redacted as everywhere settings are
// shown (settings.Redact: secrets masked, passwords in URLs too).
func warcInfo(c *spider.Crawler) [][2]string {
	var out [][2]string
	if c.Spider != nil {
		out = append(out, [2]string{"isPartOf", c.Spider.Name()})
	}
	s := c.Settings
	if ua := s.String("USER_AGENT"); ua != "" {
		out = append(out, [2]string{"http-header-user-agent", ua})
	}
	robots := "ignore"
	if s.Bool("ROBOTSTXT_OBEY") {
		robots = "obey"
	}
	out = append(out, [2]string{"robots", robots})
	for _, name := range s.Names() {
		v, ok := s.Origin(name)
		if !ok || v.Source == settings.SourceDefault {
			continue
		}
		out = append(out, [2]string{"setting", name + "=" + settingText(settings.Redact(name, v.V))})
	}
	return out
}

func settingText(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		s = string(b)
	}
	return s
}
