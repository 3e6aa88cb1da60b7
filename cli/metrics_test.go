package cli_test

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gocrawl/gocrawl/devtools/simsite"
)

// `gocrawl run` measures the crawl: the summary has the outcome, start-rate
// and per-scope lines, and STATS_DUMP_FILE gets the JSON and the per-scope
// CSV, here against a host that answers 429 once its bucket of 3 is empty.
// (CLOSESPIDER_TIMEOUT only guards against a hung crawl.)
func TestRunWritesMetrics(t *testing.T) {
	site, err := simsite.Start(t.Context(), simsite.Config{Hosts: []simsite.HostConfig{
		// No Retry-After, and no backoff below: the crawl goes on at once.
		{Name: "tight", Pages: simsite.PagesConfig{Count: 30}, Limit: simsite.LimitConfig{Rate: 0.001, Burst: 3, RetryAfter: simsite.RetryAfterNone}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	dir := t.TempDir()
	r := gocrawl(t, dir, nil, "run", "follow", "-a", "start_urls="+site.URL("tight")+"/",
		"-s", "LOG_LEVEL=ERROR", "-s", "RETRY_ENABLED=false", "-s", "BACKOFF_HTTP_CODES=[]", "-s", "ROBOTSTXT_OBEY=false", "-s", "STATS_DUMP_FILE=stats.json", "-s", "CLOSESPIDER_TIMEOUT=60")
	r.expect(t, 0, nil, []string{"outcomes", "http 429", "start rate", "in the first 500 ms", "per scope:", "(all)"})

	raw, err := os.ReadFile(filepath.Join(dir, "stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dump struct {
		Stats   map[string]float64 `json:"stats"`
		Metrics struct {
			Global struct {
				OK      int `json:"ok"`
				HTTP429 int `json:"http_429"`
			} `json:"global"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(raw, &dump); err != nil {
		t.Fatal(err)
	}
	recs := site.Stats()["tight"]
	if dump.Metrics.Global.OK != recs.ByStatus[200] || dump.Metrics.Global.HTTP429 != recs.ByStatus[429] || recs.ByStatus[429] == 0 {
		t.Errorf("dump says %d ok, %d 429; the site answered %v", dump.Metrics.Global.OK, dump.Metrics.Global.HTTP429, recs.ByStatus)
	}
	if dump.Stats["metrics/http_429"] != float64(recs.ByStatus[429]) {
		t.Errorf("stats metrics/http_429 = %v, want %d", dump.Stats["metrics/http_429"], recs.ByStatus[429])
	}
	f, err := os.Open(filepath.Join(dir, "stats.scopes.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0][0] != "scope" {
		t.Errorf("per-scope CSV = %v, want a header and one scope", rows)
	}
}
