package main

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// redisCounter is a go-redis hook that counts a worker's round trips to
// Redis from the client side: each command sent alone (a script call
// included) is one, each pipeline is one whatever its length, each new
// connection is counted apart (its handshake is not seen by the hooks).
// The server's own figure (INFO stats total_reads_processed) counts read
// events on its sockets, which can be more than one per round trip; the
// bench reports both.
type redisCounter struct {
	single    atomic.Int64
	pipelines atomic.Int64
	pipelined atomic.Int64
	dials     atomic.Int64
	bytes     atomic.Int64
	large     atomic.Int64
	chunks    atomic.Int64
	mu        sync.Mutex
	byName    map[string]int64 // commands sent alone, by name (EVALSHA: by script)
}

func newRedisCounter() *redisCounter { return &redisCounter{byName: map[string]int64{}} }

func (h *redisCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		h.dials.Add(1)
		return next(ctx, network, addr)
	}
}

func (h *redisCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.single.Add(1)
		h.count("", cmd)
		h.sized(size(cmd))
		return next(ctx, cmd)
	}
}

func (h *redisCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.pipelines.Add(1)
		h.pipelined.Add(int64(len(cmds)))
		n := 0
		for _, c := range cmds {
			h.count("pipelined ", c)
			n += size(c)
		}
		h.sized(n)
		return next(ctx, cmds)
	}
}

// readBuffer is Redis's query read size (PROTO_IOBUF_LEN): the server
// reads a request larger than this in several read events, each counted
// in INFO stats total_reads_processed.
const readBuffer = 16 * 1024

// sized notes the size of one request.
func (h *redisCounter) sized(n int) {
	h.bytes.Add(int64(n))
	if n > readBuffer {
		h.large.Add(1)
	}
	h.chunks.Add(int64((n + readBuffer - 1) / readBuffer))
}

// size is the length of cmd in the protocol (RESP), near enough: the
// arguments' lengths and their headers.
func size(cmd redis.Cmder) int {
	args := cmd.Args()
	n := 16
	for _, a := range args {
		switch v := a.(type) {
		case string:
			n += len(v) + 16
		case []byte:
			n += len(v) + 16
		default:
			n += 32
		}
	}
	return n
}

// count adds one call of cmd under its name; prefix marks the commands
// sent in a pipeline.
func (h *redisCounter) count(prefix string, cmd redis.Cmder) {
	name := strings.ToLower(cmd.Name())
	if name == "evalsha" || name == "eval" {
		// The script's SHA says which script: its first 8 characters.
		if args := cmd.Args(); len(args) > 1 {
			if s, ok := args[1].(string); ok && len(s) >= 8 {
				name += " " + s[:8]
			}
		}
	}
	h.mu.Lock()
	h.byName[prefix+name]++
	h.mu.Unlock()
}

// stats returns the counts for the runner's result.
func (h *redisCounter) stats() *RedisClientStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	by := make(map[string]int64, len(h.byName))
	for k, v := range h.byName {
		by[k] = v
	}
	return &RedisClientStats{
		RoundTrips: h.single.Load() + h.pipelines.Load(),
		Single:     h.single.Load(), Pipelines: h.pipelines.Load(), Pipelined: h.pipelined.Load(),
		Dials: h.dials.Load(), ByName: by,
		Bytes: h.bytes.Load(), Large: h.large.Load(), Reads16K: h.chunks.Load(),
	}
}

// RedisClientStats are a worker's Redis round trips counted at the client
// (-redis-url).
type RedisClientStats struct {
	// RoundTrips is Single + Pipelines: the requests sent and answered.
	RoundTrips int64 `json:"round_trips"`
	// Single counts the commands sent alone, Pipelines the pipelines and
	// Pipelined the commands they held.
	Single    int64 `json:"single"`
	Pipelines int64 `json:"pipelines"`
	Pipelined int64 `json:"pipelined"`
	// Dials counts the connections opened.
	Dials int64 `json:"dials"`
	// Bytes is the size of the requests (near enough), Large counts
	// those over Redis's 16 KiB read size and Reads16K the 16 KiB reads
	// the server needs for them all, at least.
	Bytes    int64 `json:"bytes"`
	Large    int64 `json:"large"`
	Reads16K int64 `json:"reads_16k"`
	// ByName counts the calls by command ("evalsha 1a2b3c4d": by script;
	// "pipelined ...": inside a pipeline).
	ByName map[string]int64 `json:"by_name"`
}
