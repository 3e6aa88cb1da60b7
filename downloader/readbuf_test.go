package downloader

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gocrawl/gocrawl/spider"
)

// countingConn counts the reads that returned data.
type countingConn struct {
	net.Conn
	reads *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.reads.Add(1)
	}
	return n, err
}

// TestResponseReadInOneSystemCall: the transport reads the connection in
// large chunks (ReadBufferSize), so a response of headers and a 20 KB body
// that the server wrote at once is read in one system call. With
// net/http's default buffer of 4 KB it took two (the headers and the
// start of the body, then the rest), as did S1's 4 KB pages.
func TestResponseReadInOneSystemCall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	body := strings.Repeat("x", 20<<10)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		// Headers and body in one write: they reach the client together.
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}()

	d := newTestDownloader(t, Options{})
	tr := d.client.Transport.(*http.Transport)
	var reads atomic.Int64
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, reads: &reads}, nil
	}
	res, err := d.Fetch(context.Background(), spider.MustRequest("http://"+ln.Addr().String()+"/", nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Body) != len(body) {
		t.Fatalf("body of %d bytes, want %d", len(res.Body), len(body))
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("the 20 KB response took %d reads of the connection, want 1", n)
	}
}
