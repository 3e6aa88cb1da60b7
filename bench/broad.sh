#!/usr/bin/env bash
# Runs a broad-crawl scenario (S4-broad: 2,000 loopback hosts x 50 pages;
# S4-broad-small: 500 x 20; S4-broad-10k: 10,000 x 20) and reports it from
# the server side: pages, time to the last 200 against the physical limit,
# 429s, requests inside a Retry-After window, hosts with a gap under the
# delay's jitter range (on each request's arrival at the server's socket,
# the kernel's receive time), connections accepted, first-request times, and the
# crawler's CPU per page and peak RSS. With -workers N the same crawl runs
# again by N worker processes sharing one Redis (REDIS_URL; redis-server
# started on a free loopback port), with its round trips per page, and is
# compared with the one-process crawl. See bench/cmd/broad.
#
#   bench/broad.sh                                        # S4-broad, gocrawl
#   bench/broad.sh -scenario S4-broad-small               # the short variant
#   bench/broad.sh -scenario S4-broad -variant colly      # the peer
#   bench/broad.sh -variant gocrawl-follow                # the built-in follow spider
#   bench/broad.sh -scenario S4-broad-10k -nofile 1024    # crawler under ulimit -n 1024
#   bench/broad.sh -scenario S4-broad-small -workers 3    # one process, then 3 workers on one Redis
#
# The report is also appended, as a JSON line, to bench/results/broad.jsonl.
# Everything talks to 127.0.0.0/8 only.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$here/bin" "$here/results"
# -mod=mod: the main module moves fast; let go.sum follow it.
(cd "$here" && GOFLAGS=-mod=mod go build -o "$here/bin/" ./cmd/broad ./cmd/runner)
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(go version | cut -d' ' -f3-), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "gocrawl: $(git -C "$here/.." rev-parse --short HEAD)"
"$here/bin/broad" -bin "$here/bin" -json "$here/results/broad.jsonl" "$@"
