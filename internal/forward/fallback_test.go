package forward

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestFallbackPassesWhatTheClientSent: what goes to the ReverseProxy
// (here a request with declared trailers, and one with Expect) reaches the
// upstream as the client sent it, as nginx passes it: no trailer fields
// announced that are never sent (request trailers are not forwarded: a
// field floodgate removes from the head, such as Authorization, must not
// reach the upstream in the trailer section), and no Accept-Encoding the
// client did not send, whose answer the transport would then decompress.
func TestFallbackPassesWhatTheClientSent(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, "compressed answer")
	zw.Close()
	var (
		mu   sync.Mutex
		got  []http.Header
		tr   []http.Header
		body []string
	)
	up, _ := newUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, tr, body = append(got, r.Header.Clone()), append(tr, r.Trailer.Clone()), append(body, string(b))
		mu.Unlock()
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Type", "text/plain")
		w.Write(gz.Bytes())
	}))
	fs := front(t, newForwarder(t, up.URL, Options{}, newErrorLog()))
	for i, req := range []string{
		"POST /t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: Authorization\r\n\r\n" +
			"5\r\nhello\r\n0\r\nAuthorization: Bearer secret\r\n\r\n",
		"POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello",
	} {
		res := rawDo(t, hostOf(fs), "POST", req)
		if res.Status != 200 || res.Body != gz.String() || res.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("request %d: %d %q (Content-Encoding %q), want the upstream's gzip bytes as it sent them",
				i, res.Status, res.Body, res.Header.Get("Content-Encoding"))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("the upstream saw %d requests, want 2", len(got))
	}
	for i := range got {
		if v, ok := got[i]["Accept-Encoding"]; ok {
			t.Errorf("request %d: the upstream saw Accept-Encoding %q, which the client did not send", i, v)
		}
		if body[i] != "hello" {
			t.Errorf("request %d: the upstream read body %q, want hello", i, body[i])
		}
	}
	if v := got[0]["Trailer"]; len(v) != 0 || len(tr[0]) != 0 {
		t.Errorf("the upstream saw Trailer %q and trailer fields %v, want neither", v, tr[0])
	}
	if strings.Contains(strings.Join(got[0]["Authorization"], ""), "secret") {
		t.Error("the trailer's Authorization reached the upstream's head")
	}
}
