package warc

import (
	"net/http"
	"testing"
)

func TestRequestBytes(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.Header
		body string
		want string
	}{
		{"no header, no body", nil, "", "GET /p HTTP/1.1\r\nHost: a.test\r\n\r\n"},
		{"no header, a body", nil, "x=1", "GET /p HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\n\r\nx=1"},
		{"header kept, length added", http.Header{"Accept": {"*/*"}}, "ab", "GET /p HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\nContent-Length: 2\r\n\r\nab"},
		{"Host field not repeated", http.Header{"Host": {"b.test"}}, "", "GET /p HTTP/1.1\r\nHost: a.test\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(RequestBytes("GET", "/p", "a.test", tc.h, []byte(tc.body))); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
