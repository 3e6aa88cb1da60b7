#!/usr/bin/env bash
# Runs the gocrawl vs Colly benchmark (issue 7, scenarios S1-S4) and prints
# one table with the gocrawl/colly ratios; every number also goes to CSV.
#
#   bench/run.sh                       # all scenarios, CSV in bench/results/
#   bench/run.sh -scenarios S1,S4      # a subset
#   bench/run.sh -repeat 5             # S1 runs 5 times per crawler (median kept)
#   BENCH_REF=HEAD bench/run.sh        # build a clean export of a commit, not the working tree
#
# Each crawler runs in its own process (bench/cmd/runner) against a site
# served by another process (bench/cmd/site), so CPU time and peak RSS are
# the crawler's alone. Everything talks to 127.0.0.1 only.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$here"
ref="working tree"
if [[ -n "${BENCH_REF:-}" ]]; then
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' EXIT
	git -C "$here/.." archive "$BENCH_REF" | tar -x -C "$tmp"
	src="$tmp/bench"
	ref="$(git -C "$here/.." rev-parse --short "$BENCH_REF") (clean export)"
else
	dirty=$(git -C "$here/.." status --porcelain --untracked-files=no | { grep -v ' bench/' || true; } | wc -l)
	ref="$(git -C "$here/.." rev-parse --short HEAD) + working tree ($dirty modified files outside bench/)"
fi
mkdir -p "$here/bin" "$here/results"
# -mod=mod: the main module moves fast; let go.sum follow it.
(cd "$src" && GOFLAGS=-mod=mod go build -o "$here/bin/" ./cmd/...)
stamp=$(date -u +%Y%m%dT%H%M%SZ)
csv="$here/results/bench-$stamp.csv"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores, $(go version | cut -d' ' -f3-), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "gocrawl: $ref"
"$here/bin/bench" -bin "$here/bin" -csv "$csv" "$@"
echo "CSV: ${csv#"$here/.."/}"
