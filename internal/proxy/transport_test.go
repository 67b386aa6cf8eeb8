package proxy

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
)

// TestTransportPassesWhatTheClientSent: over Go's transport (an https
// upstream, or floodgate's own credentials), the upstream sees the
// client's Accept-Encoding and nothing else, and the client gets the
// answer's bytes as the upstream sent them, as over the lean forwarder.
func TestTransportPassesWhatTheClientSent(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, "compressed answer")
	zw.Close()
	var sawAE []string
	var sawAny bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawAE, sawAny = r.Header["Accept-Encoding"]
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gz.Bytes())
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	calls := 0
	us := NewUpstream("api", u, UpstreamOptions{
		OnError: func(w http.ResponseWriter, r *http.Request, err error) {
			t.Errorf("upstream error: %v", err)
			w.WriteHeader(502)
		},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				calls++
				return rt.RoundTrip(r)
			})
		},
	})
	front := httptest.NewServer(us.Handler)
	defer front.Close()
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := c.Get(front.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if calls != 1 {
		t.Fatalf("the wrapped transport ran %d times, want 1", calls)
	}
	if sawAny {
		t.Errorf("the upstream saw Accept-Encoding %q, which the client did not send", sawAE)
	}
	if !bytes.Equal(body, gz.Bytes()) || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("the client got %q (Content-Encoding %q), want the upstream's gzip bytes", body, resp.Header.Get("Content-Encoding"))
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
