package recrawl

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gocrawl/gocrawl/settings"
)

func TestClassify(t *testing.T) {
	a, b := Fingerprint(FingerprintBody, []byte("a")), Fingerprint(FingerprintBody, []byte("b"))
	seen := Record{Fingerprint: a, Change: ChangeUnchanged}
	for _, tc := range []struct {
		name   string
		prev   Record
		found  bool
		status int
		fp     Hash
		want   Change
	}{
		{"first visit", Record{}, false, 200, a, ChangeNew},
		{"same content", seen, true, 200, a, ChangeUnchanged},
		{"new content", seen, true, 200, b, ChangeChanged},
		{"304", seen, true, 304, Hash{}, ChangeUnchanged},
		{"304 without a record", Record{}, false, 304, Hash{}, ChangeNone},
		{"404", seen, true, 404, Hash{}, ChangeGone},
		{"410", seen, true, 410, Hash{}, ChangeGone},
		{"back after gone", Record{Fingerprint: a, Change: ChangeGone}, true, 200, a, ChangeNew},
		{"503 says nothing", seen, true, 503, Hash{}, ChangeNone},
		{"redirect says nothing", seen, true, 301, Hash{}, ChangeNone},
	} {
		if got := Classify(tc.prev, tc.found, tc.status, tc.fp); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestValidatorsAndNext(t *testing.T) {
	h := http.Header{"Etag": {`"v1"`}, "Last-Modified": {"Mon, 02 Jan 2026 00:00:00 GMT"}}
	r := Next(Record{}, ChangeNew, 200, h, Fingerprint(FingerprintBody, nil), 0)
	v := Validators(r, true)
	if v.Get("If-None-Match") != `"v1"` || v.Get("If-Modified-Since") != "Mon, 02 Jan 2026 00:00:00 GMT" {
		t.Fatalf("validators %v", v)
	}
	if Validators(r, false).Get("If-None-Match") != "" {
		t.Error("If-None-Match sent for a scope whose ETags are ignored")
	}
	// A 5xx keeps the validators of the last 200.
	r2 := Next(r, ChangeNone, 503, http.Header{}, Hash{}, 1)
	if r2.ETag != `"v1"` || r2.Status != 503 || r2.Change != ChangeNew {
		t.Errorf("after a 503: %+v", r2)
	}
	if len(Validators(Record{ETag: "x", Change: ChangeGone}, true)) != 0 {
		t.Error("a gone page sends validators")
	}
}

func TestVisibleText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<p>Hello   <b>world</b></p>", "Hello world"},
		{"<script>var n=1;</script><p>x</p><STYLE>p{}</STYLE>", "x"},
		{"<!-- c --><p\nclass=a>t</p>", "t"},
		{"a<noscript>b</noscript>c", "a c"},
		{"<script>never closed", ""},
	} {
		if got := string(VisibleText([]byte(tc.in))); got != tc.want {
			t.Errorf("VisibleText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	x := Fingerprint(FingerprintText, []byte(`<script>n=1</script><p>same</p>`))
	y := Fingerprint(FingerprintText, []byte(`<script>n=2</script><p  id=z>same</p>`))
	if x != y {
		t.Error("text fingerprints differ on a script and an attribute")
	}
	if Fingerprint(FingerprintBody, []byte("a")) == Fingerprint(FingerprintBody, []byte("b")) {
		t.Error("body fingerprints of different bodies are equal")
	}
}

func TestParseFingerprintMode(t *testing.T) {
	if m, err := ParseFingerprintMode(" Text "); err != nil || m != FingerprintText {
		t.Errorf("text: %v %v", m, err)
	}
	if _, err := ParseFingerprintMode("md5"); err == nil {
		t.Error("md5 accepted")
	}
}

func TestTrackerChurn(t *testing.T) {
	var churned []string
	tr := Tracker{OnChurn: func(s string) { churned = append(churned, s) }}
	for i := range ChurnThreshold + 2 {
		if !tr.UseETag("a") && i < ChurnThreshold {
			t.Fatalf("ETags of a ignored after %d answers", i)
		}
		tr.Observe("a", `"x"`, 200, `"y"`, ChangeUnchanged)
		tr.Observe("b", `"x"`, 304, "", ChangeUnchanged)
		tr.Observe("b", `"x"`, 200, `"y"`, ChangeUnchanged) // b's ETags work: never churn
	}
	if tr.UseETag("a") || !tr.UseETag("b") {
		t.Errorf("UseETag: a %v (want false), b %v (want true)", tr.UseETag("a"), tr.UseETag("b"))
	}
	if len(churned) != 1 || churned[0] != "a" {
		t.Errorf("churn reported %v, want [a] once", churned)
	}
	// A changed page with a new ETag is no churn.
	var tr2 Tracker
	for range 2 * ChurnThreshold {
		tr2.Observe("c", `"x"`, 200, `"y"`, ChangeChanged)
	}
	if !tr2.UseETag("c") {
		t.Error("changed pages counted as churn")
	}
}

func TestRecordRoundTrip(t *testing.T) {
	r := Record{URL: "http://x/", Request: []byte{1, 2}, ETag: `"e"`, Fingerprint: Fingerprint(FingerprintBody, []byte("x")),
		Status: 200, Change: ChangeChanged, Round: 3, State: State{Interval: time.Hour, Due: time.Unix(100, 0).UTC()}}
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := UnmarshalRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != r.URL || string(got.Request) != string(r.Request) || got.Fingerprint != r.Fingerprint || got.State != r.State || got.Round != 3 {
		t.Errorf("round trip: %+v, want %+v", got, r)
	}
	if _, err := UnmarshalRecord([]byte(`{"v":99}`)); err == nil {
		t.Error("a record of another version decoded")
	}
}

func TestNextRound(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cur           Round
		known, legacy bool
		want          Round
		begun         bool
	}{
		{"new job", Round{}, false, false, Round{}, true},
		{"legacy job", Round{}, false, true, Round{N: 1, Legacy: true}, true},
		{"under way", Round{N: 2, Seeded: true}, true, false, Round{N: 2, Seeded: true}, false},
		{"done", Round{N: 2, Done: true}, true, false, Round{N: 3}, true},
	} {
		got, begun := NextRound(tc.cur, tc.known, tc.legacy)
		if got != tc.want || begun != tc.begun {
			t.Errorf("%s: %+v %v, want %+v %v", tc.name, got, begun, tc.want, tc.begun)
		}
	}
}

func TestCheckNeedsAJob(t *testing.T) {
	for _, tc := range []struct {
		kv   map[string]any
		fail bool
	}{
		{map[string]any{}, false},
		{map[string]any{"RECRAWL_ENABLED": true}, true},
		{map[string]any{"RECRAWL_ENABLED": true, "JOBDIR": "j"}, false},
		{map[string]any{"RECRAWL_ENABLED": true, "REDIS_URL": "redis://127.0.0.1:1/0"}, false},
	} {
		s := settings.New()
		if err := s.SetMap(tc.kv, settings.SourceCommandLine, "test"); err != nil {
			t.Fatal(err)
		}
		err := checkRecords(s)
		if (err != nil) != tc.fail {
			t.Errorf("%v: %v, want failure %v", tc.kv, err, tc.fail)
		}
		if err != nil && !strings.Contains(err.Error(), "RECRAWL_ENABLED") {
			t.Errorf("the error does not name the setting: %v", err)
		}
	}
}
