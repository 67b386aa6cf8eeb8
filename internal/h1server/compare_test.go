package h1server

// A differential test: the same handler behind net/http's http.Server and
// behind h1server.Server, the same raw bytes sent to each over loopback TCP,
// and the answers compared: the number of responses, their status codes,
// bodies, framing, header fields and trailers, and whether the connection
// was closed after them.
//
// Whether a connection stayed open is found out without timing: once the
// responses a case expects have been read, a probe request is sent on the
// same connection; an open connection answers it (with a response the
// wrapper below makes), a closed one gives EOF (or a reset). Read deadlines
// are only a safety net against hangs.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// safetyDeadline bounds every exchange: reaching it means a hang, and the
// case fails. It is never used to judge speed.
const safetyDeadline = 20 * time.Second

// probePath is answered by the wrapper around every case's handler.
const probePath = "/__probe"

// recorder notes what reached a case's handler on one server.
type recorder struct {
	mu      sync.Mutex
	reached []string
	notes   []string
}

func (r *recorder) reach(s string) {
	r.mu.Lock()
	r.reached = append(r.reached, s)
	r.mu.Unlock()
}

func (r *recorder) note(format string, args ...any) {
	r.mu.Lock()
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func (r *recorder) snapshot() (reached, notes []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reached), slices.Clone(r.notes)
}

// caseHandler is a case's handler; note records something the handler
// observed (a Write error, say) for comparison between the servers.
type caseHandler func(w http.ResponseWriter, r *http.Request, note func(string, ...any))

func wrap(rec *recorder, h caseHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == probePath {
			w.Header().Set("X-Probe", "1")
			io.WriteString(w, "probe")
			return
		}
		rec.reach(r.Method + " " + r.RequestURI)
		h(w, r, rec.note)
	})
}

// quietLog swallows server logs (handler panics are expected here).
var quietLog = log.New(io.Discard, "", 0)

// testMaxHeaderBytes is given to both servers (their defaults differ:
// 1 MiB for net/http, 64 KiB for h1server).
const testMaxHeaderBytes = 4 << 10

type runningServer struct {
	addr string
	rec  *recorder
	stop func()
}

func startStd(t testing.TB, h caseHandler) *runningServer {
	t.Helper()
	rec := &recorder{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// net/http's server as server.engine: net/http runs it.
	s := NewNetHTTPServer(&http.Server{Handler: wrap(rec, h), MaxHeaderBytes: testMaxHeaderBytes, ErrorLog: quietLog})
	done := make(chan struct{})
	go func() { s.Serve(ln); close(done) }()
	return &runningServer{addr: ln.Addr().String(), rec: rec, stop: func() { s.Close(); <-done }}
}

func startH1(t testing.TB, h caseHandler) *runningServer {
	return startH1With(t, h, 0)
}

// startH1With starts floodgate's server with IdleBuffersUpTo set to
// idleBuffers (negative: a waiting connection holds no buffer).
func startH1With(t testing.TB, h caseHandler, idleBuffers int) *runningServer {
	t.Helper()
	rec := &recorder{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: wrap(rec, h), MaxHeaderBytes: testMaxHeaderBytes, ErrorLog: quietLog, IdleBuffersUpTo: idleBuffers}
	done := make(chan struct{})
	go func() { s.Serve(ln); close(done) }()
	return &runningServer{addr: ln.Addr().String(), rec: rec, stop: func() { s.Close(); <-done }}
}

// step is what the client sends at once, and how many answers it reads
// before its next step.
type step struct {
	send    string
	interim int // 1xx answers to read before the next step
	final   int // final answers to read before the next step
}

type cmpCase struct {
	name string
	// in is sent in one write (steps, if set, replace it).
	in    string
	steps []step
	// n is the number of final answers to wait for (default 1); fewer
	// are fine if the server closes the connection first.
	n int
	// halfClose closes the client's writing side after the last step.
	halfClose bool
	h         caseHandler // nil: echo
	// errorOnly: the request cannot be read; compare only the status
	// codes, that the handler was not reached and the closing.
	errorOnly bool
	// raw: compare the bytes received (less the Date field) instead of
	// parsed responses; the client half-closes and reads to EOF.
	raw bool
	// ignore lists aspects left out of the comparison, because h1server
	// differs from net/http on purpose; check then asserts what h1server
	// does instead.
	ignore []string
	check  func(t *testing.T, std, h1 *result)
}

// response is one parsed answer.
type answer struct {
	Status  int
	Proto   string
	Close   bool   // Connection: close (http.ReadResponse removes the field)
	Framing string // length, chunked, close, none
	Header  map[string][]string
	Body    string
	BodyErr string
	Trailer map[string][]string
}

// result is what a client saw from one server.
type result struct {
	Interim []answer
	Final   []answer
	Closed  bool   // the server closed the connection after the answers
	Probe   string // what the probe got: "closed", "answered", or else
	Err     string // an answer that could not be parsed, or a hang
	Reached []string
	Notes   []string
	Raw     string
}

// resetAsEOF turns a connection reset into EOF: a server that closes with
// unread input makes the kernel send RST after the data it had written.
type resetAsEOF struct{ c net.Conn }

func (r resetAsEOF) Read(p []byte) (int, error) {
	n, err := r.c.Read(p)
	if err != nil && isReset(err) {
		err = io.EOF
	}
	return n, err
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

// nextRequest reads the next request of a connection's bytes as a server
// does: one CR LF (or LF, or CR) some clients send after a body is
// skipped first (RFC 9112 section 2.2), then http.ReadRequest.
func nextRequest(br *bufio.Reader) (*http.Request, error) {
	if p, _ := br.Peek(2); len(p) > 0 && (p[0] == '\r' || p[0] == '\n') {
		if len(p) > 1 && p[0] == '\r' && p[1] == '\n' {
			br.Discard(2)
		} else {
			br.Discard(1)
		}
	}
	return http.ReadRequest(br)
}

// methodsOf parses the requests in raw in sequence, as far as
// http.ReadRequest can, and returns their methods (to read the answers to
// HEAD requests right).
func methodsOf(raw string) []string {
	var ms []string
	br := bufio.NewReader(strings.NewReader(raw))
	for {
		req, err := nextRequest(br)
		if err != nil {
			return ms
		}
		ms = append(ms, req.Method)
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return ms
		}
	}
}

func framingOf(res *http.Response, method string) string {
	switch {
	case method == http.MethodHead || res.StatusCode/100 == 1 || res.StatusCode == 204 || res.StatusCode == 304:
		return "none"
	case len(res.TransferEncoding) > 0:
		return strings.Join(res.TransferEncoding, ",")
	case res.Header.Get("Content-Length") != "":
		return "length"
	default:
		return "close"
	}
}

// exchange runs a case against one server.
func exchange(t *testing.T, tc cmpCase, srv *runningServer) *result {
	t.Helper()
	res := &result{}
	c, err := net.Dial("tcp", srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(safetyDeadline))
	steps := tc.steps
	if steps == nil {
		n := tc.n
		if n == 0 {
			n = 1
		}
		steps = []step{{send: tc.in, final: n}}
	}
	var all strings.Builder
	for _, s := range steps {
		all.WriteString(s.send)
	}
	methods := methodsOf(all.String())
	methodOf := func(i int) string {
		if i < len(methods) {
			return methods[i]
		}
		return http.MethodGet
	}

	br := bufio.NewReader(resetAsEOF{c})
	if tc.raw {
		// Writes go on while reading (a server may answer before reading
		// everything).
		go func() {
			for _, s := range steps {
				c.Write([]byte(s.send))
			}
			c.(*net.TCPConn).CloseWrite()
		}()
		b, err := io.ReadAll(br)
		if err != nil {
			res.Err = err.Error()
		}
		res.Raw = stripDate(string(b))
		res.Closed = true
		res.Reached, res.Notes = srv.rec.snapshot()
		return res
	}

	finals := 0
	for i, s := range steps {
		last := i == len(steps)-1
		// A writer of its own: a large body may not fit into the
		// socket buffers while the server answers without reading it.
		wrote := make(chan struct{})
		go func(b string) {
			defer close(wrote)
			c.Write([]byte(b))
			if last && tc.halfClose {
				c.(*net.TCPConn).CloseWrite()
			}
		}(s.send)
		interim := 0
		want := finals + s.final
		for !res.Closed && (interim < s.interim || finals < want) {
			// http.ReadResponse reports a clean EOF as ErrUnexpectedEOF:
			// look first.
			if _, err := br.Peek(1); err != nil {
				res.Closed = true
				if isTimeout(err) {
					res.Err = "hang: " + err.Error()
				} else if err != io.EOF {
					res.Err = "read: " + err.Error()
				}
				break
			}
			r, err := http.ReadResponse(br, &http.Request{Method: methodOf(finals)})
			if err != nil {
				res.Closed = true
				if isTimeout(err) {
					res.Err = "hang: " + err.Error()
				} else if err != io.EOF {
					res.Err = "unparsable answer: " + err.Error()
				}
				break
			}
			p := answer{
				Status:  r.StatusCode,
				Proto:   r.Proto,
				Close:   r.Close,
				Framing: framingOf(r, methodOf(finals)),
				Header:  headerMap(r.Header),
			}
			body, err := io.ReadAll(r.Body)
			p.Body = string(body)
			if err != nil {
				p.BodyErr = err.Error()
				if isTimeout(err) {
					res.Err = "hang in body: " + err.Error()
				}
				res.Closed = true
			}
			if len(r.Trailer) > 0 {
				p.Trailer = headerMap(r.Trailer)
			}
			if p.Framing == "close" {
				res.Closed = true
			}
			if r.StatusCode/100 == 1 && r.StatusCode != 101 {
				res.Interim = append(res.Interim, p)
				interim++
				continue
			}
			res.Final = append(res.Final, p)
			finals++
		}
		<-wrote
		if res.Closed {
			break
		}
	}
	if !res.Closed {
		// Is the connection still open? Ask.
		res.Probe = probe(c, br)
		res.Closed = res.Probe == "closed"
	} else {
		res.Probe = "closed"
	}
	res.Reached, res.Notes = srv.rec.snapshot()
	return res
}

func probe(c net.Conn, br *bufio.Reader) string {
	if _, err := io.WriteString(c, "GET "+probePath+" HTTP/1.1\r\nHost: probe\r\n\r\n"); err != nil {
		return "closed"
	}
	if _, err := br.Peek(1); err == io.EOF {
		return "closed"
	}
	r, err := http.ReadResponse(br, nil)
	if err != nil {
		if isTimeout(err) {
			return "hang: " + err.Error()
		}
		if err == io.EOF {
			return "closed"
		}
		return "unparsable: " + err.Error()
	}
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode == 200 && r.Header.Get("X-Probe") == "1" && string(b) == "probe" {
		return "answered"
	}
	// Something else: an answer the server owed to earlier input (a
	// desynchronised connection).
	return fmt.Sprintf("unexpected %d %q", r.StatusCode, b)
}

func headerMap(h http.Header) map[string][]string {
	m := map[string][]string{}
	for k, v := range h {
		if k == "Date" {
			continue
		}
		m[k] = slices.Clone(v)
	}
	return m
}

func stripDate(s string) string {
	var b strings.Builder
	for line := range strings.SplitAfterSeq(s, "\n") {
		if strings.HasPrefix(line, "Date: ") {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

// comparable reduces a result to what a case compares.
func (tc cmpCase) comparable(r *result) *result {
	c := *r
	c.Interim = slices.Clone(r.Interim)
	c.Final = slices.Clone(r.Final)
	if tc.errorOnly {
		for i, p := range c.Final {
			c.Final[i] = answer{Status: p.Status}
		}
		c.Interim = nil
		c.Notes = nil
		c.Probe = ""
		return &c
	}
	for i, p := range c.Final {
		// The texts of the answers a server makes itself to requests it
		// cannot read differ ("400 Bad Request" and "Bad Request: ...");
		// their status, framing and fields are compared.
		if p.Framing == "close" && p.Header["X-Echo"] == nil && (p.Status == 400 || p.Status == 431 || p.Status == 501 || p.Status == 505) {
			c.Final[i].Body = ""
		}
	}
	for _, asp := range tc.ignore {
		switch {
		case asp == "interim":
			c.Interim = nil
		case asp == "framing":
			for i := range c.Final {
				c.Final[i].Framing = ""
			}
		case asp == "answerClose":
			for i := range c.Final {
				c.Final[i].Close = false
			}
		case asp == "bodyErr":
			for i := range c.Final {
				c.Final[i].BodyErr = ""
			}
		case asp == "status":
			for i := range c.Final {
				c.Final[i].Status = 0
			}
		case asp == "final":
			c.Final = nil
		case asp == "reached":
			c.Reached = nil
		case asp == "notes":
			c.Notes = nil
		case asp == "closed":
			c.Closed = false
			c.Probe = ""
		case strings.HasPrefix(asp, "header:"):
			k := strings.TrimPrefix(asp, "header:")
			for i := range c.Final {
				h := maps.Clone(c.Final[i].Header)
				delete(h, k)
				c.Final[i].Header = h
			}
		default:
			panic("unknown aspect " + asp)
		}
	}
	return &c
}

func (tc cmpCase) run(t *testing.T) {
	h := tc.h
	if h == nil {
		h = echo
	}
	std := startStd(t, h)
	defer std.stop()
	h1 := startH1(t, h)
	defer h1.stop()
	rs := exchange(t, tc, std)
	rh := exchange(t, tc, h1)
	if strings.HasPrefix(rh.Err, "hang") || strings.HasPrefix(rh.Probe, "hang") {
		t.Errorf("h1server hung: %s %s", rh.Err, rh.Probe)
	}
	if testing.Verbose() {
		t.Logf("net/http: %+v", *rs)
		t.Logf("h1server: %+v", *rh)
	}
	if d := cmp.Diff(tc.comparable(rs), tc.comparable(rh)); d != "" {
		t.Errorf("h1server differs from net/http (-net/http +h1server):\n%s", d)
	}
	if tc.check != nil {
		tc.check(t, rs, rh)
	}
	// The same with the connections holding no buffer while they wait
	// for a request (as when many are open): what is read and answered
	// may not change.
	lean := startH1With(t, h, -1)
	defer lean.stop()
	rl := exchange(t, tc, lean)
	if d := cmp.Diff(tc.comparable(rs), tc.comparable(rl)); d != "" {
		t.Errorf("h1server, no buffer while waiting, differs from net/http (-net/http +h1server):\n%s", d)
	}
	if tc.check != nil {
		tc.check(t, rs, rl)
	}
}

// echo reads the body and describes the request.
func echo(w http.ResponseWriter, r *http.Request, note func(string, ...any)) {
	b, err := io.ReadAll(r.Body)
	keys := make([]string, 0, len(r.Header))
	for k, v := range r.Header {
		for i := range v {
			v[i] = string(truncate([]byte(v[i]), 32))
		}
		keys = append(keys, fmt.Sprintf("%s=%q", k, v))
	}
	slices.Sort(keys)
	w.Header().Set("X-Echo", "1")
	fmt.Fprintf(w, "%s %s %s host=%q cl=%d te=%v len=%d err=%v body=%q trailer=%v header=%v",
		r.Method, truncate([]byte(r.RequestURI), 200), r.Proto, r.Host, r.ContentLength, r.TransferEncoding, len(b), err,
		truncate(b, 64), r.Trailer, keys)
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// writeN writes n bytes of 'a' in pieces of 1000.
func writeN(w http.ResponseWriter, n int) {
	chunk := bytes.Repeat([]byte("a"), 1000)
	for n > 0 {
		k := min(n, len(chunk))
		w.Write(chunk[:k])
		n -= k
	}
}

const (
	get11 = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	get10 = "GET / HTTP/1.0\r\n\r\n"
)

func wantFraming(f string) func(t *testing.T, _, h1 *result) {
	return func(t *testing.T, _, h1 *result) {
		for _, p := range h1.Final {
			if p.Framing != f {
				t.Errorf("h1server: framing %s, want %s", p.Framing, f)
			}
		}
	}
}

// noCompleteAnswer: after a handler's panic the client gets nothing, or a
// truncated answer, and the connection is closed.
func noCompleteAnswer(t *testing.T, _, h1 *result) {
	if !h1.Closed || len(h1.Final) > 1 || len(h1.Final) == 1 && h1.Final[0].BodyErr == "" {
		t.Errorf("h1server after a panic: %+v closed=%v, want no complete answer and the connection closed", h1.Final, h1.Closed)
	}
	if len(h1.Reached) != 1 {
		t.Errorf("h1server: handler reached %d times, want 1", len(h1.Reached))
	}
}

func hasField(p answer, k string) bool {
	_, ok := p.Header[k]
	return ok
}

// ---------------------------------------------------------------------------

func compareCases() []cmpCase {
	big := strings.Repeat("b", 300<<10)
	return []cmpCase{
		// --- keep-alive and framing ---
		{name: "get-keepalive-pipelined-x3", in: get11 + "GET /2 HTTP/1.1\r\nHost: x\r\n\r\n" + "GET /3?q=1 HTTP/1.1\r\nHost: x\r\n\r\n", n: 3},
		{
			name: "http10-no-keepalive", in: get10,
			// net/http sends no Connection field to an HTTP/1.0 client it
			// closes on (HTTP/1.0 closes by default); h1server sends
			// "Connection: close", which means the same.
			ignore: []string{"header:Connection"},
			check: func(t *testing.T, _, h1 *result) {
				if len(h1.Final) == 1 && fmt.Sprint(h1.Final[0].Header["Connection"]) != "[close]" {
					t.Errorf("h1server: Connection = %q, want close", h1.Final[0].Header["Connection"])
				}
			},
		},
		{name: "http10-keepalive-x2", in: "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", n: 2},
		{name: "http10-keepalive-large-close-delimited", in: "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) { writeN(w, 20<<10) },
			// As above: the Connection field sent to an HTTP/1.0 client.
			ignore: []string{"header:Connection"}},
		{name: "http11-connection-close", in: "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" + get11, n: 2},
		{name: "http11-connection-keepalive-close-tokens", in: "GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Close\r\n\r\n" + get11, n: 2},
		{name: "handler-sets-connection-close", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("Connection", "close")
				io.WriteString(w, "bye")
			}},
		{name: "head-handler-writes-body", in: "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n" + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				io.WriteString(w, "hello, world")
			}},
		{name: "head-handler-sets-content-length", in: "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n" + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("Content-Length", "1000")
				if r.Method != http.MethodHead {
					writeN(w, 1000)
				}
			}},
		{name: "head-handler-writes-20k", in: "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n" + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) { writeN(w, 20<<10) }},
		{name: "status-204-with-body", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, note func(string, ...any)) {
				w.Header().Set("Content-Length", "5")
				w.WriteHeader(http.StatusNoContent)
				_, err := io.WriteString(w, "hello")
				note("write: %v", err)
			}},
		{name: "status-304-with-body", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, note func(string, ...any)) {
				w.Header().Set("Content-Type", "text/html")
				w.Header().Set("ETag", `"x"`)
				w.WriteHeader(http.StatusNotModified)
				_, err := io.WriteString(w, "hello")
				note("write: %v", err)
			}},
		{name: "large-body-http11-chunked", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) { writeN(w, 20<<10) }},
		{name: "large-body-http10-close-delimited", in: get10,
			h:      func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) { writeN(w, 20<<10) },
			ignore: []string{"header:Connection"}},
		{
			name: "medium-body-4k", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) { writeN(w, 4<<10) },
			// Deliberate: net/http holds back 2 KiB before it commits to
			// chunked; h1server holds back 8 KiB, so a 4 KiB answer goes
			// out with a Content-Length. Same bytes, same connection reuse.
			ignore: []string{"framing", "header:Content-Length"},
			check: func(t *testing.T, std, h1 *result) {
				for _, p := range h1.Final {
					if p.Framing != "length" || fmt.Sprint(p.Header["Content-Length"]) != "[4096]" {
						t.Errorf("h1server: framing %s %v, want Content-Length: 4096", p.Framing, p.Header["Content-Length"])
					}
				}
			},
		},
		{
			name: "body-exactly-8k", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) { writeN(w, 8<<10) },
			// Deliberate: within h1server's 8 KiB buffer, so sent with a
			// Content-Length (net/http chunks past 2 KiB).
			ignore: []string{"framing", "header:Content-Length"},
			check:  wantFraming("length"),
		},
		{name: "body-8k-plus-1", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				writeN(w, 8<<10)
				io.WriteString(w, "z")
			}},
		{name: "writestring-over-8k", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				io.WriteString(w, strings.Repeat("s", 5000))
				io.WriteString(w, strings.Repeat("t", 5000))
			}},
		{name: "head-large-write-with-content-length", in: "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n" + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("Content-Length", strconv.Itoa(20<<10))
				writeN(w, 20<<10)
			}},
		{name: "http11-connection-close-chunked", in: "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) { writeN(w, 20<<10) }},
		{name: "http10-head-keepalive", in: "HEAD / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) { io.WriteString(w, "hello") }},
		{name: "http10-204-keepalive", in: "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.WriteHeader(http.StatusNoContent)
			}},
		{name: "http10-post-keepalive", in: "POST / HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", n: 2},
		{name: "http10-keepalive-flush", in: "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + get10, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				io.WriteString(w, "a")
				w.(http.Flusher).Flush()
			},
			ignore: []string{"header:Connection"}},
		{name: "flush-then-write", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				io.WriteString(w, "a")
				w.(http.Flusher).Flush()
				io.WriteString(w, "b")
			}},
		{name: "flush-then-write-http10", in: get10,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				io.WriteString(w, "a")
				w.(http.Flusher).Flush()
				io.WriteString(w, "b")
			},
			ignore: []string{"header:Connection"}},
		{name: "flush-before-any-write", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) { w.(http.Flusher).Flush() }},
		{name: "content-length-declared-writes-less", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("Content-Length", "10")
				io.WriteString(w, "hello")
			}},
		{name: "content-length-declared-writes-more", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, note func(string, ...any)) {
				w.Header().Set("Content-Length", "5")
				_, err := io.WriteString(w, "hello")
				note("write 1: %v", err)
				_, err = io.WriteString(w, " world")
				note("write 2: %v", err)
			},
			// Deliberate (harmless): both refuse the extra bytes with
			// http.ErrContentLength and send exactly the declared 5.
			// net/http then closes the connection (it counts the refused
			// bytes as written); h1server keeps it, the answer on the wire
			// being complete.
			ignore: []string{"final", "closed", "reached", "notes"},
			check: func(t *testing.T, std, h1 *result) {
				if len(std.Final) != 1 || std.Final[0].Body != "hello" {
					t.Errorf("net/http: %+v", std.Final)
				}
				if len(h1.Final) != 2 || h1.Final[0].Body != "hello" || h1.Final[1].Body != "hello" || h1.Closed {
					t.Errorf("h1server: %+v closed=%v, want two answers of hello, kept alive", h1.Final, h1.Closed)
				}
				if len(h1.Notes) != 4 || h1.Notes[1] != "write 2: "+http.ErrContentLength.Error() {
					t.Errorf("h1server: notes %q, want ErrContentLength on the second write", h1.Notes)
				}
			}},
		{name: "handler-sets-transfer-encoding-chunked", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("Transfer-Encoding", "chunked")
				io.WriteString(w, "hello")
			},
			// Regression: a buffered answer that must be chunked (the
			// handler set "Transfer-Encoding: chunked", or declared
			// trailers) is committed by finish, which still ends it with the
			// last chunk ("0\r\n\r\n"), as net/http does: without it the
			// body never ends, and the client waits or reads the next answer
			// as chunk data.
		},
		{name: "content-length-declared-large-exact", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("Content-Length", strconv.Itoa(20<<10))
				writeN(w, 20<<10)
			}},
		{name: "content-length-bad-value", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("Content-Length", "abc")
				io.WriteString(w, "hello")
			},
			// Deliberate (harmless): both drop the invalid field; net/http
			// then chunks (its header snapshot still has the field when it
			// decides), h1server sends the buffered body with a
			// Content-Length.
			ignore: []string{"framing", "header:Content-Length"},
			check:  wantFraming("length")},
		{name: "content-length-negative", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("Content-Length", "-1")
				io.WriteString(w, "hello")
			},
			// As content-length-bad-value.
			ignore: []string{"framing", "header:Content-Length"},
			check:  wantFraming("length")},
		{name: "transfer-encoding-identity-by-handler", in: get11,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("Transfer-Encoding", "identity")
				io.WriteString(w, "hello")
			}},
		{
			name: "content-length-and-chunked-by-handler", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("Content-Length", "5")
				w.Header().Set("Transfer-Encoding", "chunked")
				io.WriteString(w, "hello")
			},
			// Deliberate (harmless): net/http drops the handler's
			// Content-Length and chunks; h1server keeps the Content-Length
			// and drops the Transfer-Encoding. Either message is well
			// framed; the body and the connection's reuse are the same.
			ignore: []string{"framing", "header:Content-Length"},
			check: func(t *testing.T, _, h1 *result) {
				for _, p := range h1.Final {
					if p.Framing != "length" {
						t.Errorf("h1server: framing %s, want length", p.Framing)
					}
				}
			},
		},
		// --- what a handler puts into the header ---
		{name: "header-value-crlf-no-injection", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("X-Inject", "a\r\nSet-Cookie: evil=1")
				w.Header().Set("X-Inject-Lf", "b\nX-Evil: 1\n\nHTTP/1.1 200 OK")
				w.Header().Set("X-Inject-Cr", "c\rX-Evil2: 1")
				w.Header().Add("X-Trim", "  spaced  ")
				io.WriteString(w, "ok")
			},
			check: func(t *testing.T, _, h1 *result) {
				for _, p := range h1.Final {
					for _, k := range []string{"Set-Cookie", "X-Evil", "X-Evil2"} {
						if hasField(p, k) {
							t.Errorf("h1server: injected field %s", k)
						}
					}
				}
			}},
		{name: "header-invalid-names-dropped", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				h := w.Header()
				h["Bad Name"] = []string{"x"}
				h["X:Colon"] = []string{"y"}
				h["X\r\nEvil"] = []string{"z"}
				h[""] = []string{"empty"}
				h["X-Ok"] = []string{"ok"}
				io.WriteString(w, "ok")
			}},
		{
			name: "header-set-after-writeheader-ignored", in: get11,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("X-Early", "1")
				w.WriteHeader(200)
				w.Header().Set("X-Late", "1")
				io.WriteString(w, "ok")
			},
			// Regression: http.ResponseWriter's contract (and net/http):
			// "Changing the header map after a call to WriteHeader (or
			// Write) has no effect unless the HTTP status code was of the 1xx
			// class or the modified headers are trailers." net/http sends no
			// X-Late; neither does h1server, which sends the header as it was
			// at WriteHeader even when the response is committed later (at
			// the handler's return for a buffered answer).
		},
		{
			name: "retained-header-changed-after-writeheader-ignored", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				h := w.Header()
				vals := []string{"before"}
				h["X-Value"] = vals
				h.Set("X-Early", "1")
				w.WriteHeader(200)
				h.Set("X-Late", "1")
				h.Del("X-Early")
				vals[0] = "after"
				io.WriteString(w, "ok")
			},
			// Regression: the header is sent as it was at WriteHeader
			// whatever the handler does afterwards to the map it kept, or
			// to the slices in it — net/http copies it there. h1server
			// read the map when it committed the buffered answer, at the
			// handler's return: it sent X-Late, no X-Early and
			// "X-Value: after"; the gateway's RateLimit field, whose
			// value lived in the request's pooled state, went out empty.
			check: func(t *testing.T, _, h1 *result) {
				for _, f := range h1.Final {
					if got := fmt.Sprint(f.Header["X-Value"], f.Header["X-Early"], f.Header["X-Late"]); got != "[before] [1] []" {
						t.Errorf("h1server: X-Value, X-Early, X-Late = %s, want [before] [1] []", got)
					}
				}
			},
		},
		{name: "content-encoding-no-sniff", in: get11,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("Content-Encoding", "gzip")
				w.Write([]byte{0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0xff})
			},
			// Regression: net/http does not sniff a Content-Type when the
			// handler set a Content-Encoding (go.dev/issue/31753): the
			// sniffed type would describe the encoded bytes
			// ("application/x-gzip"), and a browser decoding the gzip then
			// offers the page as a download. Neither does h1server.
		},
		// --- trailers ---
		{name: "trailer-declared-set-after-writeheader", in: get11 + get11, n: 2,
			// The pattern of net/http's own example for trailers.
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("Trailer", "AtEnd1, AtEnd2")
				w.Header().Add("Trailer", "AtEnd3")
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				w.WriteHeader(http.StatusOK)
				w.Header().Set("AtEnd1", "value 1")
				io.WriteString(w, "body\n")
				w.Header().Set("AtEnd2", "value 2")
				w.Header().Set("AtEnd3", "value 3")
			},
			// Regression: net/http sends AtEnd1..3 only in the trailer
			// section; so does h1server, although it commits the buffered
			// answer at the handler's return, when the header map holds
			// them: the trailer values must not leak into the header (see
			// header-set-after-writeheader-ignored).
		},
		{name: "trailer-declared-after-flush", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("Trailer", "X-Sum")
				io.WriteString(w, "body")
				w.(http.Flusher).Flush()
				w.Header().Set("X-Sum", "42\r\nX-Evil: 1")
			}},
		{name: "trailer-prefix", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				io.WriteString(w, "body")
				w.Header().Set(http.TrailerPrefix+"X-Late-Trailer", "v")
			}},
		{name: "trailer-prefix-before-write", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set(http.TrailerPrefix+"X-Early-Trailer", "v")
				io.WriteString(w, "body")
			}},
		// Regression: as header-set-after-writeheader-ignored: X-Sum, set
		// after the body was written, does not go out as a header field
		// (net/http sends none either).
		{name: "trailer-declared-http10", in: get10,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("Trailer", "X-Sum")
				io.WriteString(w, "body")
				w.Header().Set("X-Sum", "42")
			},
			ignore: []string{"header:Connection"}},
		// --- 1xx ---
		{name: "early-hints-103", in: get11 + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Add("Link", "</style.css>; rel=preload; as=style")
				w.WriteHeader(http.StatusEarlyHints)
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(http.StatusOK)
				io.WriteString(w, "ok")
			}},
		{
			name: "early-hints-103-http10", in: "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Add("Link", "</style.css>; rel=preload; as=style")
				w.WriteHeader(http.StatusEarlyHints)
				io.WriteString(w, "ok")
			},
			// Deliberate: RFC 9110 section 15.2: "A server MUST NOT send
			// a 1xx response to an HTTP/1.0 client." net/http sends it
			// anyway; h1server does not.
			ignore: []string{"interim"},
			check: func(t *testing.T, std, h1 *result) {
				if len(h1.Interim) != 0 {
					t.Errorf("h1server sent %d 1xx answers to an HTTP/1.0 client", len(h1.Interim))
				}
			},
		},
		// --- Expect ---
		{name: "expect-100-continue-handler-reads", in: "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello" + get11, n: 2},
		{name: "expect-100-continue-handler-does-not-read", in: "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello" + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) { io.WriteString(w, "not read") }},
		{name: "expect-100-continue-client-waits", steps: []step{
			{send: "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", interim: 1},
			{send: "hello", final: 1},
			{send: get11, final: 1},
		}},
		{name: "expect-100-continue-http10", in: "POST / HTTP/1.0\r\nConnection: keep-alive\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello"},
		{name: "expect-something-else-417", in: "POST / HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nContent-Length: 5\r\n\r\nhello" + get11, n: 2},
		// Regression: an empty Expect field holds no expectation; net/http
		// ignores it and serves the request, and so does h1server (no 417
		// Expectation Failed, no close).
		{name: "expect-empty-value", in: "GET / HTTP/1.1\r\nHost: x\r\nExpect:\r\n\r\n" + get11, n: 2},
		{name: "expect-100-continue-with-other", in: "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue, foo\r\nContent-Length: 5\r\n\r\nhello" + get11, n: 2,
			// Deliberate: RFC 9110 section 10.1.1 lets a server answer 417
			// to an expectation other than 100-continue; net/http only
			// looks for the 100-continue token. h1server answers 417 and
			// closes, without running the handler.
			ignore: []string{"interim", "final", "reached", "closed"},
			check: func(t *testing.T, _, h1 *result) {
				if len(h1.Final) != 1 || h1.Final[0].Status != 417 || len(h1.Reached) != 0 || !h1.Closed {
					t.Errorf("h1server: %+v, want one 417, handler not reached, closed", h1)
				}
			}},
		// --- request bodies ---
		{name: "post-content-length", in: "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" + get11, n: 2},
		{name: "post-chunked", in: "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n" + get11, n: 2},
		{name: "post-chunked-extensions", in: "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;name=val;x=\"q\"\r\nhello\r\n0;last\r\n\r\n" + get11, n: 2},
		{name: "post-chunked-trailers", in: "POST /p HTTP/1.1\r\nHost: x\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Sum: 42\r\n\r\n" + get11, n: 2},
		{name: "post-chunked-uppercase-te", in: "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + get11, n: 2},
		{name: "get-with-body", in: "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" + get11, n: 2},
		{name: "small-unread-body-connection-reused", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + strings.Repeat("x", 100) + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				io.WriteString(w, "ignored the body")
			}},
		{name: "small-unread-chunked-body-connection-reused", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n" + strings.Repeat("x", 100) + "\r\n0\r\n\r\n" + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				io.WriteString(w, "ignored the body")
			}},
		{name: "large-unread-body-connection-closed", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(big)) + "\r\n\r\n" + big + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				io.WriteString(w, "ignored the body")
			}},
		{name: "large-unread-chunked-body-connection-closed", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + strconv.FormatInt(int64(len(big)), 16) + "\r\n" + big + "\r\n0\r\n\r\n" + get11, n: 2,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				io.WriteString(w, "ignored the body")
			}},
		{name: "truncated-body-half-close", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhello", halfClose: true,
			// Deliberate (harmless): both close after answering a request
			// whose body broke off; h1server says so with Connection: close.
			ignore: []string{"answerClose"},
			check: func(t *testing.T, _, h1 *result) {
				if len(h1.Final) != 1 || !h1.Final[0].Close {
					t.Errorf("h1server: %+v, want one answer with Connection: close", h1.Final)
				}
			}},
		{name: "chunk-size-overflow", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nhello\r\n0\r\n\r\n" + get11, n: 2},
		{name: "chunk-size-not-hex", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n" + get11, n: 2},
		{name: "chunked-bare-lf", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n" + get11, n: 2},
		// --- request smuggling ---
		{name: "smuggle-cl-and-te", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n", n: 2},
		{name: "smuggle-te-and-cl", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 30\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n", n: 2},
		{name: "smuggle-two-content-lengths", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nhello", errorOnly: true},
		{name: "smuggle-same-content-length-twice", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello" + get11, n: 2},
		{name: "smuggle-content-length-list", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1,2\r\n\r\nhel", errorOnly: true},
		{name: "smuggle-content-length-plus", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\nhello", errorOnly: true},
		{name: "smuggle-te-chunked-identity", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", errorOnly: true},
		{name: "smuggle-te-identity-chunked", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n", errorOnly: true},
		{name: "smuggle-te-twice", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", errorOnly: true},
		{name: "smuggle-te-xchunked", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", errorOnly: true},
		{name: "smuggle-te-obs-fold", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n" + get11, n: 2},
		{name: "smuggle-te-space-before-colon", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", errorOnly: true},
		{name: "smuggle-te-http10", in: "POST / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", n: 2},
		{name: "request-content-length-negative", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", errorOnly: true},
		{name: "request-content-length-huge-overflow", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", errorOnly: true},
		{name: "request-content-length-max-int64-truncated", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775807\r\n\r\nhello", halfClose: true},
		// --- malformed heads ---
		{name: "bare-lf-line-endings", in: "GET / HTTP/1.1\nHost: x\n\nGET /2 HTTP/1.1\nHost: x\n\n", n: 2},
		{name: "nul-in-header-value", in: "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", errorOnly: true},
		{name: "ctl-in-header-value", in: "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n", errorOnly: true},
		{name: "del-in-header-value", in: "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x7fb\r\n\r\n", errorOnly: true},
		{name: "obs-text-in-header-value", in: "GET / HTTP/1.1\r\nHost: x\r\nX-A: caf\xe9\r\n\r\n"},
		{name: "space-before-colon", in: "GET / HTTP/1.1\r\nHost: x\r\nX-A : b\r\n\r\n", errorOnly: true},
		{name: "header-without-colon", in: "GET / HTTP/1.1\r\nHost: x\r\nX-A\r\n\r\n", errorOnly: true},
		{name: "header-name-with-space", in: "GET / HTTP/1.1\r\nHost: x\r\nX A: b\r\n\r\n", errorOnly: true},
		{name: "obs-fold-continuation", in: "GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n  b\r\n\tc\r\n\r\n" + get11, n: 2},
		{name: "obs-fold-first-line", in: "GET / HTTP/1.1\r\n Host: x\r\n\r\n", errorOnly: true},
		{name: "missing-host-http11", in: "GET / HTTP/1.1\r\n\r\n", errorOnly: true},
		{name: "missing-host-http10-ok", in: "GET / HTTP/1.0\r\n\r\n", ignore: []string{"header:Connection"}},
		// The Host policy of both engines (httpsyntax.RefuseHost): the
		// field is required in HTTP/1.1 and checked whatever the target's
		// form; an empty one is refused.
		{name: "missing-host-absolute-form", in: "GET http://example.com/p HTTP/1.1\r\n\r\n", errorOnly: true},
		{name: "empty-host-http11", in: "GET / HTTP/1.1\r\nHost:\r\n\r\n" + get11, errorOnly: true},
		{name: "empty-host-http10", in: "GET / HTTP/1.0\r\nHost:\r\n\r\n", errorOnly: true},
		{name: "two-host-headers", in: "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", errorOnly: true},
		{name: "invalid-host-space", in: "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", errorOnly: true},
		{name: "invalid-host-slash", in: "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", errorOnly: true},
		{name: "invalid-host-at", in: "GET / HTTP/1.1\r\nHost: user@a\r\n\r\n", errorOnly: true},
		{name: "host-ipv6-zone", in: "GET / HTTP/1.1\r\nHost: [fe80::1%25eth0]:80\r\n\r\n"},
		{name: "absolute-form-uri", in: "GET http://example.com/p?q=1 HTTP/1.1\r\nHost: other\r\n\r\n"},
		{name: "absolute-form-invalid-host-field", in: "GET http://example.com/ HTTP/1.1\r\nHost: a b\r\n\r\n", errorOnly: true},
		{name: "absolute-form-empty-authority", in: "GET http:///p HTTP/1.1\r\nHost: a\r\n\r\n", errorOnly: true},
		{name: "absolute-form-userinfo", in: "GET http://u@a/p HTTP/1.1\r\nHost: a\r\n\r\n", errorOnly: true},
		{name: "absolute-form-other-scheme", in: "GET ftp://a/p HTTP/1.1\r\nHost: a\r\n\r\n", errorOnly: true},
		{name: "connect", in: "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n" + get11, errorOnly: true},
		{name: "connect-without-host", in: "CONNECT a:443 HTTP/1.1\r\n\r\n" + get11, errorOnly: true},
		{
			// Both servers answer "OPTIONS *" themselves (200, empty): it
			// asks about the server, not a resource.
			name: "options-star", in: "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n" + get11, n: 2,
		},
		{name: "connect-authority-form", in: "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"},
		{name: "connect-no-host", in: "CONNECT example.com:443 HTTP/1.1\r\n\r\n"},
		{name: "request-line-double-space", in: "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", errorOnly: true},
		{name: "request-line-trailing-space", in: "GET / HTTP/1.1 \r\nHost: x\r\n\r\n", errorOnly: true},
		{name: "request-line-tab", in: "GET\t/\tHTTP/1.1\r\nHost: x\r\n\r\n", errorOnly: true},
		{name: "lowercase-http-version", in: "GET / http/1.1\r\nHost: x\r\n\r\n", errorOnly: true},
		{name: "http-1.2", in: "GET / HTTP/1.2\r\nHost: x\r\n\r\n"},
		{name: "http-2.0-request", in: "GET / HTTP/2.0\r\nHost: x\r\n\r\n", errorOnly: true},
		{name: "http-3.0-request", in: "GET / HTTP/3.0\r\nHost: x\r\n\r\n", errorOnly: true},
		{
			name: "http2-preface", in: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", halfClose: true,
			// Deliberate: net/http lets "PRI * HTTP/2.0" through (for h2c
			// handlers to take over); h1server serves HTTP/1.x only and
			// answers 505. (TLS and HTTP/2 stay with net/http.)
			ignore: []string{"final", "reached", "closed"},
			check: func(t *testing.T, _, h1 *result) {
				if len(h1.Final) != 1 || h1.Final[0].Status != 505 || len(h1.Reached) != 0 || !h1.Closed {
					t.Errorf("h1server: %+v, want one 505, handler not reached, closed", h1)
				}
			},
		},
		{name: "http09-request", in: "GET /\r\n\r\n", errorOnly: true},
		{name: "head-larger-than-max-header-bytes-431", in: "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 3*testMaxHeaderBytes) + "\r\n\r\n", errorOnly: true},
		{name: "head-just-under-limit", in: "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", testMaxHeaderBytes) + "\r\n\r\n"},
		{name: "unknown-method-token", in: "FOO_BAR /x HTTP/1.1\r\nHost: x\r\n\r\n"},
		{name: "invalid-method", in: "G@T / HTTP/1.1\r\nHost: x\r\n\r\n", errorOnly: true},
		// Regression: the four below get a 400 from h1server, as from
		// net/http. http.ReadRequest fails with a *url.Error, which
		// implements net.Error but is no failed read: h1server's
		// rejectRequest, like net/http, stays silent only for EOF,
		// timeouts and *net.OpError reads (a client gone away), not for
		// every net.Error.
		{name: "nul-in-request-uri", in: "GET /a\x00b HTTP/1.1\r\nHost: x\r\n\r\n", errorOnly: true},
		{name: "del-in-request-uri", in: "GET /a\x7fb HTTP/1.1\r\nHost: x\r\n\r\n", errorOnly: true},
		{name: "request-uri-not-origin-form", in: "GET a/b HTTP/1.1\r\nHost: x\r\n\r\n", errorOnly: true},
		{name: "bad-percent-in-request-uri", in: "GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n", errorOnly: true},
		{name: "request-uri-with-fragment", in: "GET /a#frag HTTP/1.1\r\nHost: x\r\n\r\n"},
		{name: "request-uri-long", in: "GET /" + strings.Repeat("p", 2000) + " HTTP/1.1\r\nHost: x\r\n\r\n"},
		{name: "transfer-encoding-text-in-request-line", in: "GET / transfer encoding\r\nHost: x\r\n\r\n",
			// Regression: the parse error's text quotes the client's bytes,
			// so h1server picks 501 only by how the error starts (an
			// unsupported transfer coding), not by finding "transfer
			// encoding" anywhere in it: a malformed request line (or header
			// line) containing those words gets net/http's 400, not 501 Not
			// Implemented.
			errorOnly: true},
		{
			name: "leading-bare-lf-before-first-request", in: "\n" + get11,
			// Deliberate: RFC 9112 section 2.2: a server "SHOULD ignore at
			// least one empty line (CRLF) received prior to the
			// request-line". net/http does so only after a POST; h1server
			// before a connection's first request too.
			ignore: []string{"final", "reached", "closed"},
			check: func(t *testing.T, _, h1 *result) {
				if len(h1.Final) != 1 || h1.Final[0].Status != 200 {
					t.Errorf("h1server: %+v, want the request served", h1.Final)
				}
			},
		},
		{
			name: "leading-crlf-before-first-request", in: "\r\n" + get11,
			// Regression: h1server skips a CRLF before a request (as it
			// skips the bare LF above) on a fresh connection too, where it
			// may have read just the "\r" when it looks: it takes the whole
			// CRLF, so the "\n" is not parsed as an empty request line (a
			// 400). (net/http answers 400 here, since it only skips after a
			// POST, so only the check below holds this.)
			check: func(t *testing.T, _, h1 *result) {
				if len(h1.Final) != 1 || h1.Final[0].Status != 200 {
					t.Errorf("h1server does not skip a leading CRLF on a fresh connection: got %+v", h1.Final)
				}
			},
			ignore: []string{"final", "reached", "closed"},
		},
		{name: "crlf-after-post-body-same-write", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello\r\n" + get11, n: 2},
		{name: "crlf-after-post-body-next-write", steps: []step{
			{send: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", final: 1},
			// Regression: net/http skips the CRLF an old client sends after
			// a POST body; so does h1server when its buffer is empty here:
			// it takes the whole CRLF, not just the "\r" (the "\n" alone
			// would get a 400).
			{send: "\r\n" + get11, final: 1},
		}},
		// --- handlers that panic or hijack ---
		{name: "panic-before-write", in: get11 + get11, n: 2,
			h:     func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) { panic("boom") },
			check: noCompleteAnswer},
		{name: "panic-after-buffered-write", in: get11,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				io.WriteString(w, "partial")
				panic("boom")
			},
			check: noCompleteAnswer},
		{name: "panic-after-flush", in: get11,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				io.WriteString(w, "partial")
				w.(http.Flusher).Flush()
				panic("boom")
			},
			check: noCompleteAnswer},
		{name: "panic-err-abort-handler", in: get11,
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				io.WriteString(w, "partial")
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			},
			check: noCompleteAnswer},
		{name: "hijack-raw-response", in: get11, raw: true,
			h: func(w http.ResponseWriter, r *http.Request, note func(string, ...any)) {
				c, brw, err := w.(http.Hijacker).Hijack()
				if err != nil {
					note("hijack: %v", err)
					return
				}
				defer c.Close()
				brw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi")
				brw.Flush()
				_, err = w.Write([]byte("x"))
				note("write after hijack: %v", err)
			}},
		{name: "hijack-after-writeheader-101", in: "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", raw: true,
			// Regression: net/http's Hijack sends the status and header the
			// handler set with WriteHeader before handing over the connection
			// (this is how e.g. github.com/coder/websocket answers an
			// upgrade: WriteHeader(101), then Hijack); so does h1server's:
			// the client gets the 101, then the raw bytes. And h1server keeps
			// the handler's "Connection: Upgrade", which browsers require: it
			// replaces the handler's Connection field only when it sends one
			// of its own (close, or keep-alive to an HTTP/1.0 client).
			h: func(w http.ResponseWriter, r *http.Request, note func(string, ...any)) {
				w.Header().Set("Connection", "Upgrade")
				w.Header().Set("Upgrade", "websocket")
				w.WriteHeader(http.StatusSwitchingProtocols)
				c, brw, err := w.(http.Hijacker).Hijack()
				if err != nil {
					note("hijack: %v", err)
					return
				}
				defer c.Close()
				brw.WriteString("raw-after-101")
				brw.Flush()
			}},
		{name: "flush-101-then-hijack", in: "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", raw: true,
			h: func(w http.ResponseWriter, r *http.Request, note func(string, ...any)) {
				w.Header().Set("Connection", "Upgrade")
				w.Header().Set("Upgrade", "websocket")
				w.WriteHeader(http.StatusSwitchingProtocols)
				w.(http.Flusher).Flush()
				c, brw, err := w.(http.Hijacker).Hijack()
				if err != nil {
					note("hijack: %v", err)
					return
				}
				defer c.Close()
				brw.WriteString("raw-after-101")
				brw.Flush()
			}},
		{name: "hijack-reads-pipelined-bytes", in: get11 + "PING", raw: true,
			h: func(w http.ResponseWriter, r *http.Request, note func(string, ...any)) {
				c, brw, err := w.(http.Hijacker).Hijack()
				if err != nil {
					note("hijack: %v", err)
					return
				}
				defer c.Close()
				b, _ := io.ReadAll(brw)
				brw.WriteString("got " + string(b))
				brw.Flush()
			}},
	}
}

func TestCompareWithNetHTTP(t *testing.T) {
	cases := compareCases()
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case %s", tc.name)
		}
		seen[tc.name] = true
	}
	t.Logf("%d cases", len(cases))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

// ---------------------------------------------------------------------------
// Graceful shutdown, Close, and the watch for clients that go away: the
// same expectations of both servers.

type gracefulServer interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
	Close() error
}

type serverKind struct {
	name string
	new  func(h http.Handler) gracefulServer
}

var serverKinds = []serverKind{
	{"net/http", func(h http.Handler) gracefulServer { return &http.Server{Handler: h, ErrorLog: quietLog} }},
	{"h1server", func(h http.Handler) gracefulServer { return &Server{Handler: h, ErrorLog: quietLog} }},
	// As when many connections are open: no buffer while waiting.
	{"h1server-lean", func(h http.Handler) gracefulServer {
		return &Server{Handler: h, ErrorLog: quietLog, IdleBuffersUpTo: -1}
	}},
}

// handedOffListener signals, when Serve asks for the next connection,
// that it is done with the previous one (tracked, its goroutine started).
type handedOffListener struct {
	net.Listener
	accepts  int
	handedOf chan int
}

func (l *handedOffListener) Accept() (net.Conn, error) {
	if l.accepts > 0 {
		select {
		case l.handedOf <- l.accepts:
		default:
		}
	}
	l.accepts++
	return l.Listener.Accept()
}

func serveKind(t *testing.T, s gracefulServer, wrap func(net.Listener) net.Listener) (addr string, serveErr chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	var l net.Listener = ln
	if wrap != nil {
		l = wrap(ln)
	}
	serveErr = make(chan error, 1)
	go func() { serveErr <- s.Serve(l) }()
	t.Cleanup(func() { s.Close() })
	return addr, serveErr
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(safetyDeadline))
	return c, bufio.NewReader(resetAsEOF{c})
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(safetyDeadline):
		t.Fatalf("safety deadline: still waiting for %s", what)
		panic("unreachable")
	}
}

func readAnswer(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	res, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading answer: %v", err)
	}
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return res, string(b)
}

func wantEOF(t *testing.T, br *bufio.Reader) {
	t.Helper()
	if _, err := br.Peek(1); err != io.EOF {
		t.Errorf("connection not closed: Peek = %v", err)
	}
}

func TestShutdownClosesIdleConnection(t *testing.T) {
	for _, k := range serverKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			s := k.new(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
			addr, serveErr := serveKind(t, s, nil)
			c, br := dial(t, addr)
			io.WriteString(c, get11)
			res, body := readAnswer(t, br, "GET")
			if res.StatusCode != 200 || body != "ok" || res.Close {
				t.Fatalf("answer %d %q close=%v", res.StatusCode, body, res.Close)
			}
			// The connection is idle (kept alive): Shutdown closes it.
			ctx, cancel := context.WithTimeout(context.Background(), safetyDeadline)
			defer cancel()
			if err := s.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			wantEOF(t, br)
			if err := wait(t, serveErr, "Serve to return"); err != http.ErrServerClosed {
				t.Errorf("Serve: %v, want http.ErrServerClosed", err)
			}
		})
	}
}

func TestShutdownFinishesRequestInFlight(t *testing.T) {
	for _, k := range serverKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			entered, release := make(chan struct{}), make(chan struct{})
			s := k.new(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(entered)
				<-release
				io.WriteString(w, "done")
			}))
			addr, serveErr := serveKind(t, s, nil)
			c, br := dial(t, addr)
			io.WriteString(c, get11+get11)
			wait(t, entered, "the handler")
			shutdownErr := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), safetyDeadline)
				defer cancel()
				shutdownErr <- s.Shutdown(ctx)
			}()
			// Serve returns once Shutdown has closed the listener.
			if err := wait(t, serveErr, "Serve to return"); err != http.ErrServerClosed {
				t.Errorf("Serve: %v, want http.ErrServerClosed", err)
			}
			select {
			case err := <-shutdownErr:
				t.Fatalf("Shutdown returned (%v) with a request in flight", err)
			default:
			}
			close(release)
			res, body := readAnswer(t, br, "GET")
			if res.StatusCode != 200 || body != "done" {
				t.Errorf("answer %d %q", res.StatusCode, body)
			}
			// (http.ReadResponse turns "Connection: close" into Close.)
			if !res.Close {
				t.Errorf("answer during shutdown: not Connection: close")
			}
			// The pipelined second request is not served.
			wantEOF(t, br)
			if err := wait(t, shutdownErr, "Shutdown"); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		})
	}
}

// A connection accepted before Shutdown whose first request arrives after
// it began is closed without an answer by both (net/http since Go 1.2x
// drops a request read once shutting down; h1server closes the connection
// as idle at once).
func TestShutdownDropsRequestArrivingAfter(t *testing.T) {
	for _, k := range serverKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			reached := make(chan struct{}, 1)
			s := k.new(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached <- struct{}{}
				io.WriteString(w, "ok")
			}))
			handedOff := make(chan int, 1)
			addr, serveErr := serveKind(t, s, func(l net.Listener) net.Listener {
				return &handedOffListener{Listener: l, handedOf: handedOff}
			})
			c, br := dial(t, addr)
			wait(t, handedOff, "the connection to be accepted")
			shutdownErr := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), safetyDeadline)
				defer cancel()
				shutdownErr <- s.Shutdown(ctx)
			}()
			wait(t, serveErr, "Serve to return")
			io.WriteString(c, get11)
			wantEOF(t, br)
			if err := wait(t, shutdownErr, "Shutdown"); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			select {
			case <-reached:
				t.Errorf("handler ran for a request that arrived after Shutdown")
			default:
			}
		})
	}
}

// hijackEcho hijacks the connection and echoes lines until EOF.
func hijackEcho(hijacked, done chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		c, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		close(hijacked)
		for {
			line, err := brw.ReadString('\n')
			if err != nil {
				return
			}
			brw.WriteString(line)
			brw.Flush()
		}
	})
}

func TestShutdownIgnoresHijackedConnection(t *testing.T) {
	for _, k := range serverKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			hijacked, done := make(chan struct{}), make(chan struct{})
			s := k.new(hijackEcho(hijacked, done))
			addr, _ := serveKind(t, s, nil)
			c, br := dial(t, addr)
			io.WriteString(c, get11)
			wait(t, hijacked, "the hijack")
			// Regression: net/http's Shutdown "does not attempt to close nor
			// wait for hijacked connections such as WebSockets": with only
			// a hijacked connection left, it returns nil even for a
			// context already done. So does h1server's: a connection leaves
			// its set when it is hijacked, not when the handler returns, so
			// Shutdown does not wait for it (a WebSocket session: for its
			// whole life).
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := s.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown with only a hijacked connection: %v, want nil", err)
			}
			io.WriteString(c, "ping\n")
			if line, err := br.ReadString('\n'); line != "ping\n" {
				t.Errorf("hijacked connection after Shutdown: %q, %v", line, err)
			}
			c.Close()
			wait(t, done, "the handler to return")
		})
	}
}

func TestCloseLeavesHijackedConnection(t *testing.T) {
	for _, k := range serverKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			hijacked, done := make(chan struct{}), make(chan struct{})
			s := k.new(hijackEcho(hijacked, done))
			addr, _ := serveKind(t, s, nil)
			c, br := dial(t, addr)
			io.WriteString(c, get11)
			wait(t, hijacked, "the hijack")
			s.Close()
			// Regression: net/http's Close leaves hijacked connections alone
			// (they are the handler's); so does h1server's, even while their
			// handler still runs: closing them would cut e.g. proxied
			// WebSockets.
			io.WriteString(c, "ping\n")
			if line, err := br.ReadString('\n'); line != "ping\n" {
				t.Errorf("hijacked connection after Close: %q, %v; want it left open", line, err)
			}
			c.Close()
			wait(t, done, "the handler to return")
		})
	}
}

func TestDisconnectCancelsRequestContext(t *testing.T) {
	reqs := map[string]string{
		"get":       get11,
		"post-read": "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
		"post-chunked-read": "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"5\r\nhello\r\n0\r\n\r\n",
	}
	for _, k := range serverKinds {
		for name, req := range reqs {
			t.Run(k.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				entered := make(chan struct{})
				got := make(chan error, 1)
				s := k.new(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.ReadAll(r.Body)
					close(entered)
					got <- contextEnd(r)
				}))
				addr, _ := serveKind(t, s, nil)
				c, _ := dial(t, addr)
				io.WriteString(c, req)
				wait(t, entered, "the handler")
				c.Close()
				if err := wait(t, got, "the handler's verdict"); !errors.Is(err, context.Canceled) {
					t.Errorf("handler's context: %v, want context.Canceled", err)
				}
			})
		}
	}
}

// The watch for a client going away reads one byte; when that byte is the
// start of a pipelined request, it must be kept for the next request and
// must not cancel the running one. (The pause lets the watch start; the
// test holds whether or not it has.)
func TestDisconnectWatchKeepsPipelinedRequest(t *testing.T) {
	for _, k := range serverKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			entered, release := make(chan struct{}), make(chan struct{})
			s := k.new(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/slow" {
					close(entered)
					<-release
					fmt.Fprintf(w, "slow ctx=%v", r.Context().Err())
					return
				}
				fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
			}))
			addr, _ := serveKind(t, s, nil)
			c, br := dial(t, addr)
			io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
			wait(t, entered, "the handler")
			io.WriteString(c, "GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
			time.Sleep(4 * DisconnectCheck)
			close(release)
			if _, body := readAnswer(t, br, "GET"); body != "slow ctx=<nil>" {
				t.Errorf("first answer %q", body)
			}
			if _, body := readAnswer(t, br, "GET"); body != "GET /next" {
				t.Errorf("second answer %q", body)
			}
		})
	}
}

func TestDisconnectWatchByteReachesHijacker(t *testing.T) {
	for _, k := range serverKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			entered, release := make(chan struct{}), make(chan struct{})
			s := k.new(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(entered)
				<-release
				c, brw, err := w.(http.Hijacker).Hijack()
				if err != nil {
					return
				}
				defer c.Close()
				b := make([]byte, 4)
				io.ReadFull(brw, b)
				brw.WriteString("got " + string(b))
				brw.Flush()
			}))
			addr, _ := serveKind(t, s, nil)
			c, br := dial(t, addr)
			io.WriteString(c, get11)
			wait(t, entered, "the handler")
			io.WriteString(c, "PING")
			time.Sleep(4 * DisconnectCheck)
			close(release)
			b, err := io.ReadAll(br)
			if string(b) != "got PING" {
				t.Errorf("hijacker got %q (%v), want %q", b, err, "got PING")
			}
		})
	}
}
