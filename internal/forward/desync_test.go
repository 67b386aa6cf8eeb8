package forward

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/testnet"
)

// scriptedUpstream is a raw upstream: for each request it reads, fn writes
// whatever bytes it likes.
func scriptedUpstream(t *testing.T, fn func(c net.Conn, r *http.Request)) string {
	t.Helper()
	return "http://" + testnet.Serve(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			r, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, r.Body)
			fn(c, r)
		}
	})
}

// injected is a complete response an upstream sends where it should not:
// after a HEAD's head, or past a Content-Length.
const injected = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nX-From: attacker\r\n\r\nEVIL"

// TestNoResponseDesync: bytes an upstream sends beyond a complete response
// (a body on a HEAD, more than its Content-Length) never become another
// client's response, on this request or any later one: the connection is
// not reused. (Without that, the next clients got each other's responses,
// off by one, until the connection closed.)
func TestNoResponseDesync(t *testing.T) {
	body := strings.Repeat("a", 32<<10)
	url := scriptedUpstream(t, func(c net.Conn, r *http.Request) {
		switch {
		case r.Method == "HEAD":
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 65\r\n\r\n"+injected)
		case r.URL.Path == "/short-length":
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 32768\r\n\r\n"+body+injected)
		case r.URL.Path == "/small-short-length":
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"+injected)
		case r.URL.Path == "/no-content":
			io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n"+injected)
		default:
			q := r.URL.RawQuery
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(q))+"\r\n\r\n"+q)
		}
	})
	f := newForwarder(t, url, Options{}, newErrorLog())
	fs := front(t, f)
	for _, attack := range []struct{ method, path string }{
		{"HEAD", "/x"}, {"GET", "/short-length"}, {"GET", "/small-short-length"}, {"GET", "/no-content"},
	} {
		for trial := range 20 {
			rawDo(t, hostOf(fs), attack.method, attack.method+" "+attack.path+" HTTP/1.1\r\nHost: x\r\n\r\n")
			for i := range 3 {
				user := "user" + strconv.Itoa(trial) + "-" + strconv.Itoa(i)
				res := rawDo(t, hostOf(fs), "GET", "GET /victim?"+user+" HTTP/1.1\r\nHost: x\r\n\r\n")
				if res.Body != user || res.Header.Get("X-From") != "" {
					t.Fatalf("after %s %s, client %s got %d %q (X-From %q)", attack.method, attack.path, user,
						res.Status, res.Body, res.Header.Get("X-From"))
				}
			}
		}
	}
}

// TestOneContentLength: an upstream's repeated, equal Content-Length
// reaches the client once (some front proxies refuse duplicates as a
// smuggling signal); conflicting ones are a 502.
func TestOneContentLength(t *testing.T) {
	url := scriptedUpstream(t, func(c net.Conn, r *http.Request) {
		if r.URL.Path == "/conflict" {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!")
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok")
	})
	f := newForwarder(t, url, Options{}, newErrorLog())
	fs := front(t, f)
	res := rawDo(t, hostOf(fs), "GET", "GET /dup HTTP/1.1\r\nHost: x\r\n\r\n")
	if got := res.Header.Values("Content-Length"); res.Status != 200 || len(got) != 1 || res.Body != "ok" {
		t.Errorf("duplicate Content-Length: %d, Content-Length %q, body %q", res.Status, got, res.Body)
	}
	if res := rawDo(t, hostOf(fs), "GET", "GET /conflict HTTP/1.1\r\nHost: x\r\n\r\n"); res.Status != http.StatusBadGateway {
		t.Errorf("conflicting Content-Length: %d, want 502", res.Status)
	}
}
