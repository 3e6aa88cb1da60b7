package s3feed_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/gocrawl/gocrawl/cli"
	"github.com/gocrawl/gocrawl/devtools/s3test"
	"github.com/gocrawl/gocrawl/spider"
)

// These tests run `gocrawl run` (this test binary re-executed as a
// cli.Main program, which links s3feed as the gocrawl command does) with
// an s3:// feed against a real S3-compatible server, kill it, and resume
// it.

const childEnv = "S3FEED_TEST_CHILD_START_URL"

// pad makes each item about 2 KB, so that a crawl of a few thousand
// pages fills more than one 5 MiB part.
var pad = strings.Repeat("p", 2000)

type siteSpider struct{ spider.Base }

func (*siteSpider) Name() string { return "site" }

func (s *siteSpider) Parse(ctx context.Context, res *spider.Response, out spider.Output) error {
	out.Item(map[string]any{"url": res.URL.Path, "pad": pad})
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	out.FollowAll(res, doc.Find("a"), s.Parse)
	return nil
}

func TestMain(m *testing.M) {
	if start := os.Getenv(childEnv); start != "" {
		cli.Main(&siteSpider{Base: spider.Base{StartURLs: []string{start}}})
	}
	os.Exit(m.Run())
}

// site is a tree of n pages: /p/i links to /p/2i+1 and /p/2i+2. It counts
// fetches.
type site struct {
	n   int
	srv *httptest.Server
	mu  sync.Mutex
	hit int
}

func newSite(t *testing.T, n int) *site {
	s := &site{n: n}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
		if err != nil || i < 0 || i >= s.n {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.hit++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>")
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c < s.n {
				fmt.Fprintf(w, `<a href="/p/%d">p%d</a>`, c, c)
			}
		}
		fmt.Fprint(w, "</body></html>")
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *site) hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hit
}

const feedURI = "s3://feeds/crawl/items-%(time)s.jsonl"

// command returns a child crawl of the site into feedURI with JOBDIR dir.
func (s *site) command(t *testing.T, srv *s3test.Server, dir string, env ...string) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command(os.Args[0], "run", "site",
		"-s", "JOBDIR="+dir,
		"-o", feedURI,
		"-s", "FEED_STORAGE_S3_PART_SIZE=5242880",
		"-s", "FEED_STORAGE_S3_RETRIES=2",
		"-s", "ROBOTSTXT_OBEY=false",
		"-s", "LOG_LEVEL=ERROR",
		"-s", "STATS_DUMP=false",
		"-s", "DOWNLOAD_DELAY=0",
		"-s", "CONCURRENT_REQUESTS=8",
		"-s", "CONCURRENT_REQUESTS_PER_DOMAIN=8",
	)
	cmd.Env = append(append(append(os.Environ(), srv.Env()...), env...), childEnv+"="+s.srv.URL+"/p/0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t.Cleanup(func() {
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("child stderr:\n%s", stderr.String())
		}
	})
	return cmd, &stderr
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

func testClient(t *testing.T, srv *s3test.Server) *s3.Client {
	t.Helper()
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = true
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
}

// objects lists the keys under crawl/.
func objects(t *testing.T, c *s3.Client) []string {
	t.Helper()
	out, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("feeds"), Prefix: aws.String("crawl/")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// TestKillAndResume pauses a crawl writing to S3 with SIGINT once a part
// has been sent, resumes it and kills it with SIGKILL in its second part,
// then lets it finish: the one object holds every page's item, with
// duplicates only of requests in flight at the kill (as a file feed after
// a crash, docs/jobs.md), and nothing is visible before the end.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real crawls; skipped with -short")
	}
	const pages = 6000 // about 12 MB of items: 2 parts and a last one
	srv := s3test.Start(t, "feeds")
	c := testClient(t, srv)
	s := newSite(t, pages)
	dir := t.TempDir()
	kills := 0
	for _, sig := range []struct {
		target int
		sig    syscall.Signal
	}{{3200, syscall.SIGINT}, {4500, syscall.SIGKILL}} { // past 5 MiB, then in the second part
		cmd, _ := s.command(t, srv, dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
	wait:
		for {
			select {
			case err := <-done:
				t.Fatalf("the crawl ended before it was killed (%v): make the site larger", err)
			case <-time.After(5 * time.Millisecond):
				if s.hits() >= sig.target {
					cmd.Process.Signal(sig.sig)
					err := <-done
					if sig.sig == syscall.SIGKILL {
						kills++
					} else if exitCode(err) != 0 {
						t.Fatalf("the paused crawl ended with %v", err)
					}
					break wait
				}
			}
		}
		if keys := objects(t, c); len(keys) != 0 {
			t.Fatalf("objects visible after a kill: %v", keys)
		}
	}
	// The kills came after parts were sent: the resumes continued an
	// upload, not only a local spool.
	recs, _ := filepath.Glob(filepath.Join(dir, "feeds", "s3-*", "state.json"))
	if len(recs) != 1 {
		t.Fatalf("upload records %v, want one", recs)
	}
	var rec struct {
		UploadID string `json:"upload_id"`
		Parts    []struct{ N int }
	}
	if b, err := os.ReadFile(recs[0]); err != nil || json.Unmarshal(b, &rec) != nil || rec.UploadID == "" || len(rec.Parts) == 0 {
		t.Fatalf("after the kills the upload record shows no part sent (%v): the test proves little\n%+v", err, rec)
	}
	cmd, _ := s.command(t, srv, dir)
	if err := cmd.Run(); exitCode(err) != 0 {
		t.Fatalf("final run: %v", err)
	}
	keys := objects(t, c)
	if len(keys) != 1 {
		t.Fatalf("objects %v, want one (the resumed runs continue the first run's upload)", keys)
	}
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("feeds"), Key: aws.String(keys[0])})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	seen := map[string]int{}
	sc := bufio.NewScanner(out.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var it struct{ URL, Pad string }
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil || it.Pad != pad {
			t.Fatalf("line %d of the object is not a whole item: %v", len(seen)+1, err)
		}
		seen[it.URL]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	dups := 0
	for i := range pages {
		switch n := seen[fmt.Sprintf("/p/%d", i)]; {
		case n == 0:
			t.Errorf("page %d's item is not in the object", i)
		case n > 1:
			dups += n - 1
		}
	}
	// The engine's cap on reserved, unacknowledged requests, per kill
	// (2 x CONCURRENT_REQUESTS + 16): a pause repeats none.
	if bound := kills * (2*8 + 16); dups > bound {
		t.Errorf("%d duplicate items after %d kill, more than the %d requests that can be in flight", dups, kills, bound)
	}
	t.Logf("1 pause, %d kill, %d fetches for %d pages, %d items (%d duplicates) in %s", kills, s.hits(), pages, len(seen)+dups, dups, keys[0])
}

// TestRefusedCredentialsExit2 starts a crawl whose credentials the server
// refuses: it exits with status 2 before fetching anything, saying why
// without showing the secret.
func TestRefusedCredentialsExit2(t *testing.T) {
	srv := s3test.Start(t, "feeds")
	s := newSite(t, 10)
	const secret = "not-the-right-secret-1234"
	for _, tc := range []struct {
		name string
		env  []string
		uri  string
		want string
	}{
		{"refused key", []string{"AWS_ACCESS_KEY_ID=SOMEONEELSE", "AWS_SECRET_ACCESS_KEY=" + secret}, feedURI, "refused the credentials"},
		{"missing bucket", nil, "s3://nosuch/items.jsonl", `bucket "nosuch" does not exist`},
		{"endpoint away", []string{"AWS_ENDPOINT_URL=http://127.0.0.1:1"}, feedURI, "cannot reach http://127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, stderr := s.command(t, srv, t.TempDir(), tc.env...)
			for i, a := range cmd.Args {
				if a == feedURI {
					cmd.Args[i] = tc.uri
				}
			}
			err := cmd.Run()
			if exitCode(err) != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %v, stderr %q; want status 2 saying %q", err, stderr.String(), tc.want)
			}
			if strings.Contains(stderr.String(), secret) {
				t.Fatal("the message shows the secret key")
			}
			if s.hits() != 0 {
				t.Fatal("pages were fetched")
			}
		})
	}
}
