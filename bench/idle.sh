#!/usr/bin/env bash
# What an idle or slow client connection costs floodgate, against nginx in
# the same role (docs/benchmarks.md, "Memory per connection"), and how
# soon the memory goes back to the system once the clients have gone.
#
# One upstream (nginx answering a small JSON body) and, in front of it,
# each started afresh for every measurement:
#
#   floodgate   GOMAXPROCS=1 floodgate serve with bench/mavedb-bench.yaml and
#               server.max_connections above N, read_header_timeout 60s
#               (nginx's client_header_timeout), everything else default
#   nginx       bench/nginx-limit-req.conf.tmpl (worker_processes 1, two
#               limit_req zones, proxy_pass), worker_connections N + N/8 + 256
#               (with fewer than a sixteenth free, nginx closes idle ones)
#
# For each count N and mode, bench/idleconns opens N connections and holds
# them: "idle" sends nothing, "slow" sends part of a request head and never
# the rest (slowloris), "kept" has one request answered and then leaves
# the keep-alive connection idle. Once the server holds them all (its
# open descriptors), the script reads its resident memory (VmRSS of
# /proc/PID/status, nginx's master and worker summed) and, for floodgate,
# the Go heap and stacks in use (go_memstats_heap_inuse_bytes +
# go_memstats_stack_inuse_bytes from the admin listener), and subtracts
# what the same process used before the connections (after a few warm-up
# requests). The clients then close everything, and the resident memory is
# read again RELEASE_WAIT seconds after the server has closed its side.
#
# The table gives KiB per connection for each, the ratio floodgate/nginx
# for each count and mode, and the resident memory left after the clients
# left (above the process's own before the connections).
#
# Usage: bench/idle.sh
# Environment (defaults in brackets):
#   COUNTS ["6000 20000"]: each is capped at the open files hard limit
#     less 256 (the script raises its soft limit to the hard one)
#   MODES ["idle slow kept"]  TARGETS ["floodgate nginx"]
#   RELEASE_WAIT [10]: seconds between the last connection closed and the
#     last reading
#   FLOODGATE_BIN: a floodgate binary to measure instead of building this
#     tree's (another commit's, for a before and after)
#   FLOODGATE_ENV: more environment for floodgate's process, e.g.
#     "GODEBUG=... FLOODGATE_GC_HEAP_FLOOR=off"
#   PORT_BASE [18280]: floodgate +0 (admin +10), upstream +1, nginx +2
#   KEEP_DIR: keep the temporary directory (logs, configs) and print its path
#
# Everything listens on 127.0.0.1 only; every process the script starts is
# stopped when it exits, however it exits. Needs nginx (nginx-light) and go.
set -euo pipefail
cd "$(dirname "$0")/.."
me=bench/idle.sh

counts=(${COUNTS:-6000 20000})
modes=(${MODES:-idle slow kept})
targets=(${TARGETS:-floodgate nginx})
release_wait=${RELEASE_WAIT:-10}
base=${PORT_BASE:-18280}
path=/api/v1/score-sets/urn:mavedb:00000001-a-1
fg_port=$base admin_port=$((base + 10)) up_port=$((base + 1)) ngx_port=$((base + 2))

command -v nginx >/dev/null || { echo "$me: nginx not found: apt-get install nginx-light" >&2; exit 1; }
command -v go >/dev/null || { echo "$me: go not found" >&2; exit 1; }

# Every connection is a descriptor in the client and one in the server.
ulimit -n "$(ulimit -Hn)"
max_n=$(($(ulimit -n) - 256))

. bench/lib.sh
require_free $fg_port $admin_port $up_port $ngx_port

if [ -n "${FLOODGATE_BIN:-}" ]; then
	cp "$FLOODGATE_BIN" "$dir/floodgate"
else
	go build -o "$dir/floodgate" ./cmd/floodgate
fi
go build -o "$dir/idleconns" ./bench/idleconns

sed -e "s|@DIR@|$dir|g" -e "s|@UPSTREAM_PORT@|$up_port|g" bench/upstream-nginx.conf.tmpl >"$dir/upstream.conf"
nginx -e "$dir/upstream-error.log" -p "$dir" -c "$dir/upstream.conf" &
pids+=($!)
wait_up "$up_port"

# floodgate's configuration: the benchmark's, with room for every
# connection and nginx's time for a head.
cp bench/mavedb-bench.yaml "$dir/floodgate.yaml"
printf 'server:\n  max_connections: 1000000\n  read_header_timeout: 60s\n' >>"$dir/floodgate.yaml"

# stop PID: stops one process the script started, and forgets it.
stop() {
	local p keep=()
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	for p in "${pids[@]}"; do
		[ "$p" = "$1" ] || keep+=("$p")
	done
	pids=("${keep[@]}")
}

# procs PID: the process and its children (nginx's worker).
procs() { echo "$1" $(cat /proc/"$1"/task/*/children 2>/dev/null); }

# rss_kib PID...: their VmRSS summed, in KiB.
rss_kib() {
	local p t=0 v
	for p in "$@"; do
		v=$(awk '/^VmRSS:/ {print $2}' "/proc/$p/status" 2>/dev/null) || v=0
		t=$((t + ${v:-0}))
	done
	echo "$t"
}

# fds PID...: their open descriptors, summed.
fds() {
	local p t=0
	for p in "$@"; do
		t=$((t + $(ls "/proc/$p/fd" 2>/dev/null | wc -l)))
	done
	echo "$t"
}

# go_kib: floodgate's Go heap and stacks in use, in KiB.
go_kib() {
	curl -fsS "http://127.0.0.1:$admin_port/metrics" |
		awk '/^go_memstats_(heap|stack)_inuse_bytes / {s += $2} END {printf "%.0f", s / 1024}'
}

# until_fds LIMIT CMP PID...: waits (60 s at most) until the descriptors of
# PID... are -ge or -le LIMIT.
until_fds() {
	local lim=$1 cmp=$2 i
	shift 2
	for i in $(seq 600); do
		[ "$(fds "$@")" "$cmp" "$lim" ] && return 0
		sleep 0.1
	done
	echo "$me: processes $* hold $(fds "$@") descriptors, waited for $cmp $lim" >&2
	return 1
}

# kib_per N KIB: KiB per connection, one decimal.
kib_per() { awk -v n="$1" -v k="$2" 'BEGIN {printf "%.1f", k / n}'; }
mib() { awk -v k="$1" 'BEGIN {printf "%.0f", k / 1024}'; }

declare -A per go_per peak_mib before_mib after_mib
echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), floodgate ${FLOODGATE_BIN:-of commit $(git rev-parse --short HEAD)}" >&2
for n in "${counts[@]}"; do
	if [ "$n" -gt "$max_n" ]; then
		echo "$me: $n connections capped at $max_n (open files hard limit $(ulimit -Hn))" >&2
		n=$max_n
	fi
	ran_counts+=("$n")
	for mode in "${modes[@]}"; do
		for t in "${targets[@]}"; do
			case $t in
			floodgate)
				env FLOODGATE_LISTEN=127.0.0.1:$fg_port FLOODGATE_ADMIN_LISTEN=127.0.0.1:$admin_port \
					FLOODGATE_UPSTREAM=http://127.0.0.1:$up_port FLOODGATE_TRUSTED_PROXIES= GOMAXPROCS=1 \
					${FLOODGATE_ENV:-} "$dir/floodgate" serve --config "$dir/floodgate.yaml" >>"$dir/floodgate.log" 2>&1 &
				port=$fg_port
				;;
			nginx)
				sed -e "s|@DIR@|$dir|g" -e "s|@PORT@|$ngx_port|g" -e "s|@UPSTREAM_PORT@|$up_port|g" \
					-e "s|worker_connections [0-9]*;|worker_connections $((n + n / 8 + 256));|" \
					bench/nginx-limit-req.conf.tmpl >"$dir/nginx.conf"
				grep -q "worker_connections $((n + n / 8 + 256));" "$dir/nginx.conf" ||
					{ echo "$me: no worker_connections to set in bench/nginx-limit-req.conf.tmpl" >&2; exit 1; }
				nginx -e "$dir/nginx-error.log" -p "$dir" -c "$dir/nginx.conf" &
				port=$ngx_port
				;;
			*)
				echo "$me: unknown target $t" >&2
				exit 2
				;;
			esac
			server=$!
			pids+=($server)
			wait_up "$port"
			"$dir/idleconns" -addr "127.0.0.1:$port" -n 64 -mode kept -path "$path" -hold 0s >/dev/null
			sleep 1
			ps=($(procs "$server"))
			fd0=$(fds "${ps[@]}")
			rss0=$(rss_kib "${ps[@]}")
			go0=; [ "$t" = floodgate ] && go0=$(go_kib)

			"$dir/idleconns" -addr "127.0.0.1:$port" -n "$n" -mode "$mode" -path "$path" -hold 5m \
				>"$dir/client.out" 2>>"$dir/client.err" &
			client=$!
			pids+=($client)
			for i in $(seq 1200); do
				grep -q '^open=' "$dir/client.out" && break
				sleep 0.1
			done
			open=$(sed -n 's/^open=\([0-9]*\) .*/\1/p' "$dir/client.out")
			[ "${open:-0}" -gt 0 ] || { echo "$me: the client opened no connection (logs in $dir)" >&2; KEEP_DIR=1; exit 1; }
			until_fds $((fd0 + open)) -ge "${ps[@]}"
			sleep 2 # the last heads read
			rss1=0
			for i in 1 2 3; do
				r=$(rss_kib "${ps[@]}")
				[ "$r" -gt "$rss1" ] && rss1=$r
				sleep 0.5
			done
			k="$t $mode $n"
			per[$k]=$(kib_per "$open" $((rss1 - rss0)))
			[ "$t" = floodgate ] && go_per[$k]=$(kib_per "$open" $(($(go_kib) - go0)))
			before_mib[$k]=$(mib "$rss0") peak_mib[$k]=$(mib "$rss1")
			stop "$client"
			until_fds $((fd0 + 16)) -le "${ps[@]}"
			sleep "$release_wait"
			after_mib[$k]=$(mib "$(rss_kib "${ps[@]}")")
			echo "$t $mode n=$n open=$open: RSS ${before_mib[$k]} → ${peak_mib[$k]} MiB (${per[$k]} KiB/conn${go_per[$k]:+, Go heap+stacks ${go_per[$k]} KiB/conn}), ${release_wait} s after close ${after_mib[$k]} MiB" >&2
			stop "$server"
		done
	done
done

echo
echo "Memory per connection: N connections held open, resident memory (VmRSS) before and with them;"
echo "the last column is VmRSS ${release_wait} s after the clients closed them"
echo
echo "| mode | N | target | VmRSS before, MiB | with N, MiB | KiB/conn | Go heap+stacks KiB/conn | ×nginx | after close, MiB |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|"
for n in "${ran_counts[@]}"; do
	for mode in "${modes[@]}"; do
		for t in "${targets[@]}"; do
			k="$t $mode $n"
			x=-; [ -n "${per[nginx $mode $n]:-}" ] && x=$(ratio "${per[$k]}" "${per[nginx $mode $n]}")
			echo "| $mode | $n | $t | ${before_mib[$k]} | ${peak_mib[$k]} | ${per[$k]} | ${go_per[$k]:--} | $x | ${after_mib[$k]} |"
		done
	done
done
