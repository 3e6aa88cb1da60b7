package downloader

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/spider"
)

// countingConn counts the reads of a TCP connection that returned data:
// its own Read calls and, for a lazyReader, the reads made when the
// connection had data (through its RawConn).
type countingConn struct {
	*net.TCPConn
	reads *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.TCPConn.Read(p)
	if n > 0 {
		c.reads.Add(1)
	}
	return n, err
}

func (c countingConn) SyscallConn() (syscall.RawConn, error) {
	raw, err := c.TCPConn.SyscallConn()
	return countingRaw{raw, c.reads}, err
}

type countingRaw struct {
	syscall.RawConn
	reads *atomic.Int64
}

func (r countingRaw) Read(f func(uintptr) bool) error {
	return r.RawConn.Read(func(fd uintptr) bool {
		done := f(fd)
		if done {
			r.reads.Add(1)
		}
		return done
	})
}

// countingTransport makes d's connections countingConns under its
// connection tracker.
func countingTransport(d *Downloader, reads *atomic.Int64) {
	tr := d.rt.(*http.Transport)
	tr.DialContext = d.conns.dialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{TCPConn: c.(*net.TCPConn), reads: reads}, nil
	})
}

// serveOnce accepts connections on ln and answers each request with body,
// headers and body in one write (they reach the client together).
func serveOnce(ln net.Listener, body string) { serveWith(ln, "", body) }

// serveWith is serveOnce with more header lines (each ending in \r\n).
func serveWith(ln net.Listener, header, body string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			br := bufio.NewReader(c)
			for {
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n%sContent-Length: %d\r\n\r\n%s", header, len(body), body)
			}
		}()
	}
}

// TestResponseReadInOneSystemCall: a response of headers and a 20 KB body
// that the server wrote at once is read in one system call (the lazy
// reader's 32 KB chunk), although net/http's own buffer is 4 KB. With that
// buffer alone it took two (the headers and the start of the body, then
// the rest). A header line longer than net/http's buffer parses whole.
func TestResponseReadInOneSystemCall(t *testing.T) {
	long := strings.Repeat("v", 5<<10)
	for _, tc := range []struct {
		name   string
		header string
		size   int
	}{
		{"2048", "", 2 << 10},
		{"20480", "", 20 << 10},
		{"long header line", "X-Long: " + long + "\r\n", 2 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			body := strings.Repeat("x", tc.size)
			go serveWith(ln, tc.header, body)
			d := newTestDownloader(t, Options{})
			var reads atomic.Int64
			countingTransport(d, &reads)
			for i := range 3 {
				before := reads.Load()
				res, err := d.Fetch(context.Background(), spider.MustRequest("http://"+ln.Addr().String()+"/", nil))
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Body) != len(body) {
					t.Fatalf("body of %d bytes, want %d", len(res.Body), len(body))
				}
				if tc.header != "" && res.Header.Get("X-Long") != long {
					t.Fatalf("X-Long header of %d bytes, want %d", len(res.Header.Get("X-Long")), len(long))
				}
				if n := reads.Load() - before; n != 1 {
					t.Errorf("request %d: the response took %d reads of the connection, want 1", i, n)
				}
			}
		})
	}
}

// An idle connection holds no read buffer: once a response is read, the
// lazy reader has given its buffer back.
func TestIdleConnectionHoldsNoReadBuffer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go serveOnce(ln, strings.Repeat("x", 3000))
	d := newTestDownloader(t, Options{})
	if _, err := d.Fetch(context.Background(), spider.MustRequest("http://"+ln.Addr().String()+"/", nil)); err != nil {
		t.Fatal(err)
	}
	d.conns.mu.Lock()
	defer d.conns.mu.Unlock()
	var conns int
	for _, set := range d.conns.byHost {
		for c := range set {
			conns++
			if c.lr == nil {
				t.Fatal("the connection has no lazy reader")
			}
			if c.lr.buf.b != nil {
				t.Errorf("the idle connection holds a read buffer (%d bytes unread)", c.lr.buf.w-c.lr.buf.r)
			}
		}
	}
	if conns != 1 {
		t.Fatalf("%d connections tracked, want 1", conns)
	}
}

// The lazy reader's edge cases on a real TCP connection: data larger than
// its chunk handed out in pieces, a read of at least a chunk straight into
// the caller's buffer, a deadline that says Timeout, the peer's close as
// io.EOF, and a closed connection as net.ErrClosed.
func TestLazyReader(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			peer <- c
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv := <-peer
	l := newLazyReader(c)
	if l == nil {
		t.Fatal("no lazy reader for a TCP connection")
	}

	// A deadline: a timeout, with no buffer held.
	c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	var ne net.Error
	if _, err := l.read(make([]byte, 100)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	if l.buf.b != nil {
		t.Fatal("a buffer is held after a timeout")
	}
	c.SetReadDeadline(time.Time{})

	// 40 KB written at once, read 1 KB at a time: every byte in order.
	want := make([]byte, 40<<10)
	for i := range want {
		want[i] = byte(i % 251)
	}
	if _, err := srv.Write(want); err != nil {
		t.Fatal(err)
	}
	var got []byte
	p := make([]byte, 1<<10)
	for len(got) < len(want) {
		n, err := l.read(p)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p[:n]...)
	}
	if string(got) != string(want) {
		t.Fatal("the bytes read differ from those written")
	}
	if l.buf.b != nil {
		t.Error("a buffer is held once everything was read")
	}

	// A large read goes straight to the caller's buffer.
	if _, err := srv.Write(want[:100]); err != nil {
		t.Fatal(err)
	}
	if n, err := l.read(make([]byte, lazyReadChunk)); err != nil || n == 0 || l.buf.b != nil {
		t.Fatalf("large read: %d, %v (buffer held %v)", n, err, l.buf.b != nil)
	}

	// The peer closes: io.EOF.
	srv.Close()
	if _, err := l.read(p); err != io.EOF {
		t.Fatalf("read after the peer closed: %v, want io.EOF", err)
	}
	c.Close()
	if _, err := l.read(p); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read of a closed connection: %v, want net.ErrClosed", err)
	}
}
