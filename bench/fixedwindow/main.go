// Command fixedwindow is the baseline bench/gateway.sh sets floodgate's
// Redis store against: the approach of envoyproxy/ratelimit, a fixed
// window counted in Redis with one round trip per descriptor (INCRBY and
// EXPIRE pipelined, as its Redis cache does), through go-redis' pool, in
// front of the same server and forwarder floodgate uses (internal/h1server,
// internal/forward), so that only the counting differs. Each request is
// counted under the descriptors MaveDB's two rules give the benchmark's
// path (-descriptors, default 2), keyed by the client's address, against
// limits far above the load: nothing is refused, every count is made. With
// GOMAXPROCS=1 in bench/gateway.sh, as every target.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/floodgate/floodgate/internal/forward"
	"github.com/floodgate/floodgate/internal/h1server"
	"github.com/floodgate/floodgate/internal/rawio"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18089", "listen address")
	upstream := flag.String("upstream", "http://127.0.0.1:18081", "upstream URL")
	redisAddr := flag.String("redis", "127.0.0.1:18088", "Redis address")
	descriptors := flag.Int("descriptors", 2, "descriptors counted for each request, one round trip each")
	limit := flag.Int64("limit", 1<<40, "requests a window admits under each descriptor")
	window := flag.Duration("window", time.Minute, "the fixed window")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil {
		log.Fatalf("fixedwindow: upstream: %v", err)
	}
	f, err := forward.New(u, forward.Options{
		MaxIdleConns: 256,
		OnError: func(w http.ResponseWriter, r *http.Request, err error) {
			log.Printf("fixedwindow: %s %s: %v", r.Method, r.URL.Path, err)
			w.WriteHeader(http.StatusBadGateway)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: *redisAddr, PoolSize: 64})
	names := make([]string, *descriptors)
	for i := range names {
		names[i] = "fw:rule" + strconv.Itoa(i) + ":"
	}
	secs := int64(window.Seconds())
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip, _, _ := net.SplitHostPort(r.RemoteAddr)
		slot := strconv.FormatInt(time.Now().Unix()/secs, 10)
		for _, name := range names {
			key := name + ip + ":" + slot
			pipe := rdb.Pipeline()
			incr := pipe.IncrBy(r.Context(), key, 1)
			pipe.Expire(r.Context(), key, *window)
			if _, err := pipe.Exec(r.Context()); err != nil {
				log.Printf("fixedwindow: redis: %v", err)
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			if incr.Val() > *limit {
				w.Header().Set("Retry-After", strconv.FormatInt(secs-time.Now().Unix()%secs, 10))
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
		}
		f.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	srv := &h1server.Server{Handler: h}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	// As floodgate serve does: raw reads and writes (internal/rawio).
	if err := srv.Serve(rawio.Listener(ln)); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Print(err)
	}
}
