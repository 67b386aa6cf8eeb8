package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromiumPath finds a headless browser, or skips only when told to.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("FLOODGATE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("FLOODGATE_SKIP_BROWSER") == "1" {
		t.Skip("chromium is not installed and FLOODGATE_SKIP_BROWSER=1")
	}
	t.Fatal("chromium is not installed: apt-get install -y chromium, or FLOODGATE_SKIP_BROWSER=1 to skip")
	return ""
}

// TestDemoInChromium: the demo page in a real browser, with nothing beyond
// loopback reachable, searches through the gateway on load (the session
// cookie floodgate set, the frontend's credentials added) and shows the
// results.
func TestDemoInChromium(t *testing.T) {
	browser := chromiumPath(t)
	pub, adm := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stderr lockedBuffer
	env := environ{lookup: func(string) (string, bool) { return "", false }, stdout: &lockedBuffer{}, stderr: &stderr}
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

	dir := t.TempDir()
	cctx, ccancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer ccancel()
	cmd := exec.CommandContext(cctx, browser,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--mute-audio",
		"--user-data-dir="+filepath.Join(dir, "profile"),
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
		"--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>;127.0.0.1",
		"--virtual-time-budget=10000", "--dump-dom", "http://"+pub+"/search?q=cat&type=image")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, errb.String())
	}
	dom := out.String()
	if !strings.Contains(dom, "Ginger cat") || strings.Count(dom, "<li") < 2 {
		t.Errorf("the page shows no results for \"cat\":\n%.3000s\n\ngateway log:\n%.2000s", dom, stderr.String())
	}
}
