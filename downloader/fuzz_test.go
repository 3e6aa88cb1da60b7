package downloader

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"testing"

	"github.com/andybalholm/brotli"
)

// FuzzDecodeBody: any Content-Encoding and body decode under the size
// limit (a bomb stops at it), or fail with an error; never a panic.
func FuzzDecodeBody(f *testing.F) {
	zeros := make([]byte, 1<<20)
	var gz, df, br bytes.Buffer
	w, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	w.Write(zeros)
	w.Close()
	fw, _ := flate.NewWriter(&df, flate.BestCompression)
	fw.Write(zeros)
	fw.Close()
	bw := brotli.NewWriterLevel(&br, 5)
	bw.Write(zeros)
	bw.Close()
	f.Add("gzip", gz.Bytes())
	f.Add("deflate", df.Bytes())
	f.Add("br", br.Bytes())
	f.Add("gzip, br", []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Add("x-gzip,identity", gz.Bytes()[:20])
	f.Add("deflate", []byte{0x78, 0x9c})
	f.Add("compress", []byte("x"))
	const limit = 64 << 10
	f.Fuzz(func(t *testing.T, enc string, body []byte) {
		r, err := decoder(enc, bytes.NewReader(body))
		if err != nil {
			return
		}
		br := bodyReader{limit: limit, hint: -1}
		got, _ := br.read(context.Background(), r)
		if len(got) > limit || cap(got) > limit {
			t.Fatalf("decoded %d bytes (cap %d) under a limit of %d", len(got), cap(got), limit)
		}
	})
}
