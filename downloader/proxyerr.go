package downloader

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"

	"github.com/gocrawl/gocrawl/errkind"
	"github.com/gocrawl/gocrawl/spider"
)

// proxyError returns an *Error of kind errkind.ProxyFailed when err is the
// proxy's failure rather than the target's: the proxy could not be
// dialled (for a request through a proxy, the only connection the
// transport dials is the proxy's), or it refused the CONNECT tunnel. Nil
// otherwise, and always for requests without a proxy. Timeouts stay
// DownloadTimeoutError: a slow target and a slow proxy look the same.
func proxyError(ctx context.Context, req *spider.Request, err error) error {
	if _, ok := ctx.Value(proxyKey{}).(*url.URL); !ok {
		return nil
	}
	var op *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return nil
	case errors.As(err, &op) && (op.Op == "proxyconnect" || op.Op == "dial") && !op.Timeout():
	default:
		// A CONNECT answered with an error status comes back as a plain
		// error whose text is the status ("Forbidden").
		if req.URL.Scheme != "https" || !isConnectRefusal(err) {
			return nil
		}
	}
	return &Error{Kind: errkind.ProxyFailed, URL: req.URL.Redacted(), Err: err}
}

// isConnectRefusal recognises the error net/http returns when a proxy
// answers CONNECT with an error status: a *url.Error around an untyped
// error whose text is the status text ("Forbidden", "Proxy
// Authentication Required").
func isConnectRefusal(err error) bool {
	var ue *url.Error
	if !errors.As(err, &ue) || ue.Err == nil {
		return false
	}
	inner := ue.Err.Error()
	for code := 400; code < 600; code++ {
		if t := http.StatusText(code); t != "" && t == inner {
			return true
		}
	}
	return false
}
