package service

import (
	"reflect"
	"testing"
)

func TestResultOf(t *testing.T) {
	tests := []struct {
		name string
		dump string
		want JobResult
	}{
		{"finished crawl", `{"spider":"site","reason":"finished","stats":{"downloader/response_count":16,"item_scraped_count":15,
			"downloader/exception_count":2,"spider_exceptions/count":1,"elapsed_time_seconds":3.5}}`,
			JobResult{Reason: "finished", Pages: 16, Items: 15, Errors: 3, Duration: 3.5}},
		{"cancelled, nothing fetched", `{"reason":"shutdown","stats":{"elapsed_time_seconds":0.2}}`,
			JobResult{Reason: "shutdown", Duration: 0.2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resultOf([]byte(tt.dump))
			if err != nil {
				t.Fatal(err)
			}
			if *got != tt.want {
				t.Errorf("resultOf = %+v, want %+v", *got, tt.want)
			}
		})
	}
	if _, err := resultOf([]byte(`{"stats": [`)); err == nil {
		t.Error("a truncated dump read without error")
	}
}

func TestRedactedSettings(t *testing.T) {
	in := map[string]string{
		"REDIS_URL":           "redis://:s3cret@127.0.0.1:6379/0",
		"MONITOR_WEBHOOK_URL": "https://hooks.example/services/s3cret",
		"DOWNLOAD_DELAY":      "2",
	}
	want := map[string]string{
		"REDIS_URL":           "redis://:***@127.0.0.1:6379/0",
		"MONITOR_WEBHOOK_URL": "***",
		"DOWNLOAD_DELAY":      "2",
	}
	if got := redactedSettings(in); !reflect.DeepEqual(got, want) {
		t.Errorf("redactedSettings = %v, want %v", got, want)
	}
	if in["REDIS_URL"] != "redis://:s3cret@127.0.0.1:6379/0" {
		t.Error("the job's own settings were changed")
	}
}
