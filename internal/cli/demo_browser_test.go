package cli

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/browsertest"
	"github.com/floodgate/floodgate/internal/testnet"
)

// TestDemoInChromium: the demo page in a real browser, with nothing beyond
// loopback reachable, searches through the gateway on load (the session
// cookie floodgate set, the frontend's credentials added) and shows the
// results.
func TestDemoInChromium(t *testing.T) {
	browsertest.Path(t) // before starting anything: no browser, no test
	pub, adm := testnet.FreeAddr(t), testnet.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stderr testnet.Buffer
	env := environ{lookup: func(string) (string, bool) { return "", false }, stdout: &testnet.Buffer{}, stderr: &stderr}
	done := make(chan int, 1)
	go func() { done <- run1(ctx, env, []string{"demo", "--listen", pub, "--admin-listen", adm}) }()
	defer func() {
		cancel()
		<-done
	}()
	waitFor(t, "http://"+adm+"/healthz")

	// The results come from the page's script: the served page has none.
	resp, err := http.Get("http://" + pub + "/search?q=cat&type=image")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(served), "Ginger cat") {
		t.Fatal("the served page already holds the results: the browser check below would prove nothing")
	}

	dom := browsertest.Run(t, t.TempDir(), "--virtual-time-budget=10000", "--dump-dom", "http://"+pub+"/search?q=cat&type=image")
	if !strings.Contains(dom, "Ginger cat") || strings.Count(dom, "<li") < 2 {
		t.Errorf("the page shows no results for \"cat\":\n%.3000s\n\ngateway log:\n%.2000s", dom, stderr.String())
	}
}
