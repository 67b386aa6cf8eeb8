package redistest

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A Cluster is a Redis Cluster of primaries without replicas, started by
// StartCluster. Its Nodes are ordinary Servers: Kill, Restart and Do work
// on each.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts a Redis Cluster of three primaries (no replicas) on
// free loopback ports, creates it with `redis-cli --cluster create …
// --cluster-replicas 0 --cluster-yes`, and waits until every node reports
// cluster_state:ok. serverArgs are more arguments for every node's
// redis-server. The nodes are killed when the test ends.
func StartCluster(t testing.TB, serverArgs ...string) *Cluster {
	t.Helper()
	const nodes = 3
	cli := binary(t, EnvCLI, "redis-cli")
	c := &Cluster{}
	for range nodes {
		// The cluster bus needs a port of its own; by default it is the
		// client port + 10000, which may be taken or out of range.
		c.Nodes = append(c.Nodes, Start(t, append([]string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000",
			"--cluster-port", strconv.Itoa(FreePort(t)),
		}, serverArgs...)...))
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.Command(cli, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redistest: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if err := c.WaitOK(); err != nil {
		t.Fatalf("redistest: %v\n%s", err, out)
	}
	return c
}

// Addrs returns the nodes' addresses, "127.0.0.1:PORT" each.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// URL returns the cluster's address as floodgate reads it:
// redis://HOST1:PORT1,HOST2:PORT2,HOST3:PORT3.
func (c *Cluster) URL() string { return "redis://" + strings.Join(c.Addrs(), ",") }

// WaitOK waits until every node reports cluster_state:ok and knows all
// the others, and returns an error if that takes longer than ReadyTimeout.
func (c *Cluster) WaitOK() error {
	deadline := time.Now().Add(ReadyTimeout)
	for {
		err := c.check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster not ready after %v: %v", ReadyTimeout, err)
		}
		time.Sleep(20 * time.Millisecond) // a poll interval, not an assertion
	}
}

func (c *Cluster) check() error {
	for _, n := range c.Nodes {
		info, err := n.Do("CLUSTER", "INFO")
		if err != nil {
			return fmt.Errorf("node %s: %v", n.Addr(), err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("node %s: cluster_state is not ok", n.Addr())
		}
		if !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(c.Nodes))+"\r\n") {
			return fmt.Errorf("node %s does not know all %d nodes yet", n.Addr(), len(c.Nodes))
		}
	}
	return nil
}
