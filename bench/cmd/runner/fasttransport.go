package main

import (
	"bytes"
	"io"
	"net/http"
	"strconv"

	"github.com/valyala/fasthttp"
)

// fastTransport is an http.RoundTripper over fasthttp's client, for the
// gocrawl-follow-fasthttp variant: the framework unchanged (engine.Options
// .Transport replaces only the downloader's transport) on a faster HTTP
// client. It is an experiment of the bench, not part of gocrawl: it has
// no HTTP/2, no proxy, and a request is cancelled by its context's
// deadline only (30 s without one), not by the context's cancellation.
type fastTransport struct{ c *fasthttp.Client }

func newFastTransport(maxConns int) *fastTransport {
	c := newFastClient(maxConns)
	c.NoDefaultUserAgentHeader = true // the request's own (USER_AGENT)
	return &fastTransport{c: c}
}

func (t *fastTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	freq := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(freq)
	freq.Header.SetMethod(req.Method)
	freq.SetRequestURI(req.URL.String())
	if req.Host != "" {
		freq.Header.SetHost(req.Host)
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			freq.Header.Add(k, v)
		}
	}
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		freq.SetBody(b)
	}
	fres := fasthttp.AcquireResponse()
	if err := t.c.DoDeadline(freq, fres, fastDeadline(req.Context())); err != nil {
		fasthttp.ReleaseResponse(fres)
		return nil, err
	}
	h := make(http.Header, 8)
	for k, v := range fres.Header.All() {
		h.Add(string(k), string(v))
	}
	status := fres.StatusCode()
	return &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		ContentLength: int64(len(fres.Body())),
		Body:          &fastBody{Reader: bytes.NewReader(fres.Body()), res: fres},
		Request:       req,
	}, nil
}

// fastBody reads the response's body and gives the response back to
// fasthttp's pool when closed.
type fastBody struct {
	*bytes.Reader
	res *fasthttp.Response
}

func (b *fastBody) Close() error {
	if b.res != nil {
		fasthttp.ReleaseResponse(b.res)
		b.res = nil
	}
	return nil
}
