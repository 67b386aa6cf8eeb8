package gateway

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/httpsyntax"
)

// Bounds on what a proxy's description of the original request may hold.
const (
	maxOriginalMethod = 32
	maxOriginalURI    = 8 << 10
	maxOriginalHost   = 255
)

// decidePath is where the decision listener answers; with the envoy
// protocol, the original path follows it (ext_authz's path_prefix).
const decidePath = "/decide"

// original is the request a proxy asks the decision listener about, as its
// protocol describes it.
type original struct {
	method string
	url    *url.URL // path and query only
	host   string   // "": the asking request's Host
	scheme string   // "http" or "https"
}

// originalError says which header of the proxy's request is missing or
// malformed. Its text names the header, never the value: it is answered
// to the proxy and logged.
type originalError string

func (e originalError) Error() string { return string(e) }

// readOriginal rebuilds the original request from the asking request r,
// by protocol (config.Decide*). It reads only what that protocol's proxy
// sets itself, overwriting whatever the client sent under the same names;
// each field must be sent once. It never guesses the protocol.
func readOriginal(protocol string, r *http.Request) (original, error) {
	var o original
	var method, uri string
	var err error
	switch protocol {
	case config.DecideNginx:
		if method, err = single(r.Header, "X-Original-Method", true); err != nil {
			return o, err
		}
		if uri, err = single(r.Header, "X-Original-Uri", true); err != nil {
			return o, err
		}
	case config.DecideForwarded:
		if method, err = single(r.Header, "X-Forwarded-Method", true); err != nil {
			return o, err
		}
		if uri, err = single(r.Header, "X-Forwarded-Uri", true); err != nil {
			return o, err
		}
		if o.host, err = single(r.Header, "X-Forwarded-Host", false); err != nil {
			return o, err
		}
		if o.host != "" && !validHost(o.host) {
			return o, originalError("X-Forwarded-Host is not a host name or address with an optional port")
		}
	case config.DecideEnvoy:
		method = r.Method
		rest, ok := strings.CutPrefix(r.RequestURI, decidePath)
		if !ok || rest == "" || rest[0] != '/' {
			return o, originalError("the original path must follow " + decidePath + " (ext_authz http_service path_prefix: " + decidePath + ")")
		}
		uri = rest
	default:
		return o, originalError("decide.protocol is not set")
	}
	if len(method) > maxOriginalMethod || !httpsyntax.IsToken(method) {
		return o, originalError("the original method is not an HTTP method")
	}
	o.method = method
	if o.url, err = parseOriginalURI(uri); err != nil {
		return o, err
	}
	proto, err := single(r.Header, "X-Forwarded-Proto", false)
	if err != nil {
		return o, err
	}
	switch {
	// Traefik says ws and wss for a WebSocket's opening request: the
	// same request, over http and https.
	case proto == "", strings.EqualFold(proto, "http"), strings.EqualFold(proto, "ws"):
		o.scheme = "http"
	case strings.EqualFold(proto, "https"), strings.EqualFold(proto, "wss"):
		o.scheme = "https"
	default:
		return o, originalError("X-Forwarded-Proto is none of http, https, ws and wss")
	}
	return o, nil
}

// single returns the one value of header name in h: "" when it is absent
// and not required, an error when it is absent and required, sent more
// than once, or a list.
func single(h http.Header, name string, required bool) (string, error) {
	vs := h[name]
	switch {
	case len(vs) == 0 && !required:
		return "", nil
	case len(vs) == 0 || vs[0] == "" && required:
		return "", originalError(name + " is missing: the proxy's configuration must set it")
	case len(vs) > 1 || strings.IndexByte(vs[0], ',') >= 0 && name != "X-Original-Uri" && name != "X-Forwarded-Uri":
		return "", originalError(name + " was sent more than once: the proxy must set it, not append to it")
	}
	return vs[0], nil
}

// parseOriginalURI parses an origin-form request target (RFC 9112
// section 3.2.1): an absolute path and an optional query. A fragment is
// cut off, as the proxy asking did itself: nginx serves "/a?x=1#b" as
// path /a and query x=1, and passes $request_uri with the "#b" still on
// it, so refusing it would turn a client's stray '#' into the proxy's
// 500. It refuses control characters, spaces, targets longer than
// maxOriginalURI and anything but a path at the start (a scheme or an
// authority). Repeated leading slashes are one: a path is cleaned before
// routes and rules see it anyway, and "//host/…" must not read as an
// authority.
func parseOriginalURI(uri string) (*url.URL, error) {
	if i := strings.IndexByte(uri, '#'); i >= 0 {
		uri = uri[:i]
	}
	if uri == "" || uri[0] != '/' {
		return nil, originalError("the original URI is not a path (origin-form: /path?query)")
	}
	if len(uri) > maxOriginalURI {
		return nil, originalError("the original URI is longer than 8 KiB")
	}
	for i := 0; i < len(uri); i++ {
		if c := uri[i]; c <= ' ' || c == 0x7f {
			return nil, originalError("the original URI holds a control character or a space")
		}
	}
	if len(uri) > 1 && uri[1] == '/' {
		uri = "/" + strings.TrimLeft(uri, "/")
	}
	u, err := url.ParseRequestURI(uri)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" {
		return nil, originalError("the original URI is not a valid path and query")
	}
	return u, nil
}

// validHost reports whether s is a host name, an IPv4 address or a
// bracketed IPv6 address, with an optional port: the characters those
// are made of, at most maxOriginalHost.
func validHost(s string) bool {
	if s == "" || len(s) > maxOriginalHost {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '-', c == '_', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	return true
}
