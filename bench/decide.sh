#!/usr/bin/env bash
# Decisions for a proxy in front: nginx asking floodgate's decision
# listener (auth_request) against nginx deciding alone with limit_req
# (docs/benchmarks.md, "Decisions for a proxy in front"). One upstream
# (nginx answering a small JSON body, keep-alive on, one worker) and, in
# front of it:
#
#   direct                        the bare upstream
#   nginx_auth_request_floodgate  nginx (worker_processes 1) with docs/decide.md's
#                                 auth_request snippet, keep-alive to floodgate's
#                                 decision listener and to the upstream; floodgate is
#                                 GOMAXPROCS=1 floodgate serve --config bench/mavedb-bench.yaml
#                                 with FLOODGATE_DECIDE_LISTEN set (MaveDB's rule set,
#                                 limits ×1 000 000: every rule evaluated, nothing limited)
#   nginx_limit_req               nginx proxy_pass with two limit_req zones on
#                                 $binary_remote_addr, as in bench/gateway.sh
#
# wrk against each in turn, alternating, ROUNDS rounds; the table shows
# each one's median req/s, range, and ratios to the bare upstream and to
# nginx_limit_req; a second table gives each target's CPU time per request
# (user and system, from /proc) during those runs: for
# nginx_auth_request_floodgate, nginx's processes and floodgate's summed.
# The last line gives nginx+floodgate_decide/nginx_limit_req, with each
# round's ratio and the CPU ratio beside it. Any non-2xx answer is
# reported (none is expected: nothing may be limited), and the run fails if
# floodgate's metrics count fewer decisions than wrk counted requests
# through nginx (nginx would not have asked it for each).
#
# Usage: bench/decide.sh
# Environment (defaults in brackets):
#   ROUNDS [3]  DURATION wrk's -d [10s]  CONNS wrk's -c [32]  THREADS wrk's -t [1]
#   BENCH_PATH [/api/v1/score-sets/urn:mavedb:00000001-a-1]
#   PORT_BASE [18180]: nginx_auth_request_floodgate +0, upstream +1, nginx_limit_req +2,
#     floodgate's decision listener +3, its public listener +4 (not measured), admin +10
#     (away from bench/gateway.sh's 18080–18090, so the two never meet)
#   TARGETS ["direct nginx_auth_request_floodgate nginx_limit_req"]
#   KEEP_DIR: keep the temporary directory (logs, configs) and print its path
#
# Everything listens on 127.0.0.1 only; every process the script starts is
# stopped when it exits, however it exits. Needs nginx (nginx-light, which
# has auth_request), wrk and go; as root it installs the first two if
# missing.
set -euo pipefail
cd "$(dirname "$0")/.."
me=bench/decide.sh

rounds=${ROUNDS:-3}
duration=${DURATION:-10s}
conns=${CONNS:-32}
threads=${THREADS:-1}
path=${BENCH_PATH:-/api/v1/score-sets/urn:mavedb:00000001-a-1}
base=${PORT_BASE:-18180}
targets=(${TARGETS:-direct nginx_auth_request_floodgate nginx_limit_req})

up_port=$((base + 1))
declare -A port=(
	[nginx_auth_request_floodgate]=$base [direct]=$up_port [nginx_limit_req]=$((base + 2))
)
decide_port=$((base + 3))
gateway_port=$((base + 4))
admin_port=$((base + 10))


# bench/lib.sh: require_tools, require_free, the temporary directory and the processes
# cleaned up at exit, wait_up, median, cpu_ticks, per_request, ratio.
. bench/lib.sh
require_tools nginx:nginx-light wrk

# Every port the run uses must be free (require_free).
used=($up_port)
for t in "${targets[@]}"; do
	if [ -z "${port[$t]:-}" ]; then
		echo "bench/decide.sh: unknown target $t" >&2
		exit 2
	fi
	used+=("${port[$t]}")
	if [ "$t" = nginx_auth_request_floodgate ]; then
		used+=($decide_port $gateway_port $admin_port)
	fi
done
require_free "${used[@]}"

# fill TEMPLATE OUT PORT replaces @DIR@, @PORT@, @UPSTREAM_PORT@ and
# @DECIDE_PORT@.
fill() {
	sed -e "s|@DIR@|$dir|g" -e "s|@PORT@|$3|g" -e "s|@UPSTREAM_PORT@|$up_port|g" \
		-e "s|@DECIDE_PORT@|$decide_port|g" "$1" >"$2"
}

go build -o "$dir/floodgate" ./cmd/floodgate

fill bench/upstream-nginx.conf.tmpl "$dir/upstream.conf" "$up_port"
nginx -e "$dir/upstream-error.log" -p "$dir" -c "$dir/upstream.conf" &
pids+=($!)
wait_up "$up_port"

declare -A tpid # the processes of each target, space-separated (direct: none)
for t in "${targets[@]}"; do
	case $t in
	direct) ;;
	nginx_auth_request_floodgate)
		# nginx asks from 127.0.0.1, the client's address too: trusted, it
		# is passed over in X-Forwarded-For's walk, which then ends on it,
		# so every request counts under one key, as with limit_req.
		FLOODGATE_DECIDE_LISTEN=127.0.0.1:$decide_port FLOODGATE_DECIDE_PROTOCOL=nginx \
			FLOODGATE_LISTEN=127.0.0.1:$gateway_port FLOODGATE_ADMIN_LISTEN=127.0.0.1:$admin_port \
			FLOODGATE_UPSTREAM=http://127.0.0.1:$up_port FLOODGATE_TRUSTED_PROXIES=127.0.0.1 GOMAXPROCS=1 \
			"$dir/floodgate" serve --config bench/mavedb-bench.yaml >"$dir/floodgate.log" 2>&1 &
		pids+=($!) tpid[$t]=$! fgpid=$!
		fill bench/nginx-auth-request.conf.tmpl "$dir/nginx-auth.conf" "${port[$t]}"
		nginx -e "$dir/nginx-auth-error.log" -p "$dir" -c "$dir/nginx-auth.conf" &
		pids+=($!) tpid[$t]="${tpid[$t]} $!"
		;;
	nginx_limit_req)
		fill bench/nginx-limit-req.conf.tmpl "$dir/nginx.conf" "${port[$t]}"
		nginx -e "$dir/nginx-error.log" -p "$dir" -c "$dir/nginx.conf" &
		pids+=($!) tpid[$t]=$!
		;;
	esac
done
for t in "${targets[@]}"; do
	wait_up "${port[$t]}"
done

declare -A rps bad cpu_u cpu_s sent
echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq "$rounds"); do
	for t in "${targets[@]}"; do
		# A short warm-up fills the keep-alive pools.
		wrk -t"$threads" -c"$conns" -d1s "http://127.0.0.1:${port[$t]}$path" >/dev/null
		# shellcheck disable=SC2086
		[ -n "${tpid[$t]:-}" ] && read -r u0 s0 <<<"$(cpu_ticks ${tpid[$t]})"
		[ "$t" = nginx_auth_request_floodgate ] && read -r fu0 fs0 <<<"$(cpu_ticks "$fgpid")"
		out=$(wrk -t"$threads" -c"$conns" -d"$duration" "http://127.0.0.1:${port[$t]}$path")
		if [ -n "${tpid[$t]:-}" ]; then
			# shellcheck disable=SC2086
			read -r u1 s1 <<<"$(cpu_ticks ${tpid[$t]})"
			nreq=$(awk '/requests in/ {print $1}' <<<"$out")
			cpu_u[$t]="${cpu_u[$t]:-} $(per_request $((u1 - u0)) "$nreq")"
			cpu_s[$t]="${cpu_s[$t]:-} $(per_request $((s1 - s0)) "$nreq")"
		fi
		if [ "$t" = nginx_auth_request_floodgate ]; then
			# floodgate's share of the pair's.
			read -r fu1 fs1 <<<"$(cpu_ticks "$fgpid")"
			cpu_u[floodgate]="${cpu_u[floodgate]:-} $(per_request $((fu1 - fu0)) "$nreq")"
			cpu_s[floodgate]="${cpu_s[floodgate]:-} $(per_request $((fs1 - fs0)) "$nreq")"
		fi
		v=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
		n=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' <<<"$out")
		rps[$t]="${rps[$t]:-} $v"
		sent[$t]=$((${sent[$t]:-0} + $(awk '/requests in/ {print $1}' <<<"$out")))
		bad[$t]=$((${bad[$t]:-0} + ${n:-0}))
		echo "round $r throughput $t: $v req/s${n:+, $n non-2xx}" >&2
	done
done

ref=nginx_limit_req
fg=nginx_auth_request_floodgate
if [ -n "${rps[$fg]:-}" ]; then
	# Proof that nginx asked: floodgate's decisions (warm-ups included)
	# cover every request wrk counted through nginx.
	decided=$(curl -fsS "http://127.0.0.1:$admin_port/metrics" |
		awk '/^floodgate_requests_total\{/ && /listener="decide"/ {n += $NF} END {printf "%.0f", n}')
	echo "# floodgate's decision listener decided $decided requests; wrk counted ${sent[$fg]} through nginx (warm-ups not included)" >&2
	if [ "$decided" -lt "${sent[$fg]}" ]; then
		echo "bench/decide.sh: floodgate decided fewer requests than nginx answered: nginx did not ask it for each (logs in $dir)" >&2
		KEEP_DIR=1
		exit 1
	fi
fi
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
echo "CPU per request during the throughput runs (medians, µs of the target's processes and their children;"
echo "$fg: nginx's and floodgate's together, then floodgate's alone)"
echo
echo "| target | user | system | total | ×$ref |"
echo "|---|---:|---:|---:|---:|"
ref_cpu=
if [ -n "${cpu_u[$ref]:-}" ]; then
	ref_cpu=$(awk -v a="$(median ${cpu_u[$ref]})" -v b="$(median ${cpu_s[$ref]})" 'BEGIN {print a + b}')
fi
rows=()
for t in "${targets[@]}"; do
	rows+=("$t")
	[ "$t" = "$fg" ] && rows+=(floodgate)
done
for t in "${rows[@]}"; do
	[ -n "${cpu_u[$t]:-}" ] || continue
	a=$(median ${cpu_u[$t]})
	b=$(median ${cpu_s[$t]})
	tot=$(awk -v a="$a" -v b="$b" 'BEGIN {print a + b}')
	x=-; [ -n "$ref_cpu" ] && x=$(ratio "$tot" "$ref_cpu")
	name=$t; [ "$t" = floodgate ] && name="of which floodgate"
	printf '| %s | %.1f | %.1f | %.1f | %s |\n' "$name" "$a" "$b" "$tot" "$x"
done
if [ -n "${rps[$fg]:-}" ] && [ -n "${rps[$ref]:-}" ]; then
	# The rounds' own ratios (each round runs the two a few seconds
	# apart) and the CPU ratio, which moves less on a shared machine.
	# shellcheck disable=SC2086
	per_round=$(paste -d' ' <(printf '%s\n' ${rps[$fg]}) <(printf '%s\n' ${rps[$ref]}) |
		awk '$2 > 0 {printf "%s%.2f", sep, $1 / $2; sep = ", "}')
	cpu=
	if [ -n "$ref_cpu" ] && [ -n "${cpu_u[$fg]:-}" ]; then
		cpu="; CPU a request $(ratio "$(awk -v a="$(median ${cpu_u[$fg]})" -v b="$(median ${cpu_s[$fg]})" 'BEGIN {print a + b}')" "$ref_cpu")×"
	fi
	echo
	echo "nginx+floodgate_decide/$ref = $(ratio "$(med $fg)" "$(med $ref)") (rounds: $per_round$cpu)"
fi
