package forward

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fieldCredential is a Credential of one field, as internal/upstreamauth's
// are: values[0] is sent first, and a refusal of one is answered with the
// next, once.
type fieldCredential struct {
	name   string
	values []string
	extra  []string // more request fields it drops

	mu       sync.Mutex
	refusals []string // "value first" of each call of Refused
}

var errCredentialRefused = errors.New("test: credential refused")

func (c *fieldCredential) Fields() (request, response []string) {
	return append([]string{"Cookie", "Authorization", c.name}, c.extra...), []string{"Set-Cookie", "Www-Authenticate"}
}

func (c *fieldCredential) Authorize(*http.Request) (name, value string, err error) {
	return c.name, c.values[0], nil
}

func (c *fieldCredential) Refused(r *http.Request, value string, first bool) (string, error) {
	c.mu.Lock()
	c.refusals = append(c.refusals, fmt.Sprint(value, " ", first))
	c.mu.Unlock()
	if i := slices.Index(c.values, value); first && i >= 0 && i+1 < len(c.values) {
		return c.values[i+1], nil
	}
	return "", errCredentialRefused
}

func (c *fieldCredential) refused() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.refusals...)
}

// newCredentialReference is newReference with a credential: the
// ReverseProxy the Forwarder leaves upgrades and Expect to, and what
// internal/proxy runs for an https upstream.
func newCredentialReference(t testing.TB, target string, c Credential, el *errorLog) http.Handler {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{
		ConnectTimeout: DefaultConnectTimeout, ResponseHeaderTimeout: DefaultResponseHeaderTimeout,
		IdleTimeout: DefaultIdleTimeout, MaxIdleConns: DefaultMaxIdleConns, OnError: el.onError, Credential: c,
	}
	rp, tr := newReverseProxy(u, o, &net.Dialer{Timeout: o.ConnectTimeout})
	t.Cleanup(tr.CloseIdleConnections)
	return rp
}

// TestCredentialRequestLikeReverseProxy: the upstream sees floodgate's
// credential in place of the client's, from the Forwarder as from a
// ReverseProxy over Transport, even in a field the forwarding writes
// itself.
func TestCredentialRequestLikeReverseProxy(t *testing.T) {
	rec := &recorder{}
	up, _ := newUpstream(t, rec)
	const req = "GET /a HTTP/1.1\r\nHost: example.com\r\nUser-Agent: ua/1\r\nCookie: session=client\r\n" +
		"Authorization: Bearer client\r\nX-Api-Key: client-key\r\nX-Forwarded-For: 203.0.113.9\r\nForwarded: for=client\r\n\r\n"
	for _, name := range []string{"X-Api-Key", "Authorization", "User-Agent", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded"} {
		t.Run(name, func(t *testing.T) {
			c := &fieldCredential{name: name, values: []string{"floodgate-1"}}
			want := map[string]string{
				"Cookie": "", "Authorization": "", "X-Api-Key": "client-key", "User-Agent": "ua/1",
				"X-Forwarded-For": "203.0.113.9, 127.0.0.1", "X-Forwarded-Host": "example.com", "X-Forwarded-Proto": "http", "Forwarded": "",
			}
			want[name] = "floodgate-1"
			el := newErrorLog()
			var got [2]seen
			for i, h := range []http.Handler{newForwarder(t, up.URL, Options{Credential: c}, el), newCredentialReference(t, up.URL, c, el)} {
				res := rawDo(t, hostOf(front(t, h)), "GET", req)
				if res.Status != 200 {
					t.Fatalf("status %d, want 200; errors %v", res.Status, el.all())
				}
				s, n := rec.take()
				if n != 1 {
					t.Fatalf("upstream got %d requests, want 1", n)
				}
				got[i] = s
			}
			if d := cmp.Diff(got[0], got[1]); d != "" {
				t.Errorf("upstream saw (-forward +reverseproxy):\n%s", d)
			}
			for k, v := range want {
				if got := strings.Join(got[0].Header[k], ", "); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestCredentialFieldAliases: a field whose name differs from one the
// credential drops only in case or in '_' for '-' (X_Api_Key,
// x-api_key, Proxy_Authorization) does not reach the upstream either,
// from the Forwarder or from a ReverseProxy over Transport. Canonical
// names keep the underscore ("X_api_key"), but an upstream that names
// fields as CGI does (WSGI, Rack, PHP, Django's ASGI handler: both are
// HTTP_X_API_KEY) reads it as the field floodgate sets, or joins the two:
// the client's value would ride along with floodgate's credential.
func TestCredentialFieldAliases(t *testing.T) {
	rec := &recorder{}
	up, _ := newUpstream(t, rec)
	const req = "GET /a HTTP/1.1\r\nHost: example.com\r\nX_Api_Key: client\r\nx-api_key: client\r\nX_API-KEY: client\r\n" +
		"Proxy_Authorization: Basic client\r\nProxy-authorization_: kept\r\nX-Api-Keys: kept\r\nX-Trace_Id: kept\r\n\r\n"
	c := &fieldCredential{name: "X-Api-Key", values: []string{"floodgate-1"}}
	c.extra = []string{"Proxy-Authorization"}
	el := newErrorLog()
	for i, h := range []http.Handler{newForwarder(t, up.URL, Options{Credential: c}, el), newCredentialReference(t, up.URL, c, el)} {
		res := rawDo(t, hostOf(front(t, h)), "GET", req)
		s, n := rec.take()
		if res.Status != 200 || n != 1 {
			t.Fatalf("carrier %d: status %d, %d upstream requests; want 200, 1 (errors %v)", i, res.Status, n, el.all())
		}
		var kept []string
		for k, v := range s.Header {
			if strings.Contains(strings.Join(v, ""), "client") {
				t.Errorf("carrier %d: the upstream got the client's %s: %q", i, k, v)
			}
			if slices.Contains(v, "kept") {
				kept = append(kept, k)
			}
		}
		slices.Sort(kept)
		if want := []string{"Proxy-Authorization_", "X-Api-Keys", "X-Trace_id"}; !slices.Equal(kept, want) {
			t.Errorf("carrier %d: fields of other names that reached the upstream: %q, want %q", i, kept, want)
		}
		if got := s.Header["X-Api-Key"]; len(got) != 1 || got[0] != "floodgate-1" {
			t.Errorf("carrier %d: X-Api-Key %q, want floodgate-1", i, got)
		}
	}
}

// TestCredentialResponseFields: the response fields the credential names
// do not reach the client, in the final response, an informational one or
// the trailer section, whether the answer goes to the server as a header
// map or as field lines.
func TestCredentialResponseFields(t *testing.T) {
	up := newRawUpstream(t, func(r *http.Request) (string, bool) {
		const hint = "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\nSet-Cookie: a=1\r\n\r\n"
		const fields = "Set-Cookie: b=2\r\nWWW-Authenticate: Basic realm=\"api\"\r\nX-Kept: 1\r\n"
		if r.URL.Path == "/trailers" {
			return hint + "HTTP/1.1 200 OK\r\n" + fields + "Transfer-Encoding: chunked\r\nTrailer: Set-Cookie, X-Sum\r\n\r\n" +
				"2\r\nok\r\n0\r\nSet-Cookie: c=3\r\nX-Sum: 42\r\n\r\n", false
		}
		return hint + "HTTP/1.1 200 OK\r\n" + fields + "Content-Length: 2\r\n\r\nok", false
	})
	c := &fieldCredential{name: "X-Api-Key", values: []string{"k"}}
	f := newForwarder(t, up.url, Options{Credential: c}, newErrorLog())
	for _, path := range []string{"/plain", "/trailers"} {
		for _, lines := range []bool{false, true} {
			w := &hintRecorder{h: http.Header{}, lines: lines}
			f.ServeHTTP(w, newServerRequest(t, "GET", path))
			var got []string
			for _, h := range append(w.heads, w.h) { // w.h: with the trailers
				for k := range h {
					if k == "Set-Cookie" || k == "Www-Authenticate" || k == http.TrailerPrefix+"Set-Cookie" {
						got = append(got, k)
					}
				}
			}
			last := w.heads[len(w.heads)-1]
			if len(got) != 0 || w.body != "ok" || last.Get("X-Kept") != "1" || path == "/trailers" && w.h.Get(http.TrailerPrefix+"X-Sum") != "42" {
				t.Errorf("%s, lines %v: the client got %q of the fields dropped, body %q, heads %v, then %v; want none, ok, X-Kept and any X-Sum trailer",
					path, lines, got, w.body, w.heads, w.h)
			}
		}
	}
}

// TestCredentialFallbackResponseFields: what the Forwarder leaves to its
// ReverseProxy (an Expect: 100-continue request, a protocol upgrade), and
// what a ReverseProxy over Transport serves (as for an https upstream),
// does not reach the client with the fields the credential strips either:
// not in an informational response, which httputil.ReverseProxy relays
// itself, nor in the trailer section, declared or not.
func TestCredentialFallbackResponseFields(t *testing.T) {
	up := newRawUpstream(t, func(r *http.Request) (string, bool) {
		const hint = "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\nset-cookie: a=1\r\nWWW-Authenticate: Basic realm=\"api\"\r\n\r\n"
		if r.Header.Get("Upgrade") != "" {
			return hint + "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSet-Cookie: u=1\r\n\r\n", true
		}
		return hint + "HTTP/1.1 200 OK\r\nSet-Cookie: b=2\r\nX-Kept: 1\r\nTransfer-Encoding: chunked\r\nTrailer: Set-Cookie, X-Sum\r\n\r\n" +
			"2\r\nok\r\n0\r\nSet-Cookie: c=3\r\nWww-Authenticate: Basic\r\nX-Sum: 42\r\nX-Late: 1\r\n\r\n", false
	})
	c := &fieldCredential{name: "X-Api-Key", values: []string{"floodgate-1"}}
	el := newErrorLog()
	forwarder := hostOf(front(t, newForwarder(t, up.url, Options{Credential: c}, el)))
	reference := hostOf(front(t, newCredentialReference(t, up.url, c, el)))
	for _, tc := range []struct{ name, addr, req string }{
		{"Expect", forwarder, "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi"},
		{"upgrade", forwarder, "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"},
		{"Transport", reference, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"Transport upgrade", reference, "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"},
	} {
		heads, trailer := readAnswers(t, tc.addr, tc.req)
		final := heads[len(heads)-1]
		var got []string
		for i, h := range append(heads, trailer) {
			for k := range h {
				if k == "Set-Cookie" || k == "Www-Authenticate" {
					got = append(got, fmt.Sprint(i, " ", k))
				}
			}
		}
		if len(got) != 0 {
			t.Errorf("%s: the client got %q (head index, field) of the fields stripped; heads %v, trailer %v", tc.name, got, heads, trailer)
		}
		if len(heads) < 2 || heads[len(heads)-2].Get("Link") == "" {
			t.Errorf("%s: heads %v, want the 103's Link before the final one", tc.name, heads)
		}
		if final.Get("Upgrade") == "" && (final.Get("X-Kept") != "1" || trailer.Get("X-Sum") != "42" || trailer.Get("X-Late") != "1") {
			t.Errorf("%s: final head %v, trailer %v; want X-Kept, X-Sum and X-Late", tc.name, final, trailer)
		}
	}
}

// readAnswers sends the request text req to addr and returns the heads of
// the responses that came (informational ones first), and the final
// response's trailer; a 101 ends them.
func readAnswers(t *testing.T, addr, req string) (heads []http.Header, trailer http.Header) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	method, _, _ := strings.Cut(req, " ")
	for {
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("reading the response: %v", err)
		}
		heads = append(heads, resp.Header)
		switch code := resp.StatusCode; {
		case code == http.StatusSwitchingProtocols:
			return heads, nil
		case code >= 200:
			if _, err := io.ReadAll(resp.Body); err != nil {
				t.Fatalf("reading the body: %v", err)
			}
			return heads, resp.Trailer
		case code == http.StatusContinue:
			heads = heads[:len(heads)-1] // the server's own, to Expect
		}
	}
}

// TestCredentialNotEchoed: a TRACE request, whose answer echoes what the
// upstream received (Apache httpd answers it so by default; IIS answers
// TRACK alike), is sent without floodgate's credential (RFC 9110 §9.3.8)
// and without the client's, in any case of the method, by either carrier.
func TestCredentialNotEchoed(t *testing.T) {
	up, _ := newUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "message/http")
		fmt.Fprintf(w, "%s %s HTTP/1.1\r\n", r.Method, r.RequestURI)
		r.Header.Write(w)
	}))
	c := &fieldCredential{name: "X-Api-Key", values: []string{"floodgate-1"}}
	el := newErrorLog()
	for i, h := range []http.Handler{newForwarder(t, up.URL, Options{Credential: c}, el), newCredentialReference(t, up.URL, c, el)} {
		addr := hostOf(front(t, h))
		for _, method := range []string{"TRACE", "trace", "TRACK"} {
			res := rawDo(t, addr, method, method+" /a HTTP/1.1\r\nHost: x\r\nX-Api-Key: client\r\nCookie: a=client\r\nX-Kept: 1\r\n\r\n")
			if res.Status != 200 || strings.Contains(res.Body, "floodgate-1") || strings.Contains(res.Body, "client") || !strings.Contains(res.Body, "X-Kept: 1") {
				t.Errorf("carrier %d, %s: %d %q; want 200 and the request echoed without credentials (errors %v)", i, method, res.Status, res.Body, el.all())
			}
		}
		res := rawDo(t, addr, "GET", "GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
		if !strings.Contains(res.Body, "X-Api-Key: floodgate-1") {
			t.Errorf("carrier %d, GET: the upstream saw %q, want floodgate's credential", i, res.Body)
		}
	}
}

// hintRecorder records each head written (informational ones included),
// and takes field lines when lines is set.
type hintRecorder struct {
	h     http.Header
	lines bool
	codes []int
	heads []http.Header
	body  string
}

func (w *hintRecorder) Header() http.Header { return w.h }
func (w *hintRecorder) WriteHeader(code int) {
	w.codes = append(w.codes, code)
	w.heads = append(w.heads, w.h.Clone())
}

// status is the final status written, 0 for none.
func (w *hintRecorder) status() int {
	if len(w.codes) == 0 {
		return 0
	}
	return w.codes[len(w.codes)-1]
}
func (w *hintRecorder) Write(p []byte) (int, error) { w.body += string(p); return len(p), nil }

// WriteHeaderLines takes the head as field lines when w.lines is set.
func (w *hintRecorder) WriteHeaderLines(code int, lines []byte, contentLength int64) bool {
	if !w.lines {
		return false
	}
	w.codes = append(w.codes, code)
	h := w.h.Clone()
	for line := range strings.SplitSeq(strings.TrimSuffix(string(lines), "\r\n"), "\r\n") {
		k, v, _ := strings.Cut(line, ": ")
		h.Add(k, v)
	}
	w.heads = append(w.heads, h)
	return true
}

// newServerRequest returns a request as a server hands it to a handler.
func newServerRequest(t *testing.T, method, target string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, "http://gateway"+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Body, r.RemoteAddr, r.RequestURI = http.NoBody, "192.0.2.1:1234", target
	return r
}

// TestCredentialRefused: a 401 to a request that carried the credential
// is not passed on: the Credential is asked, and the request goes once
// more with the value it gives, on a pooled connection when the refusal
// came whole with its head, or is answered through OnError with its
// error. A 401 to a request without a credential is the upstream's answer.
func TestCredentialRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		values   []string // the credential's; nil: it sends none
		refuse   []string // the values the upstream refuses
		chunked  bool     // a refusal's body is chunked (not read: its connection closed)
		status   int
		body     string
		refusals []string
		conns    int64
	}{
		{name: "taken", values: []string{"k1", "k2"}, status: 200, body: "ok", conns: 1},
		{name: "refused, the next taken", values: []string{"k1", "k2"}, refuse: []string{"k1"}, status: 200, body: "ok", refusals: []string{"k1 true"}, conns: 1},
		{name: "refused chunked, the next taken", values: []string{"k1", "k2"}, refuse: []string{"k1"}, chunked: true, status: 200, body: "ok", refusals: []string{"k1 true"}, conns: 2},
		{name: "both refused", values: []string{"k1", "k2"}, refuse: []string{"k1", "k2"}, status: 502, refusals: []string{"k1 true", "k2 false"}, conns: 1},
		{name: "no other", values: []string{"k1"}, refuse: []string{"k1"}, status: 502, refusals: []string{"k1 true"}, conns: 1},
		{name: "no credential", status: 401, body: "nope", conns: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newRawUpstream(t, func(r *http.Request) (string, bool) {
				k, ok := r.Header["X-Api-Key"]
				switch {
				case ok && !slices.Contains(tc.refuse, k[0]):
					return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false
				case tc.chunked:
					return "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nnope\r\n0\r\n\r\n", false
				}
				return "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\nContent-Length: 4\r\n\r\nnope", false
			})
			c := &fieldCredential{name: "X-Api-Key", values: tc.values}
			if tc.values == nil {
				c = &fieldCredential{values: []string{""}} // Authorize gives no name
			}
			el := newErrorLog()
			f := newForwarder(t, up.url, Options{Credential: c}, el)
			w := &hintRecorder{h: http.Header{}}
			f.ServeHTTP(w, newServerRequest(t, "GET", "/"))
			errs := el.all()
			if w.status() != tc.status || w.body != tc.body {
				t.Errorf("answer %d %q, want %d %q", w.status(), w.body, tc.status, tc.body)
			}
			if tc.status == 502 && (len(errs) != 1 || !errors.Is(errs[0], errCredentialRefused)) {
				t.Errorf("OnError got %v, want the credential's error", errs)
			} else if tc.status != 502 && len(errs) != 0 {
				t.Errorf("OnError got %v, want nothing", errs)
			}
			if d := cmp.Diff(c.refused(), tc.refusals); d != "" {
				t.Errorf("refusals (-got +want):\n%s", d)
			}
			if n := up.ln.n.Load(); n != tc.conns {
				t.Errorf("%d upstream connections, want %d", n, tc.conns)
			}
		})
	}
}

// TestCredentialFallback: what the Forwarder leaves to its ReverseProxy
// (Expect: 100-continue here) carries floodgate's credential too, and
// never the client's.
func TestCredentialFallback(t *testing.T) {
	rec := &recorder{}
	up, _ := newUpstream(t, rec)
	c := &fieldCredential{name: "X-Api-Key", values: []string{"floodgate-1"}}
	el := newErrorLog()
	fs := front(t, newForwarder(t, up.URL, Options{Credential: c}, el))
	res := rawDo(t, hostOf(fs), "POST", "POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nAuthorization: Bearer client\r\n"+
		"X-Api-Key: client-key\r\nContent-Length: 2\r\n\r\nhi")
	s, n := rec.take()
	if res.Status != 200 || n != 1 || s.Body != "hi" {
		t.Fatalf("status %d, %d upstream requests, body %q; want 200, 1, hi (errors %v)", res.Status, n, s.Body, el.all())
	}
	if got := s.Header["X-Api-Key"]; len(got) != 1 || got[0] != "floodgate-1" || s.Header.Get("Authorization") != "" {
		t.Errorf("upstream saw X-Api-Key %q, Authorization %q; want floodgate-1 and none", got, s.Header.Get("Authorization"))
	}
}

// TestForwardCredentialAllocs holds a credentialed request to the
// budget of one without (TestForwardAllocs).
func TestForwardCredentialAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a loopback upstream")
	}
	c := &fieldCredential{name: "Authorization", values: []string{"Bearer floodgate-token"}}
	f := newForwarder(t, fastUpstream(t), Options{Credential: c}, newErrorLog())
	r := newServerRequest(t, "GET", "/api/v1/score-sets/urn:mavedb:00000001-a-1")
	r.Header.Set("User-Agent", "wrk")
	r.Header.Set("Authorization", "Bearer client")
	w := &sink{h: make(http.Header, 8)}
	run := func() {
		clear(w.h)
		w.code, w.n = 0, 0
		f.ServeHTTP(w, r)
		if w.code != 200 || w.n != len(benchBody) {
			t.Fatalf("response %d, %d bytes", w.code, w.n)
		}
	}
	run()
	if n := testing.AllocsPerRun(1000, run); n > 1 {
		t.Errorf("ServeHTTP with a credential allocs = %v, want ≤ 1", n)
	}
}

// BenchmarkForwardCredential and BenchmarkReverseProxyCredential are
// BenchmarkForward and BenchmarkReverseProxy with floodgate's credential
// (an Authorization field) on each request: the lean forwarder against
// what served an http upstream with credentials before it did
// (httputil.ReverseProxy over a Transport).
func BenchmarkForwardCredential(b *testing.B) {
	c := &fieldCredential{name: "Authorization", values: []string{"Bearer floodgate-token"}}
	benchProxy(b, newForwarder(b, fastUpstream(b), Options{Credential: c}, newErrorLog()))
}

func BenchmarkReverseProxyCredential(b *testing.B) {
	c := &fieldCredential{name: "Authorization", values: []string{"Bearer floodgate-token"}}
	benchProxy(b, newCredentialReference(b, fastUpstream(b), c, newErrorLog()))
}

var _ lineWriter = (*hintRecorder)(nil)
