package clientip

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ParsePrefixes parses trusted proxy entries from configuration: CIDR
// prefixes ("10.0.0.0/8", "2001:db8::/32") or bare addresses, which stand
// for a single host (/32 or /128). Surrounding spaces are trimmed and empty
// entries skipped. IPv4-mapped IPv6 entries become IPv4 ones. A prefix with
// host bits set ("10.0.0.1/8") is an error, since it usually means a typo.
// On error ParsePrefixes returns nil and an error that joins a
// *PrefixError for every bad entry.
func ParsePrefixes(entries []string) ([]netip.Prefix, error) {
	var (
		out  []netip.Prefix
		errs []error
	)
	for i, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		p, err := parsePrefix(e)
		if err != nil {
			errs = append(errs, &PrefixError{Index: i, Entry: e, Err: err})
			continue
		}
		out = append(out, p)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// A PrefixError is one trusted proxy entry ParsePrefixes cannot take, so
// that a caller can say which of its own entries it is.
type PrefixError struct {
	// Index is the entry's place in the list given, from 0.
	Index int
	// Entry is the entry, spaces trimmed.
	Entry string
	// Err says what is wrong with it, such as "host bits set: did you
	// mean 10.0.0.0/8, or 10.0.0.1/32 for one host?".
	Err error
}

// Error returns `clientip: trusted proxy N "entry": problem`, N counting
// from 1.
func (e *PrefixError) Error() string {
	return fmt.Sprintf("clientip: trusted proxy %d %q: %v", e.Index+1, e.Entry, e.Err)
}

func (e *PrefixError) Unwrap() error { return e.Err }

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "%") {
		return netip.Prefix{}, errors.New("zones are not allowed")
	}
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, errors.New("not an IP address or CIDR prefix")
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, errors.New("not an IP address or CIDR prefix")
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Errorf("host bits set: did you mean %s, or %s for one host?",
			m, netip.PrefixFrom(p.Addr(), p.Addr().BitLen()))
	}
	return normalizePrefix(p), nil
}

// Ranges whose addresses never reach floodgate from the public internet
// directly; trusting them, however broadly, is the usual setup.
var localRanges = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("10.0.0.0/8"),     // RFC 1918
	netip.MustParsePrefix("100.64.0.0/10"),  // shared address space (CGNAT)
	netip.MustParsePrefix("127.0.0.0/8"),    // loopback
	netip.MustParsePrefix("169.254.0.0/16"), // link-local
	netip.MustParsePrefix("172.16.0.0/12"),  // RFC 1918
	netip.MustParsePrefix("192.168.0.0/16"), // RFC 1918
	netip.MustParsePrefix("::1/128"),        // loopback
	netip.MustParsePrefix("fc00::/7"),       // unique local
	netip.MustParsePrefix("fe80::/10"),      // link-local
}

// Thresholds for Warnings: a trusted public prefix shorter than these
// covers far more than any proxy fleet (Cloudflare's widest are /13 and
// /29), and a key prefix shorter than these groups unrelated clients.
const (
	broadIPv4Trust = 12
	broadIPv6Trust = 24
	broadIPv4Key   = 24
	broadIPv6Key   = 48
)

// Warnings returns settings in o that New accepts but that are probably
// wrong, one sentence each:
//   - a trusted prefix covering every address (0.0.0.0/0, ::/0): any client
//     can choose its own address by writing the header;
//   - a trusted prefix shorter than /12 (IPv4) or /24 (IPv6) that is not
//     inside private, loopback or link-local space;
//   - a key prefix shorter than /24 (IPv4) or /48 (IPv6), or longer than
//     /64 (IPv6);
//   - a header named while nothing is trusted, so it is ignored.
//
// Invalid settings are New's to report; Warnings skips them.
func Warnings(o Options) []string {
	var w []string
	header := o.Header
	if header == "" {
		header = XForwardedFor
	}
	for _, p := range o.TrustedProxies {
		if !p.IsValid() {
			continue
		}
		p = normalizePrefix(p)
		switch {
		case p.Bits() == 0:
			w = append(w, fmt.Sprintf("trusted proxy %s covers every IPv%d address: any client can choose its own address by writing %s, so every client can pick its own rate-limiting key", p, ipVersion(p), header))
		case p.Bits() < broadThreshold(p) && !insideLocal(p):
			w = append(w, fmt.Sprintf("trusted proxy %s covers %s public addresses: a client there can choose its own address by writing %s; list only your proxies' prefixes", p, size(p), header))
		}
	}
	if o.TrustedHops <= 0 && len(o.TrustedProxies) == 0 && o.Header != "" {
		w = append(w, fmt.Sprintf("header %s is ignored: no trusted proxies or trusted hops are set, so the peer address is the client", o.Header))
	}
	if o.IPv4Prefix > 0 && o.IPv4Prefix < broadIPv4Key {
		w = append(w, fmt.Sprintf("IPv4 prefix length %d groups up to %s addresses into one key", o.IPv4Prefix, pow2(32-o.IPv4Prefix)))
	}
	if o.IPv6Prefix > 0 && o.IPv6Prefix < broadIPv6Key {
		w = append(w, fmt.Sprintf("IPv6 prefix length %d groups up to %s /64 networks into one key", o.IPv6Prefix, pow2(64-o.IPv6Prefix)))
	}
	if o.IPv6Prefix > DefaultIPv6Prefix {
		w = append(w, fmt.Sprintf("IPv6 prefix length %d lets one host holding a /64, the usual assignment, use up to %s keys", o.IPv6Prefix, pow2(o.IPv6Prefix-64)))
	}
	return w
}

func ipVersion(p netip.Prefix) int {
	if p.Addr().Is4() {
		return 4
	}
	return 6
}

func broadThreshold(p netip.Prefix) int {
	if p.Addr().Is4() {
		return broadIPv4Trust
	}
	return broadIPv6Trust
}

func insideLocal(p netip.Prefix) bool {
	for _, l := range localRanges {
		if l.Bits() <= p.Bits() && l.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

func size(p netip.Prefix) string {
	return pow2(p.Addr().BitLen() - p.Bits())
}

// pow2 formats 2**n readably.
func pow2(n int) string {
	if n < 63 {
		return fmt.Sprintf("%d", uint64(1)<<n)
	}
	return fmt.Sprintf("2^%d", n)
}
