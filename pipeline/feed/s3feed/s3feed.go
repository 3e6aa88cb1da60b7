// Package s3feed writes item feeds to S3 and S3-compatible object storage
// (MinIO, Ceph, Cloudflare R2, ...): a feed URI such as
//
//	gocrawl run quotes -o 's3://my-bucket/quotes/items-%(time)s.jsonl.gz'
//
// is encoded as a local feed would be (jsonl, json or csv, from the name
// or -t; gzipped when the name ends in .gz) and sent as a multipart upload
// while the crawl runs, in parts of FEED_STORAGE_S3_PART_SIZE bytes. The
// object appears when the feed is closed at the end of the crawl, whole:
// until then readers see nothing (or the previous version of the object).
// %(time)s and %(name)s are replaced by the crawl's start time and the
// spider's name, as in Scrapy.
//
// Endpoint, region and credentials come from the FEED_STORAGE_S3_*
// settings and otherwise from the environment and the shared AWS config
// exactly as the AWS SDK reads them (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, AWS_REGION,
// AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_S3, instance roles...). A missing
// bucket, refused credentials or an unreachable endpoint are reported
// before the crawl starts (`gocrawl run` exits with status 2), without
// printing any secret.
//
// With JOBDIR the upload is resumable: its id, the parts sent and the part
// being filled are kept in JOBDIR/feeds/, so a crawl that is paused
// (Ctrl-C: the upload is left incomplete) or killed continues the same
// upload when it is run again, keeping exactly the items a local feed
// would keep (every item once after a pause; after a crash, duplicates
// only of the requests in flight). Starting the job over (--fresh) aborts
// the earlier incomplete upload.
//
// Importing the package registers the s3 scheme with package feed; the
// gocrawl command imports it (cli/backends.go).
package s3feed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/gocrawl/gocrawl/pipeline/feed"
	"github.com/gocrawl/gocrawl/settings"
)

func init() {
	feed.RegisterStorage("s3", func(uri string, s *settings.Settings) (feed.Storage, error) {
		return New(uri, ConfigFromSettings(s))
	})
}

// MinPartSize is the smallest part S3 accepts (except the last one).
const MinPartSize = 5 << 20

// Config configures the storage of one feed.
type Config struct {
	// Endpoint is the service's URL; empty: AWS_ENDPOINT_URL_S3,
	// AWS_ENDPOINT_URL, or AWS S3.
	Endpoint string
	// Region of the bucket; empty: AWS_REGION or the shared config, else
	// us-east-1.
	Region string
	// PathStyle addresses buckets as ENDPOINT/bucket. It is always used
	// for an endpoint whose host is an IP address or localhost.
	PathStyle bool
	// ACL is a canned ACL for the object ("" = none).
	ACL string
	// PartSize is the size of each part but the last (0 = 8 MiB). S3 and
	// MinIO refuse parts under MinPartSize; the FEED_STORAGE_S3_PART_SIZE
	// setting enforces it.
	PartSize int64
	// Retries is the number of attempts of each request (0 = 5).
	Retries int
	// Timeout bounds one request (0 = 60 s).
	Timeout time.Duration
	// StateDir keeps the upload's record and the part being filled (in a
	// folder of its own per feed URI). Empty: a temporary folder, removed
	// once the object is complete; the upload cannot be resumed by a later
	// run. With a StateDir the spools of sent parts are kept until Sync
	// (the exporter's Flush, which a job calls at each acknowledged
	// request) has seen offsets past them, since a resume may cut into
	// them.
	StateDir string
}

// ConfigFromSettings returns the FEED_STORAGE_S3_* settings of s, with the
// state kept under JOBDIR/feeds when JOBDIR is set (StateDir is then
// completed per feed by New).
func ConfigFromSettings(s *settings.Settings) Config {
	c := Config{
		Endpoint:  s.String("FEED_STORAGE_S3_ENDPOINT"),
		Region:    s.String("FEED_STORAGE_S3_REGION"),
		PathStyle: s.Bool("FEED_STORAGE_S3_PATH_STYLE"),
		ACL:       s.String("FEED_STORAGE_S3_ACL"),
		PartSize:  int64(s.Int("FEED_STORAGE_S3_PART_SIZE")),
		Retries:   s.Int("FEED_STORAGE_S3_RETRIES"),
		Timeout:   s.Seconds("FEED_STORAGE_S3_TIMEOUT"),
	}
	if dir := s.String("JOBDIR"); dir != "" {
		c.StateDir = filepath.Join(dir, "feeds")
	}
	return c
}

// Storage is the feed.Storage of one s3:// URI.
type Storage struct {
	uri    string
	bucket string
	key    string // the key template, placeholders unexpanded
	gz     bool
	cfg    Config
	base   string // Config.StateDir: this feed's folder is under it
	client *s3.Client

	up upload // the upload in progress (upload.go)
}

// New returns the storage of uri (s3://bucket/key). Nothing is contacted
// until Check or Open.
func New(uri string, cfg Config) (*Storage, error) {
	// Not url.Parse: keys hold characters a URL escapes, %(time)s first.
	rest, ok := strings.CutPrefix(uri, "s3://")
	if !ok {
		return nil, fmt.Errorf("feed %s: not an s3://bucket/key URI", uri)
	}
	bucket, key, _ := strings.Cut(rest, "/")
	if strings.ContainsAny(bucket, "@:?#") || strings.ContainsAny(key, "?#") {
		return nil, fmt.Errorf("feed %s: an s3:// URI is s3://bucket/key, with no credentials, query or fragment (credentials come from the environment)", uri)
	}
	if bucket == "" {
		return nil, fmt.Errorf("feed %s: no bucket: write s3://bucket/key", uri)
	}
	if key == "" || strings.HasSuffix(key, "/") {
		return nil, fmt.Errorf("feed %s: no object name after the bucket: write s3://%s/prefix/items.jsonl", uri, bucket)
	}
	if cfg.PartSize < 0 || cfg.Retries < 0 || cfg.Timeout < 0 {
		return nil, fmt.Errorf("feed %s: part size, retries and timeout must not be negative", uri)
	}
	if cfg.PartSize == 0 {
		cfg.PartSize = 8 << 20
	}
	if cfg.Retries == 0 {
		cfg.Retries = 5
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.Endpoint != "" {
		if e, err := url.Parse(cfg.Endpoint); err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			return nil, fmt.Errorf("feed %s: endpoint %q is not an http:// or https:// URL", uri, cfg.Endpoint)
		}
	}
	_, gz := strings.CutSuffix(key, ".gz")
	return &Storage{uri: uri, bucket: bucket, key: key, gz: gz, cfg: cfg, base: cfg.StateDir}, nil
}

// dir returns this feed's state folder under base: one per URI.
func (s *Storage) dir() string {
	sum := sha256.Sum256([]byte(s.uri))
	return filepath.Join(s.base, "s3-"+hex.EncodeToString(sum[:8]))
}

// endpoint returns the endpoint the client will use ("" for AWS).
func (s *Storage) endpoint() string {
	for _, e := range []string{s.cfg.Endpoint, os.Getenv("AWS_ENDPOINT_URL_S3"), os.Getenv("AWS_ENDPOINT_URL")} {
		if e != "" {
			return e
		}
	}
	return ""
}

// connect creates the client (no request is sent).
func (s *Storage) connect(ctx context.Context) error {
	if s.client != nil {
		return nil
	}
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(s.cfg.Timeout)),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = s.cfg.Retries
				o.MaxBackoff = 20 * time.Second
			})
		}),
	}
	if s.cfg.Region != "" {
		opts = append(opts, config.WithRegion(s.cfg.Region))
	}
	ac, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return fmt.Errorf("feed %s: reading the AWS configuration: %w", s.uri, err)
	}
	if ac.Region == "" {
		ac.Region = "us-east-1"
	}
	ep := s.endpoint()
	pathStyle := s.cfg.PathStyle
	if ep != "" {
		if u, err := url.Parse(ep); err == nil {
			h := u.Hostname()
			pathStyle = pathStyle || h == "localhost" || net.ParseIP(h) != nil
		}
	}
	s.client = s3.NewFromConfig(ac, func(o *s3.Options) {
		if s.cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(s.cfg.Endpoint)
		}
		o.UsePathStyle = pathStyle
		// Checksums only where S3 requires them: S3-compatible servers
		// differ in the trailing checksums newer SDKs send by default.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return nil
}

// Check asks the service for the bucket (HeadBucket): a missing bucket,
// refused or missing credentials and an unreachable endpoint are errors
// naming the problem.
func (s *Storage) Check(ctx context.Context) error {
	if err := s.connect(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if _, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)}); err != nil {
		return fmt.Errorf("feed %s: %s", s.uri, s.describe(err))
	}
	return nil
}

// describe says what a request's error means, for a user: it holds no
// credential.
func (s *Storage) describe(err error) string {
	where := s.endpoint()
	if where == "" {
		where = "AWS S3"
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "NoSuchBucket", "NotFound":
			return fmt.Sprintf("bucket %q does not exist at %s", s.bucket, where)
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "Forbidden", "InvalidToken", "ExpiredToken":
			return fmt.Sprintf("%s refused the credentials for bucket %q (%s): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or the profile) and the bucket's permissions",
				where, s.bucket, api.ErrorCode())
		case "NoSuchUpload":
			return fmt.Sprintf("the incomplete upload to %s is gone from %s (aborted, or removed by a lifecycle rule)", s.bucket, where)
		case "PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException":
			return fmt.Sprintf("bucket %q is in another region (%s): set FEED_STORAGE_S3_REGION or AWS_REGION", s.bucket, api.ErrorCode())
		}
		return fmt.Sprintf("%s: %s", where, api.ErrorCode())
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "failed to retrieve credentials") || strings.Contains(msg, "no EC2 IMDS role found"):
		return "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
	case errors.Is(err, context.DeadlineExceeded) || isNetErr(err):
		return fmt.Sprintf("cannot reach %s (after %d attempts): %v", where, s.cfg.Retries, rootCause(err))
	}
	return msg
}

func isNetErr(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ne) || errors.As(err, &oe)
}

// rootCause returns the innermost error, which says what the network did.
func rootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}
