package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/spider"
)

// errbackSpider records which requests reached its errback, and with what.
type errbackSpider struct {
	base, refused string
	mu            sync.Mutex
	errs          map[string]error
	fallbackSeen  bool
}

func (*errbackSpider) Name() string { return "errback" }

func (s *errbackSpider) Start(ctx context.Context) iter.Seq2[*spider.Request, error] {
	return func(yield func(*spider.Request, error) bool) {
		for _, u := range []string{s.refused + "/refused", s.base + "/fails-in-callback", s.base + "/ok"} {
			req := spider.MustRequest(u, s.Parse)
			req.Errback = s.OnError
			if !yield(req, nil) {
				return
			}
		}
	}
}

func (s *errbackSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	switch res.URL.Path {
	case "/fails-in-callback":
		return errors.New("callback error")
	case "/fallback":
		s.mu.Lock()
		s.fallbackSeen = true
		s.mu.Unlock()
	}
	return nil
}

func (s *errbackSpider) OnError(ctx context.Context, req *spider.Request, err error, out spider.Output) error {
	s.mu.Lock()
	s.errs[req.URL.Path] = err
	s.mu.Unlock()
	// An errback may schedule a fallback request.
	out.Request(spider.MustRequest(s.base+"/fallback", s.Parse))
	return nil
}

// TestErrbackGetsDownloadErrorsNotCallbackErrors checks the Errback
// contract documented in package spider.
func TestErrbackGetsDownloadErrorsNotCallbackErrors(t *testing.T) {
	checkGoroutines(t)
	srv := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, pageHTML(0))
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()

	sp := &errbackSpider{base: srv.URL, refused: refused, errs: map[string]error{}}
	e, err := New(sp, testSettings(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err := sp.errs["/refused"]; !errors.Is(err, errkind.DownloadFailed) {
		t.Errorf("errback for a refused connection got %v, want a DownloadFailedError", err)
	}
	if err, ok := sp.errs["/fails-in-callback"]; ok {
		t.Errorf("errback was called for a callback error: %v", err)
	}
	if len(sp.errs) != 1 {
		t.Errorf("errback calls: %v, want only /refused", sp.errs)
	}
	if !sp.fallbackSeen {
		t.Error("the request the errback scheduled was not crawled")
	}
	if res.Stats["spider_exceptions/count"] != 1 {
		t.Errorf("spider_exceptions/count = %v, want 1 (the callback error)", res.Stats["spider_exceptions/count"])
	}
}
