package forward_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/forward"
	"github.com/floodgate/floodgate/internal/proxy"
)

// TestErrorsClassifyAsProxy checks the Forwarder's errors against the
// gateway's own classifier, proxy.Classify: a refused connection is
// Refused (502), a late response head or a passed deadline Timeout
// (504), a client that left Canceled.
func TestErrorsClassifyAsProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	hang := make(chan struct{})
	arrived := make(chan struct{}, 10)
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hung.Close)
	t.Cleanup(func() { close(hang) })

	for _, tc := range []struct {
		name     string
		target   string
		o        forward.Options
		deadline bool // a context deadline, as a route's total timeout
		leave    bool // the client closes its connection
		want     proxy.Class
	}{
		{name: "refused", target: dead, want: proxy.Refused},
		{name: "response header timeout", target: hung.URL, o: forward.Options{ResponseHeaderTimeout: time.Millisecond}, want: proxy.Timeout},
		{name: "context deadline", target: hung.URL, deadline: true, want: proxy.Timeout},
		{name: "client gone", target: hung.URL, leave: true, want: proxy.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := make(chan error, 1)
			tc.o.OnError = func(w http.ResponseWriter, r *http.Request, err error) {
				errs <- err
				w.WriteHeader(http.StatusBadGateway)
			}
			u, _ := url.Parse(tc.target)
			f, err := forward.New(u, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			defer f.CloseIdle()
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.deadline {
					ctx, cancel := context.WithTimeout(r.Context(), 10*time.Millisecond)
					defer cancel()
					r = r.WithContext(ctx)
				}
				f.ServeHTTP(w, r)
			}))
			defer front.Close()
			c, err := net.Dial("tcp", front.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			if tc.leave {
				<-arrived
				c.Close()
			} else {
				http.ReadResponse(bufio.NewReader(c), nil)
			}
			err = <-errs
			if got := proxy.Classify(err); got != tc.want {
				t.Errorf("proxy.Classify(%v) = %v, want %v", err, got, tc.want)
			}
		})
	}
	for len(arrived) > 0 {
		<-arrived
	}
}
