package forward

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCredentialRequestSpellings: the client's Cookie, Authorization,
// Proxy-Authorization and a field of the credential's name reach the
// upstream in no spelling and by no path: in lower or upper case,
// repeated, listed in Connection, continued on an obs-fold line, from an
// HTTP/1.0 client, or on what the Forwarder leaves to its ReverseProxy
// (Expect: 100-continue, a chunked body with trailer fields, declared or
// not, which are not forwarded, an upgrade); and floodgate's credential
// is sent once on each.
func TestCredentialRequestSpellings(t *testing.T) {
	var mu sync.Mutex
	var got []http.Header
	up := newRawUpstream(t, func(r *http.Request) (string, bool) {
		mu.Lock()
		h := r.Header.Clone()
		for k, v := range r.Trailer {
			h["Trailer "+k] = v
		}
		got = append(got, h)
		mu.Unlock()
		if r.Header.Get("Upgrade") != "" {
			return "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", true
		}
		return "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false
	})
	c := &fieldCredential{name: "X-Api-Key", values: []string{"floodgate-1"}, extra: []string{"Proxy-Authorization"}}
	el := newErrorLog()
	const fields = "Cookie: a=client\r\nAuthorization: Bearer client\r\nProxy-Authorization: Basic client\r\nX-Api-Key: client\r\n"
	for i, h := range []http.Handler{newForwarder(t, up.url, Options{Credential: c}, el), newCredentialReference(t, up.url, c, el)} {
		addr := hostOf(front(t, h))
		for _, tc := range []struct{ name, req string }{
			{"lower case", "GET / HTTP/1.1\r\nHost: x\r\n" + strings.ToLower(fields) + "\r\n"},
			{"upper case", "GET / HTTP/1.1\r\nHost: x\r\n" + strings.ToUpper(fields) + "\r\n"},
			{"repeated", "GET / HTTP/1.1\r\nHost: x\r\n" + fields + fields + "\r\n"},
			{"listed in Connection", "GET / HTTP/1.1\r\nHost: x\r\nConnection: x-api-key, authorization\r\n" + fields + "\r\n"},
			{"obs-fold", "GET / HTTP/1.1\r\nHost: x\r\nX-Api-Key: a\r\n client\r\nAuthorization: Bearer\r\n\tclient\r\n\r\n"},
			{"HTTP/1.0", "GET / HTTP/1.0\r\nHost: x\r\n" + fields + "\r\n"},
			{"Expect", "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n" + fields + "\r\nhi"},
			{"declared trailers", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: Authorization, X-Api-Key, Cookie\r\n" +
				fields + "\r\n2\r\nhi\r\n0\r\n" + fields + "\r\n"},
			{"undeclared trailers", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n" + fields + "\r\n2\r\nhi\r\n0\r\n" + fields + "\r\n"},
			{"upgrade", "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" + fields + "\r\n"},
		} {
			mu.Lock()
			got = nil
			mu.Unlock()
			method, _, _ := strings.Cut(tc.req, " ")
			res := rawDo(t, addr, method, tc.req)
			mu.Lock()
			if len(got) != 1 || res.Status != 200 && res.Status != http.StatusSwitchingProtocols {
				t.Errorf("carrier %d, %s: %d, %d upstream requests; want 200 or 101, 1 (errors %v)", i, tc.name, res.Status, len(got), el.all())
			}
			for _, h := range got {
				for k, v := range h {
					if strings.Contains(strings.ToLower(strings.Join(v, ",")), "client") {
						t.Errorf("carrier %d, %s: the upstream got the client's %s: %q", i, tc.name, k, v)
					}
				}
				if v := h["X-Api-Key"]; len(v) != 1 || v[0] != "floodgate-1" {
					t.Errorf("carrier %d, %s: the upstream got X-Api-Key %q, want floodgate-1", i, tc.name, v)
				}
			}
			mu.Unlock()
		}
	}
}

// TestRefusalNoDesync: whatever the framing of a 401 to floodgate's
// credential (a body longer than what came with the head, chunked, a
// Content-Length shorter or longer than the bytes sent, a body delimited
// by the connection's end, one on a HEAD, informational responses before
// it) and whatever the upstream sends after it, the request is answered
// by the upstream's answer to the value that replaced the refused one,
// and no later request gets anything of the refusal: a connection is
// pooled only when the refusal was read to its end and nothing followed.
func TestRefusalNoDesync(t *testing.T) {
	long := strings.Repeat("n", 3*readBufferSize)
	refusals := map[string]string{
		"/short":      "HTTP/1.1 401 Unauthorized\r\nContent-Length: 4\r\n\r\nnope",
		"/lying":      "HTTP/1.1 401 Unauthorized\r\nContent-Length: 4\r\n\r\nnope" + injected,
		"/long":       "HTTP/1.1 401 Unauthorized\r\nContent-Length: " + strconv.Itoa(len(long)) + "\r\n\r\n" + long + injected,
		"/too-long":   "HTTP/1.1 401 Unauthorized\r\nContent-Length: 1000\r\n\r\nnope" + injected,
		"/chunked":    "HTTP/1.1 401 Unauthorized\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nnope\r\n0\r\n\r\n" + injected,
		"/both":       "HTTP/1.1 401 Unauthorized\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nnope\r\n0\r\n\r\n" + injected,
		"/unframed":   "HTTP/1.1 401 Unauthorized\r\n\r\nnope" + injected,
		"/http10":     "HTTP/1.0 401 Unauthorized\r\nContent-Length: 4\r\n\r\nnope" + injected,
		"/informed":   "HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 401 Unauthorized\r\nContent-Length: 4\r\n\r\nnope" + injected,
		"/no-content": "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n" + injected,
	}
	var sent atomic.Int64
	url := scriptedUpstream(t, func(c net.Conn, r *http.Request) {
		sent.Add(1)
		if r.Header.Get("X-Api-Key") == "k1" {
			resp := refusals[r.URL.Path]
			if r.Method == "HEAD" {
				resp = "HTTP/1.1 401 Unauthorized\r\nContent-Length: 4\r\n\r\nnope" + injected
			}
			io.WriteString(c, resp)
			return
		}
		q := r.URL.RawQuery
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(q))+"\r\n\r\n"+q)
	})
	c := &fieldCredential{name: "X-Api-Key", values: []string{"k1", "k2"}}
	el := newErrorLog()
	fs := front(t, newForwarder(t, url, Options{Credential: c}, el))
	for path := range refusals {
		for _, method := range []string{"GET", "HEAD"} {
			for trial := range 5 {
				user := "user" + strconv.Itoa(trial)
				sent.Store(0)
				res := rawDo(t, hostOf(fs), method, method+" "+path+"?"+user+" HTTP/1.1\r\nHost: x\r\n\r\n")
				want := user
				if method == "HEAD" {
					want = ""
				}
				if res.Status != 200 || res.Body != want || res.Header.Get("X-From") != "" || sent.Load() != 2 {
					t.Fatalf("%s %s: %d %q (X-From %q) after %d sends, want 200 %q after 2; errors %v",
						method, path, res.Status, res.Body, res.Header.Get("X-From"), sent.Load(), want, el.all())
				}
			}
		}
	}
}
