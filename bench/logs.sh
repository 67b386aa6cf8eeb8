#!/usr/bin/env bash
# Compares `floodgate baseline` with GoAccess 1.7 (Debian package
# goaccess) reading the same large common-format log, side by side, and
# prints lines per second for each and their ratio. The target
# (docs/benchmarks.md, "Targets"): floodgate reads at least 2× the lines per second of
# GoAccess.
#
# The log is the Elastic sample (../shared/data/elastic_apache_logs.log,
# 10,000 combined-format lines) cut to the common format and repeated with
# perturbed clients and days by bench/loggen, so that it has many distinct
# clients and spans many windows, like a real log: copy k shifts each
# client's first octet by k and every timestamp by k days.
#
# Usage: bench/logs.sh [LINES] [ROUNDS]
#   LINES   lines in the generated log (default 1500000)
#   ROUNDS  runs of each tool; the best is kept (default 3)
# Environment: FLOODGATE_DATA (default ../shared/data), BENCH_DIR (default
# a temporary directory, removed at the end).
#
# Both tools read the file from the page cache (it is read once first),
# on one core each: GOMAXPROCS=1 for floodgate; GoAccess 1.7 parses on one
# thread (its --jobs option came in 1.8). GoAccess parses every line and
# builds its panels; its report goes to /dev/null as JSON. floodgate
# baseline parses every line and computes per-client peaks over 1m and 5m
# windows, percentiles and suggestions; its JSON goes to /dev/null.
set -euo pipefail
cd "$(dirname "$0")/.."

lines=${1:-1500000}
rounds=${2:-3}
data=${FLOODGATE_DATA:-../shared/data}
src="$data/elastic_apache_logs.log"
[ -r "$src" ] || { echo "bench/logs.sh: cannot read $src (set FLOODGATE_DATA)" >&2; exit 1; }
command -v goaccess >/dev/null || { echo "bench/logs.sh: goaccess not installed (apt-get install goaccess)" >&2; exit 1; }

dir=${BENCH_DIR:-}
if [ -z "$dir" ]; then
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
fi
log="$dir/common.log"
bin="$dir/floodgate"

go build -o "$bin" ./cmd/floodgate

if [ ! -s "$log" ] || [ "$(wc -l <"$log")" -ne "$lines" ]; then
	go run ./bench/loggen -lines "$lines" "$src" >"$log"
fi
n=$(wc -l <"$log")
size=$(du -h "$log" | cut -f1)
cat "$log" >/dev/null # into the page cache

# best_seconds CMD… runs CMD $rounds times and prints the fastest wall time.
best_seconds() {
	local best="" t
	for _ in $(seq "$rounds"); do
		local start end
		start=$(date +%s.%N)
		"$@" >/dev/null 2>&1
		end=$(date +%s.%N)
		t=$(echo "$end - $start" | bc -l)
		if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
	done
	echo "$best"
}

echo "log: $log ($n lines, $size), best of $rounds runs each, one core each"
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $(goaccess --version | head -1); $(go version | cut -d' ' -f3)"

ga=$(best_seconds goaccess "$log" --log-format=COMMON --no-progress --no-global-config -o "$dir/goaccess.json")
fg=$(best_seconds env GOMAXPROCS=1 "$bin" baseline --json "$log")

printf '%-22s %10s %14s\n' tool seconds lines/s
printf '%-22s %10.3f %14.0f\n' "goaccess 1.7" "$ga" "$(echo "$n / $ga" | bc -l)"
printf '%-22s %10.3f %14.0f\n' "floodgate baseline" "$fg" "$(echo "$n / $fg" | bc -l)"
printf 'ratio (floodgate / goaccess lines/s): %.2f (target ≥ 2)\n' "$(echo "$ga / $fg" | bc -l)"
