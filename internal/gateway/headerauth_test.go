package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestHeaderCredential: an upstream with a fixed credential (auth.type:
// header) gets it on every request instead of the client's credentials,
// and the client never sees the upstream's cookies or challenges. When
// the upstream refuses floodgate's credential (401), the client, who did
// nothing wrong, gets 503 with Retry-After, not the upstream's 401.
func TestHeaderCredential(t *testing.T) {
	var valid atomic.Bool
	valid.Store(true)
	var sawClientAuth atomic.Bool
	c := newCostHarness(t, `
upstreams:
  api:
    url: "UPSTREAM"
    auth: {type: header, header_name: X-Api-Key, header_value: "floodgate-key-1"}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != "" {
			sawClientAuth.Store(true)
		}
		if !valid.Load() || r.Header.Get("X-Api-Key") != "floodgate-key-1" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"detail":"invalid key"}`)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "upstream", Value: "x"})
		io.WriteString(w, "ok")
	}))
	resp, body := c.do("GET", "/q", "203.0.113.1", "Authorization", "Bearer client-token", "Cookie", "session=client")
	if resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("with a valid credential: %d %q, want 200 ok", resp.StatusCode, body)
	}
	if sawClientAuth.Load() {
		t.Errorf("the upstream saw the client's Authorization or Cookie")
	}
	if resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("the client got the upstream's Set-Cookie")
	}

	valid.Store(false) // the API revoked floodgate's key
	resp, body = c.do("GET", "/q", "203.0.113.1")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("with the credential refused: %d, Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if strings.Contains(body, "invalid key") || resp.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("the upstream's refusal of floodgate's credential reached the client: %q", body)
	}
}

// TestCredentialedUpstreamKeepsAConnectionPerClient: an http upstream
// with floodgate's own credential is served by the lean forwarder, which
// can keep a connection to one client's requests: with connection_reuse
// per_client, one client's requests share one upstream connection, each
// with floodgate's credential and none of the client's. (Go's transport
// cannot keep a connection to one client, and would use one for each.)
func TestCredentialedUpstreamKeepsAConnectionPerClient(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]int{} // requests per upstream connection
	var sawClientAuth atomic.Bool
	c := newCostHarness(t, `
upstreams:
  api:
    url: "UPSTREAM"
    connection_reuse: per_client
    auth: {type: header, header_name: X-Api-Key, header_value: "floodgate-key-1"}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "floodgate-key-1" {
			sawClientAuth.Store(true)
		}
		mu.Lock()
		conns[r.RemoteAddr]++
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	for i := range 3 {
		resp, body := c.do("GET", "/q", "203.0.113.1", "Authorization", "Bearer client-token", "X-Api-Key", "client-key")
		if resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("request %d: %d %q, want 200 ok", i+1, resp.StatusCode, body)
		}
	}
	if sawClientAuth.Load() {
		t.Errorf("the upstream saw the client's credentials, or not floodgate's")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 1 {
		t.Errorf("one client's 3 requests came over %d upstream connections (%v), want 1", len(conns), conns)
	}
}

// TestCredentialedUpstreamCookiesNeverReachClient: an upstream with
// floodgate's own credential never gets its Set-Cookie or
// WWW-Authenticate to the client: not in an informational answer (103),
// not in the trailer section (declared or not), whether the request goes
// through the lean forwarder or, with Expect: 100-continue (which the
// client chooses), through the ReverseProxy it leaves such requests to.
func TestCredentialedUpstreamCookiesNeverReachClient(t *testing.T) {
	c := newCostHarness(t, `
upstreams:
  api:
    url: "UPSTREAM"
    auth: {type: header, header_name: X-Api-Key, header_value: "floodgate-key-1"}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.Header().Set("Set-Cookie", "csrftoken=early")
		w.Header().Set("WWW-Authenticate", `Basic realm="api"`)
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		w.Header().Set("Trailer", "Set-Cookie, X-Sum")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "ok")
		w.(http.Flusher).Flush()
		w.Header().Set("Set-Cookie", "csrftoken=declared")
		w.Header().Set(http.TrailerPrefix+"Www-Authenticate", `Basic realm="late"`)
		w.Header().Set("X-Sum", "42")
	}))
	for _, expect := range []bool{false, true} {
		var mu sync.Mutex
		var got []string
		note := func(where string, h http.Header) {
			mu.Lock()
			defer mu.Unlock()
			for _, k := range []string{"Set-Cookie", "Www-Authenticate"} {
				if v := h.Values(k); len(v) > 0 {
					got = append(got, fmt.Sprintf("%s %s: %q", where, k, v))
				}
			}
		}
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
				note(fmt.Sprint(code), http.Header(h))
				return nil
			},
		})
		req, _ := http.NewRequestWithContext(ctx, "POST", c.gw.URL+"/q", strings.NewReader("body"))
		req.Header.Set("X-Forwarded-For", "203.0.113.1")
		if expect {
			req.Header.Set("Expect", "100-continue")
		}
		resp, err := c.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		note("head", resp.Header)
		note("trailer", resp.Trailer)
		if resp.StatusCode != 200 || string(body) != "ok" || resp.Trailer.Get("X-Sum") != "42" {
			t.Errorf("Expect %v: %d %q, trailer %v; want 200 ok and X-Sum", expect, resp.StatusCode, body, resp.Trailer)
		}
		if len(got) > 0 {
			t.Errorf("Expect %v: the client got the upstream's %q", expect, got)
		}
	}
}

// TestCredentialNotEchoedToClient: a client's TRACE, which an upstream
// such as Apache httpd answers by echoing the request it received, does
// not give the client floodgate's credential: it is sent without it.
func TestCredentialNotEchoedToClient(t *testing.T) {
	c := newCostHarness(t, `
upstreams:
  api:
    url: "UPSTREAM"
    auth: {type: header, header_name: X-Api-Key, header_value: "floodgate-key-1"}
`, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "message/http")
		fmt.Fprintf(w, "%s %s HTTP/1.1\r\n", r.Method, r.RequestURI)
		r.Header.Write(w)
	}))
	resp, body := c.do("TRACE", "/q", "203.0.113.1")
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "TRACE /q") {
		t.Fatalf("TRACE: %d %q, want the upstream's echo", resp.StatusCode, body)
	}
	if strings.Contains(body, "floodgate-key-1") {
		t.Errorf("the client got floodgate's credential in the echo: %q", body)
	}
}
