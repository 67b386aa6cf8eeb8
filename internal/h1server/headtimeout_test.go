package h1server

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// TestHeadCutOffByTheTimeoutGetsNothing: a head still arriving at
// ReadHeaderTimeout gets no answer (the connection is closed), wherever
// the cut falls: in the request line (which the parser alone would take
// for a malformed request: 400), in a field, between fields.
func TestHeadCutOffByTheTimeoutGetsNothing(t *testing.T) {
	for _, partial := range []string{
		"GET / HT",
		"GET /a-long-path",
		"GET / HTTP/1.1\r\nHost: a\r\nX-Partial: val",
		"GET / HTTP/1.1\r\nHost: a\r\n",
		"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n",
	} {
		addr := startServer(t, &Server{
			Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
			ReadHeaderTimeout: 50 * time.Millisecond,
		})
		c, _ := dialT(t, addr)
		io.WriteString(c, partial)
		c.SetReadDeadline(time.Now().Add(safetyDeadline))
		b, err := io.ReadAll(c)
		if err != nil || len(b) > 0 {
			t.Errorf("head %q cut off: got %q, %v; want nothing, the connection closed", partial, b, err)
		}
	}
}
