package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
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

// TestDemoDashboardInChromium follows the demo's printed dashboard URL in
// a browser 1200 px wide: the sign-in form, a wrong token, the right one,
// the dashboard (its rules table within the window), the mode switch and
// sign-out.
func TestDemoDashboardInChromium(t *testing.T) {
	browsertest.Path(t)
	pub, adm := testnet.FreeAddr(t), testnet.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr testnet.Buffer
	env := environ{lookup: func(string) (string, bool) { return "", false }, stdout: &stdout, stderr: &stderr}
	done := make(chan int, 1)
	go func() { done <- run1(ctx, env, []string{"demo", "--listen", pub, "--admin-listen", adm}) }()
	defer func() {
		cancel()
		<-done
	}()
	waitFor(t, "http://"+adm+"/healthz")
	m := regexp.MustCompile(`dashboard +(http://\S+/admin/) .*\n +admin token +(\S+)`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("the demo prints no dashboard URL and token:\n%s", stdout.String())
	}
	dash, token := m[1], m[2]

	p := browsertest.Open(t, t.TempDir(), 1200, 900)
	p.Navigate(dash)
	p.Wait(`document.querySelector('form[action="/admin/signin"] input[type=password]')`)
	submit := func(value string) {
		t.Helper()
		p.Eval(fmt.Sprintf(`document.getElementById('token').value = %q; document.querySelector('form[action="/admin/signin"]').requestSubmit()`, value), nil)
	}
	submit("not-the-token")
	p.Wait(`document.getElementById('signin-message').textContent.includes('not the admin token')`)
	submit(token)
	p.Wait(`document.getElementById('rules-table')`)

	var cookie string
	p.Eval(`document.cookie`, &cookie)
	if strings.Contains(cookie, "floodgate_admin") {
		t.Errorf("the page's script can read the sign-in cookie (not HttpOnly): %q", cookie)
	}
	var fit struct{ Scroll, Client, TableRight, Window float64 }
	p.Eval(`(() => { const d = document.documentElement;
	  return {Scroll: d.scrollWidth, Client: d.clientWidth, TableRight: document.getElementById('rules-table').getBoundingClientRect().right, Window: innerWidth}; })()`, &fit)
	t.Logf("at 1200 px: %+v", fit)
	if fit.Scroll > fit.Client || fit.TableRight > fit.Window {
		t.Errorf("at 1200 px the page scrolls sideways: scrollWidth %v > clientWidth %v, or the rules table ends at %v of %v",
			fit.Scroll, fit.Client, fit.TableRight, fit.Window)
	}

	// The switch: PUT /admin/mode from the page, with its CSRF token.
	p.Wait(`!document.getElementById('mode-switch').hidden`)
	p.Eval(`document.querySelector('#mode-switch button').click()`, nil)
	p.Wait(`document.getElementById('mode').dataset.mode === 'log-only'`)
	req, _ := http.NewRequest("GET", "http://"+adm+"/admin/mode", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "log-only") {
		t.Errorf("after the page's switch GET /admin/mode = %s", body)
	}

	p.Eval(`document.querySelector('#signout button').click()`, nil)
	p.Wait(`document.querySelector('form[action="/admin/signin"]')`)
	p.Navigate(dash)
	p.Wait(`document.querySelector('form[action="/admin/signin"]') && !document.getElementById('rules-table')`)
}

// TestDemoTooFastInChromium searches in the demo page until floodgate
// answers 429: the alert says so once, and its wait counts down by the
// page's own timer.
func TestDemoTooFastInChromium(t *testing.T) {
	browsertest.Path(t)
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

	p := browsertest.Open(t, t.TempDir(), 1000, 800)
	p.Navigate("http://" + pub + "/search?q=cat&type=image")
	p.Wait(`document.getElementById('results').children.length > 0`)
	// The page load and its search counted 2 of the demo's 10 a minute.
	var searched int
	for searched = 0; searched < 20; searched++ {
		var alert string
		p.Eval(`document.getElementById('alert').textContent`, &alert)
		if alert != "" {
			break
		}
		p.Eval(`document.getElementById('search-form').requestSubmit()`, nil)
		p.Wait(`document.getElementById('status').textContent !== 'Searching…'`)
	}
	var alert []string
	p.Eval(`[...document.querySelectorAll('#alert p')].map(p => p.textContent)`, &alert)
	text := strings.Join(alert, " ")
	if n := strings.Count(strings.ToLower(text), "search"); n != 1 || strings.Contains(text, "faster than a person") {
		t.Errorf("after %d searches the alert says it %d times: %q", searched, n, alert)
	}
	m := regexp.MustCompile(`try again in (\d+) seconds?\.`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("after %d searches the alert gives no wait: %q\ngateway log:\n%.2000s", searched, alert, stderr.String())
	}
	first, _ := strconv.Atoi(m[1])
	if first < 2 {
		t.Skipf("the wait is %d s: too short to see it count down", first) // a minute boundary; cannot be, with 60 s windows
	}
	// The page's timer, not a new answer, changes the number.
	p.Wait(fmt.Sprintf(`(() => { const m = document.getElementById('retry-countdown').textContent.match(/in (\d+) second/);
	  return m && +m[1] < %d; })()`, first))
	var again []string
	p.Eval(`[...document.querySelectorAll('#alert p')].map(p => p.textContent)`, &again)
	if len(again) != len(alert) || again[0] != alert[0] {
		t.Errorf("the alert changed from %q to %q: want only the wait to count down", alert, again)
	}
}
