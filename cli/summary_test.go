package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gocrawl/gocrawl/engine"
	"github.com/gocrawl/gocrawl/settings"
)

func TestWriteSummary(t *testing.T) {
	res := &engine.Result{Reason: "closespider_itemcount", Elapsed: 2500 * time.Millisecond, Stats: map[string]float64{
		"downloader/request_count":                             12,
		"downloader/request_method_count/GET":                  11,
		"downloader/request_method_count/POST":                 1,
		"downloader/response_count":                            10,
		"downloader/response_status_count/200":                 8,
		"downloader/response_status_count/404":                 2,
		"downloader/exception_count":                           2,
		"downloader/exception_type_count/DownloadTimeoutError": 2,
		"spider_exceptions/count":                              1,
		"item_scraped_count":                                   7,
		"item_dropped_count":                                   1,
		"item_dropped_reasons_count/duplicate":                 1,
		"downloader/response_bytes":                            3 << 20,
		"ok_per_second":                                        3.2,
		"completed_per_second":                                 4.8,
	}}
	var b bytes.Buffer
	WriteSummary(&b, "books", res)
	for _, want := range []string{
		"--- books: closespider_itemcount after 2.5s ---",
		"requests   12  (GET: 11, POST: 1)",
		"responses  10  (200: 8, 404: 2)",
		"items      7 scraped, 1 dropped  (duplicate: 1)",
		"errors     3  (DownloadTimeoutError: 2)  callbacks: 1",
		"bytes      3.0 MiB (3145728 bytes)",
		"rate       3.2 ok responses/s, 4.8 completed/s",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for _, tt := range []struct {
		in   float64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1536, "1.5 KiB (1536 bytes)"}, {5 << 30, "5.0 GiB (5368709120 bytes)"}} {
		if got := humanBytes(tt.in); got != tt.want {
			t.Errorf("humanBytes(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLogLevels(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want zerolog.Level
		err  bool
	}{
		{"DEBUG", zerolog.DebugLevel, false}, {"info", zerolog.InfoLevel, false}, {"WARNING", zerolog.WarnLevel, false},
		{"warn", zerolog.WarnLevel, false}, {"ERROR", zerolog.ErrorLevel, false}, {"NONE", zerolog.Disabled, false},
		{"off", zerolog.Disabled, false}, {"Critical", zerolog.FatalLevel, false}, {"verbose", zerolog.NoLevel, true}, {"LOUD", zerolog.NoLevel, true},
	} {
		s := settings.New()
		err := s.Set("LOG_LEVEL", tt.in, settings.SourceCommandLine, "-s LOG_LEVEL="+tt.in)
		if (err != nil) != tt.err {
			t.Errorf("LOG_LEVEL=%s: err = %v", tt.in, err)
		}
		if err == nil {
			if got := levelOf(s.String("LOG_LEVEL")); got != tt.want {
				t.Errorf("LOG_LEVEL=%s: level %v, want %v", tt.in, got, tt.want)
			}
		}
	}
}
