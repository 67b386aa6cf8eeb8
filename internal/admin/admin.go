// Package admin serves floodgate's admin listener: Prometheus metrics and
// health. It listens on loopback by default (admin.listen); nothing on it
// is meant for the public.
package admin

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Options configures Handler.
type Options struct {
	// Gatherer is the registry /metrics exposes.
	Gatherer prometheus.Gatherer
	// Healthy reports whether the process can serve; nil means always.
	Healthy func() error
}

// Handler returns the admin listener's handler:
//
//	GET /metrics  Prometheus text exposition (docs/metrics.md)
//	GET /healthz  200 "ok" while the process serves
func Handler(o Options) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: false,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if o.Healthy != nil {
			if err := o.Healthy(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte("unhealthy: " + err.Error() + "\n"))
				return
			}
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}
