package deploy

// The commands of docs/container.md that start floodgate to keep it
// running: long enough to stop, and somewhere to write temporary files.

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/config"
)

// TestContainerDocsRuns checks every detached run in docs/container.md:
// it gives floodgate longer than its drain to stop (podman and docker kill
// a container 10 s after SIGTERM unless told, while floodgate finishes
// the requests in flight for server.shutdown_grace), and a read-only one
// has a /tmp to write.
func TestContainerDocsRuns(t *testing.T) {
	doc := string(readFile(t, filepath.Join("..", "docs", "container.md")))
	// A command as written: its continuation lines joined.
	text := strings.ReplaceAll(doc, "\\\n", " ")
	grace, err := config.ParseTimeout(config.DefaultShutdownGrace)
	if err != nil {
		t.Fatal(err)
	}
	stop := regexp.MustCompile(`--stop-timeout[ =](\d+)`)
	run := regexp.MustCompile(`^(podman|docker) run\b`)
	detached := regexp.MustCompile(`\s-d\b|--detach\b`)
	var runs int
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if !run.MatchString(line) || !detached.MatchString(line) {
			continue
		}
		runs++
		// The image has no /tmp, where a buffered request body beyond
		// server.request_buffer_bytes goes; --read-only forbids making it.
		if strings.Contains(line, "--read-only") && !strings.Contains(line, "--tmpfs /tmp") {
			t.Errorf("%q: --read-only without --tmpfs /tmp: a request body buffered to a temporary file is answered 500", line)
		}
		m := stop.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("%q: no --stop-timeout: the engine kills floodgate 10 s into its drain of %v", line, grace)
			continue
		}
		if n, _ := strconv.Atoi(m[1]); time.Duration(n)*time.Second <= grace {
			t.Errorf("%q: --stop-timeout %s, want more than server.shutdown_grace %v", line, m[1], grace)
		}
	}
	if runs == 0 {
		t.Error("docs/container.md has no detached podman or docker run")
	}
}
