package spider

import (
	"fmt"
	"mime"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/html/charset"
)

// The shortcuts of encoding and ContentType give what charset and mime
// give, for headers that take them and headers that do not.
func TestEncodingAndContentTypeShortcuts(t *testing.T) {
	headers := []string{
		"text/html; charset=utf-8", "text/html;charset=utf-8", "TEXT/HTML; Charset=UTF-8", `text/html; charset="utf-8"`,
		" text/html ; charset=utf-8 ", "text/html; charset = utf-8", "text/html; charset=utf-8; x=y", `text/html; charset="utf-8`,
		"text/html; charset=utf8", "text/html; charset=iso-8859-1", "text/html", "text/plain; charset=utf-8",
		"application/xhtml+xml; charset=utf-8", "", "text", "text/html; charset=", "text/html; =utf-8", "text/html;;charset=utf-8",
		"Text/HTML", "text/html; charset=windows-1252", "image/png",
	}
	bodies := []string{
		"<html><title>x</title></html>",
		"\xef\xbb\xbf<html></html>",
		"\xfe\xff\x00<\x00h",
		"\xff\xfe<\x00h\x00",
		`<meta charset="iso-8859-2"><p>x`,
		"",
	}
	for _, ct := range headers {
		for _, body := range bodies {
			r := &Response{Header: http.Header{}, Body: []byte(body)}
			if ct != "" {
				r.Header.Set("Content-Type", ct)
			}
			wantEnc, wantName, _ := charset.DetermineEncoding(r.Body, ct)
			gotEnc, gotName := r.encoding()
			if gotName != wantName || fmt.Sprintf("%T", gotEnc) != fmt.Sprintf("%T", wantEnc) {
				t.Errorf("Content-Type %q, body %q: encoding %q, DetermineEncoding %q", ct, body, gotName, wantName)
			}
			sniffed := ct
			if sniffed == "" {
				sniffed = http.DetectContentType(r.Body)
			}
			want, _, err := mime.ParseMediaType(sniffed)
			if err != nil {
				want = strings.ToLower(strings.TrimSpace(strings.SplitN(sniffed, ";", 2)[0]))
			}
			if got := r.ContentType(); got != want {
				t.Errorf("Content-Type %q: ContentType %q, mime %q", ct, got, want)
			}
		}
	}
}
