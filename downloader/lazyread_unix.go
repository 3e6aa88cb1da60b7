//go:build unix

package downloader

import (
	"io"
	"net"
	"os"
	"syscall"
)

// lazyReader reads a connection as described in lazyread.go. Only the
// connection's reader (net/http's read loop) calls read.
type lazyReader struct {
	conn net.Conn
	raw  syscall.RawConn
	buf  lazyBuf
	// fillFn is fill as a function value, made once: the results of a
	// read are left in got, n and rerr (no allocation per read).
	fillFn func(fd uintptr) bool
	got    *[]byte
	n      int
	rerr   error
}

// newLazyReader returns a lazyReader of c, or nil when c gives no access
// to its file descriptor (reads then go to c directly).
func newLazyReader(c net.Conn) *lazyReader {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	l := &lazyReader{conn: c, raw: raw}
	l.fillFn = l.fill
	return l
}

// fill runs when the connection may have data: a buffer is taken only for
// the read itself and given back if there is nothing to read yet (the
// poller then waits for data, deadlines included).
func (l *lazyReader) fill(fd uintptr) bool {
	b := lazyReadBufs.Get().(*[]byte)
	for {
		l.n, l.rerr = syscall.Read(int(fd), *b)
		if l.rerr != syscall.EINTR {
			break
		}
	}
	if l.rerr == syscall.EAGAIN {
		lazyReadBufs.Put(b)
		return false
	}
	l.got = b
	return true
}

func (l *lazyReader) read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if n, ok := l.buf.take(p); ok {
		return n, nil
	}
	if len(p) >= lazyReadChunk {
		return l.conn.Read(p)
	}
	l.got = nil
	err := l.raw.Read(l.fillFn)
	got, n, rerr := l.got, l.n, l.rerr
	l.got, l.rerr = nil, nil
	if err != nil {
		if got != nil {
			lazyReadBufs.Put(got)
		}
		return 0, l.opError(err)
	}
	if rerr != nil || n <= 0 {
		lazyReadBufs.Put(got)
		if rerr != nil {
			return 0, l.opError(os.NewSyscallError("read", rerr))
		}
		return 0, io.EOF
	}
	return l.buf.keep(got, n, p), nil
}

// opError wraps err as the connection's own Read would: a *net.OpError
// (a deadline's error says Timeout, a closed connection net.ErrClosed).
func (l *lazyReader) opError(err error) error {
	if oe, ok := err.(*net.OpError); ok {
		oe.Op = "read"
		return oe
	}
	return &net.OpError{Op: "read", Net: l.conn.LocalAddr().Network(), Source: l.conn.LocalAddr(), Addr: l.conn.RemoteAddr(), Err: err}
}
