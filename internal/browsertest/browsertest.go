// Package browsertest runs headless Chromium for tests that check a page
// as a browser renders it (the dashboard, the replay report, the demo),
// with nothing beyond loopback reachable: every host name but 127.0.0.1
// fails to resolve, and any other address goes to a proxy that is not
// there.
package browsertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Path returns the browser to run: $FLOODGATE_CHROMIUM, or the first of
// chromium, chromium-browser, google-chrome, google-chrome-stable on
// PATH. Without one the test fails (scripts/test installs Debian's
// chromium). FLOODGATE_SKIP_BROWSER=1 skips the test, browser or not
// (scripts/test --quick sets it).
func Path(t testing.TB) string {
	t.Helper()
	if os.Getenv("FLOODGATE_SKIP_BROWSER") == "1" {
		t.Skip("FLOODGATE_SKIP_BROWSER=1: skipping the browser check")
	}
	if p := os.Getenv("FLOODGATE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
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
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, append(flags(dir), args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", browser, err, errb.String())
	}
	return out.String()
}

// flags are the browser's flags for a fresh profile under dir, headless
// and loopback only.
func flags(dir string) []string {
	return []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--disable-dev-shm-usage", "--mute-audio",
		"--hide-scrollbars", "--user-data-dir=" + filepath.Join(dir, "profile"),
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
		"--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>;127.0.0.1",
	}
}

// A Page is one tab of a headless Chromium driven over the DevTools
// protocol (on a pipe, so no port is opened), for tests that must act in
// the page (fill a form, click, run a script that measures the layout)
// rather than read what it rendered. Its methods fail the test on error.
type Page struct {
	t       testing.TB
	cmd     *exec.Cmd
	in      *os.File // the browser reads commands here (its fd 3)
	out     *bufio.Reader
	session string
	next    int
}

// Open starts the browser as Run does, with a viewport width×height CSS
// pixels, and opens a blank tab. The browser stops when the test ends.
func Open(t testing.TB, dir string, width, height int) *Page {
	t.Helper()
	browser := Path(t)
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, browser, append(flags(dir), "--remote-debugging-pipe",
		fmt.Sprintf("--window-size=%d,%d", width, height), "--force-device-scale-factor=1", "about:blank")...)
	cmd.ExtraFiles = []*os.File{cmdR, outW} // fds 3 and 4
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("%s: %v", browser, err)
	}
	cmdR.Close()
	outW.Close()
	p := &Page{t: t, cmd: cmd, in: cmdW, out: bufio.NewReader(outR)}
	t.Cleanup(func() {
		cmdW.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		outR.Close()
		cancel()
	})
	var target struct {
		TargetID string `json:"targetId"`
	}
	p.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	p.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	p.session = attached.SessionID
	p.call(p.session, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	return p
}

// call sends one command and waits for its answer, skipping events.
func (p *Page) call(session, method string, params any, result any) {
	p.t.Helper()
	if msg := p.try(session, method, params, result); msg != "" {
		p.t.Fatalf("browser: %s: %s", method, msg)
	}
}

// navigatedAway is the browser's error for an evaluation whose page
// went away under it: a script that submitted a form or followed a link.
const navigatedAway = "Inspected target navigated or closed"

// try is call that returns the browser's error message instead of
// failing the test; a failure to talk to the browser still fails it.
func (p *Page) try(session, method string, params any, result any) (errMsg string) {
	p.t.Helper()
	p.next++
	id := p.next
	msg, err := json.Marshal(map[string]any{"id": id, "sessionId": session, "method": method, "params": params})
	if err != nil {
		p.t.Fatal(err)
	}
	if session == "" {
		msg, _ = json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	}
	if _, err := p.in.Write(append(msg, 0)); err != nil {
		p.t.Fatalf("browser: %s: %v", method, err)
	}
	for {
		line, err := p.out.ReadBytes(0)
		if err != nil {
			p.t.Fatalf("browser: %s: no answer: %v", method, err)
		}
		var ans struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line[:len(line)-1], &ans); err != nil {
			p.t.Fatalf("browser: %s: %v", method, err)
		}
		if ans.ID != id {
			continue // an event, or an answer nobody waits for
		}
		if ans.Error != nil {
			return ans.Error.Message
		}
		if result != nil {
			if err := json.Unmarshal(ans.Result, result); err != nil {
				p.t.Fatalf("browser: %s: %v", method, err)
			}
		}
		return ""
	}
}

// Navigate loads url and waits until its document has loaded.
func (p *Page) Navigate(url string) {
	p.t.Helper()
	p.call(p.session, "Page.navigate", map[string]any{"url": url}, nil)
	p.Wait(fmt.Sprintf("location.href === %q && document.readyState === 'complete'", url))
}

// Eval runs the JavaScript expression expr in the page (awaiting it if it
// is a promise) and stores its JSON value in v (nil: ignore it). The
// page's Content-Security-Policy does not apply to it. An expression whose
// value is ignored may load another page (submit a form, click a link):
// the page going away under it is then what was asked for.
func (p *Page) Eval(expr string, v any) {
	p.t.Helper()
	if !p.eval(expr, v) && v != nil {
		p.t.Fatalf("browser: %s: %s", expr, navigatedAway)
	}
}

// eval is Eval that reports false, instead of failing, when the page went
// away during the evaluation.
func (p *Page) eval(expr string, v any) bool {
	p.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	switch msg := p.try(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res); msg {
	case "":
	case navigatedAway:
		return false
	default:
		p.t.Fatalf("browser: Runtime.evaluate: %s", msg)
	}
	if res.Exception != nil {
		p.t.Fatalf("browser: %s: %s %s", expr, res.Exception.Text, res.Exception.Exception.Description)
	}
	if v != nil && len(res.Result.Value) > 0 {
		if err := json.Unmarshal(res.Result.Value, v); err != nil {
			p.t.Fatalf("browser: %s: %v", expr, err)
		}
	}
	return true
}

// Wait polls the expression cond until it is true, for at most 30
// seconds. After an action that loads a page (a form submitted, a link
// followed) cond names what the new page shows; a script error counts as
// false, since the old page may be half gone.
func (p *Page) Wait(cond string) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		if p.eval("(() => { try { return !!("+cond+"); } catch (e) { return false; } })()", &ok) && ok {
			return
		}
		if time.Now().After(deadline) {
			var html string
			p.Eval("document.documentElement ? document.documentElement.outerHTML.slice(0, 3000) : ''", &html)
			p.t.Fatalf("browser: still not %s after 30 s; page:\n%s", cond, html)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
