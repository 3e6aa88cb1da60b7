// Package hostile is a web server that misbehaves on purpose, for
// gocrawl's hardening tests (docs/security.md): endless bodies,
// compression bombs, robots.txt files that fail or hang, redirects to
// internal addresses, absurd header values. The tests of this package run
// the gocrawl binary against it in a child process and measure what the
// crawl costs from outside (peak RSS, time).
//
// A Server serves, on 127.0.0.1:
//
//	/endless             an endless body of "x", no Content-Length
//	/bomb/gzip           BombSize zero bytes, gzip-compressed (likewise
//	/bomb/deflate         deflate and br): a few hundred kilobytes on the
//	/bomb/br              wire, BombSize bytes once decoded
//	/page/N?links=a_b    an HTML page linking to /page/a and /page/b
//	/tree/N?n=T&pad=P    page N of a binary tree of T pages, linking to
//	                     2N+1 and 2N+2; P bytes of padding in each link
//	/slow?d=SECONDS      a page that answers after SECONDS
//	/refresh?secs=S      a page with "Refresh: S; url=/page/refreshed"
//	/redirect?to=URL     a 302 to URL
//	/robots.txt          the RobotsTxt handler (default: allow everything)
//
// Every request is recorded (Hits).
package hostile

import (
	"bytes"
	"compress/flate"
	byteorder "encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/andybalholm/brotli"
)

// Server is a hostile site. Create it with New, stop it with Close.
type Server struct {
	*httptest.Server
	// BombSize is the decoded size of the compression bombs.
	BombSize int64

	mu     sync.Mutex
	robots http.HandlerFunc
	hits   []string
	bombs  map[string][]byte
}

// New starts a server on addr ("127.0.0.1:0" when empty) whose bombs
// decode to bombSize bytes.
func New(addr string, bombSize int64) (*Server, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{BombSize: bombSize, bombs: map[string][]byte{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Listener.Close()
	s.Listener = l
	s.Start()
	return s, nil
}

// SetRobots replaces the robots.txt handler (nil: allow everything).
func (s *Server) SetRobots(h http.HandlerFunc) {
	s.mu.Lock()
	s.robots = h
	s.mu.Unlock()
}

// Hits returns the paths (with query) requested so far, in order.
func (s *Server) Hits() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hits...)
}

// Count returns how many requests had path p (without query).
func (s *Server) Count(p string) int {
	n := 0
	for _, h := range s.Hits() {
		if path, _, _ := strings.Cut(h, "?"); path == p {
			n++
		}
	}
	return n
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits = append(s.hits, r.URL.RequestURI())
	robots := s.robots
	s.mu.Unlock()
	q := r.URL.Query()
	switch p := r.URL.Path; {
	case p == "/robots.txt":
		if robots != nil {
			robots(w, r)
			return
		}
		io.WriteString(w, "User-agent: *\nAllow: /\n")
	case p == "/endless":
		w.Header().Set("Content-Type", "text/html")
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	case strings.HasPrefix(p, "/bomb/"):
		enc := strings.TrimPrefix(p, "/bomb/")
		body, err := s.bomb(enc)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", enc)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	case strings.HasPrefix(p, "/page/"):
		w.Header().Set("Content-Type", "text/html")
		var b strings.Builder
		fmt.Fprintf(&b, "<html><head><title>%s</title></head><body>", strings.TrimPrefix(p, "/page/"))
		for _, l := range strings.Split(q.Get("links"), "_") {
			if l != "" {
				fmt.Fprintf(&b, `<a href="/page/%s">%s</a>`, l, l)
			}
		}
		b.WriteString("</body></html>")
		io.WriteString(w, b.String())
	case strings.HasPrefix(p, "/tree/"):
		i, _ := strconv.Atoi(strings.TrimPrefix(p, "/tree/"))
		n, _ := strconv.Atoi(q.Get("n"))
		pad, _ := strconv.Atoi(q.Get("pad"))
		w.Header().Set("Content-Type", "text/html")
		var b strings.Builder
		fmt.Fprintf(&b, "<html><head><title>t%d</title></head><body>", i)
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < n {
				fmt.Fprintf(&b, `<a href="/tree/%d?n=%d&amp;pad=%d&amp;x=%s">%d</a>`, c, n, pad, strings.Repeat("x", pad), c)
			}
		}
		b.WriteString("</body></html>")
		io.WriteString(w, b.String())
	case p == "/slow":
		d, _ := strconv.ParseFloat(q.Get("d"), 64)
		select {
		case <-time.After(time.Duration(d * float64(time.Second))):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><title>slow</title></html>")
	case p == "/refresh":
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Refresh", q.Get("secs")+"; url=/page/refreshed")
		io.WriteString(w, "<html><title>refresh</title></html>")
	case p == "/redirect":
		http.Redirect(w, r, q.Get("to"), http.StatusFound)
	default:
		http.NotFound(w, r)
	}
}

// bomb returns BombSize zero bytes compressed with enc, built once.
// Compressing hundreds of MiB is slow in a race-enabled test binary, so
// deflate and gzip repeat one compressed MiB (deflate blocks ended by a
// flush are self-contained, and back-references into earlier zeros stay
// zeros), and brotli uses its fastest level.
func (s *Server) bomb(enc string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.bombs[enc]; ok {
		return b, nil
	}
	var buf bytes.Buffer
	switch enc {
	case "gzip":
		// RFC 1952 member: header, deflate data, CRC-32 and size.
		buf.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
		writeDeflateZeros(&buf, s.BombSize)
		var crc uint32
		zeros := make([]byte, 1<<20)
		for left := s.BombSize; left > 0; left -= int64(len(zeros)) {
			crc = crc32.Update(crc, crc32.IEEETable, zeros[:min(left, int64(len(zeros)))])
		}
		buf.Write(byteorder.LittleEndian.AppendUint32(nil, crc))
		buf.Write(byteorder.LittleEndian.AppendUint32(nil, uint32(s.BombSize)))
	case "deflate":
		writeDeflateZeros(&buf, s.BombSize)
	case "br":
		w := brotli.NewWriterLevel(&buf, 0)
		zeros := make([]byte, 1<<20)
		for left := s.BombSize; left > 0; left -= int64(len(zeros)) {
			if _, err := w.Write(zeros[:min(left, int64(len(zeros)))]); err != nil {
				return nil, err
			}
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown encoding %q", enc)
	}
	s.bombs[enc] = buf.Bytes()
	return buf.Bytes(), nil
}

// writeDeflateZeros writes a raw deflate stream of n zero bytes: one
// compressed MiB, ended by a flush, repeated, then the rest and the final
// block.
func writeDeflateZeros(buf *bytes.Buffer, n int64) {
	const chunk = 1 << 20
	var one bytes.Buffer
	w, _ := flate.NewWriter(&one, flate.BestCompression)
	_, _ = w.Write(make([]byte, chunk))
	_ = w.Flush()
	for ; n >= chunk; n -= chunk {
		buf.Write(one.Bytes())
	}
	// The rest, and the final block, from a writer whose window starts
	// with zeros like the stream's (a fresh writer never refers back).
	var tail bytes.Buffer
	w, _ = flate.NewWriter(&tail, flate.BestCompression)
	_, _ = w.Write(make([]byte, n))
	_ = w.Close()
	buf.Write(tail.Bytes())
}
