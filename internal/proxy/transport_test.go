package proxy

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/forward"
)

// TestTransportPassesWhatTheClientSent: over Go's transport (an https
// upstream, or a wrapped transport), the upstream sees the
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

// fixedCredential is a forward.Credential of one fixed field.
type fixedCredential struct{ name, value string }

func (c fixedCredential) Fields() (request, response []string) {
	return []string{"Authorization", "Cookie", c.name}, []string{"Set-Cookie"}
}
func (c fixedCredential) Authorize(*http.Request) (string, string, error) {
	return c.name, c.value, nil
}
func (c fixedCredential) Refused(*http.Request, string, bool) (string, error) {
	return "", errors.New("refused")
}

// TestCredentialEitherWay: floodgate's credential is sent in place of the
// client's by the lean forwarder, which serves an http upstream with one,
// and over Go's transport (https, here forced by WrapTransport).
func TestCredentialEitherWay(t *testing.T) {
	type seen struct{ key, auth string }
	got := make(chan seen, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{strings.Join(r.Header["X-Api-Key"], ","), r.Header.Get("Authorization")}
		w.Header().Set("Set-Cookie", "upstream=1")
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	for _, tc := range []struct {
		name string
		wrap func(http.RoundTripper) http.RoundTripper
		lean bool
	}{
		{"http", nil, true},
		{"Go's transport", func(rt http.RoundTripper) http.RoundTripper { return rt }, false},
	} {
		us := NewUpstream("api", u, UpstreamOptions{
			OnError: func(w http.ResponseWriter, r *http.Request, err error) {
				t.Errorf("%s: upstream error: %v", tc.name, err)
				w.WriteHeader(502)
			},
			WrapTransport: tc.wrap,
			Credential:    fixedCredential{"X-Api-Key", "floodgate-key"},
		})
		if _, lean := us.Handler.(*forward.Forwarder); lean != tc.lean {
			t.Errorf("%s: served by %T, want the lean forwarder %v", tc.name, us.Handler, tc.lean)
		}
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/x", nil)
		r.Header.Set("X-Api-Key", "client-key")
		r.Header.Set("Authorization", "Bearer client")
		us.Handler.ServeHTTP(w, r)
		us.CloseIdle()
		if s := <-got; s != (seen{key: "floodgate-key"}) || w.Code != 200 || w.Header().Get("Set-Cookie") != "" {
			t.Errorf("%s: the upstream saw %+v, the client got %d, Set-Cookie %q; want only floodgate's key, 200, none",
				tc.name, s, w.Code, w.Header().Get("Set-Cookie"))
		}
	}
}
