package scaleout

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/ratelimit"
)

// A small trace: six clients with 1, 3, 5, 8, 12 and 20 requests,
// interleaved, in Apache's combined format.
func writeTrace(t *testing.T) (string, map[string]int) {
	t.Helper()
	counts := map[string]int{"10.0.0.1": 1, "10.0.0.2": 3, "10.0.0.3": 5, "10.0.0.4": 8, "10.0.0.5": 12, "10.0.0.6": 20}
	left := map[string]int{}
	for c, n := range counts {
		left[c] = n
	}
	var b strings.Builder
	for sec := 0; len(left) > 0; sec++ {
		for _, c := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"} {
			if left[c] == 0 {
				delete(left, c)
				continue
			}
			left[c]--
			fmt.Fprintf(&b, "%s - - [17/May/2015:10:05:%02d +0000] \"GET /a HTTP/1.1\" 200 10 \"-\" \"curl/8.0\"\n", c, sec%60)
		}
	}
	name := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return name, counts
}

var five = ratelimit.Limit{Count: 5, Window: time.Hour, Algorithm: ratelimit.GCRA}

// TestRunExact holds the simulation to its claims on a trace small
// enough to count by hand: the exact count is Σ min(requests, 5); replicas
// sharing one real Redis admit exactly that, one replica or four; four
// replicas counting each for itself admit what each alone would, which
// the test counts by dealing the trace as Run deals it.
func TestRunExact(t *testing.T) {
	name, counts := writeTrace(t)
	tr, err := ReadTrace(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantExact := 0
	for _, n := range counts {
		wantExact += min(n, 5)
	}
	if len(tr.Clients) != 49 || tr.Distinct != 6 || wantExact != 24 {
		t.Fatalf("trace: %d requests from %d clients, exact %d; want 49 from 6, 24", len(tr.Clients), tr.Distinct, wantExact)
	}

	srv := redistest.Start(t)
	ctx := context.Background()
	for i, c := range []Config{
		{Topology: Single, Addrs: []string{srv.Addr()}, Replicas: 1},
		{Topology: Single, Addrs: []string{srv.Addr()}, Replicas: 4},
		{Topology: Local, Replicas: 1},
	} {
		c.Limit, c.Rate, c.KeyPrefix = five, 2000, "t"+strconv.Itoa(i)+":"
		c.Timeout = 10 * time.Second // a slow machine must not turn into store errors
		res, err := Run(ctx, c, tr)
		if err != nil {
			t.Fatal(err)
		}
		if res.Exact != wantExact || res.Admitted != wantExact || res.Decided != wantExact || res.StoreErrors != 0 {
			t.Errorf("%v, %d replicas: exact %d, admitted %d, decided %d, %d store errors; want %d, all admitted by the store",
				c.Topology, c.Replicas, res.Exact, res.Admitted, res.Decided, res.StoreErrors, wantExact)
		}
		if c.Topology == Single && (res.Takes != 49 || res.RoundTrips == 0 || res.RoundTrips+res.CacheHits > res.Takes) {
			t.Errorf("%d replicas: %d takes, %d round trips, %d cache hits; want 49 takes, at most one trip or cache hit each",
				c.Replicas, res.Takes, res.RoundTrips, res.CacheHits)
		}
	}

	// Four replicas, each counting alone: replica i%4 sees request i.
	seen := map[[2]string]int{}
	wantLocal := 0
	for i, c := range tr.Clients {
		k := [2]string{strconv.Itoa(i % 4), c}
		if seen[k]++; seen[k] <= 5 {
			wantLocal++
		}
	}
	res, err := Run(ctx, Config{Topology: Local, Replicas: 4, Limit: five, Rate: 2000}, tr)
	if err != nil {
		t.Fatal(err)
	}
	if res.Admitted != wantLocal || wantLocal <= wantExact {
		t.Errorf("4 replicas in memory: admitted %d, want %d (more than the exact %d)", res.Admitted, wantLocal, wantExact)
	}
}

// TestRunFault: a single Redis killed half-way fails the decisions after
// it, which fail open admits and fail closed refuses.
func TestRunFault(t *testing.T) {
	name, _ := writeTrace(t)
	tr, err := ReadTrace(name, 0)
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	res, err := Run(context.Background(), Config{
		Topology: Single, Addrs: []string{srv.Addr()}, Replicas: 2, Limit: five, Rate: 2000,
		Timeout: 10 * time.Second, Fault: srv.Kill,
	}, tr)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing after the kill reaches Redis, and every decision of the
	// second half asks it: no client passes 5 requests in the first 24
	// (four of each at most), so no refusal is cached before the kill.
	// The connection is refused at once: no wait for the timeout.
	if res.StoreErrors < len(tr.Clients)-len(tr.Clients)/2 || res.Admitted != res.Decided+res.StoreErrors || res.Decided > res.Exact {
		t.Errorf("admitted %d, decided %d, %d store errors, exact %d: want the second half's %d failed, admitted under fail open",
			res.Admitted, res.Decided, res.StoreErrors, res.Exact, len(tr.Clients)-len(tr.Clients)/2)
	}
}

// Flags of TestScaleOut, which bench/scaleout.sh runs.
var (
	traceFlag    = flag.String("trace", "", "TestScaleOut: the log to replay (any format floodgate baseline reads); empty skips the test")
	maxFlag      = flag.Int("max", 0, "TestScaleOut: replay at most this many requests of the trace (0: all)")
	rateFlag     = flag.Float64("rate", 5000, "TestScaleOut: requests per second sent, over all replicas")
	replicasFlag = flag.String("replicas", "1,2,4,8", "TestScaleOut: the replica counts")
	faultReps    = flag.Int("fault-replicas", 4, "TestScaleOut: the replica count of the runs that stop a node; 0: none")
	limitFlag    = flag.String("limit", "20/1h", "TestScaleOut: the rule's limit")
	algFlag      = flag.String("algorithm", "gcra", "TestScaleOut: the rule's algorithm")
	workersFlag  = flag.Int("workers", 16, "TestScaleOut: concurrent decisions per replica")
)

// TestScaleOut replays -trace through 1, 2, 4 and 8 replicas counting in
// memory, in one Redis server and in a three-node Redis Cluster, then
// stops a node half-way through with -fault-replicas replicas, and prints
// the table of docs/scaling.md. Without -trace it is skipped; see
// bench/scaleout.sh. It fails if replicas sharing Redis admit other than
// the exact count in a run where no decision failed.
func TestScaleOut(t *testing.T) {
	if *traceFlag == "" {
		t.Skip("no -trace: the scale-out table is made by bench/scaleout.sh")
	}
	tr, err := ReadTrace(*traceFlag, *maxFlag)
	if err != nil {
		t.Fatal(err)
	}
	alg, err := ratelimit.ParseAlgorithm(*algFlag)
	if err != nil {
		t.Fatal(err)
	}
	limit, err := ratelimit.ParseLimitAs(*limitFlag, alg)
	if err != nil {
		t.Fatal(err)
	}
	var replicas []int
	for _, f := range strings.Split(*replicasFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("-replicas %q: %q is not a positive number", *replicasFlag, f)
		}
		replicas = append(replicas, n)
	}

	single := redistest.Start(t)
	cluster := redistest.StartCluster(t)
	fmt.Printf("trace %s: %d requests from %d clients; rule per client, %s %s; %.0f requests/s over all replicas, %d workers each; GOMAXPROCS %d\n",
		filepath.Base(*traceFlag), len(tr.Clients), tr.Distinct, limit, alg, *rateFlag, *workersFlag, runtime.GOMAXPROCS(0))
	fmt.Printf("%-26s %5s %8s %8s %6s %8s %6s %6s %11s %6s %6s %8s %6s %6s  %s\n",
		"store", "nodes", "replicas", "requests", "exact", "admitted", "Δ", "errors", "fail_closed", "rt/dec", "cached", "redis_µs", "p50_µs", "p99_µs", "")

	run := 0
	do := func(top Topology, servers []*redistest.Server, n int, fault func(), note string) {
		t.Helper()
		run++
		var addrs []string
		for _, s := range servers {
			addrs = append(addrs, s.Addr())
		}
		cpu0, cpuOK := serverCPU(servers)
		res, err := Run(context.Background(), Config{
			Topology: top, Addrs: addrs, Replicas: n, Workers: *workersFlag, Rate: *rateFlag,
			Limit: limit, KeyPrefix: "sim" + strconv.Itoa(run) + ":", Fault: fault,
		}, tr)
		if err != nil {
			t.Fatal(err)
		}
		nodes := strconv.Itoa(len(addrs))
		rt, cached, cpu := "-", "-", "-"
		if top == Local {
			nodes = "-"
		} else if res.Takes > 0 {
			rt = fmt.Sprintf("%.2f", float64(res.RoundTrips)/float64(res.Takes))
			cached = fmt.Sprintf("%.2f", float64(res.CacheHits)/float64(res.Takes))
			if cpu1, ok := serverCPU(servers); ok && cpuOK && res.Takes > res.CacheHits {
				cpu = fmt.Sprintf("%.1f", (cpu1-cpu0).Seconds()*1e6/float64(res.Takes-res.CacheHits))
			}
		}
		fmt.Printf("%-26s %5s %8d %8d %6d %8d %+6d %6d %11d %6s %6s %8s %6d %6d  %s\n",
			top, nodes, n, res.Requests, res.Exact, res.Admitted, res.Admitted-res.Exact, res.StoreErrors,
			res.Decided, rt, cached, cpu, res.P50.Microseconds(), res.P99.Microseconds(), note)
		if top != Local && fault == nil && res.StoreErrors == 0 && res.Admitted != res.Exact {
			t.Errorf("%v, %d replicas: admitted %d with no store error, want the exact %d", top, n, res.Admitted, res.Exact)
		}
	}
	for _, n := range replicas {
		do(Local, nil, n, nil, "")
	}
	for _, n := range replicas {
		do(Single, []*redistest.Server{single}, n, nil, "")
	}
	for _, n := range replicas {
		do(Cluster, cluster.Nodes, n, nil, "")
	}
	if *faultReps == 0 {
		return
	}
	shards := []*redistest.Server{redistest.Start(t), redistest.Start(t), redistest.Start(t)}
	do(Sharded, shards, *faultReps, nil, "")
	do(Single, []*redistest.Server{single}, *faultReps, single.Kill, "the server killed half-way")
	do(Cluster, cluster.Nodes, *faultReps, cluster.Nodes[0].Kill, "one node of 3 killed half-way")
	do(Sharded, shards, *faultReps, shards[0].Kill, "one shard of 3 killed half-way")
}

// serverCPU returns the CPU time (user and system, INFO cpu) the servers
// have used, summed; false if one did not answer.
func serverCPU(servers []*redistest.Server) (time.Duration, bool) {
	var sum float64
	for _, s := range servers {
		info, err := s.Do("INFO", "cpu")
		if err != nil {
			return 0, false
		}
		for _, line := range strings.Split(info, "\r\n") {
			name, v, _ := strings.Cut(line, ":")
			if name == "used_cpu_sys" || name == "used_cpu_user" {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return 0, false
				}
				sum += f
			}
		}
	}
	return time.Duration(sum * float64(time.Second)), len(servers) > 0
}
