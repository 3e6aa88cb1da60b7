#!/usr/bin/env bash
# Runs the gocrawl vs Colly benchmark (issue 7, scenarios S1-S4) and prints
# one table with the gocrawl/colly ratios; every number also goes to CSV.
#
#   bench/run.sh                    # all scenarios, CSV in bench/results/
#   bench/run.sh -scenarios S1,S4   # a subset
#
# Each crawler runs in its own process (bench/cmd/runner) against a site
# served by another process (bench/cmd/site), so CPU time and peak RSS are
# the crawler's alone. Everything talks to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p bin results
go build -o bin/ ./cmd/...
stamp=$(date -u +%Y%m%dT%H%M%SZ)
csv="results/bench-$stamp.csv"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(go version | cut -d' ' -f3-)"
echo "gocrawl commit: $(git -C .. rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C .. diff --quiet HEAD -- . ':!bench' 2>/dev/null || echo ' (+ uncommitted changes)')"
bin/bench -bin bin -csv "$csv" "$@"
echo "CSV: bench/$csv"
