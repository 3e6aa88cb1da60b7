package downloader

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/spider"
)

// The downloader sends through its transport what http.Client would for a
// client that follows no redirect.
func TestRoundTripAsTheClient(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/auth":
			user, pass, ok := r.BasicAuth()
			io.WriteString(w, user+":"+pass+":"+map[bool]string{true: "basic", false: "none"}[ok])
		case "/bad-location":
			w.Header().Set("Location", "http://[::1/%zz")
			w.WriteHeader(http.StatusFound)
		case "/redirect":
			http.Redirect(w, r, "/auth", http.StatusMovedPermanently)
		}
	})
	d := newTestDownloader(t, Options{})
	u, _ := url.Parse(srv.URL)

	t.Run("credentials of the URL", func(t *testing.T) {
		c := &Capture{}
		req := spider.MustRequest("http://alice:s3cret@"+u.Host+"/auth", nil)
		res, err := d.Fetch(WithCapture(context.Background(), c), req)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(res.Body); got != "alice:s3cret:basic" {
			t.Errorf("server saw %q, want alice's Basic credentials", got)
		}
		// As with http.Client, the header is added to a copy: the request
		// an archive records has the headers it was given.
		if c.Request == nil || c.Request.Header.Get("Authorization") != "" {
			t.Errorf("captured request %v: want it without the Authorization made from the URL", c.Request)
		}
	})
	t.Run("an Authorization header wins", func(t *testing.T) {
		req := spider.MustRequest("http://alice:s3cret@"+u.Host+"/auth", nil)
		req.Header = http.Header{"Authorization": {"Basic Ym9iOnB3"}} // bob:pw
		res, err := d.Fetch(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(res.Body); got != "bob:pw:basic" {
			t.Errorf("server saw %q, want bob's", got)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		res, err := get(t, d, srv.URL+"/auth")
		if err != nil {
			t.Fatal(err)
		}
		if got := string(res.Body); got != "::none" {
			t.Errorf("server saw %q, want no credentials", got)
		}
	})
	t.Run("redirects are answers", func(t *testing.T) {
		for path, status := range map[string]int{"/redirect": http.StatusMovedPermanently, "/bad-location": http.StatusFound} {
			res, err := get(t, d, srv.URL+path)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if res.Status != status || res.Header.Get("Location") == "" {
				t.Errorf("%s: status %d, Location %q: want the redirect itself", path, res.Status, res.Header.Get("Location"))
			}
		}
	})
	t.Run("errors name the method and URL", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := "http://bob:hunter2@" + ln.Addr().String() + "/x"
		ln.Close()
		req := spider.MustRequest(closed, nil)
		req.Method = http.MethodPost
		_, err = d.Fetch(context.Background(), req)
		var ue *url.Error
		if !errors.As(err, &ue) || ue.Op != "Post" || !strings.HasSuffix(ue.URL, "/x") {
			t.Fatalf("error %v: want a *url.Error of Op Post naming the URL", err)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error %q shows the password", err)
		}
	})
}

// transportFunc is a custom Transport (Options.Transport).
type transportFunc func(*http.Request) (*http.Response, error)

func (f transportFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A custom Transport may answer without a body, or with neither an answer
// nor an error: the first reads as empty, the second is an error.
func TestRoundTripCustomTransport(t *testing.T) {
	var answer *http.Response
	d := newTestDownloader(t, Options{Transport: transportFunc(func(r *http.Request) (*http.Response, error) {
		if answer == nil {
			return nil, nil
		}
		a := *answer
		a.Request = r
		return &a, nil
	})})
	_, err := get(t, d, "http://127.0.0.1:1/nil")
	if err == nil || !strings.Contains(err.Error(), "nil *Response") {
		t.Errorf("nil answer: err = %v, want it named", err)
	}
	answer = &http.Response{StatusCode: http.StatusNoContent, Header: http.Header{}, ContentLength: 0}
	res, err := get(t, d, "http://127.0.0.1:1/empty")
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != http.StatusNoContent || len(res.Body) != 0 {
		t.Errorf("status %d, %d bytes: want 204 and no body", res.Status, len(res.Body))
	}
	// A length without a body is the transport's error, not an empty page;
	// but a HEAD's length describes a body never sent.
	answer = &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, ContentLength: 512}
	if _, err := get(t, d, "http://127.0.0.1:1/lost"); err == nil || !strings.Contains(err.Error(), "content length 512 but a nil Body") {
		t.Errorf("length 512, nil body: err = %v, want it named", err)
	}
	head := spider.MustRequest("http://127.0.0.1:1/head", nil)
	head.Method = http.MethodHead
	if res, err := d.Fetch(context.Background(), head); err != nil || res.Status != http.StatusOK {
		t.Errorf("HEAD with a length and no body: %v, %v", res, err)
	}
}

func TestURLErrorOp(t *testing.T) {
	for method, want := range map[string]string{"": "Get", "GET": "Get", "POST": "Post", "HEAD": "Head", "get": "get", "PROPFIND": "Propfind", "ÜBER": "ÜBER"} {
		if got := urlErrorOp(method); got != want {
			t.Errorf("urlErrorOp(%q) = %q, want %q", method, got, want)
		}
	}
}
