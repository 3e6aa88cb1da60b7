//go:build !unix

package downloader

import "net"

// lazyReader is not available on this system: reads go to the connection.
type lazyReader struct{ buf lazyBuf }

func newLazyReader(net.Conn) *lazyReader { return nil }

func (l *lazyReader) read(p []byte) (int, error) { panic("unreachable") }
