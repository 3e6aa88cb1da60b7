package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"strings"
	"time"

	"github.com/gocrawl/gocrawl/internal/atomicfile"
)

// Results are what one run of the monitors found; MONITOR_RESULTS_FILE and
// the webhook's body hold them as JSON:
//
//	{"ok": false, "final": true, "checked_at": "2026-05-01T10:00:00Z",
//	 "failures": [{"monitor": "min_items", "reason": "12 items, fewer than MONITOR_MIN_ITEMS 100"}],
//	 "checks": [{"monitor": "min_items", "ok": false, "detail": "12 items, fewer than MONITOR_MIN_ITEMS 100"}]}
type Results struct {
	// OK is true when every check passed.
	OK bool `json:"ok"`
	// Final is true for the run at the crawl's end.
	Final bool `json:"final"`
	// CheckedAt is when the monitors ran (UTC, to the second).
	CheckedAt time.Time `json:"checked_at"`
	// Spider is the crawl's spider.
	Spider string `json:"spider,omitempty"`
	// Failures are the failed checks with their reasons.
	Failures []Failure `json:"failures"`
	// Checks are every check, passed or failed, in the order they ran.
	Checks []CheckResult `json:"checks"`
}

// Failure is one failed check.
type Failure struct {
	Monitor string `json:"monitor"`
	Reason  string `json:"reason"`
}

// CheckResult is the outcome of one check.
type CheckResult struct {
	Monitor string `json:"monitor"`
	OK      bool   `json:"ok"`
	Detail  string `json:"detail"`
}

// ErrFailed is the kind of the error a failed final run returns (Err).
var ErrFailed = errors.New("monitors failed")

// Err returns nil when r is OK, else an error of kind ErrFailed listing the
// failures, one per line.
func (r Results) Err() error {
	if r.OK {
		return nil
	}
	lines := make([]string, len(r.Failures))
	for i, f := range r.Failures {
		lines[i] = f.Monitor + ": " + f.Reason
	}
	return fmt.Errorf("%w:\n%s", ErrFailed, strings.Join(lines, "\n"))
}

// WriteFile writes r as indented JSON to path atomically: a reader (the
// crawl service) sees the previous results or these, never a part.
func (r Results) WriteFile(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	return atomicfile.Write(path, 0o644, func(f *os.File) error {
		_, err := f.Write(b)
		return err
	})
}

// ReadFile reads results written by WriteFile.
func ReadFile(path string) (Results, error) {
	var r Results
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Post sends r as a JSON body to url with client, within timeout; any
// status but 2xx is an error naming it.
//
// Errors name the URL's scheme and host only: a webhook URL often holds
// its secret in the path.
func (r Results) Post(ctx context.Context, client *http.Client, url string, timeout time.Duration) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return errors.New("webhook: the URL does not parse")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "gocrawl-monitor")
	where := req.URL.Scheme + "://" + req.URL.Host
	resp, err := client.Do(req)
	if err != nil {
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("webhook %s: %w", where, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook %s answered %s", where, resp.Status)
	}
	return nil
}
