package forward

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func listen(t testing.TB) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &countingListener{Listener: ln}
}

// newUpstream starts a net/http upstream serving h, counting the
// connections made to it.
func newUpstream(t testing.TB, h http.Handler) (*httptest.Server, *countingListener) {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	ln := listen(t)
	s.Listener.Close()
	s.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	return s, ln
}

// rawUpstream answers every request it reads with bytes of the test's
// choosing: what a net/http server would never send.
type rawUpstream struct {
	ln      *countingListener
	url     string
	respond func(r *http.Request) (resp string, close bool)
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

func newRawUpstream(t testing.TB, respond func(r *http.Request) (resp string, close bool)) *rawUpstream {
	t.Helper()
	u := &rawUpstream{ln: listen(t), respond: respond}
	u.url = "http://" + u.ln.Addr().String()
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for {
			c, err := u.ln.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			u.conns = append(u.conns, c)
			u.mu.Unlock()
			u.wg.Add(1)
			go func() {
				defer u.wg.Done()
				u.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		u.ln.Close()
		u.mu.Lock()
		for _, c := range u.conns {
			c.Close()
		}
		u.mu.Unlock()
		u.wg.Wait()
	})
	return u
}

func (u *rawUpstream) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if r.Header.Get("Expect") == "100-continue" {
			// As a server does: the body comes at once, not after the
			// client's wait for this.
			io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
		}
		io.Copy(io.Discard, r.Body)
		resp, closeAfter := u.respond(r)
		if _, err := io.WriteString(c, resp); err != nil || closeAfter {
			return
		}
	}
}

// errorLog records what OnError was called with and answers as the
// gateway does: 502, 504, or nothing (499) for a client that left.
type errorLog struct {
	mu   sync.Mutex
	errs []error
	ch   chan error
}

func newErrorLog() *errorLog { return &errorLog{ch: make(chan error, 100)} }

func (e *errorLog) onError(w http.ResponseWriter, r *http.Request, err error) {
	e.mu.Lock()
	e.errs = append(e.errs, err)
	e.mu.Unlock()
	select {
	case e.ch <- err:
	default:
	}
	switch classify(err) {
	case "timeout":
		w.WriteHeader(http.StatusGatewayTimeout)
	case "canceled":
		w.WriteHeader(499)
	default:
		w.WriteHeader(http.StatusBadGateway)
	}
}

// classify is internal/proxy.Classify, which these tests cannot import
// (internal/proxy may import this package); classify_test.go checks the
// errors against the real one.
func classify(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT):
		return "timeout"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "unreachable"
}

func (e *errorLog) all() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.errs...)
}

// newForwarder returns a Forwarder to target whose OnError is el's.
func newForwarder(t testing.TB, target string, o Options, el *errorLog) *Forwarder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	o.OnError = el.onError
	f, err := New(u, o)
	if err != nil {
		t.Fatalf("New(%q): %v", target, err)
	}
	t.Cleanup(f.CloseIdle)
	return f
}

// newReference returns the httputil.ReverseProxy the Forwarder replaces,
// set up as internal/proxy.NewUpstream sets it up (the Forwarder's
// fallback), for differential tests.
func newReference(t testing.TB, target string, el *errorLog) http.Handler {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{
		ConnectTimeout: DefaultConnectTimeout, ResponseHeaderTimeout: DefaultResponseHeaderTimeout,
		IdleTimeout: DefaultIdleTimeout, MaxIdleConns: DefaultMaxIdleConns, OnError: el.onError,
	}
	rp, tr := newReverseProxy(u, o, &net.Dialer{Timeout: o.ConnectTimeout})
	t.Cleanup(tr.CloseIdleConnections)
	return rp
}

// front serves h on loopback, as the gateway serves the forwarder.
func front(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// rawResult is what a client saw of a response.
type rawResult struct {
	Status  int
	Header  http.Header
	Body    string
	Trailer http.Header
	Err     string // reading the body
	Chunked bool
	Length  int64
}

// rawDo sends the request text req to the server at addr (host:port) and
// reads the response.
func rawDo(t testing.TB, addr, method, req string) rawResult {
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
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	for err == nil && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		resp, err = http.ReadResponse(br, &http.Request{Method: method}) // informational
	}
	if err != nil {
		return rawResult{Err: "reading the response: " + err.Error()}
	}
	body, err := io.ReadAll(resp.Body)
	res := rawResult{
		Status: resp.StatusCode, Header: resp.Header, Body: string(body), Trailer: resp.Trailer,
		Chunked: len(resp.TransferEncoding) > 0, Length: resp.ContentLength,
	}
	if err != nil {
		res.Err = err.Error()
	}
	res.Header.Del("Date")
	return res
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\r\n")
	return l
}

func hostOf(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
