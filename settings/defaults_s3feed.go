package settings

import "fmt"

// S3 feed storage settings: feeds written to s3://bucket/key URIs
// (pipeline/feed/s3feed, docs/exports.md). Empty strings leave a value to
// the environment and the shared AWS config, as the AWS SDK reads them.
func init() {
	partSize := NewType("a part size in bytes, at least 5 MiB (5242880)", func(v any) (any, error) {
		n, err := Int.Convert(v)
		if err != nil {
			return nil, err
		}
		if n.(int) < 5<<20 {
			return nil, fmt.Errorf("%d bytes is below S3's smallest part, 5 MiB (5242880)", n)
		}
		return n, nil
	})
	for _, d := range []Def{
		{Name: "FEED_STORAGE_S3_ENDPOINT", Type: String, Default: "", Doc: "URL of the S3-compatible service for s3:// feeds (MinIO, Ceph, R2: http://127.0.0.1:9000); empty: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, or AWS S3 itself."},
		{Name: "FEED_STORAGE_S3_REGION", Type: String, Default: "", Doc: "Region of the bucket of s3:// feeds; empty: AWS_REGION or the shared AWS config, else us-east-1."},
		{Name: "FEED_STORAGE_S3_PATH_STYLE", Type: Bool, Default: false, Doc: "Address buckets as ENDPOINT/bucket/key rather than bucket.ENDPOINT/key (most self-hosted S3-compatible servers need true)."},
		{Name: "FEED_STORAGE_S3_ACL", Type: String, Default: "", Doc: "Canned ACL of the objects s3:// feeds write (private, public-read, bucket-owner-full-control...); empty: none, the bucket's default."},
		{Name: "FEED_STORAGE_S3_PART_SIZE", Type: partSize, Default: 8 << 20, Doc: "Bytes of a feed (compressed, for .gz) sent in each part of an s3:// feed's multipart upload, at least 5 MiB; the part being filled is kept on disk (in JOBDIR when set)."},
		{Name: "FEED_STORAGE_S3_RETRIES", Type: NonNegative(Int), Default: 5, Doc: "Attempts of each request to the object storage before a feed gives up, with exponential backoff between them (0 = 5)."},
		{Name: "FEED_STORAGE_S3_TIMEOUT", Type: NonNegative(Float), Default: 60.0, Doc: "Seconds one request to the object storage may take, sending a part included, before it is retried (0 = 60)."},
	} {
		Register(d)
	}
}
