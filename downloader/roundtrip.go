package downloader

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// roundTrip sends hreq with the transport and returns its answer as
// http.Client's Do does for a client that follows no redirect (they are
// followed by the redirect middleware, through the scheduler and
// throttling, never silently here): Basic credentials from the URL's user
// information, a non-nil body, errors wrapped in a *url.Error. Without the
// client, a request costs five allocations less: Do copies the headers of
// every request, for redirects it would follow.
func (d *Downloader) roundTrip(hreq *http.Request) (*http.Response, error) {
	if u := hreq.URL.User; u != nil && hreq.Header.Get("Authorization") == "" {
		// On a copy, as the client did: the request a capture (WARC)
		// records keeps the headers it was given.
		pass, _ := u.Password()
		hreq = hreq.Clone(hreq.Context())
		hreq.SetBasicAuth(u.Username(), pass)
	}
	hres, err := d.rt.RoundTrip(hreq)
	switch {
	case err == nil && hres == nil:
		err = fmt.Errorf("http: RoundTripper implementation (%T) returned a nil *Response with a nil error", d.rt)
	case err == nil && hres.Body == nil && hres.ContentLength > 0 && hreq.Method != http.MethodHead:
		err = fmt.Errorf("http: RoundTripper implementation (%T) returned a *Response with content length %d but a nil Body", d.rt, hres.ContentLength)
		hres = nil
	}
	if err != nil {
		if hres != nil && hres.Body != nil {
			hres.Body.Close()
		}
		// Only at the top, as the client: a proxy's TLS failure keeps its
		// "proxyconnect" error (proxyError).
		if tlsErr, ok := err.(tls.RecordHeaderError); ok && string(tlsErr.RecordHeader[:]) == "HTTP/" {
			err = http.ErrSchemeMismatch
		}
		return nil, &url.Error{Op: urlErrorOp(hreq.Method), URL: hreq.URL.Redacted(), Err: err}
	}
	if hres.Body == nil {
		hres.Body = http.NoBody
	}
	return hres, nil
}

// urlErrorOp is the Op of a *url.Error for method, as http.Client names
// it: "Get", "Post"; a method that is not ASCII as it is.
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	for i := range len(method) {
		if method[i] >= utf8.RuneSelf {
			return method
		}
	}
	if lower := strings.ToLower(method); lower != method {
		return method[:1] + lower[1:]
	}
	return method
}
