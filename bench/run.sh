#!/usr/bin/env bash
# Runs the gocrawl vs Colly benchmark (scenarios S1-S4) and prints
# one table with the ratios (gocrawl/colly; in S1 also against "bare", a
# net/http fetch loop with a regexp link scan, and JOBDIR against memory);
# every number also goes to CSV.
#
#   bench/run.sh                       # S1-S4, CSV in bench/results/
#   bench/run.sh -scenarios S1,S4      # a subset
#   bench/run.sh -repeat 5             # S1 runs 5 rounds of every crawler (median kept)
#   bench/run.sh -scenarios S1M        # 1,000,000 pages, RSS every 100,000 (curve in *-rss.csv)
#   bench/run.sh -scenarios S1 -variants bare,gocrawl-follow   # some variants only
#   bench/run.sh -scenarios S1 -server nginx -repeat 3          # S1's pages as static files, served by nginx
#   bench/run.sh -scenarios S1 -server go,nginx -repeat 3       # both servers, interleaved round by round
#   BENCH_REF=HEAD bench/run.sh        # build a clean export of a commit, not the working tree
#   BENCH_POSTGRESQL_URL=postgresql://... BENCH_POSTGRESQL_PID=$(head -1 DATA/postmaster.pid) \
#     bench/run.sh -scenarios S1F      # items into feeds; the PostgreSQL server's CPU per item too
#
# Each crawler runs in its own process (bench/cmd/runner) against a site
# served by another process (bench/cmd/site), so CPU time and peak RSS are
# the crawler's alone. Everything talks to 127.0.0.1 only.
#
# With -server nginx, the site command writes the scenario's pages to a
# temporary folder and runs nginx on them (its own process, its own
# configuration, on a free port; never the system's service), one nginx per
# run, stopped after it. nginx is installed from the distribution's packages
# when missing (apt-get, as root or through sudo).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$here"
ref="working tree"
tmp=""
nginx_tmp=""
# cleanup runs on every exit (Ctrl-C and failures included): any nginx left
# running by a site process that did not get to stop it is stopped here.
cleanup() {
	if [[ -n "$nginx_tmp" ]]; then
		local pid
		for pid in "$nginx_tmp"/*/nginx.pid; do
			[[ -f "$pid" ]] && kill -TERM "$(cat "$pid")" 2>/dev/null || true
		done
		rm -rf "$nginx_tmp"
	fi
	if [[ -n "$tmp" ]]; then rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
server=go
for ((i = 1; i <= $#; i++)); do
	case "${!i}" in
	-server | --server) j=$((i + 1)); server="${!j:-}" ;;
	-server=* | --server=*) server="${!i#*=}" ;;
	esac
done
if [[ ",$server," == *,nginx,* ]]; then
	# shellcheck source=scripts/as_root.sh
	. "$here/../scripts/as_root.sh"
	if ! command -v nginx >/dev/null 2>&1 && [[ ! -x /usr/sbin/nginx ]]; then
		echo "== installing nginx (for -server nginx)"
		as_root apt-get update -qq
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx
		# The package may start a system-wide nginx on port 80; the bench
		# does not use it.
	fi
	# nginx's workers run as nobody when started by root: the folder must
	# be readable by anyone.
	nginx_tmp="$(mktemp -d -t gocrawl-bench-nginx.XXXXXX)"
	chmod 755 "$nginx_tmp"
	export BENCH_NGINX_TMP="$nginx_tmp"
fi
if [[ -n "${BENCH_REF:-}" ]]; then
	tmp="$(mktemp -d)"
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
if [[ -n "$nginx_tmp" ]]; then
	echo "server: $server; $(PATH="$PATH:/usr/sbin" nginx -v 2>&1)"
fi
"$here/bin/bench" -bin "$here/bin" -csv "$csv" "$@"
echo "CSV: ${csv#"$here/.."/}"
