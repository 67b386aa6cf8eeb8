// Package clientip finds the address of the client that sent an HTTP
// request, from the connection or from a forwarding header written by
// trusted proxies, and groups client addresses into rate-limiting keys.
//
// A Resolver is built once by New from Options and is then immutable and
// safe for concurrent use. Resolve, KeyPrefix and AppendKey do not
// allocate, except for an address with an IPv6 zone and for a malformed
// entry made only of address characters ("1.2.3"), which cost one
// allocation each.
//
// # The peer address
//
// The peer is the address of the connection, from http.Request.RemoteAddr:
// "192.0.2.1:1234", "[2001:db8::1]:1234", or a bare address. Here and for
// every address taken from a header, an IPv4-mapped IPv6 address
// (::ffff:192.0.2.1) is unmapped to IPv4 and an IPv6 zone (fe80::1%eth0) is
// dropped.
//
// A RemoteAddr that is not an IP address — a unix socket peer ("@",
// "/run/floodgate.sock") or an empty string — gives the unspecified address
// 0.0.0.0. No real client has that address and no header entry can produce
// it (an entry of 0.0.0.0 or :: is malformed), so a resolved address a with
// a.IsUnspecified() means exactly "peer unknown"; all such requests share
// the key 0.0.0.0. A unix-socket peer is a trusted proxy only if a trusted
// prefix contains 0.0.0.0: list "0.0.0.0/32" to trust a proxy that connects
// over a unix socket, or use TrustedHops, which does not look at the peer.
//
// # Which address is the client
//
// With neither TrustedProxies nor TrustedHops (the default), the client is
// the peer and forwarding headers are ignored entirely.
//
// With TrustedProxies, a peer outside every trusted prefix is the client,
// whatever the header says: a forged X-Forwarded-For from an untrusted peer
// never changes the address. A trusted peer's header is walked as below.
//
// With TrustedHops = n, the header is walked whatever the peer is, and the
// client is the n-th entry from the right (hop 1 is the address the nearest
// proxy saw). floodgate must then be reachable only through those n
// proxies: a client that connects directly writes the whole header itself.
//
// Resolve reads one header, X-Forwarded-For (the default) or Forwarded (RFC
// 7239), never both. Proxies append to it, so its rightmost entry is the
// address the nearest proxy saw and entries further left were written by
// proxies further away or by the client, who can write anything there. All
// lines of the header count, in order, as if joined by commas. The walk
// goes from the right (the last line first, each line from its last entry
// to its first) and keeps the last good address, which starts as the peer:
//
//  1. An empty entry (",,", a blank line) is skipped and does not count.
//  2. A malformed entry ends the walk; the result is the last good
//     address: the nearest non-empty entry to its right (written by a
//     trusted proxy), or the peer if the malformed entry is the rightmost.
//     An address to the left of a malformed entry is never used.
//  3. Otherwise the entry's address becomes the last good address, and
//     with TrustedProxies, an address outside every trusted prefix is the
//     client: the walk ends. With TrustedHops = n, the n-th entry is the
//     client: the walk ends.
//  4. When the header runs out, the result is the last good address: the
//     leftmost entry, or the peer if the header has no entries.
//
// So with TrustedProxies, the client is the rightmost entry not inside a
// trusted prefix; if every entry is trusted, the leftmost entry. With
// TrustedHops = n and fewer than n entries, the client is the leftmost
// entry; this is no more forgeable than the n-th entry (a client that can
// write a short header can pad it to n entries) and keeps clients apart
// when n is set higher than the real number of proxies.
//
// # Results that share one key
//
// ResolveSource says how the address was found, so that a caller can
// report the two results that most often mean a misconfiguration, as
// every request concerned then shares one key:
//
//   - SourceNoClient: a trusted peer's header named no address outside
//     the trusted prefixes (missing, empty, only trusted entries, or a
//     malformed entry first), or, with TrustedHops, had fewer entries
//     than hops: the client is a proxy's address or the leftmost entry.
//     A proxy that does not set the header looks like this.
//   - SourcePrivateRelay: the client is a private, loopback or link-local
//     address (net/netip's IsPrivate, IsLoopback, IsLinkLocalUnicast)
//     that forwarded another's request: a header entry with a well-formed
//     entry to its left, or an untrusted peer whose header (ignored) has
//     a well-formed entry. An address that forwarded another's request is
//     a proxy; a load balancer missing from TrustedProxies, or any load
//     balancer when nothing is trusted, looks like this.
//
// Neither changes the address Resolve returns.
//
// # Malformed entries
//
// An X-Forwarded-For entry, after trimming spaces and tabs, must be an IP
// address, optionally with a port: "192.0.2.1", "192.0.2.1:8080",
// "2001:db8::1", "[2001:db8::1]", "[2001:db8::1]:8080", "fe80::1%eth0".
// An IPv6 address with a port must be bracketed ("2001:db8::1:80" is the
// address 2001:db8::1:80). A port is 1 to 5 digits, at most 65535.
//
// A Forwarded element is a ";"-separated list of name=value pairs, names
// case-insensitive, values a token or a quoted string; elements are
// separated by commas outside quoted strings. Its single "for" parameter
// gives the address, in the syntax above (quoted or not; IPv6 should be
// bracketed and quoted as RFC 7239 requires, but need not be), and the port
// may be an obfuscated "_" identifier. Other parameters (by, proto, host)
// are checked for syntax only.
//
// Everything else is malformed, in particular: "unknown", obfuscated
// identifiers ("_hidden"), host names, the unspecified addresses 0.0.0.0
// and ::, an address with non-ASCII or control characters, a Forwarded
// element without a for parameter or with two, unbalanced quotes, and a
// backslash escape inside the for value. So is an entry beyond the bounds on work:
// Resolve examines at most MaxEntries non-empty entries and the rightmost
// MaxHeaderBytes bytes of the header (each line boundary counting as one
// byte); the next entry, or an entry that does not lie wholly inside those
// bytes, is malformed.
//
// # Keys
//
// When a client address is used as a rate-limiting key, KeyPrefix masks it
// to IPv4Prefix bits (default 32) or IPv6Prefix bits (default 64), since
// one IPv6 host commonly holds a whole /64. AppendKey writes the key's text
// into a reused buffer: the address itself for a full-length prefix
// ("192.0.2.1"), otherwise the masked prefix ("2001:db8:1:2::/64").
//
// # Configuration hazards
//
// Trusting a prefix trusts everything its addresses write in the header.
// Trusting 0.0.0.0/0 or ::/0 trusts every peer and every entry, so the
// result is the leftmost entry, which the client writes: every client can
// pick its own key. Warnings reports such over-broad trust (and other
// settings that are valid but likely wrong) so that configuration checks
// can show it; New accepts it.
package clientip
