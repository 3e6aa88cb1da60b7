package middleware

import (
	"bytes"
	"testing"
)

// FuzzContainsFold checks containsFold against lower-casing both sides.
func FuzzContainsFold(f *testing.F) {
	f.Add([]byte(`<meta HTTP-EQUIV="refresh" content="0; url=/x">`), "http-equiv")
	f.Add([]byte("hhhttp-equiv"), "http")
	f.Add([]byte("RefResh"), "refresh")
	f.Fuzz(func(t *testing.T, b []byte, sub string) {
		lower := bytes.ToLower([]byte(sub))
		for _, c := range lower {
			if c >= 0x80 {
				return // containsFold takes ASCII patterns
			}
		}
		want := bytes.Contains(asciiLower(b), lower)
		if got := containsFold(b, string(lower)); got != want {
			t.Fatalf("containsFold(%q, %q) = %v, want %v", b, lower, got, want)
		}
	})
}

func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// containsFoldByteLoop is the byte-by-byte scan containsFold replaced,
// kept as the benchmark's reference.
func containsFoldByteLoop(b []byte, sub string) bool {
	n := len(sub)
outer:
	for i := 0; i+n <= len(b); i++ {
		for j := 0; j < n; j++ {
			c := b[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				continue outer
			}
		}
		return true
	}
	return false
}

// BenchmarkContainsFold scans a 4 KiB page without a refresh tag (S1's
// pages: ten links, filler text), as the MetaRefresh middleware does for
// every response.
func BenchmarkContainsFold(b *testing.B) {
	var page bytes.Buffer
	page.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>one page 7</title></head>\n<body>\n<h1>Page 7</h1>\n<ul class=\"links\">\n")
	for i := range 10 {
		page.WriteString(`<li><a href="http://localhost:8080/page/7` + string(rune('0'+i)) + `">page</a></li>` + "\n")
	}
	for page.Len() < 4096 {
		page.WriteString("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. ")
	}
	body := page.Bytes()
	for _, f := range []struct {
		name string
		fn   func([]byte, string) bool
	}{{"IndexByte", containsFold}, {"ByteLoop", containsFoldByteLoop}} {
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if f.fn(body, "http-equiv") {
					b.Fatal("found")
				}
			}
		})
	}
}
