package redistest_test

import (
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/redistest"
)

func TestServerLifecycle(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	if got, err := s.Do("PING"); err != nil || got != "PONG" {
		t.Fatalf("Do(PING) = %q, %v, want PONG", got, err)
	}
	if _, err := s.Do("SET", "k", "v w"); err != nil {
		t.Fatalf("Do(SET): %v", err)
	}
	if got, err := s.Do("GET", "k"); err != nil || got != "v w" {
		t.Fatalf("Do(GET) = %q, %v, want %q", got, err, "v w")
	}
	if _, err := s.Do("NOSUCHCOMMAND"); err == nil {
		t.Errorf("Do(NOSUCHCOMMAND): no error")
	}
	port := s.Port()

	s.Kill()
	if s.Running() {
		t.Errorf("Running() after Kill = true")
	}
	if _, err := s.Do("PING"); err == nil {
		t.Errorf("Do(PING) after Kill: no error")
	}
	s.Restart()
	if s.Port() != port {
		t.Errorf("Port() after Restart = %d, want %d", s.Port(), port)
	}
	if got, err := s.Do("GET", "k"); err != nil || got != "" {
		t.Errorf("Do(GET) after Kill and Restart = %q, %v, want a nil reply (nothing persisted)", got, err)
	}

	s.Stop()
	s.Restart()
	if got, err := s.Do("PING"); err != nil || got != "PONG" {
		t.Errorf("Do(PING) after Stop and Restart = %q, %v, want PONG", got, err)
	}
}

func TestServerArgs(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t, "--maxmemory", "12mb")
	got, err := s.Do("CONFIG", "GET", "maxmemory")
	if err != nil || got != "maxmemory\n12582912" {
		t.Errorf("CONFIG GET maxmemory = %q, %v, want maxmemory\\n12582912", got, err)
	}
}

func TestCluster(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	if len(c.Nodes) != 3 {
		t.Fatalf("%d nodes, want 3", len(c.Nodes))
	}
	if !strings.HasPrefix(c.URL(), "redis://127.0.0.1:") || strings.Count(c.URL(), ",") != 2 {
		t.Errorf("URL() = %q, want redis://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3", c.URL())
	}
	// Every node serves some slots: the cluster was created across all.
	for _, n := range c.Nodes {
		myself, err := n.Do("CLUSTER", "MYID")
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := n.Do("CLUSTER", "NODES")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(nodes, "\n") {
			if strings.HasPrefix(line, myself) && len(strings.Fields(line)) < 9 {
				t.Errorf("node %s serves no slots: %s", n.Addr(), line)
			}
		}
	}
	// A key lives on exactly one node; the others redirect.
	slot, err := c.Nodes[0].Do("CLUSTER", "KEYSLOT", "{tag}a")
	if err != nil {
		t.Fatal(err)
	}
	if slot2, _ := c.Nodes[0].Do("CLUSTER", "KEYSLOT", "{tag}b"); slot2 != slot {
		t.Errorf("KEYSLOT {tag}a = %s, {tag}b = %s, want equal", slot, slot2)
	}
	owners := 0
	for _, n := range c.Nodes {
		if _, err := n.Do("SET", "{tag}a", "1"); err == nil {
			owners++
		} else if !strings.HasPrefix(err.Error(), "MOVED") {
			t.Errorf("SET on %s: %v, want OK or MOVED", n.Addr(), err)
		}
	}
	if owners != 1 {
		t.Errorf("%d nodes accepted SET {tag}a, want 1", owners)
	}
}
