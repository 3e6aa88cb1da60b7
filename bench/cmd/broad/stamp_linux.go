//go:build linux

package main

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"syscall"
	"time"
)

// Socket arrival stamps.
//
// The handler stamps a request when it starts, after net/http has accepted
// the connection (a new one), started its goroutine and read the request:
// under a burst of new connections (500 and more at the start of a broad
// crawl) that can be milliseconds after the request reached the socket,
// and later than on an open connection, whose goroutine is already
// waiting in its read. So the server also asks the kernel when a request's
// first bytes arrived: every listening socket has SO_TIMESTAMPNS on (the
// accepted sockets inherit it), and the connection reads with recvmsg,
// whose control message carries the receive time of the bytes it returns.
// On loopback that is the moment the crawler's write reached the server's
// socket, whether or not the server had accepted the connection yet.

// stampListen listens on addr with receive timestamps on.
func stampListen(addr string) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	return lc.Listen(context.Background(), "tcp", addr)
}

// stampWrap makes an accepted connection a stampConn (c as it is when it
// is not TCP).
func stampWrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &stampConn{TCPConn: tc, raw: raw, conn: conn{accepted: time.Now()}, oob: make([]byte, 128)}
}

// stampConn reads with recvmsg to learn when the bytes it returns reached
// the socket. It embeds *net.TCPConn (not net.Conn) so that net/http
// still finds CloseWrite and ReadFrom.
type stampConn struct {
	*net.TCPConn
	raw syscall.RawConn
	conn
	oob []byte
}

func (c *stampConn) stamps() *conn { return &c.conn }

func (c *stampConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n, oobn int
	var serr error
	err := c.raw.Read(func(fd uintptr) bool {
		for {
			n, oobn, _, _, serr = syscall.Recvmsg(int(fd), p, c.oob, 0)
			if serr != syscall.EINTR {
				break
			}
		}
		return serr != syscall.EAGAIN
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	if n <= 0 {
		return 0, io.EOF
	}
	var at time.Time
	if msgs, err := syscall.ParseSocketControlMessage(c.oob[:oobn]); err == nil {
		for _, m := range msgs {
			if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SO_TIMESTAMPNS && len(m.Data) >= 16 {
				at = time.Unix(int64(binary.NativeEndian.Uint64(m.Data)), int64(binary.NativeEndian.Uint64(m.Data[8:])))
			}
		}
	}
	c.noteRead(at, time.Now())
	return n, nil
}
