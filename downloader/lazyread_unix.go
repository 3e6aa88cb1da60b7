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
	return &lazyReader{conn: c, raw: raw}
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
	var (
		got  *[]byte
		n    int
		rerr error
	)
	// The function runs when the connection may have data: a buffer is
	// taken only for the read itself and given back if there is nothing
	// to read yet (the poller then waits for data, deadlines included).
	err := l.raw.Read(func(fd uintptr) bool {
		b := lazyReadBufs.Get().(*[]byte)
		for {
			n, rerr = syscall.Read(int(fd), *b)
			if rerr != syscall.EINTR {
				break
			}
		}
		if rerr == syscall.EAGAIN {
			lazyReadBufs.Put(b)
			return false
		}
		got = b
		return true
	})
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
