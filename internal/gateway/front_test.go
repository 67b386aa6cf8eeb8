package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/h1server"
)

// newFront serves h the way `floodgate serve` does by default (package
// h1server, server.engine: floodgate) on a loopback port, and returns an
// httptest.Server whose URL, Listener and Close reach that server (its
// own net/http server is never started: use frontClient for a client).
func newFront(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(h) // Config.Handler: for tests that take the handler back
	s := &h1server.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go s.Serve(ts.Listener)
	ts.URL = "http://" + ts.Listener.Addr().String()
	t.Cleanup(func() { s.Close() })
	return ts
}

// frontClient is a client of its own for a test.
func frontClient(t testing.TB) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}
