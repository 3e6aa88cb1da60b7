package simsite

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// BenchmarkRenderPage measures page generation alone (4 KiB pages).
func BenchmarkRenderPage(b *testing.B) {
	g, _ := NewGraph(PagesConfig{Count: 20000}, 0)
	p := PagesConfig{Size: 4096, Links: LinksMixed}
	var buf bytes.Buffer
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf.Reset()
		renderPage(&buf, g, i%20000, "bench", "127.0.0.1:1", p)
	}
	b.SetBytes(int64(buf.Len()))
}

// BenchmarkHandler measures the whole wrapper chain (recording, limiter
// with a huge bucket, content) without the network.
func BenchmarkHandler(b *testing.B) {
	s, err := Start(context.Background(), Config{Hosts: []HostConfig{{Name: "h",
		Pages: PagesConfig{Count: 20000, Size: 4096}, Limit: LimitConfig{Rate: 1e9, Burst: 1 << 30}}}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	v := s.hosts[0]
	req := httptest.NewRequest("GET", "/page/123", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		v.ServeHTTP(w, req)
	}
}

// BenchmarkServerLoopback measures pages/s served over 127.0.0.1 to 64
// keep-alive clients, the setting of benchmark S1.
func BenchmarkServerLoopback(b *testing.B) {
	s, err := Start(context.Background(), Config{Hosts: []HostConfig{{Name: "h", Pages: PagesConfig{Count: 20000, Size: 4096}}}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	base := s.URL("h")
	var n atomic.Int64
	b.SetParallelism(32) // 2 cores x 32 = 64 goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(base + PagePath(int(n.Add(1)%20000)))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
}
