# What the benchmark scripts share; sourced by each from the
# repository's root after they set `me` (the script's name, for messages)
# and `path` (the request path every target answers).

# require_free PORT...: every port the run uses must be free: wait_up takes
# any answer on a port for the target's, so a leftover process would be
# measured instead.
require_free() {
	local p
	for p in "$@"; do
		if [ -n "$p" ] && (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$me: something already listens on 127.0.0.1:$p; stop it or set PORT_BASE" >&2
			exit 1
		fi
	done
}

# require_tools COMMAND[:PACKAGE]...: each command must be on the PATH
# (and go); as root the missing ones are installed from their Debian
# packages (PACKAGE, or the command's own name), otherwise the run stops
# saying what to install.
require_tools() {
	local t c p missing=() pkgs=()
	for t in "$@"; do
		c=${t%%:*} p=${t#*:}
		command -v "$c" >/dev/null || { missing+=("$c"); pkgs+=("$p"); }
	done
	if [ ${#missing[@]} -gt 0 ]; then
		if [ "$(id -u)" -ne 0 ]; then
			echo "$me: missing ${missing[*]}: apt-get install ${pkgs[*]}" >&2
			exit 1
		fi
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
	fi
	command -v go >/dev/null || { echo "$me: go not found" >&2; exit 1; }
}

# A temporary directory for configurations and logs, and the processes the
# run starts (pids): both are cleaned up when the script exits, however it
# exits (KEEP_DIR=1 keeps the directory).
dir=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	if [ -n "${KEEP_DIR:-}" ]; then
		echo "$me: kept $dir" >&2
	else
		rm -rf "$dir"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_up PORT: until something answers 200 on PORT, for 10 s at most.
wait_up() {
	local i
	for i in $(seq 100); do
		if curl -fsS -o /dev/null "http://127.0.0.1:$1$path" 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	echo "$me: nothing answers on 127.0.0.1:$1 (logs in $dir; set KEEP_DIR=1)" >&2
	KEEP_DIR=1
	exit 1
}

# median prints the median of its arguments (the lower middle one of an
# even count).
median() {
	printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}

# cpu_ticks PID... prints the user and system CPU time, in clock ticks, of
# the PIDs and their children (nginx's worker is its master's child),
# summed. Fields 14 and 15 of /proc/PID/stat, counted after the command
# name, which may hold spaces.
cpu_ticks() {
	local p u=0 s=0 f top
	for top in "$@"; do
		for p in "$top" $(cat /proc/"$top"/task/*/children 2>/dev/null); do
			f=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null) || continue
			read -r _ _ _ _ _ _ _ _ _ _ _ ut st _ <<<"$f"
			u=$((u + ut)) s=$((s + st))
		done
	done
	echo "$u $s"
}
tck=$(getconf CLK_TCK)

# per_request TICKS REQUESTS prints the microseconds per request.
per_request() {
	awk -v d="$1" -v n="$2" -v h="$tck" 'BEGIN { if (n > 0) printf "%.2f", d * 1e6 / h / n; else print 0 }'
}

# ratio A B prints A/B to two decimals, or - when B is 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
