package report

import (
	"fmt"
	"strings"
	"testing"
)

func TestReportRecrawlChanges(t *testing.T) {
	st := map[string]float64{"downloader/request_count": 10, "recrawl/new": 1, "recrawl/changed": 2, "recrawl/unchanged": 6,
		"recrawl/gone": 1, "recrawl/not_modified": 5}
	html := render(t, &Data{Spider: "s", Stats: st})
	if !strings.Contains(html, "Pages by change since their last visit") {
		t.Fatal("no recrawl table in a report of a crawl with recrawl stats")
	}
	v := build(&Data{Stats: st}, Options{})
	want := []string{"new 1 10", "changed 2 20", "unchanged 6 60", "gone 1 10", "of which 304 5 0"}
	var got []string
	for _, r := range v.Changes {
		got = append(got, fmt.Sprintf("%s %s %g", r.Key, r.Value, r.Share))
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("changes %q, want %q", got, want)
	}
	if strings.Contains(render(t, &Data{Spider: "s", Stats: map[string]float64{"downloader/request_count": 1}}), "Pages by change") {
		t.Error("a recrawl table in a report of a crawl without records")
	}
}
