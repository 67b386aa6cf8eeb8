// Command revproxy is the benchmark's plain peer: net/http/httputil's
// ReverseProxy forwarding every request to one upstream, with no rules,
// over a keep-alive pool as large as floodgate's (256 idle connections per
// host; the default of 2 would measure reconnects instead). Run it with
// GOMAXPROCS=1, as bench/gateway.sh does.
package main

import (
	"flag"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18084", "listen address")
	upstream := flag.String("upstream", "http://127.0.0.1:18081", "upstream URL")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil {
		log.Fatalf("revproxy: upstream: %v", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 256
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
		},
		Transport: tr,
	}
	log.Fatal(http.ListenAndServe(*listen, rp))
}
