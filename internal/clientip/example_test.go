package clientip_test

import (
	"fmt"
	"net/http"
	"net/netip"

	"github.com/floodgate/floodgate/internal/clientip"
)

func Example() {
	trusted, err := clientip.ParsePrefixes([]string{"10.0.0.0/8", "2001:db8:ffff::/48"})
	if err != nil {
		panic(err)
	}
	r, err := clientip.New(clientip.Options{TrustedProxies: trusted})
	if err != nil {
		panic(err)
	}

	// Through a trusted load balancer: the rightmost untrusted entry.
	h := http.Header{"X-Forwarded-For": {"6.6.6.6, 198.51.100.7, 10.1.1.1"}}
	fmt.Println(r.Resolve("10.0.0.2:4321", h))

	// The same header from an untrusted peer is ignored.
	fmt.Println(r.Resolve("203.0.113.9:4321", h))

	// IPv6 clients are keyed by their /64.
	a := r.Resolve("[2001:db8:ffff::1]:443", http.Header{"X-Forwarded-For": {"[2001:db8:1:2::7]:51000"}})
	fmt.Println(a, string(r.AppendKey([]byte("ip:"), a)))

	// A unix-socket peer has no address.
	fmt.Println(r.Resolve("@", nil).IsUnspecified())
	// Output:
	// 198.51.100.7
	// 203.0.113.9
	// 2001:db8:1:2::7 ip:2001:db8:1:2::/64
	// true
}

func ExampleWarnings() {
	for _, w := range clientip.Warnings(clientip.Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}}) {
		fmt.Println(w)
	}
	// Output:
	// trusted proxy 0.0.0.0/0 covers every IPv4 address: any client can choose its own address by writing X-Forwarded-For, so every client can pick its own rate-limiting key
}
