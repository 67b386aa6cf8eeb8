package forward

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// seen is what an upstream received.
type seen struct {
	Method, URI, Host string
	Header            http.Header
	Body              string
	ContentLength     int64
	TransferEncoding  []string
}

// recorder is an upstream handler that records what reached it.
type recorder struct {
	mu   sync.Mutex
	last seen
	n    int
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.last = seen{
		Method: r.Method, URI: r.RequestURI, Host: r.Host, Header: r.Header.Clone(), Body: string(body),
		ContentLength: r.ContentLength, TransferEncoding: r.TransferEncoding,
	}
	rec.n++
	rec.mu.Unlock()
	io.WriteString(w, "ok")
}

func (rec *recorder) take() (seen, int) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	s, n := rec.last, rec.n
	rec.last, rec.n = seen{}, 0
	return s, n
}

// TestRequestLikeReverseProxy sends each request through the Forwarder
// and through the httputil.ReverseProxy it replaces, and compares what
// the upstream received; it also states what that must be.
func TestRequestLikeReverseProxy(t *testing.T) {
	rec := &recorder{}
	up, _ := newUpstream(t, rec)
	upHost := hostOf(up)
	for _, tc := range []struct {
		name string
		base string // the target URL's path
		req  string
		// want: the request target, and header fields ("" = absent).
		wantURI    string
		wantHeader map[string]string
		wantBody   string
	}{
		{
			name: "plain", req: "GET /a/b?x=1&y=2 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: ua/1\r\nAccept: a\r\nAccept: b\r\n\r\n",
			wantURI: "/a/b?x=1&y=2",
			wantHeader: map[string]string{
				"User-Agent": "ua/1", "X-Forwarded-For": "127.0.0.1", "X-Forwarded-Host": "example.com",
				"X-Forwarded-Proto": "http", "Content-Length": "",
			},
		},
		{
			name: "hop-by-hop",
			req: "GET /h HTTP/1.1\r\nHost: example.com\r\nConnection: keep-alive, X-Client-Hop\r\nX-Client-Hop: drop\r\n" +
				"Keep-Alive: timeout=5\r\nProxy-Authorization: Basic Zm9vOmJhcg==\r\nProxy-Connection: keep-alive\r\n" +
				"Te: trailers, deflate\r\nUpgrade: foo/1\r\nX-End-To-End: keep\r\n\r\n",
			wantURI: "/h",
			wantHeader: map[string]string{
				"X-Client-Hop": "", "Keep-Alive": "", "Proxy-Authorization": "", "Proxy-Connection": "",
				"Upgrade": "", "Connection": "", "Te": "trailers", "X-End-To-End": "keep", "User-Agent": "",
			},
		},
		{
			name: "forwarding fields",
			req: "GET /f HTTP/1.1\r\nHost: example.com:8080\r\nX-Forwarded-For: 203.0.113.9\r\nX-Forwarded-For: 198.51.100.1, 10.0.0.1\r\n" +
				"X-Forwarded-Host: evil.example\r\nX-Forwarded-Proto: https\r\nForwarded: for=192.0.2.1\r\n\r\n",
			wantURI: "/f",
			wantHeader: map[string]string{
				"X-Forwarded-For":  "203.0.113.9, 198.51.100.1, 10.0.0.1, 127.0.0.1",
				"X-Forwarded-Host": "example.com:8080", "X-Forwarded-Proto": "https", "Forwarded": "",
			},
		},
		{
			// The inbound X-Forwarded-Proto only when it is one http or
			// https: the caller removes a client's own.
			name:    "forwarding proto not one scheme",
			req:     "GET /f HTTP/1.1\r\nHost: x\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Proto: http\r\n\r\n",
			wantURI: "/f", wantHeader: map[string]string{"X-Forwarded-Proto": "http"},
		},
		{
			name: "forwarding proto another scheme", req: "GET /f HTTP/1.1\r\nHost: x\r\nX-Forwarded-Proto: wss\r\n\r\n",
			wantURI: "/f", wantHeader: map[string]string{"X-Forwarded-Proto": "http"},
		},
		{
			name: "forwarding proto in capitals", req: "GET /f HTTP/1.1\r\nHost: x\r\nX-Forwarded-Proto: HTTPS\r\n\r\n",
			wantURI: "/f", wantHeader: map[string]string{"X-Forwarded-Proto": "https"},
		},
		{name: "escaped path", req: "GET /a%2Fb/c%20d HTTP/1.1\r\nHost: x\r\n\r\n", wantURI: "/a%2Fb/c%20d"},
		{name: "unparsable query", req: "GET /q?a=1;b=2&c=%zz&d=4 HTTP/1.1\r\nHost: x\r\n\r\n", wantURI: "/q?d=4"},
		{name: "empty query", req: "GET /q? HTTP/1.1\r\nHost: x\r\n\r\n", wantURI: "/q?"},
		{name: "base path", base: "/base/", req: "GET /a/b?x=1 HTTP/1.1\r\nHost: x\r\n\r\n", wantURI: "/base/a/b?x=1"},
		{name: "base path escaped", base: "/b%20s", req: "GET /a%2Fb HTTP/1.1\r\nHost: x\r\n\r\n", wantURI: "/b%20s/a%2Fb"},
		{
			name: "post", req: "POST /p HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello",
			wantURI: "/p", wantHeader: map[string]string{"Content-Length": "5"}, wantBody: "hello",
		},
		{
			name: "post chunked", req: "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
			wantURI: "/p", wantHeader: map[string]string{"Content-Length": ""}, wantBody: "hello world",
		},
		{
			name: "post empty", req: "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
			wantURI: "/p", wantHeader: map[string]string{"Content-Length": "0"},
		},
		{name: "delete", req: "DELETE /d HTTP/1.1\r\nHost: x\r\n\r\n", wantURI: "/d", wantHeader: map[string]string{"Content-Length": ""}},
		{name: "head", req: "HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n", wantURI: "/h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method, _, _ := strings.Cut(tc.req, " ")
			target := up.URL + tc.base
			el := newErrorLog()
			var got [2]seen
			for i, h := range []http.Handler{newForwarder(t, target, Options{}, el), newReference(t, target, el)} {
				fs := front(t, h)
				res := rawDo(t, hostOf(fs), method, tc.req)
				if res.Status != 200 {
					t.Fatalf("status %d, want 200; errors %v", res.Status, el.all())
				}
				s, n := rec.take()
				if n != 1 {
					t.Fatalf("upstream got %d requests, want 1", n)
				}
				got[i] = s
			}
			fw, ref := got[0], got[1]
			if d := cmp.Diff(fw, ref); d != "" {
				t.Errorf("upstream saw (-forward +reverseproxy):\n%s", d)
			}
			if fw.URI != tc.wantURI {
				t.Errorf("request target %q, want %q", fw.URI, tc.wantURI)
			}
			if fw.Host != upHost {
				t.Errorf("Host %q, want the target's %q", fw.Host, upHost)
			}
			for k, v := range tc.wantHeader {
				if got := strings.Join(fw.Header[k], ", "); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if fw.Body != tc.wantBody {
				t.Errorf("body %q, want %q", fw.Body, tc.wantBody)
			}
		})
	}
}

// TestResponseLikeReverseProxy has a raw upstream answer each case and
// compares what a client of the Forwarder and of the ReverseProxy
// receives.
func TestResponseLikeReverseProxy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		resp   string
		close  bool // the upstream closes after answering
		// want (of the Forwarder's client): status, fields ("" = absent),
		// body.
		wantStatus  int
		wantHeader  map[string]string
		wantBody    string
		wantTrailer map[string]string
	}{
		{
			name: "hop-by-hop and repeated fields",
			resp: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: X-Up-Hop\r\nX-Up-Hop: secret\r\nKeep-Alive: timeout=5\r\n" +
				"Proxy-Authenticate: Basic\r\nUpgrade: h2c\r\nX-Kept: yes\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\nok",
			wantStatus: 200, wantBody: "ok",
			wantHeader: map[string]string{
				"X-Up-Hop": "", "Keep-Alive": "", "Proxy-Authenticate": "", "Upgrade": "", "Connection": "",
				"X-Kept": "yes", "Set-Cookie": "a=1, b=2", "Content-Length": "2",
			},
		},
		{
			name:       "chunked with a declared trailer",
			resp:       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Sum: 42\r\n\r\n",
			wantStatus: 200, wantBody: "hello world", wantTrailer: map[string]string{"X-Sum": "42"},
		},
		{
			name:       "chunked with an undeclared trailer",
			resp:       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Late: 1\r\n\r\n",
			wantStatus: 200, wantBody: "hello", wantTrailer: map[string]string{"X-Late": "1"},
		},
		{
			name:       "chunked and a length",
			resp:       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 99\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
			wantStatus: 200, wantBody: "abc", wantHeader: map[string]string{"Content-Length": ""},
		},
		{
			name: "until close", resp: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the end", close: true,
			wantStatus: 200, wantBody: "to the end",
		},
		{
			name: "http/1.0", resp: "HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nold", close: true,
			wantStatus: 200, wantBody: "old", wantHeader: map[string]string{"Content-Length": "3"},
		},
		{name: "204", resp: "HTTP/1.1 204 No Content\r\nX-A: b\r\n\r\n", wantStatus: 204, wantHeader: map[string]string{"X-A": "b"}},
		{name: "304", resp: "HTTP/1.1 304 Not Modified\r\nEtag: \"x\"\r\n\r\n", wantStatus: 304, wantHeader: map[string]string{"Etag": `"x"`}},
		{
			name: "head", method: "HEAD", resp: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n",
			wantStatus: 200, wantHeader: map[string]string{"Content-Length": "10"},
		},
		{
			name: "obs-fold, lower case, bare LF", resp: "HTTP/1.1 201 Created\nx-fold: a\n  b\t\ncontent-type: text/plain\ncontent-length: 1\n\nz",
			wantStatus: 201, wantBody: "z", wantHeader: map[string]string{"X-Fold": "a b", "Content-Type": "text/plain"},
		},
		{name: "no reason", resp: "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", wantStatus: 200},
		{name: "unknown status", resp: "HTTP/1.1 599 Odd\r\nContent-Length: 0\r\n\r\n", wantStatus: 599},
		{
			name: "early hints", resp: "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\nLink: </b.js>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
			wantStatus: 200, wantBody: "ok", wantHeader: map[string]string{"Link": ""},
		},
		{name: "malformed status", resp: "HTTP/1.1 2000 OK\r\n\r\n", wantStatus: 502},
		{name: "not http", resp: "SSH-2.0-OpenSSH\r\n\r\n", wantStatus: 502},
		{name: "bad length", resp: "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", wantStatus: 502},
		{name: "two lengths", resp: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", wantStatus: 502},
		{name: "gzip coding", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", wantStatus: 502},
		{name: "unasked upgrade", resp: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n", wantStatus: 502},
		{name: "space before colon", resp: "HTTP/1.1 200 OK\r\nX-A : b\r\nContent-Length: 0\r\n\r\n", wantStatus: 502, close: true},
		{name: "nothing", resp: "", close: true, wantStatus: 502},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := cmpOrString(tc.method, "GET")
			up := newRawUpstream(t, func(*http.Request) (string, bool) { return tc.resp, tc.close })
			el := newErrorLog()
			var got [2]rawResult
			for i, h := range []http.Handler{newForwarder(t, up.url, Options{}, el), newReference(t, up.url, el)} {
				fs := front(t, h)
				got[i] = rawDo(t, hostOf(fs), method, method+" /r HTTP/1.1\r\nHost: x\r\n\r\n")
			}
			fw, ref := got[0], got[1]
			// The ReverseProxy's first flush of a stream races its first
			// write: when the write wins, net/http's server sniffs a
			// Content-Type the upstream did not send. The Forwarder
			// flushes the header first, always.
			if fw.Header.Get("Content-Type") == "" && !strings.Contains(strings.ToLower(tc.resp), "content-type") {
				ref.Header.Del("Content-Type")
			}
			// The space before a colon: net/http keeps the field as "X-A ",
			// and the server then sends it on; the Forwarder refuses the
			// response (RFC 9112 §5.1: a proxy must not forward it).
			if tc.name != "space before colon" {
				if d := cmp.Diff(fw, ref); d != "" {
					t.Errorf("client got (-forward +reverseproxy):\n%s", d)
				}
			}
			if fw.Status != tc.wantStatus {
				t.Errorf("status %d, want %d; errors %v", fw.Status, tc.wantStatus, el.all())
			}
			for k, v := range tc.wantHeader {
				if got := strings.Join(fw.Header[k], ", "); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if fw.Body != tc.wantBody {
				t.Errorf("body %q, want %q", fw.Body, tc.wantBody)
			}
			for k, v := range tc.wantTrailer {
				if got := fw.Trailer.Get(k); got != v {
					t.Errorf("trailer %s: %q, want %q", k, got, v)
				}
			}
		})
	}
}

func cmpOrString(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestEarlyHintsReachClient: a 103 is passed on, and its fields do not
// stay on the final response.
func TestEarlyHintsReachClient(t *testing.T) {
	up := newRawUpstream(t, func(*http.Request) (string, bool) {
		return "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false
	})
	el := newErrorLog()
	fs := front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Ratelimit", "set before") // as the gateway sets it
		newForwarder(t, up.url, Options{}, el).ServeHTTP(w, r)
	}))
	var hints []string
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		hints = append(hints, fmt.Sprint(code, " ", h["Link"]))
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", fs.URL, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if d := cmp.Diff(hints, []string{"103 [</a.css>]"}); d != "" {
		t.Errorf("informational responses (-got +want):\n%s", d)
	}
	if resp.Header.Get("Link") != "" || resp.Header.Get("Ratelimit") != "set before" {
		t.Errorf("final response: Link %q (want none), Ratelimit %q (want kept)", resp.Header.Get("Link"), resp.Header.Get("Ratelimit"))
	}
}

// TestRequestBodies: bodies of known and unknown length, small and
// large, arrive whole.
func TestRequestBodies(t *testing.T) {
	type got struct {
		Sum    [32]byte
		N      int64
		Length int64
		TE     []string
	}
	var mu sync.Mutex
	var last got
	up, _ := newUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		mu.Lock()
		last = got{N: n, Length: r.ContentLength, TE: r.TransferEncoding}
		copy(last.Sum[:], h.Sum(nil))
		mu.Unlock()
		fmt.Fprint(w, n)
	}))
	el := newErrorLog()
	fs := front(t, newForwarder(t, up.URL, Options{}, el))
	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
	}{
		{"small", 100, false},
		{"at the synchronous limit", syncBodyMax, false},
		{"large", 3 << 20, false},
		{"small chunked", 100, true},
		{"large chunked", 3 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := bytes.Repeat([]byte("0123456789abcdef"), tc.size/16+1)[:tc.size]
			var body io.Reader = bytes.NewReader(data)
			if tc.chunked {
				body = io.MultiReader(body) // hides the length
			}
			resp, err := http.Post(fs.URL+"/up", "application/octet-stream", body)
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(answer) != fmt.Sprint(tc.size) {
				t.Fatalf("status %d, answer %q; want 200, %d; errors %v", resp.StatusCode, answer, tc.size, el.all())
			}
			mu.Lock()
			g := last
			mu.Unlock()
			want := got{Sum: sha256.Sum256(data), N: int64(tc.size), Length: int64(tc.size)}
			if tc.chunked {
				want.Length, want.TE = -1, []string{"chunked"}
			}
			if d := cmp.Diff(g, want); d != "" {
				t.Errorf("upstream got (-got +want):\n%s", d)
			}
		})
	}
}

// TestLargeResponses: large bodies, of known length and chunked, are
// streamed whole.
func TestLargeResponses(t *testing.T) {
	data := bytes.Repeat([]byte("floodgate forwards "), (8<<20)/19)
	up, _ := newUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		}
		for p := data; len(p) > 0; {
			n := min(len(p), 100_000)
			w.Write(p[:n])
			p = p[n:]
		}
	}))
	el := newErrorLog()
	fs := front(t, newForwarder(t, up.URL, Options{}, el))
	for _, q := range []string{"", "?chunked=1"} {
		resp, err := http.Get(fs.URL + "/big" + q)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(body, data) {
			t.Errorf("GET /big%s: %d bytes, %v; want the %d bytes sent", q, len(body), err, len(data))
		}
		if wantLen := int64(len(data)); q == "" && resp.ContentLength != wantLen {
			t.Errorf("GET /big: Content-Length %d, want %d", resp.ContentLength, wantLen)
		}
	}
}

// TestUpstreamClosesMidBody: the client's response is cut off (not
// completed with a wrong length), the connection is not pooled, and the
// next request is served.
func TestUpstreamClosesMidBody(t *testing.T) {
	for _, resp := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten..",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\nonly ten..\r\n",
	} {
		var calls sync.Mutex
		n := 0
		up := newRawUpstream(t, func(*http.Request) (string, bool) {
			calls.Lock()
			defer calls.Unlock()
			if n++; n == 1 {
				return resp, true
			}
			return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false
		})
		el := newErrorLog()
		f := newForwarder(t, up.url, Options{}, el)
		fs := front(t, f)
		res := rawDo(t, hostOf(fs), "GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		if res.Err == "" {
			t.Errorf("%q: client read %q without an error, want the response cut off", firstLine(resp), res.Body)
		}
		if f.pool.idleCount() != 0 {
			t.Errorf("%q: the broken connection was pooled", firstLine(resp))
		}
		if res := rawDo(t, hostOf(fs), "GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); res.Status != 200 || res.Body != "ok" {
			t.Errorf("next request: %d %q, want 200 ok", res.Status, res.Body)
		}
	}
}

// TestKeepAlive: sequential requests share one upstream connection,
// whatever their methods and bodies; a response saying Connection: close
// is not reused.
func TestKeepAlive(t *testing.T) {
	up, ln := newUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		if r.URL.Path == "/chunked" {
			w.Write([]byte("a"))
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "ok")
	}))
	el := newErrorLog()
	f := newForwarder(t, up.URL, Options{}, el)
	fs := front(t, f)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	do := func(method, path string, body io.Reader) {
		t.Helper()
		req, _ := http.NewRequest(method, fs.URL+path, body)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
		}
	}
	for range 20 {
		do("GET", "/", nil)
		do("HEAD", "/", nil)
		do("POST", "/", strings.NewReader("body"))
		do("POST", "/", io.MultiReader(strings.NewReader(strings.Repeat("x", 100_000))))
		do("GET", "/chunked", nil)
	}
	if n := ln.n.Load(); n != 1 {
		t.Errorf("100 sequential requests used %d upstream connections, want 1", n)
	}
	for range 5 {
		do("GET", "/close", nil)
	}
	if n := ln.n.Load(); n != 5 {
		t.Errorf("after 5 Connection: close responses, %d connections, want 5 (the pooled one, then one each)", n)
	}
	if f.pool.idleCount() != 0 {
		t.Errorf("%d idle connections after a Connection: close response, want 0", f.pool.idleCount())
	}
}

// TestStaleConnectionRetried: an upstream that closes every connection
// after one response without saying so. Idempotent requests are sent
// again on a new connection when the pooled one is found closed; a POST
// is not, but the pooled connection is checked before it is used.
func TestStaleConnectionRetried(t *testing.T) {
	up := newRawUpstream(t, func(*http.Request) (string, bool) {
		return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true
	})
	el := newErrorLog()
	f := newForwarder(t, up.url, Options{}, el)
	fs := front(t, f)
	for i := range 10 {
		if res := rawDo(t, hostOf(fs), "GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); res.Status != 200 || res.Body != "ok" {
			t.Fatalf("GET %d: %d %q, want 200 ok; errors %v", i, res.Status, res.Body, el.all())
		}
	}
	if n := up.ln.n.Load(); n != 10 {
		t.Errorf("10 GETs: %d connections, want 10", n)
	}
	// Wait (bounded) until the pooled connection is seen closed, so the
	// POST's check cannot race the upstream's FIN.
	for i := 0; i < 1000 && f.pool.idleCount() > 0 && f.pool.peekAlive(); i++ {
		time.Sleep(time.Millisecond)
	}
	if res := rawDo(t, hostOf(fs), "POST", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx"); res.Status != 200 {
		t.Errorf("POST after a stale connection: %d, want 200; errors %v", res.Status, el.all())
	}
}

// peekAlive reports whether the newest idle connection looks alive.
func (p *pool) peekAlive() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) == 0 {
		return false
	}
	return p.alive(p.idle[len(p.idle)-1])
}

// TestStaleConnectionNotRetried: a request that cannot be repeated is not
// sent twice, however its connection failed.
func TestStaleConnectionNotRetried(t *testing.T) {
	var mu sync.Mutex
	posts := 0
	up := newRawUpstream(t, func(r *http.Request) (string, bool) {
		if r.Method == "POST" {
			mu.Lock()
			posts++
			mu.Unlock()
			return "", true // reads the request, closes without answering
		}
		return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false
	})
	el := newErrorLog()
	fs := front(t, newForwarder(t, up.url, Options{}, el))
	rawDo(t, hostOf(fs), "GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	res := rawDo(t, hostOf(fs), "POST", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx")
	if res.Status != 502 {
		t.Errorf("POST answered by a closed connection: %d, want 502", res.Status)
	}
	mu.Lock()
	defer mu.Unlock()
	if posts != 1 {
		t.Errorf("upstream got the POST %d times, want 1", posts)
	}
}

// TestErrorsClassify: each failure reaches OnError as an error in the
// class the gateway answers for (see also classify_test.go).
func TestErrorsClassify(t *testing.T) {
	ln := listen(t)
	dead := "http://" + ln.Addr().String()
	ln.Close()
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	arrived := make(chan struct{}, 10)
	hung, _ := newUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))

	t.Run("refused", func(t *testing.T) {
		el := newErrorLog()
		fs := front(t, newForwarder(t, dead, Options{}, el))
		if res := rawDo(t, hostOf(fs), "GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); res.Status != 502 {
			t.Errorf("status %d, want 502", res.Status)
		}
		if errs := el.all(); len(errs) != 1 || classify(errs[0]) != "unreachable" || isTimeout(errs[0]) {
			t.Errorf("errors %v, want one classified Unreachable", errs)
		}
	})
	t.Run("response header timeout", func(t *testing.T) {
		el := newErrorLog()
		fs := front(t, newForwarder(t, hung.URL, Options{ResponseHeaderTimeout: time.Millisecond}, el))
		if res := rawDo(t, hostOf(fs), "GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); res.Status != 504 {
			t.Errorf("status %d, want 504", res.Status)
		}
		errs := el.all()
		var ne net.Error
		if len(errs) != 1 || classify(errs[0]) != "timeout" || !errors.As(errs[0], &ne) || !ne.Timeout() {
			t.Errorf("errors %v, want one net.Error timeout", errs)
		}
	})
	t.Run("context deadline", func(t *testing.T) {
		el := newErrorLog()
		f := newForwarder(t, hung.URL, Options{}, el)
		fs := front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), 10*time.Millisecond) // as a route's total timeout
			defer cancel()
			f.ServeHTTP(w, r.WithContext(ctx))
		}))
		if res := rawDo(t, hostOf(fs), "GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); res.Status != 504 {
			t.Errorf("status %d, want 504", res.Status)
		}
		if errs := el.all(); len(errs) != 1 || !errors.Is(errs[0], context.DeadlineExceeded) {
			t.Errorf("errors %v, want one wrapping context.DeadlineExceeded", errs)
		}
	})
	t.Run("not HTTP/1.x", func(t *testing.T) {
		for _, answer := range []string{"just a body, no head", "SSH-2.0-OpenSSH_9.6\r\n", "h"} {
			up := newRawUpstream(t, func(*http.Request) (string, bool) { return answer, true })
			el := newErrorLog()
			fs := front(t, newForwarder(t, up.url, Options{}, el))
			if res := rawDo(t, hostOf(fs), "GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); res.Status != 502 {
				t.Errorf("%q: status %d, want 502", answer, res.Status)
			}
			if errs := el.all(); len(errs) != 1 || !IsBadResponse(errs[0]) {
				t.Errorf("%q: errors %v, want one bad response", answer, errs)
			}
		}
	})
	t.Run("client gone", func(t *testing.T) {
		el := newErrorLog()
		fs := front(t, newForwarder(t, hung.URL, Options{}, el))
		c, err := net.Dial("tcp", hostOf(fs))
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		<-arrived
		c.Close()
		err = <-el.ch // the handler unblocks when the server cancels the context
		if classify(err) != "canceled" || !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
	})
	for len(arrived) > 0 {
		<-arrived
	}
}

// TestClientGoneMidBody: a client that leaves during a long response ends
// the upstream request (its connection is closed, not pooled).
func TestClientGoneMidBody(t *testing.T) {
	upstreamDone := make(chan struct{})
	up, _ := newUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(upstreamDone)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the forwarder closed the connection
	}))
	el := newErrorLog()
	f := newForwarder(t, up.URL, Options{}, el)
	fs := front(t, f)
	c, err := net.Dial("tcp", hostOf(fs))
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(time.Minute)) // a guard against hanging, not a measurement
	io.WriteString(c, "GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The first event arrives while the upstream is still sending: the
	// stream is flushed as it comes.
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: first\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	c.Close()
	<-upstreamDone
	if f.pool.idleCount() != 0 {
		t.Errorf("the connection of an abandoned response was pooled")
	}
}

// TestUpgradeFallsBack: a WebSocket-style upgrade goes through the
// ReverseProxy fallback and the tunnel works both ways.
func TestUpgradeFallsBack(t *testing.T) {
	up, _ := newUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			http.Error(w, "want an upgrade", 400)
			return
		}
		w.Header().Set("Connection", "Upgrade")
		w.Header().Set("Upgrade", "echo")
		w.WriteHeader(http.StatusSwitchingProtocols)
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		line, _ := brw.ReadString('\n')
		brw.WriteString("echo " + line)
		brw.Flush()
	}))
	el := newErrorLog()
	fs := front(t, newForwarder(t, up.URL, Options{}, el))
	c, err := net.Dial("tcp", hostOf(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v, %v; want 101", resp, err)
	}
	io.WriteString(c, "hello\n")
	if line, err := br.ReadString('\n'); line != "echo hello\n" {
		t.Errorf("through the tunnel: %q, %v; want %q", line, err, "echo hello\n")
	}
}

// TestExpectContinueFallsBack: Expect: 100-continue is left to the
// ReverseProxy, and the body arrives.
func TestExpectContinueFallsBack(t *testing.T) {
	rec := &recorder{}
	up, _ := newUpstream(t, rec)
	el := newErrorLog()
	fs := front(t, newForwarder(t, up.URL, Options{}, el))
	res := rawDo(t, hostOf(fs), "POST", "POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi")
	if s, _ := rec.take(); res.Status != 200 || s.Body != "hi" {
		t.Errorf("status %d, upstream body %q; want 200, hi", res.Status, s.Body)
	}
}

// unwrapper hides the ResponseWriter's methods but Unwrap, as a wrapper
// in the gateway might.
type unwrapper struct{ rw http.ResponseWriter }

func (u unwrapper) Header() http.Header         { return u.rw.Header() }
func (u unwrapper) Write(p []byte) (int, error) { return u.rw.Write(p) }
func (u unwrapper) WriteHeader(code int)        { u.rw.WriteHeader(code) }
func (u unwrapper) Unwrap() http.ResponseWriter { return u.rw }

// TestStreamFlushedThroughWrapper: a server-sent event stream reaches the
// client event by event through a ResponseWriter wrapper that only has
// Unwrap.
func TestStreamFlushedThroughWrapper(t *testing.T) {
	next := make(chan struct{})
	up, _ := newUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.Header().Set("Content-Length", "40") // a length does not stop the flushing
		for i := range 2 {
			fmt.Fprintf(w, "data: %d%s\n\n", i, strings.Repeat(".", 11))
			w.(http.Flusher).Flush()
			<-next
		}
	}))
	el := newErrorLog()
	f := newForwarder(t, up.URL, Options{}, el)
	fs := front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.ServeHTTP(unwrapper{w}, r) }))
	c, err := net.Dial("tcp", hostOf(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute)) // a guard against hanging, not a measurement
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := bufio.NewReader(resp.Body)
	for i := range 2 {
		line, err := body.ReadString('\n')
		if want := fmt.Sprintf("data: %d%s\n", i, strings.Repeat(".", 11)); line != want {
			t.Fatalf("event %d: %q, %v; want %q", i, line, err, want)
		}
		body.ReadString('\n')
		next <- struct{}{}
	}
}

// TestSlowBodyReachesClient: a response of fixed length whose upstream
// pauses mid-body reaches the client up to the pause (its head and what
// came), rather than waiting in the server's buffer for the rest: a
// client sees the answer start, and a download that stops is seen to.
func TestSlowBodyReachesClient(t *testing.T) {
	next := make(chan struct{})
	up, _ := newUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "40")
		io.WriteString(w, strings.Repeat("a", 20))
		w.(http.Flusher).Flush()
		<-next
		io.WriteString(w, strings.Repeat("b", 20))
	}))
	var release sync.Once
	t.Cleanup(func() { release.Do(func() { close(next) }) }) // before the upstream's Close
	el := newErrorLog()
	f := newForwarder(t, up.URL, Options{}, el)
	fs := front(t, f)
	c, err := net.Dial("tcp", hostOf(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second)) // a guard against hanging, not a measurement
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no head while the upstream pauses: %v", err)
	}
	first := make([]byte, 20)
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != strings.Repeat("a", 20) {
		t.Fatalf("the body's first part: %q, %v", first, err)
	}
	release.Do(func() { close(next) })
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != strings.Repeat("b", 20) {
		t.Errorf("the rest: %q, %v", rest, err)
	}
}

// TestIdlePool: MaxIdleConns bounds the pool, IdleTimeout empties it,
// CloseIdle closes what it holds.
func TestIdlePool(t *testing.T) {
	release := make(chan struct{})
	var inside sync.WaitGroup
	up, ln := newUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/wait" {
			inside.Done()
			<-release
		}
		io.WriteString(w, "ok")
	}))
	el := newErrorLog()
	f := newForwarder(t, up.URL, Options{MaxIdleConns: 2}, el)
	fs := front(t, f)
	// Four concurrent requests: four connections, two kept.
	inside.Add(4)
	var done sync.WaitGroup
	for range 4 {
		done.Add(1)
		go func() {
			defer done.Done()
			resp, err := http.Get(fs.URL + "/wait")
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	inside.Wait()
	close(release)
	done.Wait()
	if n, idle := ln.n.Load(), f.pool.idleCount(); n != 4 || idle != 2 {
		t.Errorf("4 concurrent requests: %d connections, %d idle; want 4 and 2", n, idle)
	}
	f.CloseIdle()
	if idle := f.pool.idleCount(); idle != 0 {
		t.Errorf("after CloseIdle: %d idle, want 0", idle)
	}

	short := newForwarder(t, up.URL, Options{IdleTimeout: time.Millisecond}, el)
	fs2 := front(t, short)
	resp, err := http.Get(fs2.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for i := 0; i < 1000 && short.pool.idleCount() > 0; i++ { // bounded wait for the sweeper
		time.Sleep(time.Millisecond)
	}
	if idle := short.pool.idleCount(); idle != 0 {
		t.Errorf("after the idle timeout: %d idle, want 0", idle)
	}
}

// TestNew: what New refuses.
func TestNew(t *testing.T) {
	onError := func(http.ResponseWriter, *http.Request, error) {}
	for _, tc := range []struct {
		url     string
		onError func(http.ResponseWriter, *http.Request, error)
		ok      bool
	}{
		{"http://127.0.0.1:8080", onError, true},
		{"http://upstream/base/", onError, true},
		{"https://upstream", onError, false},
		{"unix:///run/x.sock", onError, false},
		{"http:///path", onError, false},
		{"http://upstream", nil, false},
	} {
		u, _ := url.Parse(tc.url)
		_, err := New(u, Options{OnError: tc.onError})
		if (err == nil) != tc.ok {
			t.Errorf("New(%q, OnError set %v) = %v, want ok %v", tc.url, tc.onError != nil, err, tc.ok)
		}
	}
}

// TestEarlyResponseToLargeBody: an upstream that refuses a large upload
// without reading it is answered through, and its connection is not
// pooled.
func TestEarlyResponseToLargeBody(t *testing.T) {
	up, _ := newUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	}))
	el := newErrorLog()
	f := newForwarder(t, up.URL, Options{}, el)
	fs := front(t, f)
	for _, body := range []io.Reader{
		bytes.NewReader(make([]byte, 8<<20)),                 // known length, past the synchronous limit
		io.MultiReader(bytes.NewReader(make([]byte, 8<<20))), // chunked
	} {
		resp, err := http.Post(fs.URL+"/upload", "application/octet-stream", body)
		if err != nil {
			// The front server may close the connection before the client
			// has written the whole body: also an answer.
			t.Logf("POST: %v", err)
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status %d, want 413; errors %v", resp.StatusCode, el.all())
		}
	}
	if n := f.pool.idleCount(); n != 0 {
		t.Errorf("%d connections pooled after unread bodies, want 0", n)
	}
}

// TestTrailingGarbageNotPooled: bytes after a response mean the
// connection is out of step; it is not pooled.
func TestTrailingGarbageNotPooled(t *testing.T) {
	up := newRawUpstream(t, func(*http.Request) (string, bool) {
		return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n\r\n", false
	})
	el := newErrorLog()
	f := newForwarder(t, up.url, Options{}, el)
	fs := front(t, f)
	for i := range 3 {
		if res := rawDo(t, hostOf(fs), "GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); res.Status != 200 || res.Body != "ok" {
			t.Fatalf("request %d: %d %q", i, res.Status, res.Body)
		}
	}
	if n := up.ln.n.Load(); n != 3 {
		t.Errorf("3 requests used %d connections, want 3 (none reused)", n)
	}
}

// TestInvalidRequestField: a field that would split the request (set by a
// handler in front, not by a client) is refused before anything is sent.
func TestInvalidRequestField(t *testing.T) {
	rec := &recorder{}
	up, _ := newUpstream(t, rec)
	el := newErrorLog()
	f := newForwarder(t, up.URL, Options{}, el)
	fs := front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header["X-Injected"] = []string{"a\r\nX-Evil: 1"}
		f.ServeHTTP(w, r)
	}))
	if res := rawDo(t, hostOf(fs), "GET", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); res.Status != 502 {
		t.Errorf("status %d, want 502", res.Status)
	}
	if _, n := rec.take(); n != 0 {
		t.Errorf("upstream got %d requests, want 0", n)
	}
}
