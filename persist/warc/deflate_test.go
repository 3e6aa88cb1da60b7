package warc

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestAppendMember checks that the members of small records, stored or
// compressed with preset codes, read back as the records written, with
// the standard library's gzip reader, over inputs that exercise every
// match length and distance, long runs and incompressible bytes.
func TestAppendMember(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, presetMax-1024)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	var mixed bytes.Buffer
	for mixed.Len() < presetMax-2048 {
		// Repeats of earlier bytes at every distance and length.
		if mixed.Len() > 300 && rng.IntN(2) == 0 {
			d := 1 + rng.IntN(min(mixed.Len(), maxDistance))
			n := 3 + rng.IntN(300)
			for range n {
				mixed.WriteByte(mixed.Bytes()[mixed.Len()-d])
			}
			continue
		}
		mixed.WriteString(s1Page(rng.IntN(1000))[:rng.IntN(200)])
		mixed.WriteByte(byte(rng.Uint32()))
	}
	payloads := map[string][]byte{
		"empty":  nil,
		"short":  []byte("x"),
		"page":   []byte(s1Page(3)),
		"run":    bytes.Repeat([]byte{'a'}, presetMax-1024),
		"run259": bytes.Repeat([]byte{'b'}, 259+4),
		"random": random,
		"mixed":  mixed.Bytes(),
		"cyrillic": []byte(strings.Repeat("<p>Съешь же ещё этих мягких французских булок, да выпей чаю.</p>\n", 8) +
			string(random[:2000])),
	}
	h := Header{{"WARC-Type", TypeResponse}, {"WARC-Target-URI", "http://example.com/"}}
	for name, payload := range payloads {
		for _, store := range []bool{false, true} {
			// Twice on one deflater: the second must not match into the first.
			for round := range 2 {
				dst := []byte("prefix")
				out, ok := appendMember(dst, store, h, []byte("HTTP/1.1 200 OK\r\n"), crlf, payload)
				if !ok {
					t.Fatalf("%s: not compressed", name)
				}
				if string(out[:6]) != "prefix" {
					t.Fatalf("%s: prefix overwritten", name)
				}
				var want bytes.Buffer
				_ = writeRecord(&want, h, []byte("HTTP/1.1 200 OK\r\n"), crlf, payload)
				zr, err := gzip.NewReader(bytes.NewReader(out[6:]))
				if err != nil {
					t.Fatalf("%s store=%v round %d: %v", name, store, round, err)
				}
				zr.Multistream(false)
				got, err := io.ReadAll(zr)
				if err != nil {
					t.Fatalf("%s store=%v round %d: %v", name, store, round, err)
				}
				if !bytes.Equal(got, want.Bytes()) {
					t.Fatalf("%s store=%v round %d: read back %d bytes, want %d", name, store, round, len(got), want.Len())
				}
				if !store && name == "page" && len(out)-6 > want.Len()/4 {
					t.Errorf("page: %d bytes compressed to %d", want.Len(), len(out)-6)
				}
			}
		}
	}
	// Each code set on its own, whichever appendMember keeps.
	var d deflater
	for name, payload := range payloads {
		for _, c := range []*codes{textCodes, fixedCodes} {
			block := d.encode(nil, payload, c)
			got, err := io.ReadAll(flate.NewReader(bytes.NewReader(block)))
			if err != nil || !bytes.Equal(got, payload) {
				t.Fatalf("%s, codes %p: read back %d bytes (%v), want %d", name, c, len(got), err, len(payload))
			}
		}
	}
	// Every short length, where the match finder's bounds are closest.
	for n := range 300 {
		for _, src := range [][]byte{mixed.Bytes()[1000 : 1000+n], bytes.Repeat([]byte("ab"), n)[:n], random[:n]} {
			for _, c := range []*codes{textCodes, fixedCodes} {
				got, err := io.ReadAll(flate.NewReader(bytes.NewReader(d.encode(nil, src, c))))
				if err != nil || !bytes.Equal(got, src) {
					t.Fatalf("%d bytes, codes %p: read back %d bytes (%v)", n, c, len(got), err)
				}
			}
		}
	}
	if _, ok := appendMember(nil, false, h, []byte(strings.Repeat("y", presetMax+1))); ok {
		t.Error("a record past presetMax was compressed with preset codes")
	}
}

// TestTextCodesInitialized checks that textCodes, built while the package
// is initialized, are those built once everything is: the tables they
// are counted with were ready.
func TestTextCodesInitialized(t *testing.T) {
	if !reflect.DeepEqual(newTextCodes(), textCodes) {
		t.Error("textCodes were built before the tables they depend on")
	}
}

// FuzzDeflateEncode checks that any bytes, encoded with either preset code
// set, read back as themselves through the standard library's inflater,
// and that appendMember's whole member reads back through its gzip reader.
func FuzzDeflateEncode(f *testing.F) {
	f.Add([]byte(s1Page(1)))
	f.Add(bytes.Repeat([]byte{0}, 300))
	f.Add([]byte("abcabcabcabd\xff\xfe"))
	var d deflater
	h := Header{{"WARC-Type", TypeResponse}}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > presetMax {
			b = b[:presetMax]
		}
		for _, c := range []*codes{textCodes, fixedCodes} {
			block := d.encode(nil, b, c)
			got, err := io.ReadAll(flate.NewReader(bytes.NewReader(block)))
			if err != nil || !bytes.Equal(got, b) {
				t.Fatalf("codes %p: read back %d bytes (%v), want %d", c, len(got), err, len(b))
			}
		}
		out, ok := appendMember(nil, false, h, b)
		if !ok {
			return // a record too long for a preset member
		}
		zr, err := gzip.NewReader(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		zr.Multistream(false)
		got, err := io.ReadAll(zr)
		var want bytes.Buffer
		_ = writeRecord(&want, h, b)
		if err != nil || !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("member read back %d bytes (%v), want %d", len(got), err, want.Len())
		}
	})
}
