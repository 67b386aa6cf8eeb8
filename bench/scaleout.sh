#!/usr/bin/env bash
# Scale-out by simulation (docs/scaling.md): a recorded trace replayed
# through 1, 2, 4 and 8 in-process replicas (bench/scaleout: each its own
# httplimit limiter and its own store connections, as separate gateway
# processes), one rule per client, counting
#
#   memory, per replica         each replica alone (floodgate's default store)
#   redis, one server           one redis-server shared by all
#   redis cluster               a three-node Redis Cluster (redis://h1,h2,h3),
#                               floodgate's way of spreading counters over nodes
#
# then, with FAULT_REPLICAS replicas, one node killed (SIGKILL) once half
# the trace is sent: the single server, one cluster node, and one of three
# independent servers with keys split by hash on the client side
# ("client-side shards", which floodgate does not offer: for comparison).
#
# Each row: the requests, what one exact counter admits for them
# (ratelimit/memory seeing them in the same order), what the replicas
# admitted under fail open (the default) and the difference, the
# decisions the store failed, what fail closed would have admitted, Redis
# round trips and over-limit cache hits per decision, and the p50/p99 of
# one decision's time (Rule.Take: the time a request's rule adds).
#
# Usage: bench/scaleout.sh
# Environment (defaults in brackets):
#   TRACE [internal/logs/testdata/elastic_apache_logs.log.gz]: any log
#     `floodgate baseline` reads (format detected)
#   MAX [0]: replay at most this many requests of it (0: all)
#   RATE [5000]: requests/s over all replicas, open loop
#   REPLICAS [1,2,4,8]  FAULT_REPLICAS [4] (0: no failure runs)
#   LIMIT [20/1h]  ALGORITHM [gcra]: the rule's limit; gcra 20/1h gives one
#     event back every 3 minutes, never during a run, so the exact count is
#     Σ min(requests, 20) over the clients whatever the interleaving
#   WORKERS [16]: concurrent decisions per replica
#
# Redis servers are started by the run (internal/redistest: redis-server
# on free loopback ports, nothing kept on disk) and killed when it ends.
# A run takes about 40 s (2 s a row at the defaults). Needs go,
# redis-server and redis-cli (Debian: redis-server redis-tools).
set -euo pipefail
cd "$(dirname "$0")/.."
me=bench/scaleout.sh

for c in go redis-server redis-cli; do
	command -v "$c" >/dev/null || {
		echo "$me: $c not found (apt-get install -y redis-server redis-tools)" >&2
		exit 1
	}
done
trace=$(realpath "${TRACE:-internal/logs/testdata/elastic_apache_logs.log.gz}")

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/scaleout.test" ./bench/scaleout

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo '+changes')"
echo "# $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), load average $(cut -d' ' -f1-3 /proc/loadavg); $(redis-server --version | cut -d' ' -f1-3)"
# The test binary runs in its package's directory, as go test would.
(cd bench/scaleout && "$dir/scaleout.test" -test.run '^TestScaleOut$' -test.count=1 \
	-trace "$trace" -max "${MAX:-0}" -rate "${RATE:-5000}" -replicas "${REPLICAS:-1,2,4,8}" \
	-fault-replicas "${FAULT_REPLICAS:-4}" -limit "${LIMIT:-20/1h}" -algorithm "${ALGORITHM:-gcra}" \
	-workers "${WORKERS:-16}")
