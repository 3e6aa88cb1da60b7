package main

import (
	"net"
	"sync"
	"time"
)

// conn is what the server knows of a connection's timing: when it was
// accepted, and for the request being read, when its first bytes reached
// the socket (the kernel's receive time, zero where the system gives none)
// and when the server's read returned them.
type conn struct {
	accepted time.Time

	mu      sync.Mutex
	arrived time.Time
	read    time.Time
}

// noteRead records a read that returned bytes: the first one since the
// last claim starts a request.
func (c *conn) noteRead(arrived, now time.Time) {
	c.mu.Lock()
	if c.read.IsZero() {
		c.arrived, c.read = arrived, now
	}
	c.mu.Unlock()
}

// claim returns the current request's stamps and clears them for the next
// request on the connection (net/http reads a connection's requests one
// at a time: the next request's first read returns after this one's
// handler started).
func (c *conn) claim() (arrived, read time.Time) {
	c.mu.Lock()
	arrived, read = c.arrived, c.read
	c.arrived, c.read = time.Time{}, time.Time{}
	c.mu.Unlock()
	return arrived, read
}

// stamper is a connection that keeps a conn (stampConn).
type stamper interface{ stamps() *conn }

// stampListener accepts connections as stampConns (stampWrap, per system)
// and counts them.
type stampListener struct {
	net.Listener
	n interface{ Add(int64) int64 }
}

func (l stampListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	l.n.Add(1)
	return stampWrap(c), nil
}
