package forward

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/internal/h1server"
)

// lineCases are upstream answers, and whether the forwarder passes their
// fields on as lines (writeHeaderLines) rather than through Header().
var lineCases = []struct {
	name, method, resp string
	lines              bool
}{
	{name: "json", resp: "HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Mon, 30 Nov 2026 17:20:00 GMT\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{\"a\": 1}\n", lines: true},
	{name: "repeated fields", resp: "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nX-A: 1\r\nset-cookie: b=2\r\nX-B: \r\nX-A: 2\r\nContent-Length: 2\r\n\r\nok", lines: true},
	{name: "obs-fold, tab, obs-text", resp: "HTTP/1.1 200 OK\r\nX-Fold: a\r\n  b\r\nX-Tab: c\td\r\nX-Text: caf\xc3\xa9\r\nContent-Length: 2\r\n\r\nok", lines: true},
	{name: "sniffed type", resp: "HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n<html>hi</html>", lines: true},
	{name: "encoded, no type", resp: "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\n\x1f\x8b\x08", lines: true},
	{name: "empty type", resp: "HTTP/1.1 200 OK\r\nContent-Type: \r\nContent-Length: 15\r\n\r\n<html>hi</html>", lines: true},
	{name: "no date", resp: "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nnope", lines: true},
	{name: "created", resp: "HTTP/1.1 201 Created\r\nLocation: /items/7\r\nContent-Length: 0\r\n\r\n", lines: true},
	{name: "error", resp: "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nContent-Length: 4\r\n\r\nbusy", lines: true},
	{name: "chunked", resp: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", lines: true},
	{name: "chunked and length", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n", lines: true},
	{name: "until close", resp: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nto the end", lines: true},
	{name: "hop-by-hop dropped", resp: "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\nUpgrade: h2c\r\nProxy-Authenticate: Basic\r\nTe: trailers\r\nContent-Length: 2\r\n\r\nok", lines: true},
	{name: "head", method: "HEAD", resp: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n\r\n", lines: true},
	{name: "head without length", method: "HEAD", resp: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n", lines: true},
	{name: "long value", resp: "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("v", 6000) + "\r\nContent-Length: 2\r\n\r\nok", lines: true},
	// Through Header(): trailers, fields listed in Connection, bodiless statuses.
	{name: "trailers", resp: "HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 9\r\n\r\n"},
	{name: "connection lists a field", resp: "HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Drop\r\nX-Drop: 1\r\nX-Keep: 2\r\nContent-Length: 2\r\n\r\nok"},
	{name: "204", resp: "HTTP/1.1 204 No Content\r\nX-A: 1\r\n\r\n"},
	{name: "304", resp: "HTTP/1.1 304 Not Modified\r\nContent-Type: text/plain\r\nContent-Length: 9\r\nETag: \"x\"\r\n\r\n"},
}

// lineCounter passes WriteHeaderLines on, counting those taken.
type lineCounter struct {
	http.ResponseWriter
	taken *atomic.Int64
}

func (w lineCounter) WriteHeaderLines(code int, lines []byte, n int64) bool {
	ok := w.ResponseWriter.(lineWriter).WriteHeaderLines(code, lines, n)
	if ok {
		w.taken.Add(1)
	}
	return ok
}

func (w lineCounter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// noLines hides WriteHeaderLines: the forwarder fills Header().
type noLines struct{ http.ResponseWriter }

func (w noLines) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// h1Front serves h with floodgate's server on loopback and returns its
// address.
func h1Front(t testing.TB, h http.Handler) string {
	t.Helper()
	ln := listen(t)
	s := &h1server.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

// linesAndMapFronts serves f with floodgate's server twice: at linesAddr
// the forwarder may hand the server its field lines (taken counts those
// it did), at mapAddr it must fill Header().
func linesAndMapFronts(t testing.TB, f *Forwarder) (linesAddr, mapAddr string, taken *atomic.Int64) {
	t.Helper()
	taken = new(atomic.Int64)
	linesAddr = h1Front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.ServeHTTP(lineCounter{w, taken}, r)
	}))
	mapAddr = h1Front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.ServeHTTP(noLines{w}, r)
	}))
	return linesAddr, mapAddr, taken
}

// TestHeaderLinesAsHeaderMap: the client sees the same answer whether the
// forwarder hands h1server the upstream's fields as lines or puts them in
// Header(): status, every field's values in order, framing, body,
// trailers. Only the order of different fields may differ.
func TestHeaderLinesAsHeaderMap(t *testing.T) {
	up := newRawUpstream(t, func(r *http.Request) (string, bool) {
		i, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/c/"))
		resp := lineCases[i].resp
		return resp, strings.Contains(resp, "Connection: close")
	})
	el := newErrorLog()
	f := newForwarder(t, up.url, Options{}, el)
	linesAddr, mapAddr, taken := linesAndMapFronts(t, f)
	for i, tc := range lineCases {
		method := cmpOrString(tc.method, "GET")
		req := method + " /c/" + strconv.Itoa(i) + " HTTP/1.1\r\nHost: x\r\n\r\n"
		before := taken.Load()
		got := rawDo(t, linesAddr, method, req)
		if took := taken.Load() > before; took != tc.lines {
			t.Errorf("%s: passed on as lines %v, want %v", tc.name, took, tc.lines)
		}
		want := rawDo(t, mapAddr, method, req)
		if got.Err != "" || want.Err != "" {
			t.Errorf("%s: errors %q (lines), %q (map)", tc.name, got.Err, want.Err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: answer (-map +lines):\n%s", tc.name, d)
		}
	}
	if errs := el.all(); len(errs) > 0 {
		t.Errorf("OnError: %v", errs)
	}
}
