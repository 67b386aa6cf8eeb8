package clientip

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

// FuzzResolve checks Resolve's invariants on arbitrary requests and
// configurations, and compares it with a simple reference that splits
// the whole header from the left, wherever the bounds on work are not
// reached.
//
// Header lines are joined by "\n" in the fuzz input; trusted prefixes by
// ",".
func FuzzResolve(f *testing.F) {
	for _, c := range resolveCases() {
		lines := c.xff
		if c.forwarded {
			lines = c.fwd
		}
		in := strings.Join(lines, "\n")
		if len(in) > 16<<10 {
			continue // keep the corpus small enough to mutate quickly
		}
		f.Add(c.remote, in, c.forwarded, c.hops, strings.Join(c.trusted, ","))
	}
	f.Fuzz(func(t *testing.T, remote, in string, forwarded bool, hops int, trustedList string) {
		trusted, err := ParsePrefixes(strings.Split(trustedList, ","))
		if err != nil {
			return
		}
		o := Options{TrustedProxies: trusted, TrustedHops: hops}
		if forwarded {
			o.Header = Forwarded
		}
		r, err := New(o)
		if err != nil {
			return
		}
		_ = Warnings(o)
		lines := strings.Split(in, "\n")
		h := http.Header{}
		if forwarded {
			h[Forwarded] = lines
		} else {
			h[XForwardedFor] = lines
		}
		// The other header is never read.
		if forwarded {
			h[XForwardedFor] = []string{"6.6.6.6"}
		} else {
			h[Forwarded] = []string{"for=6.6.6.6"}
		}

		got := r.Resolve(remote, h)
		peer := Peer(remote)
		switch {
		case !got.IsValid():
			t.Fatalf("Resolve(%q, %q) = invalid address", remote, lines)
		case got.Zone() != "" || got.Is4In6():
			t.Fatalf("Resolve(%q, %q) = %v, not normalized", remote, lines, got)
		case got.IsUnspecified() && got != peer:
			t.Fatalf("Resolve(%q, %q) = %v, but the peer is %v", remote, lines, got, peer)
		case hops == 0 && !r.isTrusted(peer) && got != peer:
			t.Fatalf("Resolve(%q, %q) = %v with an untrusted peer %v", remote, lines, got, peer)
		case got != peer && !appearsIn(got, lines):
			t.Fatalf("Resolve(%q, %q) = %v: neither the peer %v nor in the header", remote, lines, got, peer)
		}
		if want, ok := reference(r, peer, lines); ok && got != want {
			t.Fatalf("Resolve(%q, %q) = %v, reference says %v", remote, lines, got, want)
		}
		if again := r.ResolveRequest(&http.Request{RemoteAddr: remote, Header: h}); again != got {
			t.Fatalf("ResolveRequest = %v, Resolve = %v", again, got)
		}

		k := r.KeyPrefix(got)
		if !k.Contains(got) || k != k.Masked() {
			t.Fatalf("KeyPrefix(%v) = %v", got, k)
		}
		text := string(r.AppendKey(nil, got))
		back, err := netip.ParsePrefix(text)
		if !strings.Contains(text, "/") {
			var a netip.Addr
			a, err = netip.ParseAddr(text)
			back = netip.PrefixFrom(a, a.BitLen())
		}
		if err != nil || back != k {
			t.Fatalf("AppendKey(%v) = %q, KeyPrefix = %v", got, text, k)
		}
	})
}

// appearsIn reports whether a is written in one of lines: some maximal run
// of address characters, or such a run without a trailing ":port", parses
// to a once unmapped and without zone.
func appearsIn(a netip.Addr, lines []string) bool {
	isAddrChar := func(c byte) bool { return isHex(c) || c == ':' || c == '.' }
	for _, l := range lines {
		for i := 0; i < len(l); {
			if !isAddrChar(l[i]) {
				i++
				continue
			}
			j := i
			for j < len(l) && isAddrChar(l[j]) {
				j++
			}
			run := l[i:j]
			i = j
			candidates := []string{run}
			if strings.Count(run, ":") == 1 {
				candidates = append(candidates, run[:strings.IndexByte(run, ':')])
			}
			for _, c := range candidates {
				if b, err := netip.ParseAddr(c); err == nil && normalize(b) == a {
					return true
				}
			}
		}
	}
	return false
}

// reference resolves by splitting every line from the left into entries.
// ok is false when it cannot vouch for its answer: the bounds on work are
// reached, or a Forwarded line has an unbalanced quote or a backslash
// outside a quoted string (where the right-to-left scan of Resolve,
// designed so that a client's stray quote cannot hide the proxies'
// elements, may split differently).
func reference(r *Resolver, peer netip.Addr, lines []string) (a netip.Addr, ok bool) {
	if r.hops <= 0 && (!r.trustProxies || !r.isTrusted(peer)) {
		return peer, true
	}
	var entries []string
	size := 0
	for _, l := range lines {
		size += len(l) + 1
		parts, ok := splitList(l, r.forwarded)
		if !ok {
			return netip.Addr{}, false
		}
		for _, p := range parts {
			if p = trimOWS(p); p != "" {
				entries = append(entries, p)
			}
		}
	}
	if size > MaxHeaderBytes || len(entries) > MaxEntries {
		return netip.Addr{}, false
	}
	client := peer
	for n := 1; n <= len(entries); n++ {
		e := entries[len(entries)-n]
		var good bool
		if r.forwarded {
			a, good = parseForwardedElement(e)
		} else {
			a, good = parseNode(e, false)
		}
		if !good {
			return client, true
		}
		client = a
		if r.hops > 0 && n == r.hops || r.hops <= 0 && !r.isTrusted(a) {
			return client, true
		}
	}
	return client, true
}

// splitList splits a line at commas, outside quoted strings for
// Forwarded, reading from the left.
func splitList(l string, forwarded bool) ([]string, bool) {
	if !forwarded {
		return strings.Split(l, ","), true
	}
	var parts []string
	quoted, start := false, 0
	for i := 0; i < len(l); i++ {
		switch c := l[i]; {
		case c == '\\' && !quoted:
			return nil, false
		case c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			parts = append(parts, l[start:i])
			start = i + 1
		}
	}
	if quoted {
		return nil, false
	}
	return append(parts, l[start:]), true
}

// FuzzParsePrefixes checks that ParsePrefixes never panics and returns
// only valid, masked, unmapped prefixes, or nil and an error.
func FuzzParsePrefixes(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8,192.0.2.1", "::ffff:10.0.0.0/104", "fe80::1%eth0", "10.0.0.1/8", "0.0.0.0/0,::/0", " , ,2001:db8::/32"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParsePrefixes(strings.Split(s, ","))
		if err != nil {
			if ps != nil {
				t.Fatalf("ParsePrefixes(%q) = %v with error %v", s, ps, err)
			}
			return
		}
		for _, p := range ps {
			if !p.IsValid() || p != p.Masked() || p.Addr().Is4In6() || p.Addr().Zone() != "" {
				t.Fatalf("ParsePrefixes(%q) returned %v", s, p)
			}
		}
	})
}
