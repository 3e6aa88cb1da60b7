package reqcodec

import (
	"testing"

	"github.com/gocrawl/gocrawl/spider"
)

// BenchmarkCodecCrawlLink encodes and decodes a request as a crawl's
// link extraction makes it: a URL, a callback, a depth and the Referer
// field the Referer middleware sets (the JOBDIR queue does this once per
// request: encode at push, decode at reserve).
func BenchmarkCodecCrawlLink(b *testing.B) {
	sp := &testSpider{}
	req := spider.MustRequest("http://127.0.0.1:8080/page/12345", sp.ParseBook)
	req.Depth = 4
	req.Referer = "http://127.0.0.1:8080/page/1234"
	benchCodec(b, Codec{Spider: sp}, req)
}

// benchCodec encodes and decodes req with c once per iteration, reporting
// the encoded size.
func benchCodec(b *testing.B, c Codec, req *spider.Request) {
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		buf, err = c.Append(buf[:0], req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(buf)), "bytes/req")
}
