package httplimit

import (
	"context"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/floodgate/floodgate/internal/clientip"
)

// A Key says what a rule counts requests by: each distinct value it finds
// in requests has its own counter. Make one with ByIP, ByHeader, ByUser,
// ByFunc or Global. The zero Key is ByIP, the gateway's default key. A Key
// is a small immutable value, safe for concurrent use.
//
// The value is also what Rule.Take, Rule.Allow and Rule.Check take as
// their key, so the direct API and the middleware share counters.
type Key struct {
	kind   keyKind
	header string                               // keyHeader: canonical name
	user   func(context.Context) (string, bool) // keyUser
	fn     func(r *http.Request) (string, bool) // keyFunc
}

type keyKind uint8

const (
	keyIP keyKind = iota
	keyHeader
	keyUser
	keyFunc
	keyGlobal
)

// ByIP counts by client address: the connection's peer, or the address
// the trusted proxies of Options.ClientIP forwarded, grouped by prefix
// (IPv6 by /64 by default). Its value is the address ("192.0.2.1") when
// the prefix is full-length, otherwise the prefix ("2001:db8:1:2::/64").
// A request always has one: a peer that is not an IP address (a unix
// socket) is 0.0.0.0.
func ByIP() Key { return Key{kind: keyIP} }

// ByHeader counts by the value of the request header name, such as an API
// key sent in "X-Api-Key". Several lines of the header are joined with
// ","; a request without the header, or with only empty values, is not
// counted by the rule. Clients choose what they send: use it only for
// headers that the application or a proxy in front of it has verified or
// set, and keep a per-IP rule for the requests without one. Limiter.NewRule
// refuses a name that is not a header field name ("X-Api-Key:", a name with
// a space) and Host and Transfer-Encoding, which net/http's server takes
// out of Request.Header: a rule keyed by them would count nothing.
func ByHeader(name string) Key {
	return Key{kind: keyHeader, header: textproto.CanonicalMIMEHeaderKey(name)}
}

// ByUser counts by the user that user finds in the request's context, as
// put there by the application's authentication middleware; user reports
// false for an anonymous request, which the rule does not count. The
// user's ID, as returned, is the key value.
func ByUser(user func(ctx context.Context) (id string, ok bool)) Key {
	return Key{kind: keyUser, user: user}
}

// ByFunc counts by the value fn returns for a request, for any other key:
// an organisation, an operation, a combination. fn reports false for a
// request the rule should not count. It must be safe for concurrent use.
//
// An empty value is a value like any other: every request for which fn
// returns ("", true) shares one counter, as with Global. So a function
// that returns an empty ID for some requests by mistake makes them share
// one limit rather than escape it; return false for a request that is
// not to be counted. The same holds for ByUser, and for the key given to
// Rule.Take, Rule.Allow and Rule.Check.
func ByFunc(fn func(r *http.Request) (key string, ok bool)) Key {
	return Key{kind: keyFunc, fn: fn}
}

// Global counts every request under one counter: the rule's limit is
// shared by all clients, such as a cap on how often any user may start a
// job that saturates a background worker. Its value is the empty string.
func Global() Key { return Key{kind: keyGlobal} }

// String names the key's type for logs and metrics, never a value: "ip",
// "header:x-api-key", "user", "func" or "global".
func (k Key) String() string {
	switch k.kind {
	case keyHeader:
		return "header:" + strings.ToLower(k.header)
	case keyUser:
		return "user"
	case keyFunc:
		return "func"
	case keyGlobal:
		return "global"
	}
	return "ip"
}

// appendValue appends the key's value for r to dst and reports whether r
// has one.
func (k Key) appendValue(dst []byte, res *clientip.Resolver, r *http.Request) ([]byte, bool) {
	switch k.kind {
	case keyHeader:
		n := len(dst)
		for i, v := range r.Header[k.header] {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, v...)
		}
		return dst, hasValue(dst[n:])
	case keyUser:
		id, ok := k.user(r.Context())
		return append(dst, id...), ok
	case keyFunc:
		v, ok := k.fn(r)
		return append(dst, v...), ok
	case keyGlobal:
		return dst, true
	}
	return res.AppendKey(dst, res.Resolve(r.RemoteAddr, r.Header)), true
}

// hasValue reports whether joined header values hold anything but commas.
func hasValue(b []byte) bool {
	for _, c := range b {
		if c != ',' {
			return true
		}
	}
	return false
}
