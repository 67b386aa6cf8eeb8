package proxy_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/proxy"
	"github.com/floodgate/floodgate/internal/testnet"
)

// timeoutErr is a net.Error that timed out, as the Transport's are.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func opErr(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want proxy.Class
	}{
		{"canceled", context.Canceled, proxy.Canceled},
		{"canceled wrapped", fmt.Errorf("forward: awaiting response: %w", context.Canceled), proxy.Canceled},
		{"canceled after a reset", fmt.Errorf("forward: %w (after %v)", context.Canceled, opErr("read", syscall.ECONNRESET)), proxy.Canceled},
		{"deadline", context.DeadlineExceeded, proxy.Timeout},
		{"net timeout", &net.OpError{Op: "dial", Net: "tcp", Err: timeoutErr{}}, proxy.Timeout},
		{"ETIMEDOUT", opErr("connect", syscall.ETIMEDOUT), proxy.Timeout},
		{"refused", opErr("connect", syscall.ECONNREFUSED), proxy.Refused},
		{"refused wrapped", fmt.Errorf("forward: dial: %w", opErr("connect", syscall.ECONNREFUSED)), proxy.Refused},
		{"reset", opErr("read", syscall.ECONNRESET), proxy.Reset},
		{"aborted", opErr("read", syscall.ECONNABORTED), proxy.Reset},
		{"broken pipe", opErr("write", syscall.EPIPE), proxy.Reset},
		{"closed before answering", fmt.Errorf("forward: upstream closed the connection before answering: %w", io.EOF), proxy.Reset},
		{"EOF", io.EOF, proxy.Reset},
		{"truncated head", io.ErrUnexpectedEOF, proxy.Reset},
		{"net/http malformed response", fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", errors.New(`malformed HTTP response "garbage"`)), proxy.BadResponse},
		{"net/http malformed status", errors.New(`malformed HTTP status code "abc"`), proxy.BadResponse},
		{"net/http MIME header", fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", textproto.ProtocolError("malformed MIME header line: x")), proxy.BadResponse},
		{"net/http head too large", errors.New("net/http: server response headers exceeded 1048576 bytes; aborted"), proxy.BadResponse},
		{"net/http Content-Length", errors.New(`bad Content-Length "x"`), proxy.BadResponse},
		{"net/http transfer encoding", errors.New(`unsupported transfer encoding: "gzip"`), proxy.BadResponse},
		{"no route", opErr("connect", syscall.EHOSTUNREACH), proxy.Unreachable},
		{"DNS", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "api.invalid", IsNotFound: true}}, proxy.Unreachable},
		{"anything else", errors.New("tls: handshake failure"), proxy.Unreachable},
	} {
		if got := proxy.Classify(tc.err); got != tc.want {
			t.Errorf("%s: Classify(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestClassString(t *testing.T) {
	want := []string{"refused", "timeout", "reset", "bad_response", "unreachable"}
	got := proxy.UpstreamFailures()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("UpstreamFailures() = %q, want %q", got, want)
	}
	if s := proxy.Canceled.String(); s != "canceled" {
		t.Errorf("Canceled.String() = %q", s)
	}
}

// TestClassifyBothForwarders sends requests through both of an
// Upstream's forwarders, the lean one (a plain http upstream) and
// httputil.ReverseProxy (one with a transport wrapper), to real servers
// on loopback that fail in each way, and checks that the errors they
// report classify the same.
func TestClassifyBothForwarders(t *testing.T) {
	dead := testnet.FreeAddr(t) // nothing listens there
	raw := func(answer func(c net.Conn)) string {
		return testnet.Serve(t, func(c net.Conn) {
			br := bufio.NewReader(c)
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			answer(c)
		})
	}
	reset := raw(func(c net.Conn) { c.(*net.TCPConn).SetLinger(0) })
	closed := raw(func(c net.Conn) {})
	garbage := raw(func(c net.Conn) { io.WriteString(c, "garbage\r\n\r\n") })
	badField := raw(func(c net.Conn) { io.WriteString(c, "HTTP/1.1 200 OK\r\nNo Colon Here\r\nContent-Length: 0\r\n\r\n") })
	badLength := raw(func(c net.Conn) { io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: many\r\n\r\n") })
	slow := raw(func(c net.Conn) { io.Copy(io.Discard, c) }) // never answers; ends when the test closes c

	for _, tc := range []struct {
		name, addr string
		want       proxy.Class
	}{
		{"refused", dead, proxy.Refused},
		{"reset", reset, proxy.Reset},
		{"closed before answering", closed, proxy.Reset},
		{"not HTTP", garbage, proxy.BadResponse},
		{"malformed field", badField, proxy.BadResponse},
		{"malformed Content-Length", badLength, proxy.BadResponse},
		{"response header timeout", slow, proxy.Timeout},
	} {
		for _, fw := range []struct {
			name string
			wrap func(http.RoundTripper) http.RoundTripper
		}{
			{"forward", nil},
			{"ReverseProxy", func(rt http.RoundTripper) http.RoundTripper { return rt }},
		} {
			t.Run(tc.name+"/"+fw.name, func(t *testing.T) {
				errs := make(chan error, 1)
				u, _ := url.Parse("http://" + tc.addr)
				up := proxy.NewUpstream("api", u, proxy.UpstreamOptions{
					ResponseHeaderTimeout: 50 * time.Millisecond,
					WrapTransport:         fw.wrap,
					OnError: func(w http.ResponseWriter, r *http.Request, err error) {
						errs <- err
						w.WriteHeader(http.StatusBadGateway)
					},
				})
				defer up.CloseIdle()
				w := httptest.NewRecorder()
				up.Handler.ServeHTTP(w, httptest.NewRequest("GET", "/x", nil))
				select {
				case err := <-errs:
					if got := proxy.Classify(err); got != tc.want {
						t.Errorf("Classify(%v) = %v, want %v", err, got, tc.want)
					}
				default:
					t.Fatalf("no error reported; answered %d", w.Code)
				}
			})
		}
	}
}
