package simsite

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// faultPicker decides, from a seeded generator, which fault (if any) a
// request gets.
type faultPicker struct {
	faults []FaultConfig
	mu     sync.Mutex
	rng    *rand.Rand
}

func newFaultPicker(faults []FaultConfig, seed int64) *faultPicker {
	return &faultPicker{faults: faults, rng: rand.New(rand.NewPCG(uint64(seed), 0xfa_017))}
}

// pick returns the first fault that fires for path, or nil. Faults without
// a PathPrefix spare /robots.txt.
func (p *faultPicker) pick(path string) *FaultConfig {
	for i := range p.faults {
		f := &p.faults[i]
		if f.PathPrefix == "" && path == "/robots.txt" {
			continue
		}
		if !strings.HasPrefix(path, f.PathPrefix) {
			continue
		}
		prob := f.probability()
		if prob >= 1 {
			return f
		}
		p.mu.Lock()
		fire := p.rng.Float64() < prob
		p.mu.Unlock()
		if fire {
			return f
		}
	}
	return nil
}

// bufferWriter captures a handler's answer so a fault can mangle it.
type bufferWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferWriter) Header() http.Header { return b.header }
func (b *bufferWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
func (b *bufferWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

// serveFault answers r with fault f; content produces the real answer for
// the faults that mangle it.
func serveFault(ctx context.Context, w *recordingWriter, r *http.Request, f FaultConfig, content http.Handler, done <-chan struct{}) {
	switch f.Kind {
	case FaultReset:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(http.ErrAbortHandler) // closes the connection, without RST
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // Close sends RST instead of FIN
		}
		_ = conn.Close()

	case FaultTruncate:
		bw := capture(content, r)
		body := bw.body.Bytes()
		copyHeader(w.Header(), bw.header)
		// Promise more than we send; net/http closes the connection when
		// the handler returns short of its Content-Length.
		w.Header().Set("Content-Length", strconv.Itoa(2*len(body)+1024))
		w.WriteHeader(bw.status)
		_, _ = w.Write(body[:len(body)/2])
		_ = http.NewResponseController(w).Flush()

	case FaultSlow:
		bw := capture(content, r)
		body := bw.body.Bytes()
		copyHeader(w.Header(), bw.header)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(bw.status)
		rc := http.NewResponseController(w)
		for len(body) > 0 {
			n := min(len(body), max(f.ChunkSize, 1))
			if _, err := w.Write(body[:n]); err != nil {
				return
			}
			body = body[n:]
			if rc.Flush() != nil || (len(body) > 0 && sleep(ctx, f.Interval, done) != nil) {
				return
			}
		}

	case FaultEndless:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		chunk := []byte(strings.Repeat(filler, max(f.ChunkSize, 1)/len(filler)+1)[:max(f.ChunkSize, 1)])
		if _, err := w.Write([]byte("<!DOCTYPE html>\n<html><body>\n")); err != nil {
			return
		}
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			if rc.Flush() != nil || sleep(ctx, f.Interval, done) != nil {
				return
			}
		}
	}
}

func capture(h http.Handler, r *http.Request) *bufferWriter {
	bw := &bufferWriter{header: http.Header{}}
	h.ServeHTTP(bw, r)
	if bw.status == 0 {
		bw.status = http.StatusOK
	}
	return bw
}

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}

// errStopped is returned by sleep when the server closes.
var errStopped = errors.New("simsite: server closed")

// sleep waits d in real time, or until ctx ends or done closes.
func sleep(ctx context.Context, d time.Duration, done <-chan struct{}) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-done:
		return errStopped
	}
}
