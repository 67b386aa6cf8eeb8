package forward

import (
	"errors"
	"io"
	"net/http"
	"slices"
)

// A Credential is floodgate's own credential to an upstream, sent in
// place of the client's (internal/upstreamauth provides them: an OAuth2
// bearer token, a fixed field, or none). A Forwarder (Options.Credential)
// and a Transport apply it alike:
//
//   - the request fields Fields names are not forwarded, and the field
//     Authorize returns is sent instead, in place of any the forwarding
//     would write of that name (X-Forwarded-For, User-Agent...);
//   - the response fields Fields names are not passed on: by a
//     Forwarder, from the final response, an informational one or the
//     trailer section; by a Transport, from the final response's header
//     (httputil.ReverseProxy passes informational responses and
//     trailers on itself);
//   - a 401 to a request that carried the credential is not passed on:
//     Refused says whether the request goes once more, with another
//     value, or what error it fails with (OnError's, for a Forwarder).
//
// Its methods are called on the request's goroutine, concurrently for
// concurrent requests.
type Credential interface {
	// Fields returns the request fields not forwarded and the response
	// fields not passed on, by canonical name. It is called once, by New
	// (or by a Transport for each request), and its slices not modified.
	Fields() (request, response []string)
	// Authorize returns the field, canonical name and value, to send r
	// with; an empty name for none (then the upstream's 401 is passed
	// on). An error means that no credential can be had: r is not sent,
	// and OnError answers it with the error.
	Authorize(r *http.Request) (name, value string, err error)
	// Refused is told that the upstream answered 401 to r sent with
	// value; first is set for r's first refusal. It returns the value to
	// send r with once more, or the error r fails with. If the upstream
	// refuses that value too, it is asked again, first unset, and must
	// then return an error.
	Refused(r *http.Request, value string, first bool) (next string, err error)
}

// A Transport is an http.RoundTripper that sends each request over Base
// with Credential applied as a Forwarder applies it (see Credential): for
// an httputil.ReverseProxy to an upstream the Forwarder does not serve
// (https), and for the requests a Forwarder leaves to its own.
type Transport struct {
	Credential Credential
	// Base sends the requests; default http.DefaultTransport.
	Base http.RoundTripper
}

var _ http.RoundTripper = (*Transport)(nil)

// RoundTrip implements http.RoundTripper. It does not modify r.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	drop, strip := t.Credential.Fields()
	name, value, err := t.Credential.Authorize(r)
	if err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	for first := true; ; first = false {
		out := r.Clone(r.Context())
		for _, k := range drop {
			delete(out.Header, k)
		}
		if name != "" {
			out.Header[name] = []string{value}
		}
		resp, err := base.RoundTrip(out)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusUnauthorized || name == "" {
			for _, k := range strip {
				delete(resp.Header, k)
			}
			return resp, nil
		}
		// What little of a refusal's body there is is read, so that its
		// connection can serve again.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		next, err := t.Credential.Refused(r, value, first)
		if err == nil && !first {
			err = errRefusedAgain
		}
		if err != nil {
			return nil, err
		}
		value = next
	}
}

// errRefusedAgain answers a request whose credential the upstream refused
// twice, should the Credential not say why.
var errRefusedAgain = errors.New("forward: the upstream refused floodgate's credential twice")

// dropped reports whether the field name is in list.
func dropped(list []string, name string) bool {
	return len(list) > 0 && slices.Contains(list, name)
}

// droppedBytes is dropped for a name in bytes.
func droppedBytes(list []string, name []byte) bool {
	for _, s := range list {
		if string(name) == s {
			return true
		}
	}
	return false
}
