package render

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"golang.org/x/text/encoding/htmlindex"

	"github.com/gocrawl/gocrawl/downloader"
)

// Archiving rendered pages (WARC_DIR). While a page renders, the browser's
// network events say what it sent and received: requestWillBeSent (the
// request, and for a redirect hop the previous hop's response),
// responseReceived, the ExtraInfo events (the header fields as they went
// over the wire, cookies included, and the raw status line of HTTP/1.x)
// and loadingFinished, after which Network.getResponseBody gives the body.
// Every exchange is kept, and handed to the Capture of the Warc middleware
// when the render ends.

// archiveRun collects the exchanges of one render.
type archiveRun struct {
	t     *tab
	limit int64 // DOWNLOAD_MAXSIZE (0 = none)

	mu       sync.Mutex
	done     bool // the render ended: late events are ignored
	hops     []*netHop
	last     map[network.RequestID]*netHop // the current hop of each request
	count    map[network.RequestID]int     // hops seen per request
	reqExtra map[network.RequestID][]network.Headers
	resExtra map[network.RequestID][]*network.EventResponseReceivedExtraInfo
	bodies   sync.WaitGroup
}

// netHop is one request of the page and its response: a redirect gives
// each hop of a request (one request id) a netHop of its own.
type netHop struct {
	id        network.RequestID
	n         int // index among the hops of its request id
	date      time.Time
	url       string
	method    string
	header    network.Headers
	body      []byte
	kind      string // ResourceType of BrowserExchange
	res       *network.Response
	finished  bool // the whole exchange is known (body fetched, or none)
	payload   []byte
	truncated string
}

func newArchiveRun(t *tab, limit int64) *archiveRun {
	return &archiveRun{t: t, limit: limit, last: map[network.RequestID]*netHop{}, count: map[network.RequestID]int{},
		reqExtra: map[network.RequestID][]network.Headers{},
		resExtra: map[network.RequestID][]*network.EventResponseReceivedExtraInfo{}}
}

// event takes one network event of the tab (on its reading goroutine: it
// must not block; bodies are fetched on goroutines of their own).
func (a *archiveRun) event(ev any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done {
		return
	}
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		if prev := a.last[ev.RequestID]; prev != nil && ev.RedirectResponse != nil {
			// A redirect: the previous hop's response came with this
			// event; a redirect's body is not kept by the browser.
			prev.res, prev.finished = ev.RedirectResponse, true
		}
		r := ev.Request
		if r == nil || !(strings.HasPrefix(r.URL, "http://") || strings.HasPrefix(r.URL, "https://")) {
			delete(a.last, ev.RequestID)
			return
		}
		h := &netHop{id: ev.RequestID, n: a.count[ev.RequestID], url: r.URL, method: r.Method, header: r.Headers,
			kind: strings.ToLower(string(ev.Type))}
		a.count[ev.RequestID]++
		if h.date = time.Now(); ev.WallTime > 0 {
			h.date = time.Unix(0, int64(ev.WallTime.Float64()*1e9))
		}
		if ev.Type == network.ResourceTypeDocument && ev.FrameID != a.t.frame {
			h.kind = "iframe"
		}
		for _, e := range r.PostDataEntries {
			h.body = append(h.body, e.Bytes...)
		}
		a.hops = append(a.hops, h)
		a.last[ev.RequestID] = h
	case *network.EventRequestWillBeSentExtraInfo:
		a.reqExtra[ev.RequestID] = append(a.reqExtra[ev.RequestID], ev.Headers)
	case *network.EventResponseReceivedExtraInfo:
		a.resExtra[ev.RequestID] = append(a.resExtra[ev.RequestID], ev)
	case *network.EventResponseReceived:
		if h := a.last[ev.RequestID]; h != nil {
			h.res = ev.Response
		}
	case *network.EventLoadingFinished:
		h := a.last[ev.RequestID]
		if h == nil || h.res == nil || h.finished {
			return
		}
		if fromCache(h.res) {
			h.finished = true // not fetched: not archived (see finish)
			return
		}
		a.bodies.Add(1)
		go a.fetchBody(h, a.bodySize(h, ev))
	case *network.EventLoadingFailed:
		h := a.last[ev.RequestID]
		if h == nil || h.finished {
			return
		}
		// The body did not arrive whole (a lost connection, a request
		// the page cancelled): the head is archived, without a body.
		h.finished, h.truncated = true, "disconnect"
	}
}

// bodySize is the size of h's body as received, as far as the browser's
// events tell it (0 when they do not): the encoded body length when it is
// reported, else Content-Length, else what was received less the head
// (a.mu held).
func (a *archiveRun) bodySize(h *netHop, ev *network.EventLoadingFinished) int64 {
	if ev.EncodedBodyLength > 0 {
		return int64(ev.EncodedBodyLength)
	}
	if n, err := strconv.ParseInt(headers(h.res.Headers).Get("Content-Length"), 10, 64); err == nil && n > 0 {
		return n
	}
	if x := a.resExtra[h.id]; h.n < len(x) && x[h.n].HeadersText != "" {
		return max(int64(ev.EncodedDataLength)-int64(len(x[h.n].HeadersText)), 0)
	}
	return 0
}

// fetchBody asks the browser for h's body, once it finished loading;
// size is the size of the body as received (0 when the browser did not
// say).
func (a *archiveRun) fetchBody(h *netHop, size int64) {
	defer a.bodies.Done()
	ctx, cancel := context.WithTimeout(a.t.ctxOrBackground(), probeTimeout)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetResponseBody, network.GetResponseBodyParams{RequestID: h.id})
	var body []byte
	if err == nil {
		body = res.Body
		if !res.Base64encoded {
			body = textBytes(body, h.res.Charset)
		}
	}
	trunc := ""
	switch {
	case a.limit > 0 && int64(len(body)) > a.limit:
		body, trunc = body[:a.limit], "length"
	case len(body) == 0 && a.limit > 0 && size > a.limit:
		trunc = "length" // too large for the browser's buffer
	case len(body) == 0 && size > 0:
		// The browser did not keep the body: larger than its buffer, or
		// an image it could not decode.
		trunc = "unspecified"
	}
	a.mu.Lock()
	h.payload, h.truncated, h.finished = body, trunc, true
	a.mu.Unlock()
}

// textBytes turns a body the browser gave as text back into bytes: it
// decoded them from the response's charset, so they are encoded in it
// again (UTF-8 when that is the charset, or it is unknown).
func textBytes(s []byte, charset string) []byte {
	cs := strings.ToLower(strings.TrimSpace(charset))
	if cs == "" || cs == "utf-8" || cs == "utf8" || cs == "us-ascii" {
		return s
	}
	enc, err := htmlindex.Get(cs)
	if err != nil {
		return s
	}
	b, err := enc.NewEncoder().Bytes(s)
	if err != nil {
		return s
	}
	return b
}

// fromCache reports whether the browser took a response from one of its
// caches instead of the network: such a response is not archived again.
func fromCache(r *network.Response) bool {
	return r.FromDiskCache || r.FromServiceWorker || r.FromPrefetchCache || r.FromEarlyHints
}

// finish ends the collection: it waits (at most until ctx ends) for the
// bodies being fetched, and returns every exchange that is known whole, in
// the order the browser sent the requests, and how many were left out
// because they had not finished loading.
func (a *archiveRun) finish(ctx context.Context) (out []downloader.BrowserExchange, unfinished int) {
	waited := make(chan struct{})
	go func() {
		a.bodies.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-ctx.Done():
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.done = true
	for _, h := range a.hops {
		switch {
		case h.res == nil || fromCache(h.res):
			continue
		case !h.finished:
			unfinished++
			continue
		}
		out = append(out, a.exchange(h))
	}
	return out, unfinished
}

// exchange builds h's BrowserExchange (a.mu held).
func (a *archiveRun) exchange(h *netHop) downloader.BrowserExchange {
	r := h.res
	ex := downloader.BrowserExchange{Date: h.date, URL: h.url, Method: h.method, RequestBody: h.body,
		StatusCode: int(r.Status), Payload: h.payload, Truncated: h.truncated, IP: strings.Trim(r.RemoteIPAddress, "[]"), ResourceType: h.kind}
	// The ExtraInfo events of a request id come one per hop, in order.
	reqH := h.header
	if x := a.reqExtra[h.id]; h.n < len(x) {
		reqH = x[h.n]
	}
	ex.RequestHeader = wireHeaders(reqH)
	resH := r.Headers
	ex.Proto = protoOf(r.Protocol)
	text := r.StatusText
	if x := a.resExtra[h.id]; h.n < len(x) && x[h.n].StatusCode == r.Status {
		resH = x[h.n].Headers
		// HTTP/1.x: the status line as received.
		if line, _, ok := strings.Cut(x[h.n].HeadersText, "\r\n"); ok {
			if proto, status, ok := strings.Cut(line, " "); ok && strings.HasPrefix(proto, "HTTP/1.") {
				ex.Proto, ex.Status = proto, status
			}
		}
	}
	if ex.Status == "" {
		if text == "" {
			text = http.StatusText(int(r.Status))
		}
		ex.Status = strings.TrimSpace(fmt.Sprintf("%d %s", r.Status, text))
	}
	ex.Header = wireHeaders(resH)
	if enc := ex.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		// The browser decoded the body: these no longer describe it.
		for _, k := range []string{"Content-Encoding", "Content-Length"} {
			if v, ok := ex.Header[k]; ok {
				ex.Header["X-Archive-Orig-"+k] = v
				delete(ex.Header, k)
			}
		}
	}
	return ex
}

// wireHeaders converts DevTools header fields, leaving out HTTP/2's pseudo
// header fields (":method", ":status"...), which WARC's HTTP/1.1 form
// states in its request and status lines.
func wireHeaders(h network.Headers) http.Header {
	out := headers(h)
	for k := range out {
		if strings.HasPrefix(k, ":") {
			delete(out, k)
		}
	}
	return out
}

// protoOf is net/http's name of a DevTools protocol ("http/1.1", "h2").
func protoOf(p string) string {
	switch p = strings.ToLower(p); {
	case p == "http/1.0":
		return "HTTP/1.0"
	case p == "h2" || strings.HasPrefix(p, "http/2"):
		return "HTTP/2.0"
	case p == "h3" || strings.HasPrefix(p, "h3-") || strings.Contains(p, "quic"):
		return "HTTP/3.0"
	}
	return "HTTP/1.1"
}

// archiveBuffers are the sizes given to Network.enable when pages are
// archived: the browser keeps each body (up to the per-resource size) until
// it is fetched.
func archiveBuffers(limit int64) (total, resource int64) {
	const maxResource, minTotal, maxTotal = 256 << 20, 100 << 20, 512 << 20
	resource = maxResource
	if limit > 0 && limit+1 < maxResource {
		resource = limit + 1
	}
	total = min(max(2*resource, minTotal), maxTotal)
	return total, resource
}
