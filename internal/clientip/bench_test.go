package clientip

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

var benchCases = []resolveCase{
	{name: "peer", remote: "198.51.100.7:5555"},
	{name: "xff/1-trusted-proxy-2-entries", trusted: proxies, remote: peer, xff: []string{"6.6.6.6, 198.51.100.7"}},
	{name: "xff/ipv6-2-entries", trusted: proxies, remote: "[2001:db8:ffff::1]:443", xff: []string{"2001:db8:6::6, [2001:db8:1::7]:51000"}},
	{name: "xff/hops-2", hops: 2, remote: peer, xff: []string{"6.6.6.6, 198.51.100.7, 203.0.113.5"}},
	{name: "forwarded/1-trusted-proxy-2-elements", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for=6.6.6.6, for="198.51.100.7:51000";proto=https;host=example.org`}},
	{name: "xff/10k-trusted-entries", trusted: proxies, remote: peer, xff: []string{strings.Repeat("10.1.1.1, ", 10000)}},
}

func BenchmarkResolve(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			r := newResolver(b, c)
			h := c.header()
			b.ReportAllocs()
			for b.Loop() {
				r.Resolve(c.remote, h)
			}
		})
	}
	// A peer in the same run: what many middlewares do for the one-proxy
	// case (net.SplitHostPort, strings.Split, net.ParseIP, a CIDR check).
	b.Run("naive/1-trusted-proxy-2-entries", func(b *testing.B) {
		_, trustedNet, _ := net.ParseCIDR("10.0.0.0/8")
		h := http.Header{XForwardedFor: {"6.6.6.6, 198.51.100.7"}}
		b.ReportAllocs()
		for b.Loop() {
			host, _, _ := net.SplitHostPort(peer)
			ip := net.ParseIP(host)
			if trustedNet.Contains(ip) {
				parts := strings.Split(h.Get("X-Forwarded-For"), ",")
				ip = net.ParseIP(strings.TrimSpace(parts[len(parts)-1]))
			}
			_ = ip
		}
	})
}

func BenchmarkResolveParallel(b *testing.B) {
	c := benchCases[1]
	r := newResolver(b, c)
	h := c.header()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Resolve(c.remote, h)
		}
	})
}

func BenchmarkAppendKey(b *testing.B) {
	var r Resolver
	for _, a := range []netip.Addr{netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("2001:db8:1:2:3:4:5:6")} {
		b.Run(a.String(), func(b *testing.B) {
			buf := make([]byte, 0, 64)
			b.ReportAllocs()
			for b.Loop() {
				buf = r.AppendKey(buf[:0], a)
			}
		})
	}
}
