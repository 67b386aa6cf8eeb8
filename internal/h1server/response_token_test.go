package h1server

import (
	"net/http"
	"testing"
)

// TestClosesAfter holds the keep-alive decision to net/http's server's:
// tokens bounded by spaces, commas or tabs, ASCII case only, HTTP/1.0
// closing unless asked to keep alive.
func TestClosesAfter(t *testing.T) {
	for _, tc := range []struct {
		minor int
		conn  string
		close bool // the parser's req.Close
		want  bool
	}{
		{1, "", false, false},
		{1, "close", true, true},
		{1, "foo close", false, true}, // a space bounds a token for net/http's server
		{1, "closed", false, false},
		{1, "Close", true, true},
		{1, "keep-alive", false, false},
		{0, "", true, true},
		{0, "keep-alive", false, false},
		{0, "Keep-Alive", false, false},
		{0, "keep-Alive 00", true, false}, // the parser's comma split says close; the server keeps alive
		{0, "keep-alive, close", false, true},
		{0, "keep-alives", true, true},
		{0, "\u212aeep-alive", true, true}, // the Kelvin sign folds to k only outside ASCII
		{0, "xkeep-alive", true, true},
		{0, "keep-alive\tx", false, false},
	} {
		req := &http.Request{ProtoMajor: 1, ProtoMinor: tc.minor, Close: tc.close, Header: http.Header{}}
		if tc.conn != "" {
			req.Header["Connection"] = []string{tc.conn}
		}
		if got := closesAfter(req); got != tc.want {
			t.Errorf("HTTP/1.%d Connection %q (Close %v): closes %v, want %v", tc.minor, tc.conn, tc.close, got, tc.want)
		}
	}
}
