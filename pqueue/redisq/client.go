package redisq

import (
	"github.com/gocrawl/gocrawl/internal/redact"

	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrUnreachable is the kind of error Dial returns when the server does
// not answer.
var ErrUnreachable = errors.New("redis unreachable")

// DialOptions tune Dial.
type DialOptions struct {
	// Timeout bounds connecting and each command (default 3 s). Commands
	// are not retried by the client: callers that can repeat a call safely
	// do so themselves.
	Timeout time.Duration
	// PoolSize is the number of connections per node (default: the
	// client's, 10 per CPU).
	PoolSize int
}

// Dial connects to the Redis server of a redis:// or rediss:// URL
// (redis://[user:password@]host:port[/db][?addr=host2:port2...]) and checks
// that it answers. A server in cluster mode is detected (INFO cluster)
// and reached through a cluster client that discovers the other nodes; the
// URL may name any node, and extra addr= parameters seed the discovery.
// Errors name the address; an unreachable server gives an error wrapping
// ErrUnreachable.
func Dial(ctx context.Context, rawURL string, o DialOptions) (redis.UniversalClient, error) {
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Second
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL %q: %v (want redis://[user:password@]host:port[/db])", redact.String(rawURL), err)
	}
	extra, err := extraAddrs(rawURL)
	if err != nil {
		return nil, err
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = o.Timeout, o.Timeout, o.Timeout
	opts.MaxRetries = -1
	if o.PoolSize > 0 {
		opts.PoolSize = o.PoolSize
	}
	single := redis.NewClient(opts)
	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	info, err := single.Info(cctx, "cluster").Result()
	if err != nil {
		single.Close()
		return nil, fmt.Errorf("%w at %s: %v", ErrUnreachable, opts.Addr, err)
	}
	if !strings.Contains(info, "cluster_enabled:1") {
		return single, nil
	}
	single.Close()
	if opts.DB != 0 {
		return nil, fmt.Errorf("REDIS_URL %q: a Redis Cluster has only database 0, not %d", redact.String(rawURL), opts.DB)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: append([]string{opts.Addr}, extra...), Username: opts.Username, Password: opts.Password,
		TLSConfig: opts.TLSConfig, DialTimeout: o.Timeout, ReadTimeout: o.Timeout, WriteTimeout: o.Timeout,
		MaxRetries: -1, MaxRedirects: 8, PoolSize: opts.PoolSize,
	})
	if err := c.ForEachShard(cctx, func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() }); err != nil {
		c.Close()
		return nil, fmt.Errorf("%w: Redis Cluster at %s: %v", ErrUnreachable, opts.Addr, err)
	}
	return c, nil
}

// extraAddrs returns the addr= parameters of a URL (more cluster nodes).
func extraAddrs(rawURL string) ([]string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %v", err)
	}
	return u.Query()["addr"], nil
}

// Addr returns the host:port of a Redis URL, for messages.
func Addr(rawURL string) string {
	if o, err := redis.ParseURL(rawURL); err == nil {
		return o.Addr
	}
	return redact.String(rawURL)
}

// IsCluster reports whether c is a cluster client.
func IsCluster(c redis.UniversalClient) bool {
	_, ok := c.(*redis.ClusterClient)
	return ok
}

// IsUnavailable reports whether err means Redis could not be reached or
// answer (network errors, timeouts, a node loading or failing over), as
// opposed to an error in the request.
func IsUnavailable(err error) bool { return isUnavailable(err) }

func isUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		for _, p := range []string{"LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN", "READONLY"} {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	return true // net errors, io.EOF, pool timeouts, closed connections
}

func init() {
	// go-redis logs connection failures on the standard logger; gocrawl
	// reports them itself (with the address, and what it does about it).
	redis.SetLogger(quietLogger{})
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
