#!/usr/bin/env bash
# Gateway throughput and added latency, floodgate against its peers in one
# run (docs/benchmarks.md, "Targets"). One upstream (nginx
# answering a small JSON body, keep-alive on, one worker) and, in front of
# it, each on one core:
#
#   direct            the bare upstream
#   floodgate         GOMAXPROCS=1 floodgate serve --config bench/mavedb-bench.yaml
#                     (MaveDB's rule set, limits ×1 000 000: all six rules
#                     evaluated, nothing limited)
#   nginx_limit_req   nginx proxy_pass with two limit_req zones on
#                     $binary_remote_addr (worker_processes 1, upstream keep-alive)
#   haproxy           HAProxy with a stick table tracking http_req_rate per
#                     source (nbthread 1, upstream keep-alive)
#   revproxy          a plain httputil.ReverseProxy (bench/revproxy, GOMAXPROCS=1)
#   fwdproxy          internal/forward under the same net/http server (bench/fwdproxy,
#                     GOMAXPROCS=1); not in the default TARGETS
#   floodgate_redis   floodgate as above with --store redis://… (a redis-server the
#                     script starts, its CPU counted with the target's); not in the
#                     default TARGETS
#   redis_fixed_window  envoyproxy/ratelimit's approach (bench/fixedwindow): a fixed
#                     window in the same Redis, one round trip per descriptor (two),
#                     in front of floodgate's own server and forwarder; not in the
#                     default TARGETS
#   h1front, relay, relay_raw  measurement aids (below); not in the default TARGETS
#
# Throughput: wrk against each in turn, alternating, ROUNDS rounds; the
# table shows each one's median, range, and ratios to the bare upstream and
# to nginx_limit_req; a second table gives each target's CPU time per
# request (user and system, from /proc, its process and children) during
# those runs, steadier than throughput on a shared machine and where the
# difference lies; the last line gives floodgate/nginx_limit_req, with each
# round's ratio and the CPU ratio beside it. Latency: bench/latency sends
# each of RATES requests/s, open loop, to each in turn, ROUNDS rounds; a
# table for each rate shows median p50/p99, what each adds over the bare
# upstream, and each target's CPU a request at that rate (at a moderate
# rate a request costs more than under saturating load: the process wakes
# for it on cold caches), and a line the p99 added by floodgate against
# nginx_limit_req's, with their CPU a request. Any non-2xx answer is reported (none is expected:
# nothing may be limited).
#
# Usage: bench/gateway.sh
# Environment (defaults in brackets):
#   ROUNDS [3]  DURATION wrk's -d [10s]  CONNS wrk's -c [32]  THREADS wrk's -t [1]
#   RATES latency's requests/s, one measurement each ["1000 4000"] (RATE: one rate)
#   LAT_DURATION [10s]  LAT_CONNS [16]
#   BENCH_PATH [/api/v1/score-sets/urn:mavedb:00000001-a-1]
#   PORT_BASE [18080]: upstream +1, floodgate +0 (admin +10), nginx +2, haproxy +3, revproxy +4,
#     fwdproxy +5, h1front +6, relay +7, floodgate_redis +8 (admin +11), redis_fixed_window +9,
#     redis-server +12, relay_raw +13 (the fwdproxy, h1front and relays are measurement aids, not in the default
#     TARGETS: bench/fwdproxy is the forwarder alone behind net/http's server, bench/h1front the
#     gateway behind a minimal, unsafe HTTP/1.1 loop instead of floodgate's own server,
#     bench/relay a byte relay with no HTTP at all: the floor of a Go proxy here; relay_raw
#     the same relay reading and writing as floodgate does, internal/rawio: the floor of
#     floodgate's own I/O)
#   TARGETS ["direct floodgate nginx_limit_req haproxy revproxy"]
#   LATENCY [1]: 0 skips the latency measurement
#   GATEWAY_GODEBUG: GODEBUG for floodgate's processes only (to measure a runtime setting)
#   CPUPROFILE: run floodgate under bench/gwprof, which writes a CPU profile
#     of the whole run to this file (read it with go tool pprof)
#   KEEP_DIR: keep the temporary directory (logs, configs) and print its path
#
# Everything listens on 127.0.0.1 only; every process the script starts is
# stopped when it exits, however it exits. Needs nginx (nginx-light),
# haproxy, wrk and go; as root it installs the first three if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
me=bench/gateway.sh

rounds=${ROUNDS:-3}
duration=${DURATION:-10s}
conns=${CONNS:-32}
threads=${THREADS:-1}
rates=(${RATES:-${RATE:-1000 4000}})
lat_duration=${LAT_DURATION:-10s}
lat_conns=${LAT_CONNS:-16}
path=${BENCH_PATH:-/api/v1/score-sets/urn:mavedb:00000001-a-1}
base=${PORT_BASE:-18080}
targets=(${TARGETS:-direct floodgate nginx_limit_req haproxy revproxy})

up_port=$((base + 1))
declare -A port=(
	[direct]=$up_port [floodgate]=$base [nginx_limit_req]=$((base + 2))
	[haproxy]=$((base + 3)) [revproxy]=$((base + 4)) [fwdproxy]=$((base + 5)) [h1front]=$((base + 6))
	[relay]=$((base + 7)) [floodgate_redis]=$((base + 8)) [redis_fixed_window]=$((base + 9))
	[relay_raw]=$((base + 13))
)
admin_port=$((base + 10))
redis_admin_port=$((base + 11))
redis_port=$((base + 12))
uses_redis=
for t in "${targets[@]}"; do
	case $t in floodgate_redis | redis_fixed_window) uses_redis=1 ;; esac
done


# bench/lib.sh: require_tools, require_free, the temporary directory and the processes
# cleaned up at exit, wait_up, median, cpu_ticks, per_request, ratio.
. bench/lib.sh
require_tools nginx:nginx-light haproxy wrk ${uses_redis:+redis-server}

# Every port the run uses must be free (require_free).
used=($up_port $admin_port ${uses_redis:+$redis_admin_port $redis_port})
for t in "${targets[@]}"; do
	used+=("${port[$t]:-}")
done
require_free "${used[@]}"

# fill TEMPLATE OUT replaces @DIR@, @PORT@ and @UPSTREAM_PORT@.
fill() {
	sed -e "s|@DIR@|$dir|g" -e "s|@PORT@|$3|g" -e "s|@UPSTREAM_PORT@|$up_port|g" "$1" >"$2"
}

go build -o "$dir/floodgate" ./cmd/floodgate
go build -o "$dir/revproxy" ./bench/revproxy
go build -o "$dir/fwdproxy" ./bench/fwdproxy
go build -o "$dir/h1front" ./bench/h1front
go build -o "$dir/relay" ./bench/relay
go build -o "$dir/latency" ./bench/latency
go build -o "$dir/fixedwindow" ./bench/fixedwindow
fg=("$dir/floodgate")
if [ -n "${CPUPROFILE:-}" ]; then
	go build -o "$dir/gwprof" ./bench/gwprof
	fg=("$dir/gwprof" -cpuprofile "$(realpath -m "$CPUPROFILE")" --)
fi

fill bench/upstream-nginx.conf.tmpl "$dir/upstream.conf" "$up_port"
nginx -e "$dir/upstream-error.log" -p "$dir" -c "$dir/upstream.conf" &
pids+=($!)
wait_up "$up_port"

if [ -n "$uses_redis" ]; then
	redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
		--logfile "$dir/redis.log" --dir "$dir" &
	pids+=($!) redis_pid=$!
	for i in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$redis_port") 2>/dev/null && break
		sleep 0.1
	done
fi

declare -A tpid # the processes of each target (direct: none)
for t in "${targets[@]}"; do
	case $t in
	direct) ;;
	floodgate)
		FLOODGATE_LISTEN=127.0.0.1:${port[floodgate]} FLOODGATE_ADMIN_LISTEN=127.0.0.1:$admin_port \
			FLOODGATE_UPSTREAM=http://127.0.0.1:$up_port FLOODGATE_TRUSTED_PROXIES= GOMAXPROCS=1 \
			GODEBUG=${GATEWAY_GODEBUG:-${GODEBUG:-}} "${fg[@]}" serve --config bench/mavedb-bench.yaml >"$dir/floodgate.log" 2>&1 &
		pids+=($!) tpid[$t]=$!
		;;
	floodgate_redis)
		# The Redis server's CPU is the target's too.
		FLOODGATE_LISTEN=127.0.0.1:${port[$t]} FLOODGATE_ADMIN_LISTEN=127.0.0.1:$redis_admin_port \
			FLOODGATE_UPSTREAM=http://127.0.0.1:$up_port FLOODGATE_TRUSTED_PROXIES= GOMAXPROCS=1 \
			GODEBUG=${GATEWAY_GODEBUG:-${GODEBUG:-}} "$dir/floodgate" serve --config bench/mavedb-bench.yaml \
			--store "redis://127.0.0.1:$redis_port" >"$dir/floodgate-redis.log" 2>&1 &
		pids+=($!) tpid[$t]="$! $redis_pid"
		;;
	redis_fixed_window)
		GOMAXPROCS=1 "$dir/fixedwindow" -listen "127.0.0.1:${port[$t]}" -upstream "http://127.0.0.1:$up_port" \
			-redis "127.0.0.1:$redis_port" >"$dir/fixedwindow.log" 2>&1 &
		pids+=($!) tpid[$t]="$! $redis_pid"
		;;
	nginx_limit_req)
		fill bench/nginx-limit-req.conf.tmpl "$dir/nginx.conf" "${port[$t]}"
		nginx -e "$dir/nginx-error.log" -p "$dir" -c "$dir/nginx.conf" &
		pids+=($!) tpid[$t]=$!
		;;
	haproxy)
		fill bench/haproxy.cfg.tmpl "$dir/haproxy.cfg" "${port[$t]}"
		haproxy -db -f "$dir/haproxy.cfg" >"$dir/haproxy.log" 2>&1 &
		pids+=($!) tpid[$t]=$!
		;;
	revproxy)
		GOMAXPROCS=1 "$dir/revproxy" -listen "127.0.0.1:${port[$t]}" -upstream "http://127.0.0.1:$up_port" \
			>"$dir/revproxy.log" 2>&1 &
		pids+=($!) tpid[$t]=$!
		;;
	fwdproxy)
		GOMAXPROCS=1 "$dir/fwdproxy" -listen "127.0.0.1:${port[$t]}" -upstream "http://127.0.0.1:$up_port" \
			>"$dir/fwdproxy.log" 2>&1 &
		pids+=($!) tpid[$t]=$!
		;;
	h1front)
		FLOODGATE_UPSTREAM=http://127.0.0.1:$up_port FLOODGATE_TRUSTED_PROXIES= GOMAXPROCS=1 \
			"$dir/h1front" -listen "127.0.0.1:${port[$t]}" -config bench/mavedb-bench.yaml >"$dir/h1front.log" 2>&1 &
		pids+=($!) tpid[$t]=$!
		;;
	relay)
		GOMAXPROCS=1 "$dir/relay" -listen "127.0.0.1:${port[$t]}" -upstream "127.0.0.1:$up_port" \
			>"$dir/relay.log" 2>&1 &
		pids+=($!) tpid[$t]=$!
		;;
	relay_raw)
		GOMAXPROCS=1 "$dir/relay" -raw -listen "127.0.0.1:${port[$t]}" -upstream "127.0.0.1:$up_port" \
			>"$dir/relay-raw.log" 2>&1 &
		pids+=($!) tpid[$t]=$!
		;;
	*)
		echo "bench/gateway.sh: unknown target $t" >&2
		exit 2
		;;
	esac
done
for t in "${targets[@]}"; do
	wait_up "${port[$t]}"
done

declare -A rps p50 p99 dp99 bad cpu_u cpu_s lcpu
echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# stolen prints "STEAL TOTAL", the machine's CPU time (ticks) taken by the
# hypervisor for others and its total, from /proc/stat: on a shared VM,
# stolen time is the other tenants' load, which moves every figure.
stolen() { awk '/^cpu / { t = 0; for (i = 2; i <= 9; i++) t += $i; print $9, t }' /proc/stat; }
read -r steal0 total0 <<<"$(stolen)"
say_stolen() {
	local steal1 total1 share
	read -r steal1 total1 <<<"$(stolen)"
	share=$(awk -v s=$((steal1 - steal0)) -v t=$((total1 - total0)) 'BEGIN { if (t > 0) printf "%.1f", 100 * s / t; else print 0 }')
	echo
	echo "CPU time stolen by the hypervisor during the run: $share % (other tenants' load; above 1 %, read this run's figures with care)"
}
if [ -n "${GATEWAY_GODEBUG:-}" ]; then
	echo "# floodgate runs with GODEBUG=$GATEWAY_GODEBUG" >&2
fi
for r in $(seq "$rounds"); do
	for t in "${targets[@]}"; do
		# A short warm-up fills the keep-alive pools.
		wrk -t"$threads" -c"$conns" -d1s "http://127.0.0.1:${port[$t]}$path" >/dev/null
		# shellcheck disable=SC2086
		[ -n "${tpid[$t]:-}" ] && read -r u0 s0 <<<"$(cpu_ticks ${tpid[$t]})"
		out=$(wrk -t"$threads" -c"$conns" -d"$duration" "http://127.0.0.1:${port[$t]}$path")
		if [ -n "${tpid[$t]:-}" ]; then
			# CPU per request: steadier than throughput on a shared
			# machine, and it says where a target's time goes.
			# shellcheck disable=SC2086
			read -r u1 s1 <<<"$(cpu_ticks ${tpid[$t]})"
			nreq=$(awk '/requests in/ {print $1}' <<<"$out")
			cpu_u[$t]="${cpu_u[$t]:-} $(per_request $((u1 - u0)) "$nreq")"
			cpu_s[$t]="${cpu_s[$t]:-} $(per_request $((s1 - s0)) "$nreq")"
		fi
		v=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
		n=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' <<<"$out")
		rps[$t]="${rps[$t]:-} $v"
		bad[$t]=$((${bad[$t]:-0} + ${n:-0}))
		echo "round $r throughput $t: $v req/s${n:+, $n non-2xx}" >&2
	done
	for rate in "${rates[@]}"; do
		for t in "${targets[@]}"; do
			[ "${LATENCY:-1}" = 0 ] && break
			# shellcheck disable=SC2086
			[ -n "${tpid[$t]:-}" ] && read -r u0 s0 <<<"$(cpu_ticks ${tpid[$t]})"
			out=$("$dir/latency" -url "http://127.0.0.1:${port[$t]}$path" -rate "$rate" -duration "$lat_duration" -conns "$lat_conns")
			eval "$(tr ' ' '\n' <<<"$out" | sed -n 's/^\(n\|p50_us\|p99_us\|due_p99_us\|errors\)=\([0-9]*\)$/\1=\2/p')"
			k="$t@$rate"
			if [ -n "${tpid[$t]:-}" ]; then
				# CPU a request at this rate: the warm-up's requests
				# (latency's default 1 s) are in the CPU time too.
				# shellcheck disable=SC2086
				read -r u1 s1 <<<"$(cpu_ticks ${tpid[$t]})"
				lcpu[$k]="${lcpu[$k]:-} $(per_request $((u1 - u0 + s1 - s0)) $((n + rate)))"
			fi
			p50[$k]="${p50[$k]:-} $p50_us"
			p99[$k]="${p99[$k]:-} $p99_us"
			dp99[$k]="${dp99[$k]:-} $due_p99_us"
			bad[$t]=$((${bad[$t]:-0} + errors))
			echo "round $r latency $t at $rate/s: $out" >&2
		done
	done
done

ref=nginx_limit_req
med() { median ${rps[$1]}; }
echo
echo "Throughput: wrk -t$threads -c$conns -d$duration, $rounds rounds, path $path"
echo
echo "| target | median req/s | min–max | ×direct | ×$ref | non-2xx |"
echo "|---|---:|---:|---:|---:|---:|"
for t in "${targets[@]}"; do
	m=$(med "$t")
	lo=$(printf '%s\n' ${rps[$t]} | sort -g | head -1)
	hi=$(printf '%s\n' ${rps[$t]} | sort -g | tail -1)
	d=-; [ -n "${rps[direct]:-}" ] && d=$(ratio "$m" "$(med direct)")
	n=-; [ -n "${rps[$ref]:-}" ] && n=$(ratio "$m" "$(med $ref)")
	printf '| %s | %.0f | %.0f–%.0f | %s | %s | %s |\n' "$t" "$m" "$lo" "$hi" "$d" "$n" "${bad[$t]}"
done
echo
echo "CPU per request during the throughput runs (medians, µs of the target's process and its children)"
echo
echo "| target | user | system | total | ×$ref |"
echo "|---|---:|---:|---:|---:|"
ref_cpu=
if [ -n "${cpu_u[$ref]:-}" ]; then
	ref_cpu=$(awk -v a="$(median ${cpu_u[$ref]})" -v b="$(median ${cpu_s[$ref]})" 'BEGIN {print a + b}')
fi
for t in "${targets[@]}"; do
	[ -n "${cpu_u[$t]:-}" ] || continue
	a=$(median ${cpu_u[$t]})
	b=$(median ${cpu_s[$t]})
	tot=$(awk -v a="$a" -v b="$b" 'BEGIN {print a + b}')
	x=-; [ -n "$ref_cpu" ] && x=$(ratio "$tot" "$ref_cpu")
	printf '| %s | %.1f | %.1f | %.1f | %s |\n' "$t" "$a" "$b" "$tot" "$x"
done
if [ -n "${rps[floodgate]:-}" ] && [ -n "${rps[$ref]:-}" ]; then
	# The rounds' own ratios (each round runs the two a few seconds
	# apart) and the CPU ratio, which moves less on a shared machine.
	# shellcheck disable=SC2086
	per_round=$(paste -d' ' <(printf '%s\n' ${rps[floodgate]}) <(printf '%s\n' ${rps[$ref]}) |
		awk '$2 > 0 {printf "%s%.2f", sep, $1 / $2; sep = ", "}')
	cpu=
	if [ -n "$ref_cpu" ] && [ -n "${cpu_u[floodgate]:-}" ]; then
		cpu="; CPU a request $(ratio "$(awk -v a="$(median ${cpu_u[floodgate]})" -v b="$(median ${cpu_s[floodgate]})" 'BEGIN {print a + b}')" "$ref_cpu")×"
	fi
	echo
	echo "floodgate/$ref = $(ratio "$(med floodgate)" "$(med $ref)") (rounds: $per_round$cpu)"
fi
for t in floodgate_redis; do
	[ -n "${rps[$t]:-}" ] || continue
	for peer in redis_fixed_window $ref; do
		[ -n "${rps[$peer]:-}" ] || continue
		note=
		[ "$peer" = "$ref" ] && note=", which counts in its own memory: no shared store"
		# shellcheck disable=SC2086
		per_round=$(paste -d' ' <(printf '%s\n' ${rps[$t]}) <(printf '%s\n' ${rps[$peer]}) |
			awk '$2 > 0 {printf "%s%.2f", sep, $1 / $2; sep = ", "}')
		cpu=
		if [ -n "${cpu_u[$peer]:-}" ] && [ -n "${cpu_u[$t]:-}" ]; then
			cpu="; CPU a request $(ratio "$(awk -v a="$(median ${cpu_u[$t]})" -v b="$(median ${cpu_s[$t]})" 'BEGIN {print a + b}')" \
				"$(awk -v a="$(median ${cpu_u[$peer]})" -v b="$(median ${cpu_s[$peer]})" 'BEGIN {print a + b}')")×"
		fi
		echo "$t/$peer = $(ratio "$(med $t)" "$(med $peer)") (rounds: $per_round$cpu$note)"
	done
done
if [ "${LATENCY:-1}" = 0 ]; then
	say_stolen
	exit 0
fi
summary=()
for rate in "${rates[@]}"; do
	echo
	echo "Latency: $rate req/s open loop for $lat_duration over at most $lat_conns connections, $rounds rounds"
	echo "(medians, µs; p50/p99 from when sent, due p99 from when due: see bench/latency)"
	echo
	echo "| target | p50 | p99 | p50 added | p99 added | due p99 | due p99 added | CPU a request (µs) |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|"
	declare -A added=()
	for t in "${targets[@]}"; do
		k="$t@$rate"
		a=$(median ${p50[$k]})
		b=$(median ${p99[$k]})
		c=$(median ${dp99[$k]})
		da=-; db=-; dc=-
		if [ -n "${p50[direct@$rate]:-}" ]; then
			da=$((a - $(median ${p50[direct@$rate]})))
			db=$((b - $(median ${p99[direct@$rate]})))
			dc=$((c - $(median ${dp99[direct@$rate]})))
		fi
		added[$t]=$db
		lc=-
		[ -n "${lcpu[$k]:-}" ] && lc=$(median ${lcpu[$k]})
		echo "| $t | $a | $b | $da | $db | $c | $dc | $lc |"
	done
	if [ -n "${added[floodgate]:-}" ] && [ -n "${added[$ref]:-}" ] && [ "${added[floodgate]}" != - ]; then
		c1=$(median ${lcpu[floodgate@$rate]:-0}) c2=$(median ${lcpu[$ref@$rate]:-0})
		summary+=("p99 added at $rate/s: floodgate ${added[floodgate]} µs, $ref ${added[$ref]} µs (CPU a request $c1 / $c2 µs = $(ratio "$c1" "$c2")×)")
	fi
done
if [ ${#summary[@]} -gt 0 ]; then
	echo
	printf '%s\n' "${summary[@]}"
fi
say_stolen
