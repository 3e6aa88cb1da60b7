package warctest

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/middleware"
	"github.com/gocrawl/gocrawl/persist/warc"
	"github.com/gocrawl/gocrawl/pipeline"
	"github.com/gocrawl/gocrawl/settings"
	"github.com/gocrawl/gocrawl/spider"
)

// page is the test spider's item.
type page struct {
	URL, Title string
	Size       int
}

// linkSpider emits a page per response and follows every link.
type linkSpider struct{ start string }

func (s *linkSpider) Name() string { return "links" }

func (s *linkSpider) Start(context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) {
		yield(spider.NewRequest(s.start, nil))
	}
}

func (s *linkSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	title, _ := res.Title()
	out.Item(page{URL: res.URL.String(), Title: title, Size: len(res.Body)})
	for _, n := range res.Find("a[href]").Nodes {
		for _, at := range n.Attr {
			if at.Key == "href" {
				out.Follow(res, at.Val, nil)
			}
		}
	}
	return nil
}

// site serves the pages of the test: plain, gzip-encoded, chunked,
// redirected, two with the same body, and one too large.
func site(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	html := func(title, body string) string {
		return "<html><head><title>" + title + "</title></head><body>" + body + "</body></html>"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, html("home", `<a href="/a">a</a> <a href="/gz">gz</a> <a href="/chunked">c</a>
			<a href="/redir">r</a> <a href="/same1">s1</a> <a href="/same2">s2</a> <a href="/big">big</a>`))
	})
	mux.HandleFunc("/a", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, html("A", "a")) })
	mux.HandleFunc("/gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		fmt.Fprint(zw, html("GZ", strings.Repeat("compressed ", 100)))
		zw.Close()
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><head><title>CH</title></head><body>")
		w.(http.Flusher).Flush()
		fmt.Fprint(w, "chunked</body></html>")
	})
	mux.HandleFunc("/redir", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/c", http.StatusFound) })
	mux.HandleFunc("/c", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, html("C", "c")) })
	mux.HandleFunc("/same1", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, html("same", "same")) })
	mux.HandleFunc("/same2", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, html("same", "same")) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, html("big", strings.Repeat("x", 10000)))
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

var baseSettings = map[string]any{"ROBOTSTXT_OBEY": false, "DOWNLOAD_MAXSIZE": 5000, "LOG_LEVEL": "ERROR"}

// record crawls srv with WARC_DIR set and returns the items.
func record(t *testing.T, srv *httptest.Server, dir string, extra map[string]any) ([]page, *engine.Result) {
	t.Helper()
	s := settings.New()
	for k, v := range baseSettings {
		s.Set(k, v, settings.SourceCommandLine, "test")
	}
	s.Set("WARC_DIR", dir, settings.SourceCommandLine, "test")
	for k, v := range extra {
		if err := s.Set(k, v, settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var items []page
	collect := pipeline.Func(func(_ context.Context, it any) (any, error) {
		mu.Lock()
		items = append(items, it.(page))
		mu.Unlock()
		return it, nil
	})
	e, err := engine.New(&linkSpider{start: srv.URL + "/"}, s, engine.Options{Pipelines: []pipeline.Named{{Name: "collect", Stage: collect}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sortPages(items), res
}

func sortPages(ps []page) []page {
	slices.SortFunc(ps, func(a, b page) int { return strings.Compare(a.URL, b.URL) })
	return ps
}

func pagesOf(items []any) []page {
	var ps []page
	for _, it := range items {
		ps = append(ps, it.(page))
	}
	return sortPages(ps)
}

// TestRecordAndReplay: a crawl archived with WARC_DIR gives the same items
// when replayed from the archive, with nothing sent; every hop of a
// redirect is archived; the archive is valid WARC for an independent
// reader.
func TestRecordAndReplay(t *testing.T) {
	srv, hits := site(t)
	dir := t.TempDir()
	want, res := record(t, srv, dir, map[string]any{"WARC_DEDUP": "digest"})
	if res.Reason != "finished" || len(want) != 7 {
		t.Fatalf("recording: reason %s, %d items %v", res.Reason, len(want), want)
	}
	if res.Stats["warc/exchanges"] != 9 || res.Stats["warc/revisits"] != 1 || res.Stats["warc/truncated"] != 1 {
		t.Errorf("stats: exchanges %v (want 9: 8 pages, a redirect hop), revisits %v (want 1), truncated %v (want 1)",
			res.Stats["warc/exchanges"], res.Stats["warc/revisits"], res.Stats["warc/truncated"])
	}
	files, _ := warc.ListFiles(dir)
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	checkIndependently(t, files[0])

	// What was archived of each special page.
	byURL := map[string]*warc.Record{}
	if _, err := warc.Scan(files[0], func(rec *warc.Record, _ warc.Position) error {
		if rec.Type() != warc.TypeRequest {
			byURL[rec.TargetURI()] = rec
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if r := byURL[srv.URL+"/redir"]; r == nil || !bytes.HasPrefix(r.Block, []byte("HTTP/1.1 302 Found")) {
		t.Errorf("the redirect hop is not archived: %v", r)
	}
	if r := byURL[srv.URL+"/gz"]; r == nil {
		t.Error("/gz not archived")
	} else {
		head, payload, _ := r.HTTP()
		if !bytes.Contains(head, []byte("Content-Encoding: gzip")) || !bytes.HasPrefix(payload, []byte{0x1f, 0x8b}) {
			t.Errorf("/gz: the payload is not archived as received (gzip-encoded, with its header)")
		}
	}
	if r := byURL[srv.URL+"/chunked"]; r == nil {
		t.Error("/chunked not archived")
	} else if head, payload, _ := r.HTTP(); bytes.Contains(head, []byte("Transfer-Encoding")) || !bytes.HasSuffix(payload, []byte("chunked</body></html>")) {
		t.Errorf("/chunked: archived with its transfer coding:\n%s", r.Block)
	}
	if r := byURL[srv.URL+"/big"]; r == nil || r.Header.Get("WARC-Truncated") != "length" {
		t.Errorf("/big: not archived as truncated: %v", r)
	}
	if r := byURL[srv.URL+"/same2"]; r == nil || r.Type() != warc.TypeRevisit || r.Header.Get("WARC-Refers-To-Target-URI") != srv.URL+"/same1" {
		if r2 := byURL[srv.URL+"/same1"]; r2 == nil || r2.Type() != warc.TypeRevisit {
			t.Errorf("neither /same1 nor /same2 is a revisit")
		}
	}

	// The replay: same items, no request to the site.
	before := hits.Load()
	got := Replay(t, &linkSpider{start: srv.URL + "/"}, dir, baseSettings)
	if sent := hits.Load() - before; sent != 0 {
		t.Errorf("the replay sent %d requests", sent)
	}
	if gp := pagesOf(got.Items); !slices.Equal(gp, want) {
		t.Errorf("replayed items differ:\n got %v\nwant %v", gp, want)
	}
	if got.Stats["warc/replayed"] < 8 {
		t.Errorf("warc/replayed %v", got.Stats["warc/replayed"])
	}
}

// TestReplayMissing: a URL that is not in the archive is an error naming
// it, never a live request.
func TestReplayMissing(t *testing.T) {
	srv, hits := site(t)
	dir := t.TempDir()
	record(t, srv, dir, nil)
	before := hits.Load()
	res, err := Run(context.Background(), &linkSpider{start: srv.URL + "/elsewhere"}, dir, baseSettings)
	if err != nil {
		t.Fatal(err)
	}
	if res.Missing != 1 || hits.Load() != before {
		t.Errorf("missing %d (want 1), %d requests sent (want 0)", res.Missing, hits.Load()-before)
	}
}

// TestReplayCorrupt: a damaged archive keeps the crawl from starting, with
// an error naming the file and the offset.
func TestReplayCorrupt(t *testing.T) {
	srv, _ := site(t)
	dir := t.TempDir()
	record(t, srv, dir, nil)
	files, _ := warc.ListFiles(dir)
	b, _ := os.ReadFile(files[0])
	b = b[:len(b)-7] // the last record cut short
	os.WriteFile(files[0], b, 0o644)
	_, err := Run(context.Background(), &linkSpider{start: srv.URL + "/"}, dir, baseSettings)
	var ce *warc.CorruptError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), files[0]) || !strings.Contains(err.Error(), fmt.Sprintf("offset %d", ce.Offset)) {
		t.Fatalf("replay of a damaged archive: %v", err)
	}
}

// TestFullDiskStopsCrawl: when the archive cannot be written the crawl
// stops with reason warc_error and the disk's error, as a feed's does.
func TestFullDiskStopsCrawl(t *testing.T) {
	srv, _ := site(t)
	s := settings.New()
	for k, v := range baseSettings {
		s.Set(k, v, settings.SourceCommandLine, "test")
	}
	s.Set("WARC_DIR", t.TempDir(), settings.SourceCommandLine, "test")
	s.Set("CONCURRENT_REQUESTS", 1, settings.SourceCommandLine, "test")
	fullDisk := func(path string) (warc.File, error) {
		f, err := os.Create(path)
		return &fullFile{f, 2500}, err
	}
	// The middleware of the chain is replaced by one writing to the
	// full disk.
	middleware.RegisterDownloader("WarcFullDisk", func(c *spider.Crawler) (middleware.Downloader, error) {
		return middleware.NewWarc(c, middleware.WarcOptions{Create: fullDisk})
	})
	s.Set("DOWNLOADER_MIDDLEWARES", map[string]any{"Warc": nil, "WarcFullDisk": 950}, settings.SourceCommandLine, "test")
	e, err := engine.New(&linkSpider{start: srv.URL + "/"}, s, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if res == nil {
		t.Fatalf("no result: %v", err)
	}
	if res.Reason != "warc_error" || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("reason %q, error %v; want warc_error and the disk's error", res.Reason, err)
	}
	if n := res.Stats["warc/exchanges"]; n >= 7 {
		t.Errorf("%v exchanges archived on a disk with room for about two", n)
	}
}

type fullFile struct {
	*os.File
	room int
}

func (f *fullFile) Write(p []byte) (int, error) {
	if len(p) > f.room {
		n, _ := f.File.Write(p[:f.room])
		f.room = 0
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	f.room -= len(p)
	return f.File.Write(p)
}

var _ io.Writer = (*fullFile)(nil)

// protoSpider emits the protocol of the response to its start URL.
type protoSpider struct{ start string }

func (s *protoSpider) Name() string { return "proto" }

func (s *protoSpider) Start(context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) { yield(spider.NewRequest(s.start, nil)) }
}

func (s *protoSpider) Parse(_ context.Context, res *spider.Response, out spider.Output) error {
	out.Item(res.Protocol + " " + string(res.Body))
	return nil
}

// TestHTTP2: an exchange made over HTTP/2 is archived in the HTTP/1.1 form
// WARC readers parse, marked WARC-Protocol: h2, and replayed as HTTP/2.
func TestHTTP2(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "over "+r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	s := settings.New()
	for k, v := range map[string]any{"ROBOTSTXT_OBEY": false, "LOG_LEVEL": "ERROR", "WARC_DIR": dir} {
		s.Set(k, v, settings.SourceCommandLine, "test")
	}
	var items []any
	collect := pipeline.Func(func(_ context.Context, it any) (any, error) {
		items = append(items, it)
		return it, nil
	})
	e, err := engine.New(&protoSpider{start: srv.URL + "/"}, s, engine.Options{Transport: srv.Client().Transport,
		Pipelines: []pipeline.Named{{Name: "collect", Stage: collect}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0] != "HTTP/2.0 over HTTP/2.0" {
		t.Fatalf("the crawl did not go over HTTP/2: %v", items)
	}
	files, _ := warc.ListFiles(dir)
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	checkIndependently(t, files[0])
	n := 0
	if _, err := warc.Scan(files[0], func(rec *warc.Record, _ warc.Position) error {
		switch rec.Type() {
		case warc.TypeRequest, warc.TypeResponse:
			n++
			if p := rec.Header.Get("WARC-Protocol"); p != "h2" {
				t.Errorf("%s record: WARC-Protocol %q, want h2", rec.Type(), p)
			}
			first, _, _ := bytes.Cut(rec.Block, []byte("\r\n"))
			if !bytes.HasSuffix(first, []byte(" HTTP/1.1")) && !bytes.HasPrefix(first, []byte("HTTP/1.1 200 OK")) {
				t.Errorf("%s record: first line %q is not HTTP/1.1's form", rec.Type(), first)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d request and response records, want 2", n)
	}
	got, err := Run(context.Background(), &protoSpider{start: srv.URL + "/"}, dir, map[string]any{"ROBOTSTXT_OBEY": false, "LOG_LEVEL": "ERROR"})
	if err != nil || len(got.Items) != 1 || got.Items[0] != "HTTP/2.0 over HTTP/2.0" {
		t.Errorf("replay: %v, %v; want the HTTP/2 response", got.Items, err)
	}
}
