package reqcodec

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/internal/callbacks"
	"github.com/gocrawl/gocrawl/internal/reqnames"

	"github.com/gocrawl/gocrawl/spider"
	"github.com/gocrawl/gocrawl/throttling"
)

type testSpider struct{ spider.Base }

func (*testSpider) Name() string { return "test" }
func (*testSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	return nil
}
func (*testSpider) ParseBook(ctx context.Context, res *spider.Response, out spider.Output) error {
	return nil
}
func (*testSpider) OnError(ctx context.Context, req *spider.Request, err error, out spider.Output) error {
	return nil
}

func TestCodecRoundTrip(t *testing.T) {
	sp := &testSpider{}
	c := Codec{Spider: sp}
	full := spider.MustRequest("https://Example.com:8443/a/b%20c?q=1&r=%C3%A9#frag", sp.ParseBook)
	full.Method = "POST"
	full.Header = http.Header{"X-A": {"1", "2"}, "Content-Type": {"application/json"}}
	full.Body = []byte(`{"k":"v"}`)
	full.Priority = -7
	full.Depth = 3
	full.DontFilter = true
	full.Errback = sp.OnError
	full.Meta = spider.Meta{
		"retry_times":       2,
		"max_retry_times":   int64(5),
		"ratio":             0.25,
		"f32":               float32(1.5),
		"u8":                uint8(200),
		"big":               uint64(math.MaxUint64),
		"neg":               int32(-3),
		"flag":              true,
		"off":               false,
		"none":              nil,
		"name":              "é\x00x",
		"throttling_scopes": map[string]any{"api": 2.0, "host": 1},
		"list":              []any{1, "two", []any{3.5, nil}, map[string]any{"deep": []string{"a"}}},
		"tags":              []string{"x", "y"},
		"hdrs":              map[string]string{"a": "b"},
	}
	cases := []struct {
		name string
		in   *spider.Request
	}{
		{"minimal", spider.MustRequest("http://a.test/", nil)},
		{"parse is the default", spider.MustRequest("http://a.test/", sp.Parse)},
		{"full", full},
		{"restored names kept", restoredReq(full.URL, "ParseBook", "OnError")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := c.Encode(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.in.Clone()
			if err := callbacks.NameCallbacks(sp, want); err != nil {
				t.Fatal(err)
			}
			want.Callback, want.Errback = nil, nil
			if got.URL.String() != want.URL.String() {
				t.Errorf("URL = %s, want %s", got.URL, want.URL)
			}
			got.URL, want.URL = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("request:\n got %#v\nwant %#v", got, want)
			}
			// The restored request resolves its callbacks on the spider.
			restored := got
			restored.URL = tc.in.URL
			if _, _, err := callbacks.Callbacks(sp, restored); err != nil {
				t.Errorf("Callbacks: %v", err)
			}
		})
	}
}

// The Referer field survives a restart: it is stored as the header it
// stands for (the bytes a header would have given, but for a flag) and
// decodes as the field again, without a header map; a Referer header
// wins; a record written before the flag existed decodes as the header.
func TestCodecRefererField(t *testing.T) {
	c := Codec{Spider: &testSpider{}}
	tests := []struct {
		name      string
		field     string
		header    http.Header
		wantField string
		want      http.Header
	}{
		{"field only", "http://a.test/from", nil, "http://a.test/from", nil},
		{"field and other headers", "http://a.test/from", http.Header{"X-A": {"1"}, "Accept": {"x"}},
			"http://a.test/from", http.Header{"X-A": {"1"}, "Accept": {"x"}}},
		{"header wins", "http://a.test/from", http.Header{"Referer": {"mine"}}, "", http.Header{"Referer": {"mine"}}},
		{"neither", "", nil, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := spider.MustRequest("http://a.test/x", nil)
			req.Referer, req.Header = tt.field, tt.header
			b, err := c.Encode(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if got.Referer != tt.wantField || !reflect.DeepEqual(got.Header, tt.want) {
				t.Errorf("decoded Referer %q and headers %v, want %q and %v", got.Referer, got.Header, tt.wantField, tt.want)
			}
			if got.RefererHeader() != req.RefererHeader() {
				t.Errorf("Referer sent after a restart %q, before %q", got.RefererHeader(), req.RefererHeader())
			}
			// The same request with the Referer as a header, as records
			// were written before the flag: the same bytes but the flag,
			// and it decodes as the header.
			as := req.Clone()
			as.Referer = ""
			if tt.field != "" && tt.header.Get("Referer") == "" {
				as.Header = tt.header.Clone()
				if as.Header == nil {
					as.Header = http.Header{}
				}
				as.Header.Set("Referer", tt.field)
			}
			old, err := c.Encode(as)
			if err != nil {
				t.Fatal(err)
			}
			flagged := slices.Clone(old)
			if tt.wantField != "" {
				flagged[1] |= flagRefererField // flags: one byte after the version
			}
			if !bytes.Equal(b, flagged) {
				t.Errorf("field encoded as %q, the header as %q", b, old)
			}
			fromOld, err := c.Decode(old)
			if err != nil {
				t.Fatal(err)
			}
			if fromOld.Referer != "" || fromOld.RefererHeader() != req.RefererHeader() {
				t.Errorf("a record without the flag decodes with Referer field %q and sends %q, want the header %q",
					fromOld.Referer, fromOld.RefererHeader(), req.RefererHeader())
			}
		})
	}
}

func TestCodecAppendsToDst(t *testing.T) {
	c := Codec{Spider: &testSpider{}}
	prefix := []byte("key:")
	b, err := c.Append(prefix, spider.MustRequest("http://a.test/x", nil))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "key:") {
		t.Fatalf("prefix lost: %q", b)
	}
	if _, err := c.Decode(b[len(prefix):]); err != nil {
		t.Fatal(err)
	}
}

func TestCodecRejects(t *testing.T) {
	sp := &testSpider{}
	c := Codec{Spider: sp}
	closure := func(ctx context.Context, res *spider.Response, out spider.Output) error { return nil }
	errClosure := func(ctx context.Context, req *spider.Request, err error, out spider.Output) error { return nil }
	mk := func(f func(r *spider.Request)) *spider.Request {
		r := spider.MustRequest("http://a.test/page", nil)
		f(r)
		return r
	}
	cases := []struct {
		name      string
		req       *spider.Request
		field     string
		inMessage string
	}{
		{"closure callback", mk(func(r *spider.Request) { r.Callback = closure }), "Callback", "closure"},
		{"closure errback", mk(func(r *spider.Request) { r.Errback = errClosure }), "Errback", "closure"},
		{"func in meta", mk(func(r *spider.Request) { r.Set("hook", func() {}) }), `Meta["hook"]`, "func()"},
		{"channel nested in meta", mk(func(r *spider.Request) {
			r.Set("cfg", map[string]any{"a": []any{1, make(chan int)}})
		}), `Meta["cfg"]["a"][1]`, "chan int"},
		{"struct in meta", mk(func(r *spider.Request) { r.Set("pt", struct{ X int }{1}) }), `Meta["pt"]`, "not a JSON value"},
		{"NaN in meta", mk(func(r *spider.Request) { r.Set("x", math.NaN()) }), `Meta["x"]`, "NaN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte("keep")
			b, err := c.Append(dst, tc.req)
			if !errors.Is(err, ErrUnpersistable) {
				t.Fatalf("err = %v, want ErrUnpersistable", err)
			}
			var ee *EncodeError
			if !errors.As(err, &ee) {
				t.Fatalf("err %T is not *EncodeError", err)
			}
			if ee.Field != tc.field {
				t.Errorf("Field = %q, want %q", ee.Field, tc.field)
			}
			msg := err.Error()
			for _, s := range []string{"http://a.test/page", tc.field, tc.inMessage} {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q does not mention %q", msg, s)
				}
			}
			if string(b) != "keep" {
				t.Errorf("dst changed to %q", b)
			}
		})
	}
}

func TestCodecDecodeErrors(t *testing.T) {
	c := Codec{Spider: &testSpider{}}
	good, err := c.Encode(spider.MustRequest("http://a.test/", nil).Set("k", []any{"v"}))
	if err != nil {
		t.Fatal(err)
	}
	future := append([]byte{CodecVersion + 1}, good[1:]...)
	if _, err := c.Decode(future); !errors.Is(err, ErrCodecVersion) {
		t.Errorf("future version: err = %v, want ErrCodecVersion", err)
	}
	if _, err := c.Decode(nil); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("empty: err = %v", err)
	}
	// Every truncation must be an error, never a panic or a wrong request.
	for i := 1; i < len(good); i++ {
		if _, err := c.Decode(good[:i]); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("truncated at %d: err = %v", i, err)
		}
	}
	if _, err := c.Decode(append(good, 0)); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("trailing byte: err = %v", err)
	}
	huge := []byte{CodecVersion, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}
	if _, err := c.Decode(huge); !errors.Is(err, ErrCorruptRecord) {
		t.Errorf("huge length: err = %v", err)
	}
}

func FuzzCodecDecode(f *testing.F) {
	c := Codec{Spider: &testSpider{}}
	b, _ := c.Encode(spider.MustRequest("http://a.test/", nil).Set("k", map[string]any{"a": []any{1.5}}))
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := c.Decode(data)
		if err != nil {
			return
		}
		again, err := c.Encode(r)
		if err != nil {
			t.Fatalf("decoded entry does not re-encode: %v", err)
		}
		if _, err := c.Decode(again); err != nil {
			t.Fatalf("re-encoded entry does not decode: %v", err)
		}
	})
}

func BenchmarkCodec(b *testing.B) {
	sp := &testSpider{}
	req := spider.MustRequest("https://www.example.com/catalogue/page-17.html", sp.ParseBook)
	req.Depth = 4
	req.Set("retry_times", 1)
	benchCodec(b, Codec{Spider: sp}, req)
}

func TestCodecClosureWrapsErrNotMethod(t *testing.T) {
	c := Codec{Spider: &testSpider{}}
	r := spider.MustRequest("http://a.test/", func(context.Context, *spider.Response, spider.Output) error { return nil })
	if _, err := c.Encode(r); !errors.Is(err, spider.ErrNotMethod) {
		t.Fatalf("err = %v, want spider.ErrNotMethod (pqueue.Codec contract)", err)
	}
}

// The throttling_delay mark is ordinary meta: it survives a record, so a
// request whose delay was taken before it was stored (in a JOBDIR or Redis
// queue) is not held again when it is read back, after a restart too.
func TestCodecKeepsTheDelayMark(t *testing.T) {
	c := Codec{Spider: &testSpider{}}
	for _, taken := range []bool{false, true} {
		req := spider.MustRequest("https://example.com/", nil).Set(throttling.MetaDelay, 100.0)
		if taken {
			throttling.TakeRequestDelay(req)
		}
		b, err := c.Encode(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if throttling.DelayTaken(got) != taken {
			t.Errorf("taken %v: decoded mark %v", taken, throttling.DelayTaken(got))
		}
		want := 100 * time.Second
		if taken {
			want = 0
		}
		if d, err := throttling.PendingRequestDelay(got); err != nil || d != want {
			t.Errorf("taken %v: decoded request's pending delay %v, %v; want %v", taken, d, err, want)
		}
	}
}

// restoredReq returns a request as a store reads it back: no functions,
// callback names only.
func restoredReq(u *url.URL, cb, eb string) *spider.Request {
	r := &spider.Request{URL: u}
	callbacks.SetStored(r, reqnames.Names{Callback: cb, Errback: eb})
	return r
}
