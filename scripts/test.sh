#!/usr/bin/env bash
# Runs gocrawl's whole test suite on a fresh machine: installs what the
# tests need, then go vet and go test -race over every package.
#
#   ./scripts/test.sh
#
# It installs Chromium (the distribution's chromium package) when no
# browser is found, for the rendering tests.
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

# --- Services and programs needed by the tests -------------------------------
# Installed and started here, so that CI (.ci/run) and a fresh developer
# machine get them the same way.
#
# Chromium, for the rendering tests (package render): the distribution's
# package, installed when no browser is found (as root, or with sudo).
# RENDER_BROWSER_PATH points gocrawl at another binary.
have_browser() {
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
		command -v google-chrome >/dev/null 2>&1 || command -v google-chrome-stable >/dev/null 2>&1
}
if ! have_browser; then
	echo "== installing chromium (needed by the rendering tests)"
	sudo=""
	if [ "$(id -u)" != 0 ]; then
		if command -v sudo >/dev/null 2>&1; then
			sudo="sudo"
		else
			echo "scripts/test.sh: chromium is missing; install it as root (apt-get install chromium)" >&2
			exit 1
		fi
	fi
	if ! command -v apt-get >/dev/null 2>&1; then
		echo "scripts/test.sh: chromium is missing and there is no apt-get; install Chromium with your package manager" >&2
		exit 1
	fi
	$sudo apt-get update
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y chromium
fi
# -----------------------------------------------------------------------------

go mod download
echo "== go vet ./..."
go vet ./...
# The rendering tests (package render) keep Chromium busy on every core; run
# beside the other packages they would slow down the tests that compare
# durations (scheduler, throttling), so they run on their own, last.
echo "== go test -race -count=1 -timeout 15m (every package but render)"
go test -race -count=1 -timeout 15m $(go list ./... | grep -v '/render$')
echo "== go test -race -count=1 -timeout 10m ./render"
go test -race -count=1 -timeout 10m ./render
