package settings

import (
	"fmt"
	"net/url"
	"strings"
)

// share is the type of the MONITOR_MAX_*_SHARE settings: a fraction from
// 0 to 1 (0.05 is 5%); a percentage such as "5%" is accepted too.
var share = NewType("share between 0 and 1 (or a percentage such as \"5%\")", func(v any) (any, error) {
	if s, ok := v.(string); ok {
		if p, isPct := strings.CutSuffix(strings.TrimSpace(s), "%"); isPct {
			f, err := Float.Convert(strings.TrimSpace(p))
			if err != nil {
				return nil, fmt.Errorf("%q is not a percentage such as \"5%%\"", s)
			}
			v = f.(float64) / 100
		}
	}
	f, err := Float.Convert(v)
	if err != nil {
		return nil, err
	}
	if x := f.(float64); x < 0 || x > 1 {
		return nil, fmt.Errorf("%v is not a share between 0 and 1 (0.05 or \"5%%\" allow 5%%; 1 = no limit)", x)
	}
	return f, nil
})

// webhookURL is MONITOR_WEBHOOK_URL's type: empty, or an http or https URL.
var webhookURL = NewType("http or https URL", func(v any) (any, error) {
	s, err := String.Convert(v)
	if err != nil {
		return nil, err
	}
	raw := strings.TrimSpace(s.(string))
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http or https URL such as https://hooks.example.com/crawl", raw)
	}
	return raw, nil
})

// Monitor settings: checks of a crawl's items and stats, run when it ends
// and every MONITOR_INTERVAL (package observe/monitor, docs/monitors.md).
func init() {
	for _, d := range []Def{
		{Name: "MONITOR_ENABLED", Type: Bool, Default: true, Doc: "Run the configured monitors; false turns them all off. Monitors run only when one is configured (a MONITOR_ITEM_* or threshold setting, or a spider's own)."},
		{Name: "MONITOR_ITEM_SCHEMA", Type: String, Default: "", Doc: "JSON Schema file every item is validated against (drafts 4 to 2020-12; empty = none). See docs/monitors.md."},
		{Name: "MONITOR_ITEM_STRUCT", Type: Bool, Default: false, Doc: "Validate items that are Go structs against their `monitor:\"...\"` field tags (required, type=, pattern=). See docs/monitors.md."},
		{Name: "MONITOR_MAX_INVALID_ITEMS", Type: NonNegative(Int), Default: 0, Doc: "Invalid items (MONITOR_ITEM_SCHEMA, MONITOR_ITEM_STRUCT) allowed before the item_validation monitor fails."},
		{Name: "MONITOR_DROP_INVALID_ITEMS", Type: Bool, Default: false, Doc: "Drop invalid items (reason invalid_item) instead of exporting them."},
		{Name: "MONITOR_MIN_ITEMS", Type: NonNegative(Int), Default: 0, Doc: "Fewest items a crawl must produce (checked when it ends; 0 = no minimum)."},
		{Name: "MONITOR_MAX_ERROR_SHARE", Type: share, Default: 1.0, Doc: "Highest share of requests that fail (no response, or a 5xx status) (1 = no limit)."},
		{Name: "MONITOR_MAX_429_SHARE", Type: share, Default: 1.0, Doc: "Highest share of responses with status 429 Too Many Requests (1 = no limit)."},
		{Name: "MONITOR_MAX_DROP_SHARE", Type: share, Default: 1.0, Doc: "Highest share of items that item pipelines dropped (1 = no limit)."},
		{Name: "MONITOR_MAX_DURATION", Type: NonNegative(Float), Default: 0.0, Doc: "Seconds a crawl may run (0 = no limit); checked every MONITOR_INTERVAL and at the end."},
		{Name: "MONITOR_INTERVAL", Type: NonNegative(Float), Default: 0.0, Doc: "Seconds between runs of the monitors while the crawl runs (0 = only when it ends)."},
		{Name: "MONITOR_MIN_SAMPLE", Type: NonNegative(Int), Default: 100, Doc: "Requests (or items, for MONITOR_MAX_DROP_SHARE) a share needs before the runs during the crawl check it; the run at the end always does."},
		{Name: "MONITOR_RESULTS_FILE", Type: String, Default: "", Doc: "JSON file the monitors' results are written to after every run (empty = monitors.json in the JOBDIR folder with a JOBDIR, else none)."},
		{Name: "MONITOR_WEBHOOK_URL", Type: webhookURL, Default: "", Secret: true, Doc: "URL the results are POSTed to (JSON) when a monitor fails (empty = none)."},
		{Name: "MONITOR_WEBHOOK_TIMEOUT", Type: NonNegative(Float), Default: 10.0, Doc: "Seconds a webhook call may take (0 = 10)."},
	} {
		Register(d)
	}
}
