// Package redisq keeps the frontier of a crawl job shared by worker
// processes in Redis: the requests waiting (a pqueue.Store), the
// throttling-aware selection of the next ones (the Frontier, a
// pqueue.PriorityQueue whose pop runs as a Lua script inside Redis, so
// that it is atomic across workers), the fingerprints of the requests
// seen (a set, or a Bloom filter), and the throttling state of every
// scope: its gate (the admission state of throttling.Gate, run by the
// scripts) and its policy's record (throttling.Policy, run in Go and
// written back with optimistic concurrency; Throttling implements
// throttling.Shared).
//
// Every decision uses Redis's clock (TIME), so the workers' clocks do not
// matter. A request handed to a worker is leased (Options.LeaseTTL),
// renewed while the worker holds it; an expired lease is taken back by any
// worker's next pop, which puts the request back in line and frees the
// scope slots it held.
//
// Keys: a job's keys are split in a job-level part, hash tag {JOB}, and
// shards, hash tags {JOB:N} (Layout); every script touches the keys of
// one shard only, so each call runs on one node of a Redis Cluster, and a
// scope's keys (its sub-queues, gate, policy, the fingerprints of its
// requests) live in the shard its name hashes to. docs/distributed.md has
// the full key layout; every script in lua/ starts with what it reads and
// writes. Package redisjob joins a job and plugs this package into the
// engine.
package redisq
