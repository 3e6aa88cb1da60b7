# as_root runs a command as root: directly, or through sudo. Sourced by
# scripts/test.sh and bench/run.sh, which install packages (redis-server,
# chromium, nginx) when they are missing.
as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		echo "$(basename "$0"): need root (or sudo) to run: $*" >&2
		return 1
	fi
}
