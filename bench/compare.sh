#!/usr/bin/env bash
# Compares the S1 runs of two versions of the gocrawl library under the
# same benchmark harness (this checkout's bench/): the library of REF (a
# clean export) against the working tree's, alternating run by run so that
# the load of a shared machine weighs on both alike. Prints every run and
# the medians.
#
#   bench/compare.sh                          # main vs working tree, 6 rounds, variant gocrawl-follow
#   bench/compare.sh -ref HEAD~3 -rounds 10 -variants gocrawl-follow,gocrawl
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
ref=main rounds=6 variants=gocrawl-follow
while [[ $# -gt 0 ]]; do
	case "$1" in
	-ref) ref=$2; shift 2 ;;
	-rounds) rounds=$2; shift 2 ;;
	-variants) variants=$2; shift 2 ;;
	*) echo "usage: $0 [-ref REF] [-rounds N] [-variants V1,V2]" >&2; exit 2 ;;
	esac
done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/ref" "$tmp/bin-ref" "$tmp/bin-tree"
git -C "$here/.." archive "$ref" | tar -x -C "$tmp/ref"
rm -rf "$tmp/ref/bench" && cp -r "$here" "$tmp/ref/bench" && rm -rf "$tmp/ref/bench/bin" "$tmp/ref/bench/results"
(cd "$tmp/ref/bench" && GOFLAGS=-mod=mod go build -o "$tmp/bin-ref/" ./cmd/runner ./cmd/site)
(cd "$here" && GOFLAGS=-mod=mod go build -o "$tmp/bin-tree/" ./cmd/runner ./cmd/site)
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); ref $ref = $(git -C "$here/.." rev-parse --short "$ref")"
run() { # lib variant
	local bin="$tmp/bin-$1"
	coproc SITE { "$bin/site" -scenario S1; }
	local urls
	read -r urls <&"${SITE[0]}"
	local out
	out=$(/usr/bin/env time -f '%U %S' "$bin/runner" -scenario S1 -variant "$2" -urls "$urls" 2>"$tmp/time")
	echo quit >&"${SITE[1]}"
	wait "$SITE_PID" 2>/dev/null || true
	local cpu responses seconds
	cpu=$(tail -1 "$tmp/time" | awk '{print $1+$2}')
	responses=$(sed -n 's/.*"responses":\([0-9]*\).*/\1/p' <<<"$out")
	seconds=$(sed -n 's/.*"seconds":\([0-9.e+-]*\).*/\1/p' <<<"$out")
	awk -v l="$1" -v v="$2" -v r="$responses" -v s="$seconds" -v c="$cpu" -v load="$(cut -d' ' -f1 /proc/loadavg)" \
		'BEGIN { printf "%-4s %-15s %7.0f pages/s %.3f CPU s/1000 pages  load %s\n", l, v, r/s, c/r*1000, load }'
}
for ((i = 0; i < rounds; i++)); do
	for lib in ref tree; do
		for v in ${variants//,/ }; do run "$lib" "$v"; done
	done
done | tee "$tmp/runs"
for v in ${variants//,/ }; do
	for lib in ref tree; do
		awk -v l="$lib" -v v="$v" 'BEGIN { n = 0 } $1 == l && $2 == v { p[n] = $3; c[n] = $5; n++ }
			function med(a, n,   i, j, t) { for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
				return n % 2 ? a[int(n/2)] : (a[n/2-1] + a[n/2]) / 2 }
			END { printf "%s %s: median %.0f pages/s, %.3f CPU s/1000 pages (%d runs)\n", v, l, med(p, n), med(c, n), n }' "$tmp/runs"
	done
done
