package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/config"
)

// originalCase is a proxy's request to the decision listener and what
// readOriginal makes of it.
type originalCase struct {
	name     string
	protocol string
	target   string   // the asking request's target (envoy: /decide + the original)
	method   string   // the asking request's method
	host     string   // its Host
	hdr      []string // header name, value pairs, added in order
	// want: method, path, raw query, host, scheme; or err, a part of the
	// error's text.
	want [5]string
	err  string
}

var originalCases = []originalCase{
	{name: "nginx", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "POST", "X-Original-URI", "/api/v1/x?a=1&b=2"},
		want: [5]string{"POST", "/api/v1/x", "a=1&b=2", "api.example", "http"}},
	{name: "nginx https", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "/", "X-Forwarded-Proto", "HTTPS"},
		want: [5]string{"GET", "/", "", "api.example", "https"}},
	{name: "nginx encoded path", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "/score-sets/urn%3Amavedb%3A1/scores"},
		want: [5]string{"GET", "/score-sets/urn:mavedb:1/scores", "", "api.example", "http"}},
	{name: "nginx doubled slashes are a path, not an authority", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "//evil.example/api/v1/x"},
		want: [5]string{"GET", "/evil.example/api/v1/x", "", "api.example", "http"}},
	{name: "nginx non-ASCII bytes", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "/caf\xc3\xa9"},
		want: [5]string{"GET", "/caf\xc3\xa9", "", "api.example", "http"}},
	{name: "nginx no method", protocol: config.DecideNginx, hdr: []string{"X-Original-URI", "/"}, err: "X-Original-Method is missing"},
	{name: "nginx empty method", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "", "X-Original-URI", "/"}, err: "X-Original-Method is missing"},
	{name: "nginx method not a token", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GE T", "X-Original-URI", "/"}, err: "not an HTTP method"},
	{name: "nginx method too long", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", strings.Repeat("G", 33), "X-Original-URI", "/"}, err: "not an HTTP method"},
	{name: "nginx method twice", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-Method", "POST", "X-Original-URI", "/"}, err: "more than once"},
	{name: "nginx no uri", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET"}, err: "X-Original-Uri is missing"},
	{name: "nginx absolute uri", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "https://evil.example/"}, err: "not a path"},
	{name: "nginx asterisk", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "OPTIONS", "X-Original-URI", "*"}, err: "not a path"},
	{name: "nginx space", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "/a b"}, err: "control character"},
	{name: "nginx tab", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "/a\tb"}, err: "control character"},
	{name: "nginx fragment cut, as nginx serves it", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "/a?x=1#b"},
		want: [5]string{"GET", "/a", "x=1", "api.example", "http"}},
	{name: "nginx fragment holding a path", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "/free#/../../expensive?x=1"},
		want: [5]string{"GET", "/free", "", "api.example", "http"}},
	{name: "nginx fragment only", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "#/a"}, err: "not a path"},
	{name: "nginx control character in the fragment", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "/a#"},
		want: [5]string{"GET", "/a", "", "api.example", "http"}},
	{name: "nginx DEL", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "/a\x7f"}, err: "control character"},
	{name: "nginx bad escape", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "/a%zz"}, err: "not a valid path"},
	{name: "nginx uri too long", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "/" + strings.Repeat("a", 8<<10)}, err: "longer than 8 KiB"},
	{name: "nginx proto list", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "/", "X-Forwarded-Proto", "https, http"}, err: "more than once"},
	{name: "nginx proto other", protocol: config.DecideNginx, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "/", "X-Forwarded-Proto", "gopher"}, err: "none of http, https, ws and wss"},
	{name: "forwarded websocket over tls", protocol: config.DecideForwarded, hdr: []string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/socket", "X-Forwarded-Proto", "wss"},
		want: [5]string{"GET", "/socket", "", "api.example", "https"}},
	{name: "forwarded websocket", protocol: config.DecideForwarded, hdr: []string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/socket", "X-Forwarded-Proto", "WS"},
		want: [5]string{"GET", "/socket", "", "api.example", "http"}},
	{name: "nginx ignores the forwarded convention", protocol: config.DecideNginx, hdr: []string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/"}, err: "X-Original-Method is missing"},

	{name: "forwarded", protocol: config.DecideForwarded, hdr: []string{"X-Forwarded-Method", "DELETE", "X-Forwarded-Uri", "/api/v1/x?q=%2F", "X-Forwarded-Host", "api.mavedb.org:443", "X-Forwarded-Proto", "https"},
		want: [5]string{"DELETE", "/api/v1/x", "q=%2F", "api.mavedb.org:443", "https"}},
	{name: "forwarded without host", protocol: config.DecideForwarded, hdr: []string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/x"},
		want: [5]string{"GET", "/x", "", "api.example", "http"}},
	{name: "forwarded ipv6 host", protocol: config.DecideForwarded, hdr: []string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/x", "X-Forwarded-Host", "[2001:db8::1]:8443"},
		want: [5]string{"GET", "/x", "", "[2001:db8::1]:8443", "http"}},
	{name: "forwarded host with path", protocol: config.DecideForwarded, hdr: []string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/x", "X-Forwarded-Host", "a.example/evil"}, err: "X-Forwarded-Host"},
	{name: "forwarded host list", protocol: config.DecideForwarded, hdr: []string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/x", "X-Forwarded-Host", "a.example, b.example"}, err: "more than once"},
	{name: "forwarded host too long", protocol: config.DecideForwarded, hdr: []string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/x", "X-Forwarded-Host", strings.Repeat("a", 256)}, err: "X-Forwarded-Host"},
	{name: "forwarded no uri", protocol: config.DecideForwarded, hdr: []string{"X-Forwarded-Method", "GET"}, err: "X-Forwarded-Uri is missing"},
	{name: "forwarded ignores the nginx convention", protocol: config.DecideForwarded, hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "/"}, err: "X-Forwarded-Method is missing"},
	{name: "forwarded uri twice", protocol: config.DecideForwarded, hdr: []string{"X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/a", "X-Forwarded-Uri", "/b"}, err: "more than once"},

	{name: "envoy", protocol: config.DecideEnvoy, method: "PUT", target: "/decide/api/v1/x?y=1", hdr: []string{"X-Forwarded-Proto", "https"},
		want: [5]string{"PUT", "/api/v1/x", "y=1", "api.example", "https"}},
	{name: "envoy root", protocol: config.DecideEnvoy, target: "/decide/",
		want: [5]string{"GET", "/", "", "api.example", "http"}},
	{name: "envoy no original path", protocol: config.DecideEnvoy, target: "/decide", err: "must follow /decide"},
	{name: "envoy prefix not a segment", protocol: config.DecideEnvoy, target: "/decideX/a", err: "must follow /decide"},
	{name: "envoy other path", protocol: config.DecideEnvoy, target: "/api/v1/x", err: "must follow /decide"},
	{name: "envoy doubled slash", protocol: config.DecideEnvoy, target: "/decide//evil.example/x",
		want: [5]string{"GET", "/evil.example/x", "", "api.example", "http"}},

	{name: "no protocol", protocol: "", hdr: []string{"X-Original-Method", "GET", "X-Original-URI", "/"}, err: "decide.protocol"},
}

// askingRequest builds the proxy's request of a case.
func askingRequest(tc originalCase) *http.Request {
	target, method, host := tc.target, tc.method, tc.host
	if target == "" {
		target = "/decide"
	}
	if method == "" {
		method = http.MethodGet
	}
	if host == "" {
		host = "api.example"
	}
	r := &http.Request{Method: method, RequestURI: target, Host: host, Header: http.Header{}}
	for i := 0; i+1 < len(tc.hdr); i += 2 {
		r.Header.Add(tc.hdr[i], tc.hdr[i+1])
	}
	return r
}

func TestReadOriginal(t *testing.T) {
	for _, tc := range originalCases {
		t.Run(tc.name, func(t *testing.T) {
			r := askingRequest(tc)
			o, err := readOriginal(tc.protocol, r)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("readOriginal = %+v, %v; want an error with %q", o, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("readOriginal: %v", err)
			}
			host := o.host
			if host == "" {
				host = r.Host
			}
			got := [5]string{o.method, o.url.Path, o.url.RawQuery, host, o.scheme}
			if got != tc.want {
				t.Errorf("readOriginal = %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzReadOriginal: whatever a proxy's request holds, readOriginal either
// refuses it with an error that echoes none of it, or returns a token
// method, a path that starts with one slash and has no control character,
// and http or https.
func FuzzReadOriginal(f *testing.F) {
	for _, tc := range originalCases {
		var method, uri, host, proto string
		for i := 0; i+1 < len(tc.hdr); i += 2 {
			switch tc.hdr[i] {
			case "X-Original-Method", "X-Forwarded-Method":
				method = tc.hdr[i+1]
			case "X-Original-URI", "X-Forwarded-Uri":
				uri = tc.hdr[i+1]
			case "X-Forwarded-Host":
				host = tc.hdr[i+1]
			case "X-Forwarded-Proto":
				proto = tc.hdr[i+1]
			}
		}
		f.Add(uint8(0), method, uri, host, proto, tc.target)
	}
	protocols := []string{config.DecideNginx, config.DecideForwarded, config.DecideEnvoy}
	f.Fuzz(func(t *testing.T, p uint8, method, uri, host, proto, target string) {
		protocol := protocols[int(p)%len(protocols)]
		r := &http.Request{Method: method, RequestURI: target, Host: "api.example", Header: http.Header{}}
		set := func(k, v string) {
			if v != "" {
				r.Header[k] = []string{v}
			}
		}
		set("X-Original-Method", method)
		set("X-Forwarded-Method", method)
		set("X-Original-Uri", uri)
		set("X-Forwarded-Uri", uri)
		set("X-Forwarded-Host", host)
		set("X-Forwarded-Proto", proto)
		o, err := readOriginal(protocol, r)
		if err != nil {
			msg := err.Error()
			for _, v := range []string{method, uri, host, proto} {
				if len(v) > 3 && strings.Contains(msg, v) && !strings.Contains(decideMessages, v) {
					t.Fatalf("error %q echoes the input %q", msg, v)
				}
			}
			return
		}
		p2 := o.url.Path
		if p2 == "" || p2[0] != '/' || o.url.Host != "" || o.url.Scheme != "" {
			t.Fatalf("readOriginal(%q) path %q host %q scheme %q: not a path", uri, p2, o.url.Host, o.url.Scheme)
		}
		if o.scheme != "http" && o.scheme != "https" {
			t.Fatalf("scheme %q", o.scheme)
		}
		if o.method == "" || strings.ContainsAny(o.method, " \t\r\n,") {
			t.Fatalf("method %q", o.method)
		}
		if o.host != "" && !validHost(o.host) {
			t.Fatalf("host %q", o.host)
		}
	})
}

// decideMessages holds the fixed text of readOriginal's errors, which a
// fuzzed value may happen to be part of.
const decideMessages = "is missing: the proxy's configuration must set it was sent more than once: the proxy must set it, not append to it " +
	"X-Forwarded-Host is not a host name or address with an optional port the original path must follow /decide (ext_authz http_service path_prefix: /decide) " +
	"decide.protocol is not set the original method is not an HTTP method X-Forwarded-Proto is none of http, https, ws and wss " +
	"the original URI is not a path (origin-form: /path?query) the original URI is longer than 8 KiB " +
	"the original URI holds a control character or a space the original URI is not a valid path and query " +
	"X-Original-Method X-Original-Uri X-Forwarded-Method X-Forwarded-Uri X-Forwarded-Proto"
