package redisq

import (
	"errors"
	"fmt"
	"hash/crc32"
	"regexp"
	"strings"

	"github.com/gocrawl/gocrawl/throttling"
)

// MaxShards is the largest number of shards a job may have. Shard numbers
// are part of every entry ID (ID = sequence*1024 + shard).
const MaxShards = 1024

// jobName is what a job name may contain: it is part of every key and of
// the SCAN patterns that find them.
var jobName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// ErrBadName is the kind of error for a job name or key prefix that
// cannot be used in keys.
var ErrBadName = errors.New("invalid job name")

// Layout names the keys of one job (see the package documentation for
// what each holds). A job's keys are split into a job-level part, whose
// hash tag is {JOB}, and Shards shards, whose hash tags are {JOB:N} with
// N chosen so that shard k's slot lies in the k-th of Shards equal ranges
// of Redis Cluster's 16384 slots: shards spread evenly over nodes that
// split the slots evenly. Every key a Lua script touches is in one shard,
// so each script call runs on one node.
type Layout struct {
	prefix string
	job    string
	shards int
	tags   []string // hash tag of each shard, without braces
}

// NewLayout checks the names and returns the layout of job under prefix
// ("gocrawl" by default) with shards shards (1 to MaxShards).
func NewLayout(prefix, job string, shards int) (*Layout, error) {
	if prefix == "" {
		prefix = "gocrawl"
	}
	if strings.ContainsAny(prefix, "{}*?[]\\ \t\r\n") {
		return nil, fmt.Errorf("%w: key prefix %q: braces, glob characters and spaces are not allowed", ErrBadName, prefix)
	}
	if !jobName.MatchString(job) {
		return nil, fmt.Errorf("%w: %q: use 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrBadName, job)
	}
	if shards < 1 || shards > MaxShards {
		return nil, fmt.Errorf("shards: %d is out of range (1 to %d)", shards, MaxShards)
	}
	l := &Layout{prefix: prefix, job: job, shards: shards, tags: make([]string, shards)}
	for k := range shards {
		l.tags[k] = shardTag(job, k, shards)
	}
	return l, nil
}

// shardTag finds the hash tag of shard k: job + ":" + j for the smallest j
// whose slot falls in the k-th of n equal slot ranges.
func shardTag(job string, k, n int) string {
	lo, hi := k*16384/n, (k+1)*16384/n
	for j := k; ; j += n {
		tag := fmt.Sprintf("%s:%d", job, j)
		if s := int(Slot(tag)); s >= lo && s < hi {
			return tag
		}
		if j > 1<<20 { // unreachable in practice: CRC16 covers every range quickly
			return fmt.Sprintf("%s:%d", job, k)
		}
	}
}

// Job returns the job's name.
func (l *Layout) Job() string { return l.job }

// Prefix returns the key prefix.
func (l *Layout) Prefix() string { return l.prefix }

// Shards returns the number of shards.
func (l *Layout) Shards() int { return l.shards }

// JobKey returns a job-level key: PREFIX:{JOB}:name.
func (l *Layout) JobKey(name string) string { return l.prefix + ":{" + l.job + "}:" + name }

// ShardPrefix returns the prefix of shard k's keys: PREFIX:{TAG}: .
func (l *Layout) ShardPrefix(k int) string { return l.prefix + ":{" + l.tags[k] + "}:" }

// ShardKey returns a key of shard k.
func (l *Layout) ShardKey(k int, name string) string { return l.ShardPrefix(k) + name }

// routeKey is the key every script of shard k declares (its ID counter):
// cluster clients route the call by it, and the scripts derive the
// shard's other keys from it.
func (l *Layout) routeKey(k int) string { return l.ShardPrefix(k) + "id" }

// Patterns returns SCAN MATCH patterns covering every key of the job.
func (l *Layout) Patterns() []string {
	return []string{l.prefix + ":{" + l.job + "}:*", l.prefix + ":{" + l.job + ":*"}
}

// ShardOf returns the shard of a scope: by the CRC-32 of its hash tag,
// which is the text between the first '{' and the next '}' when the name
// has one (as in Redis Cluster), else the whole name. Scopes that must
// share a shard (the scopes of one request) can be given a common tag:
// "api{shop.example}" goes with "{shop.example}".
func (l *Layout) ShardOf(scope string) int {
	if l.shards == 1 {
		return 0
	}
	return int(crc32.ChecksumIEEE([]byte(hashTag(scope))) % uint32(l.shards))
}

// ErrCrossShard is the kind of error for a request whose throttling scopes
// live in different shards: its admission could not be atomic.
var ErrCrossShard = errors.New("throttling scopes in different shards")

// ShardOfScopes returns the shard of a request's scopes: the shard of each
// of them, which must be the same (a request without scopes goes to shard
// 0). Scopes in different shards give an error wrapping ErrCrossShard.
func (l *Layout) ShardOfScopes(scopes throttling.Scopes) (int, error) {
	if len(scopes) == 0 || l.shards == 1 {
		return 0, nil
	}
	k := l.ShardOf(scopes[0].Name)
	for _, s := range scopes[1:] {
		if l.ShardOf(s.Name) != k {
			return 0, fmt.Errorf("%w: %q (shard %d) and %q (shard %d) of %d; with REDIS_SHARDS > 1 the scopes of one request "+
				"must share a shard: give them a common {tag} in their names, or use REDIS_SHARDS=1",
				ErrCrossShard, scopes[0].Name, k, s.Name, l.ShardOf(s.Name), l.shards)
		}
	}
	return k, nil
}

// shardOfQueue returns the shard of a sub-queue: that of the first of
// the scope names its name joins (throttling.Scopes.Key), which is the
// shard of all of them for a request the frontier accepted.
func (l *Layout) shardOfQueue(queue string) int {
	if l.shards == 1 || queue == "" {
		return 0
	}
	first, _, _ := strings.Cut(queue, "\x00")
	return l.ShardOf(first)
}

func hashTag(s string) string {
	if i := strings.IndexByte(s, '{'); i >= 0 {
		if j := strings.IndexByte(s[i+1:], '}'); j > 0 {
			return s[i+1 : i+1+j]
		}
	}
	return s
}

// Slot returns the Redis Cluster hash slot of key (CRC16/XMODEM of its hash
// tag, modulo 16384).
func Slot(key string) uint16 {
	return crc16([]byte(hashTag(key))) % 16384
}

func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
