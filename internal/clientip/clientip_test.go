package clientip

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A resolveCase is one request resolved under one configuration. The
// fuzz target is seeded from these.
type resolveCase struct {
	name      string
	trusted   []string // Options.TrustedProxies, through ParsePrefixes
	hops      int      // Options.TrustedHops
	forwarded bool     // read Forwarded rather than X-Forwarded-For
	remote    string   // http.Request.RemoteAddr
	xff       []string // X-Forwarded-For lines
	fwd       []string // Forwarded lines
	want      string
}

const peer = "10.0.0.2:4321" // a trusted proxy in the cases below

var proxies = []string{"10.0.0.0/8", "192.0.2.10", "2001:db8:ffff::/48"}

// numbered returns n distinct trusted addresses 10.0.x.y, the first one
// leftmost.
func numbered(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)
	}
	return s
}

func resolveCases() []resolveCase {
	var (
		hundredLines   = numbered(100)
		tenKTrusted    = numbered(10000)
		tenKForged     = strings.Repeat("6.6.6.6, ", 10000) + "198.51.100.7"
		tenKForwarded  = strings.Repeat("for=6.6.6.6, ", 10000) + "for=198.51.100.7"
		manyEmptyLines = append([]string{"198.51.100.7"}, make([]string, 10000)...)
	)
	return []resolveCase{
		// No trust: the peer, headers ignored.
		{name: "no trust/peer ipv4", remote: "198.51.100.7:5555", xff: []string{"1.2.3.4"}, want: "198.51.100.7"},
		{name: "no trust/peer ipv6", remote: "[2001:db8:1::7]:443", xff: []string{"1.2.3.4"}, want: "2001:db8:1::7"},
		{name: "no trust/forwarded ignored", remote: "198.51.100.7:5555", fwd: []string{"for=1.2.3.4"}, forwarded: true, want: "198.51.100.7"},
		{name: "no trust/mapped peer", remote: "[::ffff:198.51.100.7]:1", want: "198.51.100.7"},
		{name: "no trust/zoned peer", remote: "[fe80::1%eth0]:80", want: "fe80::1"},
		{name: "no trust/bare address peer", remote: "198.51.100.7", want: "198.51.100.7"},
		{name: "no trust/bare ipv6 peer", remote: "2001:db8:1::7", want: "2001:db8:1::7"},
		{name: "no trust/unix socket @", remote: "@", xff: []string{"198.51.100.7"}, want: "0.0.0.0"},
		{name: "no trust/unix socket path", remote: "/run/floodgate.sock", want: "0.0.0.0"},
		{name: "no trust/empty remote", remote: "", want: "0.0.0.0"},
		{name: "no trust/remote port out of range", remote: "198.51.100.7:99999", want: "0.0.0.0"},
		{name: "no trust/remote host name", remote: "localhost:80", want: "0.0.0.0"},
		{name: "no trust/remote unspecified", remote: "0.0.0.0:0", want: "0.0.0.0"},
		{name: "no trust/remote garbage", remote: "\x00\xff[]:", want: "0.0.0.0"},

		// Trusted proxies, X-Forwarded-For.
		{name: "proxies/spoofed xff from untrusted peer", trusted: proxies, remote: "203.0.113.9:1", xff: []string{"10.0.0.1, 1.2.3.4"}, want: "203.0.113.9"},
		{name: "proxies/spoofed xff from untrusted ipv6 peer", trusted: proxies, remote: "[2001:db8:1::9]:1", xff: []string{"1.2.3.4"}, want: "2001:db8:1::9"},
		{name: "proxies/untrusted unix peer", trusted: proxies, remote: "@", xff: []string{"198.51.100.7"}, want: "0.0.0.0"},
		{name: "proxies/one entry", trusted: proxies, remote: peer, xff: []string{"198.51.100.7"}, want: "198.51.100.7"},
		{name: "proxies/forged entries left of client", trusted: proxies, remote: peer, xff: []string{"6.6.6.6, 10.9.9.9, 198.51.100.7"}, want: "198.51.100.7"},
		{name: "proxies/trusted chain skipped", trusted: proxies, remote: peer, xff: []string{"6.6.6.6, 198.51.100.7, 10.1.1.1, 192.0.2.10"}, want: "198.51.100.7"},
		{name: "proxies/all trusted gives leftmost", trusted: proxies, remote: peer, xff: []string{"10.9.9.9, 10.1.1.1"}, want: "10.9.9.9"},
		{name: "proxies/no header gives peer", trusted: proxies, remote: peer, want: "10.0.0.2"},
		{name: "proxies/empty line gives peer", trusted: proxies, remote: peer, xff: []string{""}, want: "10.0.0.2"},
		{name: "proxies/only commas gives peer", trusted: proxies, remote: peer, xff: []string{",,, ,\t,"}, want: "10.0.0.2"},
		{name: "proxies/empty entries skipped", trusted: proxies, remote: peer, xff: []string{",,198.51.100.7,, ,10.1.1.1,"}, want: "198.51.100.7"},
		{name: "proxies/lines in order", trusted: proxies, remote: peer, xff: []string{"6.6.6.6, 198.51.100.7", "10.1.1.1"}, want: "198.51.100.7"},
		{name: "proxies/all trusted across lines", trusted: proxies, remote: peer, xff: []string{"10.3.3.3", "10.2.2.2, 10.1.1.1"}, want: "10.3.3.3"},
		{name: "proxies/client in last line", trusted: proxies, remote: peer, xff: []string{"6.6.6.6", "198.51.100.7"}, want: "198.51.100.7"},
		{name: "proxies/100 trusted lines stop at the 64th", trusted: proxies, remote: peer, xff: hundredLines, want: hundredLines[100-MaxEntries]},
		{name: "proxies/10k trusted entries stop at the 64th", trusted: proxies, remote: peer, xff: []string{strings.Join(tenKTrusted, ",")}, want: tenKTrusted[10000-MaxEntries]},
		{name: "proxies/10k forged entries", trusted: proxies, remote: peer, xff: []string{tenKForged}, want: "198.51.100.7"},
		{name: "proxies/10k empty lines exceed the byte budget", trusted: proxies, remote: peer, xff: manyEmptyLines, want: "10.0.0.2"},
		{name: "proxies/rightmost entry longer than the budget", trusted: proxies, remote: peer, xff: []string{"198.51.100.7," + strings.Repeat(" ", MaxHeaderBytes) + "10.1.1.1"}, want: "10.0.0.2"},
		{name: "proxies/entry crossing the budget edge", trusted: proxies, remote: peer, xff: []string{"10.2.2.2," + strings.Repeat(" ", MaxHeaderBytes-10) + "10.1.1.1"}, want: "10.1.1.1"},
		{name: "proxies/absurdly long entry", trusted: proxies, remote: peer, xff: []string{strings.Repeat("1", 100000)}, want: "10.0.0.2"},
		{name: "proxies/long garbage left of client", trusted: proxies, remote: peer, xff: []string{strings.Repeat("x", 100000) + ", 198.51.100.7"}, want: "198.51.100.7"},
		{name: "proxies/unknown rightmost gives peer", trusted: proxies, remote: peer, xff: []string{"198.51.100.7, unknown"}, want: "10.0.0.2"},
		{name: "proxies/unknown in the middle gives its right neighbour", trusted: proxies, remote: peer, xff: []string{"198.51.100.7, unknown, 10.1.1.1"}, want: "10.1.1.1"},
		{name: "proxies/malformed left of client not reached", trusted: proxies, remote: peer, xff: []string{"garbage, unknown, 198.51.100.7"}, want: "198.51.100.7"},
		{name: "proxies/malformed line stops the walk", trusted: proxies, remote: peer, xff: []string{"198.51.100.7", "bogus", "10.1.1.1"}, want: "10.1.1.1"},
		{name: "proxies/ipv4 with port", trusted: proxies, remote: peer, xff: []string{"198.51.100.7:5678"}, want: "198.51.100.7"},
		{name: "proxies/trusted ipv4 with port", trusted: proxies, remote: peer, xff: []string{"198.51.100.7, 10.1.1.1:80"}, want: "198.51.100.7"},
		{name: "proxies/ipv6 bracketed with port", trusted: proxies, remote: peer, xff: []string{"[2001:db8:1::7]:80"}, want: "2001:db8:1::7"},
		{name: "proxies/ipv6 bracketed", trusted: proxies, remote: peer, xff: []string{"[2001:db8:1::7]"}, want: "2001:db8:1::7"},
		{name: "proxies/ipv6 bare", trusted: proxies, remote: peer, xff: []string{"2001:db8:1::7"}, want: "2001:db8:1::7"},
		{name: "proxies/ipv6 uppercase", trusted: proxies, remote: peer, xff: []string{"2001:DB8:1::7"}, want: "2001:db8:1::7"},
		{name: "proxies/ipv6 unbracketed port is part of the address", trusted: proxies, remote: peer, xff: []string{"2001:db8:1::7:80"}, want: "2001:db8:1::7:80"},
		{name: "proxies/trusted ipv6 skipped", trusted: proxies, remote: peer, xff: []string{"2001:db8:1::7, [2001:db8:ffff::3]:443"}, want: "2001:db8:1::7"},
		{name: "proxies/ipv6 trusted peer", trusted: proxies, remote: "[2001:db8:ffff::1]:443", xff: []string{"198.51.100.7"}, want: "198.51.100.7"},
		{name: "proxies/ipv4-mapped entry", trusted: proxies, remote: peer, xff: []string{"::ffff:198.51.100.7"}, want: "198.51.100.7"},
		{name: "proxies/ipv4-mapped trusted entry skipped", trusted: proxies, remote: peer, xff: []string{"198.51.100.7, [::ffff:10.1.1.1]:80"}, want: "198.51.100.7"},
		{name: "proxies/ipv4-mapped trusted peer", trusted: proxies, remote: "[::ffff:10.0.0.2]:1", xff: []string{"198.51.100.7"}, want: "198.51.100.7"},
		{name: "proxies/ipv4-mapped trust list", trusted: []string{"::ffff:10.0.0.0/104"}, remote: peer, xff: []string{"198.51.100.7"}, want: "198.51.100.7"},
		{name: "proxies/zoned entry", trusted: proxies, remote: peer, xff: []string{"fe80::1%eth0"}, want: "fe80::1"},
		{name: "proxies/zoned bracketed entry with port", trusted: proxies, remote: peer, xff: []string{"[fe80::1%eth0]:80"}, want: "fe80::1"},
		{name: "proxies/zone on ipv4", trusted: proxies, remote: peer, xff: []string{"198.51.100.7%eth0"}, want: "10.0.0.2"},
		{name: "proxies/whitespace and tabs", trusted: proxies, remote: peer, xff: []string{" \t198.51.100.7 \t,\t10.1.1.1 "}, want: "198.51.100.7"},
		{name: "proxies/carriage return", trusted: proxies, remote: peer, xff: []string{"198.51.100.7\r"}, want: "10.0.0.2"},
		{name: "proxies/newline inside", trusted: proxies, remote: peer, xff: []string{"198.51.100.7\n, 10.1.1.1"}, want: "10.1.1.1"},
		{name: "proxies/NUL byte", trusted: proxies, remote: peer, xff: []string{"1.2.3.4, 198.51.100.7\x00, 10.1.1.1"}, want: "10.1.1.1"},
		{name: "proxies/NUL only", trusted: proxies, remote: peer, xff: []string{"\x00"}, want: "10.0.0.2"},
		{name: "proxies/non-ASCII digit", trusted: proxies, remote: peer, xff: []string{"198.51.100.７"}, want: "10.0.0.2"},
		{name: "proxies/arabic digits", trusted: proxies, remote: peer, xff: []string{"١٩٨.٥١.١٠٠.٧"}, want: "10.0.0.2"},
		{name: "proxies/invalid UTF-8", trusted: proxies, remote: peer, xff: []string{"\xff\xfe, 10.1.1.1"}, want: "10.1.1.1"},
		{name: "proxies/leading zeros", trusted: proxies, remote: peer, xff: []string{"198.051.100.7"}, want: "10.0.0.2"},
		{name: "proxies/host name", trusted: proxies, remote: peer, xff: []string{"example.com"}, want: "10.0.0.2"},
		{name: "proxies/hex-looking host name", trusted: proxies, remote: peer, xff: []string{"deadbeef.example"}, want: "10.0.0.2"},
		{name: "proxies/unspecified ipv4 entry", trusted: proxies, remote: peer, xff: []string{"0.0.0.0"}, want: "10.0.0.2"},
		{name: "proxies/unspecified ipv6 entry", trusted: proxies, remote: peer, xff: []string{"198.51.100.7, ::"}, want: "10.0.0.2"},
		{name: "proxies/obfuscated identifier", trusted: proxies, remote: peer, xff: []string{"_hidden"}, want: "10.0.0.2"},
		{name: "proxies/obfuscated port not allowed in xff", trusted: proxies, remote: peer, xff: []string{"198.51.100.7:_abc"}, want: "10.0.0.2"},
		{name: "proxies/quoted entry", trusted: proxies, remote: peer, xff: []string{`"198.51.100.7"`}, want: "10.0.0.2"},
		{name: "proxies/port out of range", trusted: proxies, remote: peer, xff: []string{"198.51.100.7:65536"}, want: "10.0.0.2"},
		{name: "proxies/port too long", trusted: proxies, remote: peer, xff: []string{"198.51.100.7:000080"}, want: "10.0.0.2"},
		{name: "proxies/empty port", trusted: proxies, remote: peer, xff: []string{"198.51.100.7:"}, want: "10.0.0.2"},
		{name: "proxies/ipv4 in brackets", trusted: proxies, remote: peer, xff: []string{"[198.51.100.7]:80"}, want: "10.0.0.2"},
		{name: "proxies/unclosed bracket", trusted: proxies, remote: peer, xff: []string{"[2001:db8::1"}, want: "10.0.0.2"},
		{name: "proxies/junk after bracket", trusted: proxies, remote: peer, xff: []string{"[2001:db8::1]x"}, want: "10.0.0.2"},
		{name: "proxies/empty bracketed port", trusted: proxies, remote: peer, xff: []string{"[2001:db8::1]:"}, want: "10.0.0.2"},
		{name: "proxies/cidr in header", trusted: proxies, remote: peer, xff: []string{"198.51.100.0/24"}, want: "10.0.0.2"},
		{name: "proxies/forwarded line ignored in xff mode", trusted: proxies, remote: peer, fwd: []string{"for=198.51.100.7"}, want: "10.0.0.2"},
		{name: "proxies/xff ignored in forwarded mode", trusted: proxies, forwarded: true, remote: peer, xff: []string{"198.51.100.7"}, want: "10.0.0.2"},

		// Over-broad or unusual trust lists.
		{name: "misconfigured/0.0.0.0/0 trusts everyone: leftmost, chosen by the client", trusted: []string{"0.0.0.0/0"}, remote: "203.0.113.9:1", xff: []string{"6.6.6.6, 198.51.100.7"}, want: "6.6.6.6"},
		{name: "misconfigured/0.0.0.0/0 does not cover ipv6", trusted: []string{"0.0.0.0/0"}, remote: peer, xff: []string{"6.6.6.6, 2001:db8:1::7, 10.1.1.1"}, want: "2001:db8:1::7"},
		{name: "misconfigured/::/0 and 0.0.0.0/0", trusted: []string{"0.0.0.0/0", "::/0"}, remote: peer, xff: []string{"2001:db8:6::6, 198.51.100.7"}, want: "2001:db8:6::6"},
		{name: "misconfigured/trusting the client's own network", trusted: []string{"198.51.100.0/24", "10.0.0.0/8"}, remote: peer, xff: []string{"6.6.6.6, 198.51.100.7"}, want: "6.6.6.6"},
		{name: "unix socket proxy trusted via 0.0.0.0/32", trusted: []string{"0.0.0.0/32"}, remote: "@", xff: []string{"6.6.6.6, 198.51.100.7"}, want: "198.51.100.7"},

		// Trusted hops.
		{name: "hops/1", hops: 1, remote: peer, xff: []string{"6.6.6.6, 198.51.100.7"}, want: "198.51.100.7"},
		{name: "hops/2", hops: 2, remote: peer, xff: []string{"6.6.6.6, 198.51.100.7, 203.0.113.5"}, want: "198.51.100.7"},
		{name: "hops/peer address not checked", hops: 1, remote: "203.0.113.9:1", xff: []string{"198.51.100.7"}, want: "198.51.100.7"},
		{name: "hops/trusted ranges irrelevant", hops: 1, remote: peer, xff: []string{"198.51.100.7, 10.1.1.1"}, want: "10.1.1.1"},
		{name: "hops/unix peer", hops: 1, remote: "@", xff: []string{"198.51.100.7"}, want: "198.51.100.7"},
		{name: "hops/more hops than entries gives leftmost", hops: 3, remote: peer, xff: []string{"198.51.100.7, 203.0.113.5"}, want: "198.51.100.7"},
		{name: "hops/no header gives peer", hops: 2, remote: peer, want: "10.0.0.2"},
		{name: "hops/malformed in range gives its right neighbour", hops: 3, remote: peer, xff: []string{"6.6.6.6, unknown, 203.0.113.5"}, want: "203.0.113.5"},
		{name: "hops/malformed rightmost gives peer", hops: 2, remote: peer, xff: []string{"198.51.100.7, garbage"}, want: "10.0.0.2"},
		{name: "hops/malformed beyond n not reached", hops: 2, remote: peer, xff: []string{"garbage, 198.51.100.7, 203.0.113.5"}, want: "198.51.100.7"},
		{name: "hops/empty entries do not count", hops: 2, remote: peer, xff: []string{"198.51.100.7,,, ,203.0.113.5,"}, want: "198.51.100.7"},
		{name: "hops/across lines", hops: 2, remote: peer, xff: []string{"6.6.6.6, 198.51.100.7", "203.0.113.5"}, want: "198.51.100.7"},
		{name: "hops/64 of 100", hops: MaxEntries, remote: peer, xff: hundredLines, want: hundredLines[100-MaxEntries]},
		{name: "hops/forwarded", hops: 2, forwarded: true, remote: peer, fwd: []string{`for=6.6.6.6, for="[2001:db8:1::7]:4711";proto=https, for=203.0.113.5`}, want: "2001:db8:1::7"},

		// Forwarded (RFC 7239), trusted proxies.
		{name: "forwarded/simple", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"for=198.51.100.7"}, want: "198.51.100.7"},
		{name: "forwarded/spoofed from untrusted peer", trusted: proxies, forwarded: true, remote: "203.0.113.9:1", fwd: []string{"for=10.0.0.1, for=1.2.3.4"}, want: "203.0.113.9"},
		{name: "forwarded/rfc 7239 example with proto and by", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"for=192.0.2.60;proto=http;by=203.0.113.43"}, want: "192.0.2.60"},
		{name: "forwarded/rfc 7239 example list", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"for=192.0.2.43, for=198.51.100.17"}, want: "198.51.100.17"},
		{name: "forwarded/quoted ipv6 with port", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`For="[2001:db8:cafe::17]:4711"`}, want: "2001:db8:cafe::17"},
		{name: "forwarded/mixed case name", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"FoR=198.51.100.7;PROTO=https"}, want: "198.51.100.7"},
		{name: "forwarded/obfuscated identifier", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for="_gazonk"`}, want: "10.0.0.2"},
		{name: "forwarded/obfuscated identifier in the middle", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"for=198.51.100.7, for=_hidden, for=10.1.1.1"}, want: "10.1.1.1"},
		{name: "forwarded/obfuscated port", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for="198.51.100.7:_abc-1"`}, want: "198.51.100.7"},
		{name: "forwarded/bad obfuscated port", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for="198.51.100.7:_a/b"`}, want: "10.0.0.2"},
		{name: "forwarded/unknown", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"for=unknown"}, want: "10.0.0.2"},
		{name: "forwarded/quoted unknown in the middle", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for=198.51.100.7, for="unknown", for=10.1.1.1`}, want: "10.1.1.1"},
		{name: "forwarded/no for parameter", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"proto=https;by=10.0.0.1"}, want: "10.0.0.2"},
		{name: "forwarded/for twice", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"for=198.51.100.7;for=6.6.6.6"}, want: "10.0.0.2"},
		{name: "forwarded/empty for", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for=""`}, want: "10.0.0.2"},
		{name: "forwarded/quoted comma in another parameter", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for=6.6.6.6, for=198.51.100.7;host="a,b", for=10.1.1.1`}, want: "198.51.100.7"},
		{name: "forwarded/escaped quote in another parameter", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for=198.51.100.7;x="a\",b", for=10.1.1.1`}, want: "198.51.100.7"},
		{name: "forwarded/comma before an escaped quote", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for=198.51.100.7;x="a,\"b", for=10.1.1.1`}, want: "198.51.100.7"},
		{name: "forwarded/escaped backslash before closing quote", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for=198.51.100.7;x="a\\", for=10.1.1.1`}, want: "198.51.100.7"},
		{name: "forwarded/unterminated quote", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for="198.51.100.7`}, want: "10.0.0.2"},
		{name: "forwarded/unterminated quote left of good elements", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for=6.6.6.6;x="a, for=198.51.100.7`}, want: "198.51.100.7"},
		{name: "forwarded/client-written open quote cannot swallow proxies", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`x="`, "for=198.51.100.7"}, want: "198.51.100.7"},
		{name: "forwarded/backslash in for value", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for="198.51.100.\7"`}, want: "10.0.0.2"},
		{name: "forwarded/quote inside unquoted value", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for=198.51"100.7"`}, want: "10.0.0.2"},
		{name: "forwarded/unquoted bracketed ipv6 accepted", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"for=[2001:db8:1::7]:80"}, want: "2001:db8:1::7"},
		{name: "forwarded/quoted bare ipv6 accepted", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for="2001:db8:1::7"`}, want: "2001:db8:1::7"},
		{name: "forwarded/quoted ipv4 with port", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for="198.51.100.7:8080"`}, want: "198.51.100.7"},
		{name: "forwarded/ipv4-mapped", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for="[::ffff:198.51.100.7]"`}, want: "198.51.100.7"},
		{name: "forwarded/whitespace around pairs", trusted: proxies, forwarded: true, remote: peer, fwd: []string{" for=198.51.100.7 ; proto=https ,\tfor=10.1.1.1 "}, want: "198.51.100.7"},
		{name: "forwarded/space around equals", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"for = 198.51.100.7"}, want: "10.0.0.2"},
		{name: "forwarded/empty pairs", trusted: proxies, forwarded: true, remote: peer, fwd: []string{";;for=198.51.100.7;;"}, want: "198.51.100.7"},
		{name: "forwarded/empty elements", trusted: proxies, forwarded: true, remote: peer, fwd: []string{",, for=198.51.100.7 ,, for=10.1.1.1,"}, want: "198.51.100.7"},
		{name: "forwarded/name not a token", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"f(r=1.2.3.4;for=198.51.100.7"}, want: "10.0.0.2"},
		{name: "forwarded/pair without equals", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"for=198.51.100.7;secure"}, want: "10.0.0.2"},
		{name: "forwarded/space in unquoted value", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"for=198.51.100.7;proto=ht tp"}, want: "10.0.0.2"},
		{name: "forwarded/trailing junk after quoted value", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for=198.51.100.7;host="a"b`}, want: "10.0.0.2"},
		{name: "forwarded/host with ipv6 port", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for="[2001:db8:1::7]:4711";host="[2001:db8::1]:8080";proto=https`}, want: "2001:db8:1::7"},
		{name: "forwarded/xff syntax", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"198.51.100.7"}, want: "10.0.0.2"},
		{name: "forwarded/several lines", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"for=6.6.6.6", "for=198.51.100.7", "for=10.1.1.1;by=10.0.0.2"}, want: "198.51.100.7"},
		{name: "forwarded/all trusted", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"for=10.3.3.3, for=10.1.1.1"}, want: "10.3.3.3"},
		{name: "forwarded/NUL byte", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"for=198.51.100.7\x00"}, want: "10.0.0.2"},
		{name: "forwarded/non-ASCII", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for="198.51.100.7";host="é"`}, want: "198.51.100.7"},
		{name: "forwarded/10k forged elements", trusted: proxies, forwarded: true, remote: peer, fwd: []string{tenKForwarded}, want: "198.51.100.7"},
		{name: "forwarded/10k quote characters", trusted: proxies, forwarded: true, remote: peer, fwd: []string{strings.Repeat(`\"`, 10000) + ", for=198.51.100.7"}, want: "198.51.100.7"},
	}
}

func newResolver(t testing.TB, c resolveCase) *Resolver {
	t.Helper()
	trusted, err := ParsePrefixes(c.trusted)
	if err != nil {
		t.Fatalf("ParsePrefixes(%q): %v", c.trusted, err)
	}
	o := Options{TrustedProxies: trusted, TrustedHops: c.hops}
	if c.forwarded {
		o.Header = Forwarded
	}
	r, err := New(o)
	if err != nil {
		t.Fatalf("New(%+v): %v", o, err)
	}
	return r
}

func (c resolveCase) header() http.Header {
	h := http.Header{}
	if c.xff != nil {
		h[XForwardedFor] = c.xff
	}
	if c.fwd != nil {
		h[Forwarded] = c.fwd
	}
	return h
}

func TestResolve(t *testing.T) {
	for _, c := range resolveCases() {
		t.Run(c.name, func(t *testing.T) {
			r := newResolver(t, c)
			want := netip.MustParseAddr(c.want)
			if got := r.Resolve(c.remote, c.header()); got != want {
				t.Errorf("Resolve(%.60q, %.100q) = %v, want %v", c.remote, c.header(), got, want)
			}
			if got := r.ResolvePeer(Peer(c.remote), c.header()); got != want {
				t.Errorf("ResolvePeer(Peer(%.60q), %.100q) = %v, want %v", c.remote, c.header(), got, want)
			}
		})
	}
}

// TestResolveSource: the results that usually mean a misconfiguration,
// where every request concerned shares one key, are told apart from a
// client found as intended.
func TestResolveSource(t *testing.T) {
	for _, c := range []struct {
		resolveCase
		source Source
	}{
		{resolveCase{name: "no trust", remote: "198.51.100.7:5555", xff: []string{"1.2.3.4"}, want: "198.51.100.7"}, SourcePeer},
		{resolveCase{name: "untrusted peer", trusted: proxies, remote: "203.0.113.9:1", xff: []string{"1.2.3.4"}, want: "203.0.113.9"}, SourcePeer},
		{resolveCase{name: "untrusted private peer", trusted: []string{"192.0.2.10"}, remote: "10.9.0.1:1", want: "10.9.0.1"}, SourcePeer},
		{resolveCase{name: "untrusted private peer forwarding", trusted: []string{"192.0.2.10"}, remote: "10.9.0.1:1", xff: []string{"1.2.3.4"}, want: "10.9.0.1"}, SourcePrivateRelay},
		{resolveCase{name: "untrusted private peer, garbage header", trusted: []string{"192.0.2.10"}, remote: "10.9.0.1:1", xff: []string{"unknown"}, want: "10.9.0.1"}, SourcePeer},
		{resolveCase{name: "no trust, loopback peer forwarding", remote: "127.0.0.1:1", xff: []string{"1.2.3.4"}, want: "127.0.0.1"}, SourcePrivateRelay},
		{resolveCase{name: "no trust, link-local ipv6 peer forwarding", forwarded: true, remote: "[fe80::1%eth0]:1", fwd: []string{"for=1.2.3.4"}, want: "fe80::1"}, SourcePrivateRelay},
		{resolveCase{name: "no trust, public peer forwarding", remote: "198.51.100.7:1", xff: []string{"1.2.3.4"}, want: "198.51.100.7"}, SourcePeer},
		{resolveCase{name: "no trust, unix socket forwarding", remote: "@", xff: []string{"1.2.3.4"}, want: "0.0.0.0"}, SourcePeer},
		{resolveCase{name: "client", trusted: proxies, remote: peer, xff: []string{"6.6.6.6, 198.51.100.7, 10.1.1.1"}, want: "198.51.100.7"}, SourceHeader},
		{resolveCase{name: "private client, nothing left of it", trusted: proxies, remote: peer, xff: []string{"172.16.0.9"}, want: "172.16.0.9"}, SourceHeader},
		{resolveCase{name: "private client, garbage left of it", trusted: proxies, remote: peer, xff: []string{"unknown, 172.16.0.9"}, want: "172.16.0.9"}, SourceHeader},
		{resolveCase{name: "no header", trusted: proxies, remote: peer, want: "10.0.0.2"}, SourceNoClient},
		{resolveCase{name: "empty header", trusted: proxies, remote: peer, xff: []string{" , "}, want: "10.0.0.2"}, SourceNoClient},
		{resolveCase{name: "only trusted entries", trusted: proxies, remote: peer, xff: []string{"10.9.9.9, 10.1.1.1"}, want: "10.9.9.9"}, SourceNoClient},
		{resolveCase{name: "malformed rightmost", trusted: proxies, remote: peer, xff: []string{"198.51.100.7, unknown"}, want: "10.0.0.2"}, SourceNoClient},
		{resolveCase{name: "malformed after trusted", trusted: proxies, remote: peer, xff: []string{"198.51.100.7, unknown, 10.1.1.1"}, want: "10.1.1.1"}, SourceNoClient},
		{resolveCase{name: "untrusted load balancer in front", trusted: proxies, remote: peer, xff: []string{"198.51.100.7, 172.16.0.9"}, want: "172.16.0.9"}, SourcePrivateRelay},
		{resolveCase{name: "untrusted ipv6 load balancer in front", trusted: proxies, remote: peer, xff: []string{"2001:db8:1::7, fd00::9"}, want: "fd00::9"}, SourcePrivateRelay},
		{resolveCase{name: "untrusted loopback proxy", trusted: proxies, remote: peer, xff: []string{"198.51.100.7, 127.0.0.1"}, want: "127.0.0.1"}, SourcePrivateRelay},
		{resolveCase{name: "forwarded, untrusted proxy", trusted: proxies, forwarded: true, remote: peer, fwd: []string{"for=198.51.100.7, for=192.168.1.1"}, want: "192.168.1.1"}, SourcePrivateRelay},
		{resolveCase{name: "hops", hops: 1, remote: peer, xff: []string{"6.6.6.6, 198.51.100.7"}, want: "198.51.100.7"}, SourceHeader},
		{resolveCase{name: "hops, fewer entries", hops: 2, remote: peer, xff: []string{"198.51.100.7"}, want: "198.51.100.7"}, SourceNoClient},
		{resolveCase{name: "hops, no header", hops: 1, remote: peer, want: "10.0.0.2"}, SourceNoClient},
		{resolveCase{name: "hops, one short", hops: 1, remote: peer, xff: []string{"198.51.100.7, 10.1.1.1"}, want: "10.1.1.1"}, SourcePrivateRelay},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newResolver(t, c.resolveCase)
			a, src := r.ResolveSource(Peer(c.remote), c.header())
			if want := netip.MustParseAddr(c.want); a != want || src != c.source {
				t.Errorf("ResolveSource(%q, %q) = %v, %d; want %v, %d", c.remote, c.header(), a, src, want, c.source)
			}
		})
	}
}

func TestResolveRequest(t *testing.T) {
	r, err := New(Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("192.0.2.1/32")}})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/", nil) // RemoteAddr 192.0.2.1:1234
	req.Header.Add("x-forwarded-for", "6.6.6.6, 198.51.100.7")
	if got, want := r.ResolveRequest(req), netip.MustParseAddr("198.51.100.7"); got != want {
		t.Errorf("ResolveRequest(%q, %q) = %v, want %v", req.RemoteAddr, req.Header, got, want)
	}
}

// TestResolveOverHTTP sends real requests, so that header canonicalisation
// and RemoteAddr are the server's own.
func TestResolveOverHTTP(t *testing.T) {
	r, err := New(Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan netip.Addr, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		got <- r.ResolveRequest(req)
	}))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header["x-forwarded-for"] = []string{"6.6.6.6, 198.51.100.7"} // not canonical on the wire
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if a, want := <-got, netip.MustParseAddr("198.51.100.7"); a != want {
		t.Errorf("resolved %v over HTTP, want %v", a, want)
	}
}

func TestZeroResolver(t *testing.T) {
	var r Resolver
	h := http.Header{XForwardedFor: {"198.51.100.7"}}
	if got, want := r.Resolve("203.0.113.9:1", h), netip.MustParseAddr("203.0.113.9"); got != want {
		t.Errorf("zero Resolver: Resolve = %v, want %v", got, want)
	}
	if got, want := string(r.AppendKey(nil, netip.MustParseAddr("2001:db8:1:2:3:4:5:6"))), "2001:db8:1:2::/64"; got != want {
		t.Errorf("zero Resolver: AppendKey = %q, want %q", got, want)
	}
}

func TestPeer(t *testing.T) {
	for _, c := range []struct {
		remote, want string
	}{
		{"192.0.2.1:80", "192.0.2.1"},
		{"[2001:db8::1]:80", "2001:db8::1"},
		{"[::ffff:192.0.2.1]:80", "192.0.2.1"},
		{"[fe80::1%25eth0]:80", "fe80::1"},
		{"192.0.2.1", "192.0.2.1"},
		{"@", "0.0.0.0"},
		{"", "0.0.0.0"},
		{"/tmp/s.sock", "0.0.0.0"},
		{"[::]:80", "0.0.0.0"},
		{"192.0.2.1:http", "0.0.0.0"},
	} {
		if got := Peer(c.remote); got != netip.MustParseAddr(c.want) {
			t.Errorf("Peer(%q) = %v, want %v", c.remote, got, c.want)
		}
	}
}

func TestNew(t *testing.T) {
	p := func(s string) netip.Prefix { return netip.MustParsePrefix(s) }
	for _, c := range []struct {
		name    string
		opts    Options
		wantErr []string // substrings, one per expected problem
	}{
		{name: "zero", opts: Options{}},
		{name: "proxies", opts: Options{TrustedProxies: []netip.Prefix{p("10.0.0.0/8")}, Header: "forwarded"}},
		{name: "hops", opts: Options{TrustedHops: 2, Header: "X-FORWARDED-FOR"}},
		{name: "prefix bounds", opts: Options{IPv4Prefix: 32, IPv6Prefix: 128}},
		{name: "max hops", opts: Options{TrustedHops: MaxEntries}},
		{name: "both", opts: Options{TrustedProxies: []netip.Prefix{p("10.0.0.0/8")}, TrustedHops: 1}, wantErr: []string{"exclusive"}},
		{name: "negative hops", opts: Options{TrustedHops: -1}, wantErr: []string{"trusted hops -1"}},
		{name: "too many hops", opts: Options{TrustedHops: MaxEntries + 1}, wantErr: []string{"trusted hops 65"}},
		{name: "bad header", opts: Options{Header: "X-Real-IP"}, wantErr: []string{`header "X-Real-IP"`}},
		{name: "bad prefixes", opts: Options{IPv4Prefix: 33, IPv6Prefix: -1}, wantErr: []string{"IPv4 prefix length 33", "IPv6 prefix length -1"}},
		{name: "invalid prefix", opts: Options{TrustedProxies: []netip.Prefix{p("10.0.0.0/8"), {}}}, wantErr: []string{"trusted proxy 2: invalid prefix"}},
		{name: "everything wrong at once", opts: Options{TrustedProxies: []netip.Prefix{{}}, TrustedHops: 1, Header: "Via", IPv4Prefix: 40, IPv6Prefix: 129},
			wantErr: []string{"trusted proxy 1", "exclusive", `header "Via"`, "IPv4 prefix length 40", "IPv6 prefix length 129"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := New(c.opts)
			if len(c.wantErr) == 0 {
				if err != nil || r == nil {
					t.Fatalf("New(%+v) = %v, %v; want a Resolver", c.opts, r, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("New(%+v) succeeded, want errors %q", c.opts, c.wantErr)
			}
			if r != nil {
				t.Errorf("New(%+v) returned a Resolver with error %v", c.opts, err)
			}
			if got := strings.Count(err.Error(), "\n") + 1; got != len(c.wantErr) {
				t.Errorf("New(%+v) error has %d lines, want %d:\n%v", c.opts, got, len(c.wantErr), err)
			}
			for _, w := range c.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New(%+v) error = %q, want it to mention %q", c.opts, err, w)
				}
				if !strings.HasPrefix(err.Error(), "clientip: ") {
					t.Errorf("New(%+v) error = %q, want the prefix clientip:", c.opts, err)
				}
			}
		})
	}
}

func TestParsePrefixes(t *testing.T) {
	for _, c := range []struct {
		name    string
		in      []string
		want    []string
		wantErr []string
	}{
		{name: "empty", in: nil, want: nil},
		{name: "cidrs and addresses", in: []string{"10.0.0.0/8", " 192.0.2.1 ", "2001:db8::/32", "::1", "", "::ffff:10.1.0.0/112", "::ffff:192.0.2.2"},
			want: []string{"10.0.0.0/8", "192.0.2.1/32", "2001:db8::/32", "::1/128", "10.1.0.0/16", "192.0.2.2/32"}},
		{name: "every bad entry reported", in: []string{"10.0.0.0/8", "nonsense", "10.0.0.1/8", "fe80::1%eth0", "10.0.0.0/33", "2001:db8::1/32"},
			wantErr: []string{`trusted proxy 2 "nonsense": not an IP address`, `3 "10.0.0.1/8": host bits set: did you mean 10.0.0.0/8, or 10.0.0.1/32`, `4 "fe80::1%eth0": zones are not allowed`, `5 "10.0.0.0/33"`, `6 "2001:db8::1/32": host bits set: did you mean 2001:db8::/32, or 2001:db8::1/128`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParsePrefixes(c.in)
			if len(c.wantErr) > 0 {
				if err == nil {
					t.Fatalf("ParsePrefixes(%q) = %v, want errors", c.in, got)
				}
				if got != nil {
					t.Errorf("ParsePrefixes(%q) = %v with an error, want nil", c.in, got)
				}
				for _, w := range c.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("ParsePrefixes(%q) error = %q, want it to mention %q", c.in, err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePrefixes(%q): %v", c.in, err)
			}
			var gotS []string
			for _, p := range got {
				gotS = append(gotS, p.String())
			}
			if diff := cmp.Diff(gotS, c.want); diff != "" {
				t.Errorf("ParsePrefixes(%q) (-got +want):\n%s", c.in, diff)
			}
		})
	}
}

// TestParsePrefixesNamesEachEntry: each bad entry is a *PrefixError with
// its place in the list from 0, empty entries counted, so that a
// configuration can report it at its own field.
func TestParsePrefixesNamesEachEntry(t *testing.T) {
	_, err := ParsePrefixes([]string{"", "10.0.0.0/8", " 10.0.0.1/8 ", "nonsense"})
	type entry struct {
		Index int
		Entry string
	}
	var got []entry
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		pe, ok := e.(*PrefixError)
		if !ok {
			t.Fatalf("ParsePrefixes error %q (%T) is not a *PrefixError", e, e)
		}
		got = append(got, entry{pe.Index, pe.Entry})
	}
	if diff := cmp.Diff(got, []entry{{2, "10.0.0.1/8"}, {3, "nonsense"}}); diff != "" {
		t.Errorf("ParsePrefixes's bad entries (-got +want):\n%s", diff)
	}
}

func TestWarnings(t *testing.T) {
	p := func(s string) netip.Prefix { return netip.MustParsePrefix(s) }
	for _, c := range []struct {
		name string
		opts Options
		want []string // substrings, one per warning, in order
	}{
		{name: "zero", opts: Options{}},
		{name: "private ranges", opts: Options{TrustedProxies: []netip.Prefix{p("10.0.0.0/8"), p("172.16.0.0/12"), p("192.168.0.0/16"), p("127.0.0.0/8"), p("fc00::/7"), p("::1/128"), p("0.0.0.0/32")}}},
		{name: "cloudflare-like ranges", opts: Options{TrustedProxies: []netip.Prefix{p("104.16.0.0/13"), p("2a06:98c0::/29"), p("2606:4700::/32")}}},
		{name: "everything v4", opts: Options{TrustedProxies: []netip.Prefix{p("0.0.0.0/0")}}, want: []string{"0.0.0.0/0 covers every IPv4 address"}},
		{name: "everything v6, Forwarded", opts: Options{TrustedProxies: []netip.Prefix{p("::/0")}, Header: Forwarded}, want: []string{"::/0 covers every IPv6 address: any client can choose its own address by writing Forwarded"}},
		{name: "mapped everything", opts: Options{TrustedProxies: []netip.Prefix{p("::ffff:0.0.0.0/96")}}, want: []string{"0.0.0.0/0 covers every IPv4"}},
		{name: "public /8", opts: Options{TrustedProxies: []netip.Prefix{p("3.0.0.0/8")}}, want: []string{"3.0.0.0/8 covers 16777216 public addresses"}},
		{name: "half the internet", opts: Options{TrustedProxies: []netip.Prefix{p("0.0.0.0/1")}}, want: []string{"0.0.0.0/1 covers"}},
		{name: "broad public v6", opts: Options{TrustedProxies: []netip.Prefix{p("2000::/3")}}, want: []string{"2000::/3 covers 2^125 public"}},
		{name: "header without trust", opts: Options{Header: "Forwarded"}, want: []string{"header Forwarded is ignored"}},
		{name: "wide keys", opts: Options{IPv4Prefix: 16, IPv6Prefix: 32}, want: []string{"IPv4 prefix length 16 groups up to 65536 addresses", "IPv6 prefix length 32 groups up to 4294967296 /64 networks"}},
		{name: "narrow ipv6 keys", opts: Options{IPv6Prefix: 128}, want: []string{"IPv6 prefix length 128 lets one host"}},
		{name: "invalid skipped", opts: Options{TrustedProxies: []netip.Prefix{{}}, IPv4Prefix: -3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Warnings(c.opts)
			if len(got) != len(c.want) {
				t.Fatalf("Warnings(%+v) = %q, want %d warnings like %q", c.opts, got, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("Warnings(%+v)[%d] = %q, want it to mention %q", c.opts, i, got[i], w)
				}
			}
		})
	}
}

func TestKey(t *testing.T) {
	for _, c := range []struct {
		name       string
		v4, v6     int
		addr       netip.Addr
		wantPrefix string
		wantText   string
	}{
		{name: "ipv4 default", addr: netip.MustParseAddr("198.51.100.7"), wantPrefix: "198.51.100.7/32", wantText: "198.51.100.7"},
		{name: "ipv6 default /64", addr: netip.MustParseAddr("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), wantPrefix: "2001:db8:1:2::/64", wantText: "2001:db8:1:2::/64"},
		{name: "two hosts of one /64 share a key", addr: netip.MustParseAddr("2001:db8:1:2::1"), wantPrefix: "2001:db8:1:2::/64", wantText: "2001:db8:1:2::/64"},
		{name: "ipv6 /128", v6: 128, addr: netip.MustParseAddr("2001:db8::1"), wantPrefix: "2001:db8::1/128", wantText: "2001:db8::1"},
		{name: "ipv6 /48", v6: 48, addr: netip.MustParseAddr("2001:db8:1:2::1"), wantPrefix: "2001:db8:1::/48", wantText: "2001:db8:1::/48"},
		{name: "ipv4 /24", v4: 24, addr: netip.MustParseAddr("198.51.100.7"), wantPrefix: "198.51.100.0/24", wantText: "198.51.100.0/24"},
		{name: "mapped is keyed as ipv4", addr: netip.MustParseAddr("::ffff:198.51.100.7"), wantPrefix: "198.51.100.7/32", wantText: "198.51.100.7"},
		{name: "zone dropped", v6: 128, addr: netip.MustParseAddr("fe80::1%eth0"), wantPrefix: "fe80::1/128", wantText: "fe80::1"},
		{name: "invalid is the fallback", addr: netip.Addr{}, wantPrefix: "0.0.0.0/32", wantText: "0.0.0.0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := New(Options{IPv4Prefix: c.v4, IPv6Prefix: c.v6})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.KeyPrefix(c.addr); got != netip.MustParsePrefix(c.wantPrefix) {
				t.Errorf("KeyPrefix(%v) = %v, want %v", c.addr, got, c.wantPrefix)
			}
			if got := string(r.AppendKey([]byte("k:"), c.addr)); got != "k:"+c.wantText {
				t.Errorf("AppendKey(%q, %v) = %q, want %q", "k:", c.addr, got, "k:"+c.wantText)
			}
		})
	}
}

// The allocation budget of the hot paths, as a test.
func TestResolveDoesNotAllocate(t *testing.T) {
	for _, c := range []resolveCase{
		{name: "peer", remote: "198.51.100.7:5555", xff: []string{"1.2.3.4"}},
		{name: "peer ipv6", remote: "[2001:db8:1::7]:443"},
		{name: "unix socket", remote: "@"},
		{name: "untrusted peer", trusted: proxies, remote: "203.0.113.9:1", xff: []string{"1.2.3.4"}},
		{name: "one trusted proxy, 2 entries", trusted: proxies, remote: peer, xff: []string{"6.6.6.6, 198.51.100.7"}},
		{name: "trusted chain", trusted: proxies, remote: peer, xff: []string{"198.51.100.7, 10.1.1.1, [2001:db8:ffff::1]:80"}},
		{name: "ipv6 with port", trusted: proxies, remote: peer, xff: []string{"[2001:db8:1::7]:80"}},
		{name: "hops", hops: 2, remote: peer, xff: []string{"6.6.6.6, 198.51.100.7, 203.0.113.5"}},
		{name: "forwarded", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for=6.6.6.6, for="[2001:db8:1::7]:4711";proto=https, for=10.1.1.1`}},
		{name: "malformed", trusted: proxies, remote: peer, xff: []string{"unknown, _x, 198.51.100.7:http, 10.1.1.1"}},
		{name: "host name", trusted: proxies, remote: peer, xff: []string{"deadbeef.example, 10.1.1.1"}},
		{name: "forwarded obfuscated", trusted: proxies, forwarded: true, remote: peer, fwd: []string{`for="_gazonk", for=unknown;proto=https`}},
		{name: "10k entries", trusted: proxies, remote: peer, xff: []string{strings.Repeat("10.1.1.1, ", 10000)}},
		{name: "untrusted private proxy", trusted: proxies, remote: peer, xff: []string{"198.51.100.7, 172.16.0.9"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newResolver(t, c)
			h := c.header()
			buf := make([]byte, 0, 64)
			n := testing.AllocsPerRun(1000, func() {
				a, _ := r.ResolveSource(Peer(c.remote), h)
				buf = r.AppendKey(buf[:0], a)
			})
			if n != 0 {
				t.Errorf("Resolve+AppendKey allocs = %v, want 0", n)
			}
		})
	}
}

// TestImports keeps the package on the standard library.
func TestImports(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	got := strings.Fields(string(out))
	// The standard library and this module's stdlib-only httpsyntax.
	want := []string{"github.com/floodgate/floodgate/internal/httpsyntax", "github.com/floodgate/floodgate/internal/clientip"}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("non-standard dependencies (-got +want):\n%s", diff)
	}
}
