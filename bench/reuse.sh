#!/usr/bin/env bash
# What each upstreams.NAME.connection_reuse mode costs the whole request
# path (docs/operations.md, "Upstream connections and unsolicited
# answers"). One upstream (nginx answering a small JSON body, keep-alive
# on, one worker) and three floodgate gateways in front of it, each
# GOMAXPROCS=1 floodgate serve with bench/mavedb-bench.yaml (MaveDB's rule
# set, limits ×1 000 000: every rule evaluated, nothing limited) and one
# connection_reuse mode on its upstream:
#
#   shared      any client's request rides any pooled connection (the default)
#   per_client  a pooled connection carries only requests of the client
#               connection it last served
#   none        a new upstream connection for every request
#
# wrk against each in turn, alternating, ROUNDS rounds; the table gives
# each one's median req/s and range, its CPU time per request (floodgate's
# processes, and the upstream's during the same run: with none, the
# upstream accepts a connection per request too), and each median's ratio
# to shared's. Any non-2xx answer is reported (none is expected).
#
# Usage: bench/reuse.sh
#        bench/reuse.sh --configs DIR   (write the three configurations to DIR and stop)
# Environment (defaults in brackets):
#   ROUNDS [3]  DURATION wrk's -d [10s]  CONNS wrk's -c [32]  THREADS wrk's -t [1]
#   BENCH_PATH [/api/v1/score-sets/urn:mavedb:00000001-a-1]
#   PORT_BASE [18280]: the upstream +0, shared +1, per_client +2, none +3, their admin
#     listeners +11, +12, +13 (away from bench/gateway.sh's and bench/decide.sh's ports)
#   MODES ["shared per_client none"]
#   KEEP_DIR: keep the temporary directory (logs, configs) and print its path
#
# Everything listens on 127.0.0.1 only; every process the script starts is
# stopped when it exits, however it exits. Needs nginx, wrk and go; as root
# it installs the first two if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
me=bench/reuse.sh

rounds=${ROUNDS:-3}
duration=${DURATION:-10s}
conns=${CONNS:-32}
threads=${THREADS:-1}
path=${BENCH_PATH:-/api/v1/score-sets/urn:mavedb:00000001-a-1}
base=${PORT_BASE:-18280}
modes=(${MODES:-shared per_client none})

up_port=$base
declare -A port=([shared]=$((base + 1)) [per_client]=$((base + 2)) [none]=$((base + 3)))
declare -A admin=([shared]=$((base + 11)) [per_client]=$((base + 12)) [none]=$((base + 13)))

# write_config MODE OUT: the benchmark's configuration with the mode on
# its one upstream.
write_config() {
	awk -v mode="$1" '{print} /^    url: \$\{FLOODGATE_UPSTREAM/ {print "    connection_reuse: " mode}' \
		bench/mavedb-bench.yaml >"$2"
	grep -q "connection_reuse: $1" "$2" || {
		echo "$me: bench/mavedb-bench.yaml has no upstream url line to add connection_reuse to" >&2
		exit 1
	}
}
if [ "${1:-}" = --configs ]; then
	for m in shared per_client none; do
		write_config "$m" "$2/$m.yaml"
	done
	exit 0
fi


# bench/lib.sh: require_tools, require_free, the temporary directory and the processes
# cleaned up at exit, wait_up, median, cpu_ticks, per_request, ratio.
. bench/lib.sh
require_tools nginx:nginx-light wrk

used=($up_port)
for m in "${modes[@]}"; do
	if [ -z "${port[$m]:-}" ]; then
		echo "$me: unknown mode $m (shared, per_client, none)" >&2
		exit 2
	fi
	used+=("${port[$m]}" "${admin[$m]}")
done
require_free "${used[@]}"

go build -o "$dir/floodgate" ./cmd/floodgate

sed -e "s|@DIR@|$dir|g" -e "s|@UPSTREAM_PORT@|$up_port|g" bench/upstream-nginx.conf.tmpl >"$dir/upstream.conf"
nginx -e "$dir/upstream-error.log" -p "$dir" -c "$dir/upstream.conf" &
pids+=($!) uppid=$!
wait_up "$up_port"

declare -A fpid
for m in "${modes[@]}"; do
	write_config "$m" "$dir/$m.yaml"
	FLOODGATE_LISTEN=127.0.0.1:${port[$m]} FLOODGATE_ADMIN_LISTEN=127.0.0.1:${admin[$m]} \
		FLOODGATE_UPSTREAM=http://127.0.0.1:$up_port GOMAXPROCS=1 \
		"$dir/floodgate" serve --config "$dir/$m.yaml" >"$dir/$m.log" 2>&1 &
	pids+=($!) fpid[$m]=$!
done
for m in "${modes[@]}"; do
	wait_up "${port[$m]}"
done

declare -A rps bad cpu upcpu
echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$rounds"); do
	for m in "${modes[@]}"; do
		# A short warm-up fills the keep-alive pools.
		wrk -t"$threads" -c"$conns" -d1s "http://127.0.0.1:${port[$m]}$path" >/dev/null
		read -r u0 s0 <<<"$(cpu_ticks "${fpid[$m]}")"
		read -r uu0 us0 <<<"$(cpu_ticks "$uppid")"
		out=$(wrk -t"$threads" -c"$conns" -d"$duration" "http://127.0.0.1:${port[$m]}$path")
		read -r u1 s1 <<<"$(cpu_ticks "${fpid[$m]}")"
		read -r uu1 us1 <<<"$(cpu_ticks "$uppid")"
		nreq=$(awk '/requests in/ {print $1}' <<<"$out")
		cpu[$m]="${cpu[$m]:-} $(per_request $((u1 - u0 + s1 - s0)) "$nreq")"
		upcpu[$m]="${upcpu[$m]:-} $(per_request $((uu1 - uu0 + us1 - us0)) "$nreq")"
		v=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
		n=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' <<<"$out")
		rps[$m]="${rps[$m]:-} $v"
		bad[$m]=$((${bad[$m]:-0} + ${n:-0}))
		echo "round $r $m: $v req/s${n:+, $n non-2xx}" >&2
	done
done

ref=shared
echo
echo "connection_reuse: wrk -t$threads -c$conns -d$duration, $rounds rounds, path $path; CPU per request in µs (medians)"
echo
echo "| connection_reuse | median req/s | min–max | ×$ref | floodgate CPU | ×$ref | upstream CPU | ×$ref | non-2xx |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for m in "${modes[@]}"; do
	# shellcheck disable=SC2086
	med=$(median ${rps[$m]}) c=$(median ${cpu[$m]}) uc=$(median ${upcpu[$m]})
	lo=$(printf '%s\n' ${rps[$m]} | sort -g | head -1)
	hi=$(printf '%s\n' ${rps[$m]} | sort -g | tail -1)
	x=- xc=- xu=-
	if [ -n "${rps[$ref]:-}" ]; then
		# shellcheck disable=SC2086
		x=$(ratio "$med" "$(median ${rps[$ref]})") xc=$(ratio "$c" "$(median ${cpu[$ref]})") xu=$(ratio "$uc" "$(median ${upcpu[$ref]})")
	fi
	printf '| %s | %.0f | %.0f–%.0f | %s | %.1f | %s | %.1f | %s | %s |\n' "$m" "$med" "$lo" "$hi" "$x" "$c" "$xc" "$uc" "$xu" "${bad[$m]}"
done
