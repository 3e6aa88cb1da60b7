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
# the same way. The tests start and stop their own servers on free loopback
# ports (devtools/redistest); nothing is left running.

# shellcheck source=scripts/as_root.sh
. scripts/as_root.sh

# redis-server and redis-cli, for the distributed crawl (pqueue/redisq,
# dupefilter, redisjob, the 3-node cluster tests): from the distribution's
# packages when missing. A test that needs them fails when they are missing,
# unless GOCRAWL_SKIP_REDIS=1.
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
	if [ "${GOCRAWL_SKIP_REDIS:-}" = 1 ]; then
		echo "scripts/test.sh: redis-server not installed; GOCRAWL_SKIP_REDIS=1 skips the Redis tests" >&2
	else
		echo "== installing redis-server (for the distributed crawl tests)"
		as_root apt-get update -qq
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server
		# The package may start a system-wide server; the tests do not use it.
	fi
fi

# PostgreSQL, for the PostgreSQL item sink (pipeline/feed/pgsink, the JOBDIR
# kill test): from the distribution's packages when initdb is neither on
# PATH nor in /usr/lib/postgresql/*/bin. The tests run initdb and postgres
# themselves (devtools/pgtest: a cluster in a temporary directory on a free
# loopback port; as root, they run them as the postgres user, which the
# package creates, or nobody). A test that needs it fails when it is
# missing, unless GOCRAWL_SKIP_POSTGRES=1.
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
	if [ "${GOCRAWL_SKIP_POSTGRES:-}" = 1 ]; then
		echo "scripts/test.sh: PostgreSQL not installed; GOCRAWL_SKIP_POSTGRES=1 skips the PostgreSQL tests" >&2
	else
		echo "== installing postgresql (for the PostgreSQL sink tests)"
		as_root apt-get update -qq
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql
		# The package may start a system-wide cluster; the tests do not use it.
	fi
fi

# Headless Chromium renders pages in the rendering tests (package render,
# which also looks for google-chrome-stable; RENDER_BROWSER_PATH points
# gocrawl at another binary) and the HTML crawl report in the report tests
# (devtools/browsertest finds it as chromium, chromium-browser or
# google-chrome, or at $CHROMIUM). Debian and Ubuntu package it as chromium.
if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1 &&
	! command -v chromium-browser >/dev/null 2>&1 && ! command -v google-chrome >/dev/null 2>&1; then
	echo "== installing chromium (for the rendering and report tests)"
	as_root apt-get update
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
fi
# The S3-compatible server of the s3:// feed tests (devtools/s3server, on
# gofakes3) is a program of this module, built by the tests (devtools/s3test)
# from the modules `go mod download` fetches below: nothing to install.
# -----------------------------------------------------------------------------

# Every step runs even when an earlier one fails, so that one failing
# package does not hide whether the rest passes; the script lists the
# failed steps and exits non-zero at the end.
failed=()
step() {
	local name=$1
	shift
	echo "== $name"
	if ! "$@"; then
		echo "== FAILED: $name" >&2
		failed+=("$name")
	fi
}

# Every module the build and the tests need, into the module cache; the
# tests that build generated projects offline (GOPROXY=off) find them there.
step "go mod download" go mod download
step "go vet ./..." go vet ./...
# The rendering tests (package render) keep Chromium busy on every core; run
# beside the other packages they would slow down the tests that compare
# durations, so they run on their own, last.
step "go test -race -count=1 -timeout 20m (every package but render)" \
	go test -race -count=1 -timeout 20m $(go list ./... | grep -v '/downloader/render$')
step "go test -race -count=1 -timeout 10m ./downloader/render" go test -race -count=1 -timeout 10m ./downloader/render
# Every fuzz target briefly (2s each; FUZZTIME=60s for a longer search):
# the parsers of untrusted input get a fresh search on every run.
step "scripts/fuzz.sh" ./scripts/fuzz.sh

if [ ${#failed[@]} -gt 0 ]; then
	echo "scripts/test.sh: ${#failed[@]} step(s) failed:" >&2
	printf '  - %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "scripts/test.sh: every step passed"
