package downloader

import "sync"

// Reading responses without a buffer per idle connection.
//
// net/http gives every connection a read buffer (Transport.ReadBufferSize)
// for its whole life. A large one reads a response's headers and a body of
// a few kilobytes in one system call, but a broad crawl keeps one idle
// connection per host: 2,000 hosts with 32 KB buffers hold 64 MB that are
// used a few milliseconds a second. So the transport keeps net/http's small
// default buffer (4 KB), and a connection's reads go through a lazyReader:
// it waits until the connection has data without holding any buffer, then
// reads in one system call into a 32 KB buffer taken from a pool, hands it
// out to net/http's reads, and gives the buffer back when it is drained. A
// response of headers and a body that fit in 32 KB still takes one system
// call; an idle connection holds no buffer of its own. A read of at least
// 32 KB goes straight into the caller's buffer. Where the connection gives
// no access to its file descriptor's readiness (other systems, wrapped
// connections), reads go to the connection as they are.

// lazyReadChunk is the most a lazyReader reads in one system call.
const lazyReadChunk = 32 << 10

// lazyReadBufs holds the lazyReaders' buffers between responses.
var lazyReadBufs = sync.Pool{New: func() any {
	b := make([]byte, lazyReadChunk)
	return &b
}}

// lazyBuf is what a lazyReader has read and not handed out yet.
type lazyBuf struct {
	b    *[]byte // from lazyReadBufs; nil when drained
	r, w int     // unread bytes are (*b)[r:w]
}

// take copies what is buffered to p and gives the buffer back once drained;
// it reports false when nothing is buffered.
func (l *lazyBuf) take(p []byte) (int, bool) {
	if l.b == nil {
		return 0, false
	}
	n := copy(p, (*l.b)[l.r:l.w])
	l.r += n
	if l.r == l.w {
		lazyReadBufs.Put(l.b)
		l.b, l.r, l.w = nil, 0, 0
	}
	return n, true
}

// keep holds b, of which n bytes were read, and hands out the first of
// them to p.
func (l *lazyBuf) keep(b *[]byte, n int, p []byte) int {
	l.b, l.r, l.w = b, 0, n
	m, _ := l.take(p)
	return m
}
