// Command s3server is a small S3-compatible server for tests: gofakes3
// (the S3 server rclone's `serve s3` is built on) with its objects as files
// in a folder, listening on a loopback port. It is started as a separate
// process by package s3test, so a test can pause it (SIGSTOP) or kill it
// like a real server.
//
//	s3server -addr 127.0.0.1:0 -dir DIR -access-key KEY -bucket NAME
//
// It prints "listening on ADDR" once it accepts connections. Requests
// must be signed with the access key given (the key is checked, the
// signature is not): a wrong key gets S3's 403 InvalidAccessKeyId, so
// clients can be tested for refused credentials. Incomplete multipart
// uploads live in memory until the process ends.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/spf13/afero"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on (a loopback one)")
	dir := flag.String("dir", "", "folder for the objects' database (required)")
	key := flag.String("access-key", "", "the only access key id accepted (empty: any)")
	var buckets multi
	flag.Var(&buckets, "bucket", "a bucket to create (repeatable)")
	flag.Parse()
	if *dir == "" {
		log.Fatal("s3server: -dir is required")
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		log.Fatalf("s3server: -addr %q: listen on a loopback address (127.0.0.1:PORT)", *addr)
	}
	for _, d := range []string{"buckets", "meta"} {
		if err := os.MkdirAll(filepath.Join(*dir, d), 0o700); err != nil {
			log.Fatalf("s3server: %v", err)
		}
	}
	fs, err := s3afero.NewBasePathFs(afero.NewOsFs(), filepath.Join(*dir, "buckets"), 0)
	if err != nil {
		log.Fatalf("s3server: %v", err)
	}
	meta, err := s3afero.NewBasePathFs(afero.NewOsFs(), filepath.Join(*dir, "meta"), 0)
	if err != nil {
		log.Fatalf("s3server: %v", err)
	}
	be, err := s3afero.MultiBucket(fs, s3afero.MultiWithMetaFs(meta))
	if err != nil {
		log.Fatalf("s3server: %v", err)
	}
	for _, b := range buckets {
		if err := be.CreateBucket(b); err != nil && !gofakes3.HasErrorCode(err, gofakes3.ErrBucketAlreadyExists) {
			log.Fatalf("s3server: creating bucket %s: %v", b, err)
		}
	}
	fake := gofakes3.New(be, gofakes3.WithIntegrityCheck(true))
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("s3server: %v", err)
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	os.Stdout.Sync()
	log.Fatal(http.Serve(ln, checkKey(*key, fake.Server())))
}

// checkKey refuses requests not signed with access key id key, as S3
// does.
func checkKey(key string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key != "" && accessKey(r) != key {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidAccessKeyId</Code>`+
				`<Message>The AWS Access Key Id you provided does not exist in our records.</Message></Error>`)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// accessKey returns the access key id a SigV4 request is signed with.
func accessKey(r *http.Request) string {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		auth = "Credential=" + r.URL.Query().Get("X-Amz-Credential")
	}
	_, cred, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(cred, "/")
	return id
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }
