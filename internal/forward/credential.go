package forward

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"slices"
)

// A Credential is floodgate's own credential to an upstream, sent in
// place of the client's (internal/upstreamauth provides them: an OAuth2
// bearer token, a fixed field, or none). A Forwarder (Options.Credential)
// and a Transport apply it alike:
//
//   - the request fields Fields names are not forwarded, nor those
//     written as one of them with '_' for '-' (see dropped), and the
//     field Authorize returns is sent instead, in place of any the
//     forwarding would write of that name (X-Forwarded-For,
//     User-Agent...);
//   - the response fields Fields names are not passed on, from the final
//     response, an informational one or the trailer section (a
//     Transport strips those that httputil.ReverseProxy relays: the
//     informational responses its trace is given, and the trailer its
//     response's body fills);
//   - a request whose answer echoes it, TRACE (and TRACK, IIS's
//     alias) in any case, is sent without the credential (RFC 9110
//     §9.3.8: a client must not send credentials in a TRACE, whose
//     answer would disclose them): Authorize is not asked, and the
//     upstream's answer, a 401 included, is passed on as to any request
//     sent without one;
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
	var name, value string
	if !echoed(r) {
		var err error
		if name, value, err = t.Credential.Authorize(r); err != nil {
			if r.Body != nil {
				r.Body.Close()
			}
			return nil, err
		}
	}
	// httputil.ReverseProxy relays informational responses from its
	// trace's Got1xxResponse: this trace's is called before it, with the
	// same header.
	ctx := httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{
		Got1xxResponse: func(_ int, h textproto.MIMEHeader) error {
			stripFields(http.Header(h), strip)
			return nil
		},
	})
	for first := true; ; first = false {
		out := r.Clone(ctx)
		stripFields(out.Header, drop)
		if name != "" {
			out.Header[name] = []string{value}
		}
		resp, err := base.RoundTrip(out)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusUnauthorized || name == "" {
			stripFields(resp.Header, strip)
			if mayHaveTrailer(resp) {
				stripFields(resp.Trailer, strip)
				resp.Body = &trailerStripper{ReadCloser: resp.Body, resp: resp, strip: strip}
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

// echoed reports whether r's answer echoes the request the upstream
// received: TRACE, or TRACK (IIS), in any case, as an upstream may take
// the method.
func echoed(r *http.Request) bool {
	return equalFold(r.Method, "trace") || equalFold(r.Method, "track")
}

// stripFields deletes from h the fields list names (see dropped).
func stripFields(h http.Header, list []string) {
	for k := range h {
		if dropped(list, k) {
			delete(h, k)
		}
	}
}

// mayHaveTrailer reports whether resp's body may end with a trailer
// section: chunked, or over HTTP/2, or with one declared; never a 101's,
// whose body is the upgraded connection.
func mayHaveTrailer(resp *http.Response) bool {
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return false
	}
	return resp.Trailer != nil || resp.ProtoMajor != 1 || slices.Contains(resp.TransferEncoding, "chunked")
}

// A trailerStripper is a response body that strips the trailer fields it
// names from its response once they have come: Go's transport fills
// resp.Trailer as the body ends, with the fields declared and undeclared,
// and httputil.ReverseProxy passes them on after Close.
type trailerStripper struct {
	io.ReadCloser
	resp  *http.Response
	strip []string
}

func (b *trailerStripper) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		stripFields(b.resp.Trailer, b.strip)
	}
	return n, err
}

func (b *trailerStripper) Close() error {
	err := b.ReadCloser.Close()
	stripFields(b.resp.Trailer, b.strip)
	return err
}

// errRefusedAgain answers a request whose credential the upstream refused
// twice, should the Credential not say why.
var errRefusedAgain = errors.New("forward: the upstream refused floodgate's credential twice")

// dropped reports whether the field name is one of list's (canonical
// names), or is written as one with '_' for '-' or in another case:
// canonical names keep an underscore ("X_api_key"), but an upstream that
// names fields as CGI does (WSGI, Rack, PHP, Django's ASGI handler) reads
// X-Api-Key and X_Api_Key alike, as HTTP_X_API_KEY, and takes or joins
// both. So nginx and Apache httpd drop fields with an underscore; here
// those that stand for a field the credential drops are dropped.
func dropped[T string | []byte](list []string, name T) bool {
	for _, s := range list {
		if len(s) == len(name) && sameField(s, name) {
			return true
		}
	}
	return false
}

// sameField reports whether the field names a and b, of one length, are
// one for an upstream that ignores case and reads '_' as '-'.
func sameField[T string | []byte](a string, b T) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if fold(x) != fold(y) {
			return false
		}
	}
	return true
}

// fold is c in lower case, '-' for '_'.
func fold(c byte) byte {
	switch {
	case 'A' <= c && c <= 'Z':
		return c + ('a' - 'A')
	case c == '_':
		return '-'
	}
	return c
}
