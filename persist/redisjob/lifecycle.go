package redisjob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gocrawl/gocrawl/internal/version"
	"github.com/gocrawl/gocrawl/pqueue/redisq"
)

// The job-level keys (hash tag {JOB}):
//
//	PREFIX:{JOB}:meta     hash: format version, spider, creation time,
//	                      shards, dupefilter kind and Bloom parameters
//	PREFIX:{JOB}:workers  sorted set: live worker -> heartbeat expiry (ms,
//	                      Redis clock)
//	PREFIX:{JOB}:winfo    hash: worker -> JSON (host, pid, start, version)
//	PREFIX:{JOB}:seed     "by:WORKER" with a TTL while a worker seeds the
//	                      start requests, "done" once they are stored
//
// A worker's heartbeat (every third of REDIS_LEASE_TTL) renews its entry
// in workers, drops the entries of dead workers, and renews or takes the
// seeding lease: the first worker of a job takes it; if the seeder dies
// before seeding is done its lease expires and the next heartbeat of
// another worker takes it over, which then feeds its own spider's start
// requests from the beginning (the frontier drops those already stored as
// duplicates).

// ErrJobLost is the kind of error that stops a worker whose job vanished
// from Redis.
var ErrJobLost = errors.New("distributed job lost")

var heartbeatScript = redis.NewScript(`
local workers, info, seed, meta = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local w, ttl, want = ARGV[1], tonumber(ARGV[2]), ARGV[3]
if redis.call('EXISTS', meta) == 0 then return 'gone' end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', workers, string.format('%d', now + ttl), w)
for _, dead in ipairs(redis.call('ZRANGEBYSCORE', workers, '-inf', string.format('%d', now))) do
  redis.call('ZREM', workers, dead)
  redis.call('HDEL', info, dead)
end
redis.call('HSET', info, w, ARGV[4])
local s = redis.call('GET', seed)
if s == 'done' then return 'done' end
if not s then
  if want == '1' then
    redis.call('SET', seed, 'by:' .. w, 'PX', ttl)
    return 'mine'
  end
  return 'free'
end
if s == 'by:' .. w then
  redis.call('PEXPIRE', seed, ttl)
  return 'mine'
end
return 'other'
`)

var leaveScript = redis.NewScript(`
local workers = KEYS[1]
local base = string.sub(workers, 1, -8)
redis.call('ZREM', workers, ARGV[1])
redis.call('HDEL', base .. 'winfo', ARGV[1])
if redis.call('GET', base .. 'seed') == 'by:' .. ARGV[1] then redis.call('DEL', base .. 'seed') end
return 1
`)

// workerInfo is what a worker says about itself in PREFIX:{JOB}:winfo.
type workerInfo struct {
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Version string    `json:"version"`
}

var started = time.Now().UTC()

// heartbeat renews this worker's presence and its seeding lease once.
func (j *Job) heartbeat(ctx context.Context) error {
	host, _ := os.Hostname()
	info, _ := json.Marshal(workerInfo{Host: host, PID: os.Getpid(), Started: started, Version: version.Version})
	want := "0"
	if !j.seedDone.Load() {
		want = "1"
	}
	keys := []string{j.l.JobKey("workers"), j.l.JobKey("winfo"), j.l.JobKey("seed"), j.l.JobKey("meta")}
	v, err := heartbeatScript.Run(ctx, j.c, keys, j.worker, j.lease.Milliseconds(), want, string(info)).Text()
	if err != nil {
		return err
	}
	switch v {
	case "gone":
		err := fmt.Errorf("%w: job %s is gone from Redis at %s (Redis restarted without persistence, or the job was deleted): "+
			"its frontier is lost; delete what is left and start the job again", ErrJobLost, j.l.Job(), j.addr())
		if f := j.front(); f != nil {
			f.Fail(err)
		}
		return err
	case "done":
		j.seedDone.Store(true)
		j.seeding.Store(false)
	case "mine":
		if !j.seeding.Swap(true) && j.frontier != nil {
			j.log.Info().Str("worker", j.worker).Msg("seeding the job's start requests (no other worker is)")
		}
	default:
		j.seeding.Store(false)
	}
	return nil
}

func (j *Job) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(j.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		hctx, cancel := context.WithTimeout(ctx, j.lease/3)
		if err := j.heartbeat(hctx); err != nil && ctx.Err() == nil {
			j.log.Debug().Err(err).Msg("worker heartbeat failed")
		}
		cancel()
	}
}

// Seeding implements engine.Shared.
func (j *Job) Seeding() bool { return j.seeding.Load() && !j.seedDone.Load() }

// Seeded implements engine.Shared: once every start request is stored
// (the frontier's outbox flushed), the job records that seeding is done.
func (j *Job) Seeded(ctx context.Context) {
	f := j.front()
	if f == nil {
		return
	}
	fctx, cancel := context.WithTimeout(ctx, max(j.set.Seconds("REDIS_UNAVAILABLE_TIMEOUT"), time.Second))
	defer cancel()
	if err := f.Flush(fctx); err != nil {
		j.log.Error().Err(err).Msg("the start requests could not all be stored; seeding is not marked done (another worker will seed again)")
		return
	}
	if err := j.c.Set(fctx, j.l.JobKey("seed"), "done", 0).Err(); err != nil {
		j.log.Error().Err(err).Msg("cannot mark seeding done")
		return
	}
	j.seedDone.Store(true)
	j.seeding.Store(false)
	j.log.Info().Msg("start requests stored: seeding done")
}

func (j *Job) front() *redisq.Frontier {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.frontier
}

// Finished implements engine.Shared. It answers at once from what the
// last check found; when the job is not known to be finished it starts a
// check in the background (at most every 100 ms): seeding done, then the
// frontier drained (see redisq.Frontier.Drained).
func (j *Job) Finished() bool {
	if j.finished.Load() {
		return true
	}
	j.mu.Lock()
	if j.checking || time.Since(j.lastCheck) < 100*time.Millisecond || j.frontier == nil {
		j.mu.Unlock()
		return false
	}
	j.checking = true
	f := j.frontier
	j.mu.Unlock()
	go func() {
		defer func() {
			j.mu.Lock()
			j.checking, j.lastCheck = false, time.Now()
			j.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if !j.seedDone.Load() {
			s, err := j.c.Get(ctx, j.l.JobKey("seed")).Result()
			if err != nil || s != "done" {
				return
			}
			j.seedDone.Store(true)
		}
		if ok, err := f.Drained(ctx); err == nil && ok {
			// A Redis restarted without persistence is empty too: the
			// heartbeat tells a finished job from a lost one (it fails
			// the frontier with ErrJobLost when the job is gone).
			if err := j.heartbeat(ctx); err != nil {
				return
			}
			j.finished.Store(true)
			f.Poke()
		}
	}()
	return false
}
