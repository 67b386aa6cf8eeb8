// Command fwdproxy is bench/revproxy with internal/forward in place of
// httputil.ReverseProxy: the same net/http server forwarding every request
// to one upstream, with no rules, over a keep-alive pool of 256 idle
// connections. bench/gateway.sh runs it as the fwdproxy target, with
// GOMAXPROCS=1. With -cpuprofile it writes a CPU profile of its run when
// it is stopped (SIGINT or SIGTERM).
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/floodgate/floodgate/internal/forward"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18085", "listen address")
	upstream := flag.String("upstream", "http://127.0.0.1:18081", "upstream URL")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil {
		log.Fatalf("fwdproxy: upstream: %v", err)
	}
	f, err := forward.New(u, forward.Options{
		MaxIdleConns: 256,
		OnError: func(w http.ResponseWriter, r *http.Request, err error) {
			log.Printf("fwdproxy: %s %s: %v", r.Method, r.URL.Path, err)
			w.WriteHeader(http.StatusBadGateway)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *cpuprofile != "" {
		out, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			log.Fatal(err)
		}
		defer func() {
			pprof.StopCPUProfile()
			out.Close()
		}()
	}
	srv := &http.Server{Addr: *listen, Handler: f}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Print(err)
	}
}
