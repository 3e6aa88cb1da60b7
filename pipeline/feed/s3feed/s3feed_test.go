package s3feed

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/gocrawl/gocrawl/devtools/s3test"
	"github.com/gocrawl/gocrawl/pipeline/feed"
)

// These tests run against a real S3-compatible server (devtools/s3server)
// started as a process on a loopback port.

const bucket = "feeds"

// env points the AWS SDK at srv with its credentials.
func env(t *testing.T, srv *s3test.Server) {
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// testConfig is a Config with small parts and quick retries.
func testConfig(stateDir string) Config {
	return Config{PartSize: 16 << 10, Retries: 2, Timeout: 2 * time.Second, StateDir: stateDir}
}

type item struct {
	N    int    `json:"n"`
	Text string `json:"text"`
}

func items(from, to int) []item {
	var out []item
	for i := from; i < to; i++ {
		out = append(out, item{N: i, Text: fmt.Sprintf("item %d, with a comma and \"quotes\" %s", i, strings.Repeat("x", i%50))})
	}
	return out
}

// export writes its to ex, opened and not closed.
func export(t *testing.T, ex *feed.Exporter, its []item) {
	t.Helper()
	for _, it := range its {
		if _, err := ex.ProcessItem(context.Background(), it); err != nil {
			t.Fatal(err)
		}
	}
}

func client(t *testing.T) *s3.Client {
	s := &Storage{cfg: testConfig(""), bucket: bucket}
	s.cfg.Retries, s.cfg.Timeout = 1, 5*time.Second
	if err := s.connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s.client
}

// object returns the object's bytes, gunzipped for a .gz key.
func object(t *testing.T, key string) []byte {
	t.Helper()
	out, err := client(t).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("getting %s: %v", key, err)
	}
	defer out.Body.Close()
	var r io.Reader = out.Body
	if strings.HasSuffix(key, ".gz") {
		zr, err := gzip.NewReader(out.Body)
		if err != nil {
			t.Fatal(err)
		}
		r = zr // reads every member: the parts are concatenated gzip streams
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decode returns the item numbers of a feed in format f, in order.
func decode(t *testing.T, f feed.Format, b []byte) []int {
	t.Helper()
	var out []int
	switch f {
	case feed.JSONLines:
		for line := range strings.Lines(string(b)) {
			var it item
			if err := json.Unmarshal([]byte(line), &it); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			out = append(out, it.N)
		}
	case feed.JSON:
		var its []item
		if err := json.Unmarshal(b, &its); err != nil {
			t.Fatalf("not a JSON array: %v\n%.300s", err, b)
		}
		for _, it := range its {
			out = append(out, it.N)
		}
	case feed.CSV:
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 || strings.Join(recs[0], ",") != "n,text" {
			t.Fatalf("CSV header %v", recs)
		}
		for _, r := range recs[1:] {
			var n int
			fmt.Sscan(r[0], &n)
			out = append(out, n)
		}
	}
	return out
}

func checkSequence(t *testing.T, got []int, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%d items, want %d", len(got), n)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("item %d is number %d: lost or repeated items", i, v)
		}
	}
}

func newExporter(t *testing.T, uri string, cfg Config) (*feed.Exporter, *Storage) {
	t.Helper()
	st, err := New(uri, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := feed.NewStorage(uri, st, feed.Options{FlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return ex, st
}

func exists(t *testing.T, key string) bool {
	_, err := client(t).HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	return err == nil
}

// TestRoundTrip writes each format, plain and gzipped, in several parts
// and in one, and reads the object back.
func TestRoundTrip(t *testing.T) {
	srv := s3test.Start(t, bucket)
	env(t, srv)
	for _, tc := range []struct {
		name   string
		format feed.Format
		n      int
		parts  bool // more than one part expected
	}{
		{"items.jsonl", feed.JSONLines, 2000, true},
		{"items.json", feed.JSON, 2000, true},
		{"items.csv", feed.CSV, 2000, true},
		{"items.jsonl.gz", feed.JSONLines, 20000, true},
		{"items.csv.gz", feed.CSV, 20000, true},
		{"small.json", feed.JSON, 3, false},
		{"empty.jsonl", feed.JSONLines, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uri := "s3://" + bucket + "/out/%(name)s-" + tc.name
			ex, st := newExporter(t, uri, testConfig(t.TempDir()))
			if err := ex.Open(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			export(t, ex, items(0, tc.n))
			key := st.Key()
			if key != "out/-"+tc.name {
				t.Errorf("key %q: %%(name)s not expanded to the (empty) spider name", key)
			}
			if exists(t, key) {
				t.Fatalf("%s is visible before the feed is closed", key)
			}
			if err := ex.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := len(st.up.st.Parts); tc.parts && got < 3 || !tc.parts && st.up.st.UploadID != "" {
				t.Errorf("%d parts sent (upload id %q), want several: %v", got, st.up.st.UploadID, tc.parts)
			}
			checkSequence(t, decode(t, tc.format, object(t, key)), tc.n)
		})
	}
}

// TestResumeCutsSentParts continues an upload whose last saved offset is
// inside a part already sent, as after a kill: the items after the offset
// are dropped, every item before it is kept once.
func TestResumeCutsSentParts(t *testing.T) {
	srv := s3test.Start(t, bucket)
	env(t, srv)
	for _, name := range []string{"resume.jsonl", "resume.json", "resume.csv", "resume.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			f, _ := feed.FormatFromPath(strings.TrimSuffix(name, ".gz"))
			state := t.TempDir()
			uri := "s3://" + bucket + "/" + name
			ex, st := newExporter(t, uri, testConfig(state))
			if err := ex.Open(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			const saved = 1500
			export(t, ex, items(0, saved))
			if err := ex.Flush(); err != nil {
				t.Fatal(err)
			}
			off := ex.Offset()
			export(t, ex, items(saved, saved+300)) // lost with the process
			if err := ex.Flush(); err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(name, ".gz") && st.up.st.Parts[len(st.up.st.Parts)-1].End <= off {
				t.Fatalf("no part was sent past the saved offset: the test proves nothing")
			}
			// The process dies: nothing is closed. A new run resumes.
			ex2, st2 := newExporter(t, uri, testConfig(state))
			ex2.ResumeAt(off)
			if err := ex2.Open(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			export(t, ex2, items(saved, 3000))
			if err := ex2.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			checkSequence(t, decode(t, f, object(t, st2.Key())), 3000)
		})
	}
}

// TestServerAwayAtClose pauses the server while the feed is closed: Close
// retries, then fails naming the problem and what is kept; the object is
// not visible; once the server is back, a resumed run completes it with
// every item.
func TestServerAwayAtClose(t *testing.T) {
	srv := s3test.Start(t, bucket)
	env(t, srv)
	state := t.TempDir()
	uri := "s3://" + bucket + "/away.jsonl"
	cfg := testConfig(state)
	cfg.Timeout = 500 * time.Millisecond
	ex, _ := newExporter(t, uri, cfg)
	if err := ex.Open(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	export(t, ex, items(0, 1000))
	if err := ex.Flush(); err != nil {
		t.Fatal(err)
	}
	off := ex.Offset()
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	err := ex.Close(context.Background())
	if err := srv.Continue(); err != nil {
		t.Fatal(err)
	}
	if err == nil {
		t.Fatal("Close succeeded with the server away")
	}
	for _, want := range []string{"cannot reach " + srv.Endpoint(), "after 2 attempts", state, "same JOBDIR"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if exists(t, "away.jsonl") {
		// Only a request the server received before it was paused and
		// answered after the client gave up could have completed it: the
		// object must then be whole.
		checkSequence(t, decode(t, feed.JSONLines, object(t, "away.jsonl")), 1000)
		t.Fatalf("the object was completed although Close failed (%v)", err)
	}
	ex2, st2 := newExporter(t, uri, testConfig(state))
	ex2.ResumeAt(off)
	if err := ex2.Open(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if err := ex2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkSequence(t, decode(t, feed.JSONLines, object(t, st2.Key())), 1000)
}

// TestCheck reports a bad bucket, refused credentials and an unreachable
// endpoint, with no secret in the message.
func TestCheck(t *testing.T) {
	srv := s3test.Start(t, bucket)
	env(t, srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name, uri, key, secret, endpoint, want string
	}{
		{"fine", "s3://feeds/x.jsonl", s3test.AccessKey, s3test.SecretKey, "", ""},
		{"missing bucket", "s3://nosuch/x.jsonl", s3test.AccessKey, s3test.SecretKey, "", `bucket "nosuch" does not exist`},
		{"bad key", "s3://feeds/x.jsonl", "WRONGKEY", "wrong-secret-value", "", "refused the credentials"},
		{"endpoint away", "s3://feeds/x.jsonl", s3test.AccessKey, s3test.SecretKey, closed, "cannot reach " + closed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_ACCESS_KEY_ID", tc.key)
			t.Setenv("AWS_SECRET_ACCESS_KEY", tc.secret)
			cfg := testConfig("")
			cfg.Endpoint = tc.endpoint
			st, err := New(tc.uri, cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = st.Check(context.Background())
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			case err != nil && strings.Contains(err.Error(), tc.secret):
				t.Fatalf("the error shows the secret: %v", err)
			}
		})
	}
}

// TestBadURI names what is wrong with a URI or option, before any request.
func TestBadURI(t *testing.T) {
	for uri, want := range map[string]string{
		"s3:///items.jsonl":            "no bucket",
		"s3://bucket":                  "no object name",
		"s3://bucket/dir/":             "no object name",
		"s3://key:secret@b/items.json": "no credentials",
		"s3://b/x.jsonl?acl=public":    "no credentials, query",
	} {
		if _, err := New(uri, Config{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", uri, err, want)
		}
		if err, _ := New(uri, Config{}); err != nil && strings.Contains(fmt.Sprint(err), "secret") {
			t.Errorf("%s: the error shows the secret", uri)
		}
	}
	if _, err := New("s3://b/x.jsonl", Config{Endpoint: "127.0.0.1:9000"}); err == nil || !strings.Contains(err.Error(), "not an http:// or https:// URL") {
		t.Errorf("endpoint without scheme: %v", err)
	}
}

// BenchmarkExport measures items/s of an s3:// feed (5 MiB parts, to the
// loopback test server, state on disk as with JOBDIR) against a local
// .jsonl file, with the same items.
//
//	go test ./pipeline/feed/s3feed -run - -bench Export -benchtime 50000x
func BenchmarkExport(b *testing.B) {
	srv := s3test.Start(b, bucket)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	its := items(0, 1000)
	for _, name := range []string{"file.jsonl", "s3.jsonl", "s3.jsonl.gz"} {
		b.Run(name, func(b *testing.B) {
			var ex *feed.Exporter
			var err error
			if name == "file.jsonl" {
				ex, err = feed.New(b.TempDir()+"/"+name, feed.Options{})
			} else {
				cfg := testConfig(b.TempDir())
				cfg.PartSize, cfg.Timeout = MinPartSize, 30*time.Second
				var st *Storage
				if st, err = New("s3://"+bucket+"/bench/"+name, cfg); err == nil {
					ex, err = feed.NewStorage(name, st, feed.Options{})
				}
			}
			if err != nil {
				b.Fatal(err)
			}
			if err := ex.Open(context.Background(), nil); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := ex.ProcessItem(context.Background(), its[i%len(its)]); err != nil {
					b.Fatal(err)
				}
			}
			if err := ex.Close(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}
