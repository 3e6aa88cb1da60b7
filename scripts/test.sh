#!/usr/bin/env bash
# Runs gocrawl's whole test suite on a fresh machine: installs what the
# tests need, then go vet and go test -race over every package.
#
#   ./scripts/test.sh
#
# Tests talk only to 127.0.0.1 (httptest servers, the simulated site); they
# need no internet beyond the Go module proxy for the first download of
# dependencies.
set -euo pipefail

cd "$(dirname "$0")/.."

if ! command -v go >/dev/null 2>&1; then
	echo "scripts/test.sh: the go tool is not installed; install Go $(sed -n 's/^go //p' go.mod) or newer" >&2
	exit 1
fi

# --- Services needed by the tests -------------------------------------------
# Installed here, so that CI and a fresh developer machine get them the same
# way. The tests start and stop their own servers on free loopback ports
# (internal/redistest); nothing is left running.
#
# redis-server and redis-cli, for the distributed crawl (pqueue/redisq,
# redisjob): from the distribution's packages when missing. A test that
# needs them fails when they are missing, unless GOCRAWL_SKIP_REDIS=1.
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
	if [ "${GOCRAWL_SKIP_REDIS:-}" = 1 ]; then
		echo "scripts/test.sh: redis-server not installed; GOCRAWL_SKIP_REDIS=1 skips the Redis tests" >&2
	else
		echo "== installing redis-server (apt-get)"
		sudo=""
		if [ "$(id -u)" != 0 ]; then
			if ! command -v sudo >/dev/null 2>&1; then
				echo "scripts/test.sh: redis-server is missing and installing it needs root (or sudo): apt-get install redis-server" >&2
				exit 1
			fi
			sudo="sudo"
		fi
		$sudo apt-get update -qq
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server
		# The package may start a system-wide server; the tests do not use it.
	fi
fi
# -----------------------------------------------------------------------------

go mod download
echo "== go vet ./..."
go vet ./...
echo "== go test -race -count=1 -timeout 20m ./..."
go test -race -count=1 -timeout 20m ./...
