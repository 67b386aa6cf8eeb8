package clientip

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Bounds on the work Resolve does for one request. See the package
// documentation for what happens when a header exceeds them.
const (
	// MaxEntries is the number of non-empty header entries Resolve
	// examines at most. TrustedHops cannot exceed it.
	MaxEntries = 64
	// MaxHeaderBytes is the number of header bytes, counted from the
	// right, that Resolve examines at most.
	MaxHeaderBytes = 8192
)

// The forwarding headers Resolve can read.
const (
	XForwardedFor = "X-Forwarded-For"
	Forwarded     = "Forwarded" // RFC 7239
)

// Default key grouping.
const (
	DefaultIPv4Prefix = 32
	DefaultIPv6Prefix = 64
)

// Options configure a Resolver. The zero value resolves every request to
// its peer address and keys IPv6 clients by /64.
type Options struct {
	// TrustedProxies are the prefixes of proxies whose forwarding header
	// is believed. Default none. Exclusive with TrustedHops.
	TrustedProxies []netip.Prefix
	// TrustedHops, when positive, trusts that many proxies in front of
	// floodgate whatever their address: the client is the TrustedHops-th
	// header entry from the right. At most MaxEntries. Default 0.
	TrustedHops int
	// Header is the forwarding header: XForwardedFor (the default, used
	// when empty) or Forwarded, matched case-insensitively.
	Header string
	// IPv4Prefix is the prefix length IPv4 keys are masked to, 1 to 32.
	// Default (0) DefaultIPv4Prefix.
	IPv4Prefix int
	// IPv6Prefix is the prefix length IPv6 keys are masked to, 1 to 128.
	// Default (0) DefaultIPv6Prefix.
	IPv6Prefix int
}

// A Resolver finds client addresses and keys. It is immutable and safe for
// concurrent use. The zero Resolver behaves as New(Options{}).
type Resolver struct {
	trusted4, trusted6 []netip.Prefix
	trustProxies       bool // TrustedProxies mode
	hops               int  // TrustedHops mode when > 0
	forwarded          bool // read Forwarded rather than X-Forwarded-For
	v4bits, v6bits     int  // 0 means the default
}

// fallback is the address of a peer that is not an IP address.
var fallback = netip.IPv4Unspecified()

// New validates o and returns a Resolver. The error joins every problem
// found.
func New(o Options) (*Resolver, error) {
	var errs []error
	r := &Resolver{hops: o.TrustedHops}
	for i, p := range o.TrustedProxies {
		if !p.IsValid() {
			errs = append(errs, fmt.Errorf("clientip: trusted proxy %d: invalid prefix", i+1))
			continue
		}
		p = normalizePrefix(p)
		if p.Addr().Is4() {
			r.trusted4 = append(r.trusted4, p)
		} else {
			r.trusted6 = append(r.trusted6, p)
		}
	}
	r.trustProxies = len(o.TrustedProxies) > 0
	switch {
	case o.TrustedHops < 0 || o.TrustedHops > MaxEntries:
		errs = append(errs, fmt.Errorf("clientip: trusted hops %d: want 0 to %d", o.TrustedHops, MaxEntries))
	case o.TrustedHops > 0 && r.trustProxies:
		errs = append(errs, fmt.Errorf("clientip: trusted hops (%d) and trusted proxies (%d prefixes) are exclusive: set one", o.TrustedHops, len(o.TrustedProxies)))
	}
	switch {
	case o.Header == "" || strings.EqualFold(o.Header, XForwardedFor):
	case strings.EqualFold(o.Header, Forwarded):
		r.forwarded = true
	default:
		errs = append(errs, fmt.Errorf("clientip: header %q: want %q or %q", o.Header, XForwardedFor, Forwarded))
	}
	if o.IPv4Prefix < 0 || o.IPv4Prefix > 32 {
		errs = append(errs, fmt.Errorf("clientip: IPv4 prefix length %d: want 1 to 32, or 0 for the default %d", o.IPv4Prefix, DefaultIPv4Prefix))
	}
	if o.IPv6Prefix < 0 || o.IPv6Prefix > 128 {
		errs = append(errs, fmt.Errorf("clientip: IPv6 prefix length %d: want 1 to 128, or 0 for the default %d", o.IPv6Prefix, DefaultIPv6Prefix))
	}
	r.v4bits, r.v6bits = o.IPv4Prefix, o.IPv6Prefix
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// normalizePrefix masks p and turns an IPv4-mapped IPv6 prefix
// (::ffff:10.0.0.0/104) into the IPv4 prefix it covers, since addresses
// are compared unmapped.
func normalizePrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// Resolve returns the client address of a request whose connection came
// from remoteAddr (http.Request.RemoteAddr) with headers h, following the
// algorithm in the package documentation. The result is always valid,
// unmapped and without zone; it is 0.0.0.0 only when remoteAddr is not an
// IP address.
func (r *Resolver) Resolve(remoteAddr string, h http.Header) netip.Addr {
	return r.ResolvePeer(Peer(remoteAddr), h)
}

// ResolvePeer is Resolve for a peer address already parsed with Peer.
func (r *Resolver) ResolvePeer(peer netip.Addr, h http.Header) netip.Addr {
	a, _ := r.ResolveSource(peer, h)
	return a
}

// A Source says how ResolveSource found a client address, so that a
// caller can report the results that most often mean a misconfiguration:
// every request they concern shares one key.
type Source uint8

const (
	// SourcePeer: the peer is the client, as nothing is trusted or the
	// peer is outside every trusted prefix (and is not a private proxy,
	// SourcePrivateRelay).
	SourcePeer Source = iota
	// SourceHeader: the client is a header entry, outside every trusted
	// prefix (or the TrustedHops-th).
	SourceHeader
	// SourceNoClient: a trusted peer's header named no address but
	// trusted proxies': it was missing or empty, held only addresses
	// inside trusted prefixes, or ended in a malformed entry before one
	// outside them; with TrustedHops, it had fewer entries than hops.
	// The client is then a proxy's address (the peer, or an entry the
	// walk stopped at) or the leftmost entry.
	SourceNoClient
	// SourcePrivateRelay: the client is a private, loopback or
	// link-local address that forwarded someone else's request: taken
	// from the header with a well-formed entry to its left, or an
	// untrusted peer whose header has a well-formed entry (which is
	// ignored). It is most likely a proxy missing from TrustedProxies
	// (or one more hop than TrustedHops), and every client behind it
	// shares its key.
	SourcePrivateRelay
)

// ResolveSource is ResolvePeer, and says how the address was found.
func (r *Resolver) ResolveSource(peer netip.Addr, h http.Header) (netip.Addr, Source) {
	if r.hops <= 0 && (!r.trustProxies || !r.isTrusted(peer)) {
		if isLocal(peer) {
			if w := r.walker(h); w.source(peer) == SourcePrivateRelay {
				return peer, SourcePrivateRelay
			}
		}
		return peer, SourcePeer
	}
	w := r.walker(h)
	client := peer
	for n := 1; ; n++ {
		a, ok := w.next()
		if !ok {
			return client, SourceNoClient
		}
		client = a
		if r.hops > 0 {
			if n == r.hops {
				return client, w.source(client)
			}
		} else if !r.isTrusted(a) {
			return client, w.source(client)
		}
	}
}

// walker returns a walker over the forwarding header r reads in h.
func (r *Resolver) walker(h http.Header) walker {
	w := walker{budget: MaxHeaderBytes, forwarded: r.forwarded}
	if r.forwarded {
		w.lines = h[Forwarded]
	} else {
		w.lines = h[XForwardedFor]
	}
	return w
}

// source returns the Source of the client address a, the peer or an
// entry just taken from the header: SourcePrivateRelay if a is a private,
// loopback or link-local address and the header's next entry is
// well-formed, else SourceHeader.
func (w *walker) source(a netip.Addr) Source {
	if isLocal(a) {
		if _, ok := w.next(); ok {
			return SourcePrivateRelay
		}
	}
	return SourceHeader
}

// isLocal reports whether a is a private, loopback or link-local address:
// one no client on the internet connects from.
func isLocal(a netip.Addr) bool {
	return a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast()
}

// ResolveRequest is Resolve(req.RemoteAddr, req.Header).
func (r *Resolver) ResolveRequest(req *http.Request) netip.Addr {
	return r.Resolve(req.RemoteAddr, req.Header)
}

func (r *Resolver) isTrusted(a netip.Addr) bool {
	ps := r.trusted4
	if a.Is6() {
		ps = r.trusted6
	}
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Peer returns the address in remoteAddr ("ip:port", "[ipv6]:port" or a
// bare address), unmapped and without zone, or 0.0.0.0 if remoteAddr is
// not an IP address (a unix socket peer, "@", "").
func Peer(remoteAddr string) netip.Addr {
	if a, ok := parseNode(remoteAddr, false); ok {
		return a
	}
	return fallback
}

// KeyPrefix returns the key a is counted under: a masked to the IPv4 or
// IPv6 prefix length of r. a is unmapped and its zone dropped first; an
// invalid a is keyed as 0.0.0.0, like a peer that is not an IP address.
func (r *Resolver) KeyPrefix(a netip.Addr) netip.Prefix {
	a = normalize(a)
	if !a.IsValid() {
		a = fallback
	}
	bits := r.v4bits
	if bits == 0 {
		bits = DefaultIPv4Prefix
	}
	if a.Is6() {
		bits = r.v6bits
		if bits == 0 {
			bits = DefaultIPv6Prefix
		}
	}
	p, _ := a.Prefix(bits) // cannot fail: a is valid, bits in range
	return p
}

// AppendKey appends the text of KeyPrefix(a) to dst and returns the
// extended buffer: the address alone for a full-length prefix
// ("192.0.2.1", "2001:db8::1" with IPv6Prefix 128), the prefix otherwise
// ("2001:db8:1:2::/64", "192.0.2.0/24"). It does not allocate when dst has
// room for 43 more bytes.
func (r *Resolver) AppendKey(dst []byte, a netip.Addr) []byte {
	p := r.KeyPrefix(a)
	if p.IsSingleIP() {
		return p.Addr().AppendTo(dst)
	}
	return p.AppendTo(dst)
}

// HeaderName returns the forwarding header r reads: "X-Forwarded-For" or
// "Forwarded", in canonical form.
func (r *Resolver) HeaderName() string {
	if r.forwarded {
		return Forwarded
	}
	return XForwardedFor
}

// Trusts reports whether the forwarding header sent by peer is believed:
// peer is inside a trusted prefix, or hop counting is configured (which
// trusts the nearest proxies whatever their address). A gateway passes the
// client's forwarding header on to its upstream only when it does.
func (r *Resolver) Trusts(peer netip.Addr) bool {
	if r.hops > 0 {
		return true
	}
	return r.isTrusted(peer.Unmap())
}
