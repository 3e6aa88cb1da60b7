//go:build unix

package downloader

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gocrawl/gocrawl/spider"
)

// The wire report comes once the request is on the server's socket, not
// when net/http has it in its write buffer: when fn runs, the server can
// read the request's bytes (looked at without blocking, on the server's
// side of a loopback connection), on a new connection and on a reused one.
func TestWireReportedAfterTheBytesReachTheServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conns := make(chan *net.TCPConn, 1)
	// The server reads a request only when told (after the wire report
	// looked at its socket).
	proceed := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c.(*net.TCPConn)
			go func() {
				br := bufio.NewReader(c)
				for {
					<-proceed
					req, err := http.ReadRequest(br)
					if err != nil {
						c.Close()
						return
					}
					req.Body.Close()
					if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")); err != nil {
						return
					}
				}
			}()
		}
	}()
	// readable reports how many bytes the server can read now.
	var server *net.TCPConn
	readable := func() int {
		if server == nil {
			server = <-conns
		}
		raw, err := server.SyscallConn()
		if err != nil {
			t.Error(err)
			return 0
		}
		n := 0
		buf := make([]byte, 64<<10)
		_ = raw.Control(func(fd uintptr) {
			n, _, _ = syscall.Recvfrom(int(fd), buf, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		})
		return max(n, 0)
	}
	d := newTestDownloader(t, Options{MaxConns: 1})
	// A request longer than the connection's write buffer (net/http's
	// default, 4 KB) goes out in several writes: the report waits for the
	// last one.
	cookie := strings.Repeat("c", 3*(4<<10)+1000)
	for i, name := range []string{"new connection", "reused connection", "request longer than the write buffer"} {
		req := spider.MustRequest("http://"+ln.Addr().String()+"/"+strconv.Itoa(i), nil)
		least := 1
		if i == 2 {
			req.Header = http.Header{"Cookie": {"k=" + cookie}}
			least = len(cookie)
		}
		var reports, onSocket int
		ctx := WithWire(context.Background(), func() {
			reports++
			if readable() >= least {
				onSocket++
			}
			proceed <- struct{}{}
		})
		if _, err := d.Fetch(ctx, req); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if reports != 1 || onSocket != 1 {
			t.Errorf("%s (%d): %d wire reports, %d with the request on the server's socket; want 1 and 1", name, i, reports, onSocket)
		}
	}
}
