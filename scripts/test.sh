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

# --- Services and tools needed by the tests ---------------------------------
# Installed here, so that CI (.ci/run) and a fresh developer machine get them
# the same way.

# as_root runs a command as root: directly, or through sudo.
as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		echo "scripts/test.sh: need root (or sudo) to run: $*" >&2
		return 1
	fi
}

# Headless Chromium renders pages in the rendering tests (package render,
# which also looks for google-chrome-stable; RENDER_BROWSER_PATH points
# gocrawl at another binary) and the HTML crawl report in the report tests
# (internal/browsertest finds it as chromium, chromium-browser or
# google-chrome, or at $CHROMIUM). Debian and Ubuntu package it as chromium.
if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1 &&
	! command -v chromium-browser >/dev/null 2>&1 && ! command -v google-chrome >/dev/null 2>&1; then
	echo "== installing chromium (for the rendering and report tests)"
	as_root apt-get update
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
fi
# -----------------------------------------------------------------------------

go mod download
echo "== go vet ./..."
go vet ./...
# The rendering tests (package render) keep Chromium busy on every core; run
# beside the other packages they would slow down the tests that compare
# durations, so they run on their own, last.
echo "== go test -race -count=1 -timeout 15m (every package but render)"
go test -race -count=1 -timeout 15m $(go list ./... | grep -v '/render$')
echo "== go test -race -count=1 -timeout 10m ./render"
go test -race -count=1 -timeout 10m ./render
# Every fuzz target briefly (2s each; FUZZTIME=60s for a longer search):
# the parsers of untrusted input get a fresh search on every run.
echo "== scripts/fuzz.sh"
./scripts/fuzz.sh
