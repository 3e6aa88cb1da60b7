//go:build !linux

package main

import (
	"net"
	"time"
)

// stampListen listens on addr; without Linux's receive timestamps the
// arrival is the read's return.
func stampListen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

// stampWrap makes an accepted connection a stampConn.
func stampWrap(c net.Conn) net.Conn { return &stampConn{Conn: c, conn: conn{accepted: time.Now()}} }

type stampConn struct {
	net.Conn
	conn
}

func (c *stampConn) stamps() *conn { return &c.conn }

func (c *stampConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		now := time.Now()
		c.noteRead(now, now)
	}
	return n, err
}
