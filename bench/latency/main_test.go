package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
)

// TestRawGetter runs the raw client against a real server on loopback:
// answers are read whole on one kept-alive connection, a server that
// closes kept-alive connections is followed by a new one without a
// failure, and a status other than 200 is a failure.
func TestRawGetter(t *testing.T) {
	var n, conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/p" || r.Host == "" {
			t.Errorf("request for %q, Host %q", r.URL.RequestURI(), r.Host)
		}
		i := n.Add(1)
		switch {
		case r.URL.Query().Get("fail") != "":
			w.WriteHeader(http.StatusTooManyRequests)
		case i%5 == 0:
			w.Header().Set("Connection", "close") // the server ends the connection
		}
		w.Write(make([]byte, 40000)) // more than the client's buffer
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	u, _ := url.Parse(srv.URL + "/p?q=1")
	g := newRawGetter(u)
	defer g.close()
	for i := range 19 {
		if err := g.get(); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if got := conns.Load(); got != 4 {
		t.Errorf("%d connections for 19 requests, the server closing every fifth; want 4", got)
	}

	// The server closes the idle kept-alive connection the client holds:
	// the request finds it closed and goes again on a new one.
	if g.nc == nil {
		t.Fatal("no kept-alive connection after the 19th request")
	}
	srv.CloseClientConnections()
	if err := g.get(); err != nil {
		t.Errorf("request after the server closed the idle connection: %v", err)
	}
	if got := conns.Load(); got != 5 {
		t.Errorf("%d connections after the server closed the idle one, want 5", got)
	}

	u, _ = url.Parse(srv.URL + "/p?q=1&fail=1")
	bad := newRawGetter(u)
	defer bad.close()
	if err := bad.get(); err == nil {
		t.Error("a 429 answer counted as a success")
	}
}
