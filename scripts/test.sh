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
# Nothing yet. Services are installed and started here, so that CI (.ci/run)
# and a fresh developer machine get them the same way; for example Redis,
# for the distributed crawl tests of a later issue:
#   command -v redis-server >/dev/null || { apt-get update && apt-get install -y redis-server; }
#   redis-server --daemonize yes --port 6379 --bind 127.0.0.1
# -----------------------------------------------------------------------------

go mod download
echo "== go vet ./..."
go vet ./...
echo "== go test -race -count=1 -timeout 15m ./..."
go test -race -count=1 -timeout 15m ./...
