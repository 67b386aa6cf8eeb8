// Package browsertest runs headless Chromium for tests that check a page
// as a browser renders it (the dashboard, the replay report, the demo),
// with nothing beyond loopback reachable: every host name but 127.0.0.1
// fails to resolve, and any other address goes to a proxy that is not
// there.
package browsertest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Path returns the browser to run: $FLOODGATE_CHROMIUM, or the first of
// chromium, chromium-browser, google-chrome, google-chrome-stable on
// PATH. Without one the test fails (scripts/test installs Debian's
// chromium), unless FLOODGATE_SKIP_BROWSER=1, which skips it.
func Path(t testing.TB) string {
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
		t.Skip("chromium is not installed and FLOODGATE_SKIP_BROWSER=1: skipping the browser check")
	}
	t.Fatal("chromium is not installed: install it (Debian: apt-get install -y chromium), name it with " +
		"FLOODGATE_CHROMIUM, or set FLOODGATE_SKIP_BROWSER=1 to skip the browser check")
	return ""
}

// Run runs the browser headless with a fresh profile under dir, loopback
// only, plus args (such as "--dump-dom", URL), for at most three minutes,
// and returns what it wrote to standard output.
func Run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	browser := Path(t)
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--disable-dev-shm-usage", "--mute-audio",
		"--hide-scrollbars", "--user-data-dir=" + filepath.Join(dir, "profile"),
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
		"--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>;127.0.0.1",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", browser, err, errb.String())
	}
	return out.String()
}
