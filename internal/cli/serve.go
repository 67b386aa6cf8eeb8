package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/sample"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/internal/version"
)

func init() {
	register("serve", 10, "--config FILE [--env NAME] [--listen ADDR] [--admin-listen ADDR] [--sample-upstream]", runServe)
}

func runServe(ctx context.Context, env environ, args []string) error {
	fs := newFlags(env, "serve", "--config FILE [--env NAME] [flags]")
	file := fs.String("config", "", "configuration `file` (required)")
	envName := fs.String("env", "", "environment `name` to apply from the file's environments")
	listen := fs.String("listen", "", "public listener `address`, overriding the file's listen")
	adminListen := fs.String("admin-listen", "", "admin listener `address` (or off), overriding admin.listen")
	sampleUp := fs.Bool("sample-upstream", false, "also serve a small JSON echo upstream at every loopback upstream URL, to try floodgate without an API")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *file == "" {
		return usageError{errors.New("--config is required")}
	}
	f, err := config.Load(*file, *envName, env.lookup)
	var loadProblems config.Problems
	if err != nil && (!errors.As(err, &loadProblems) || f == nil) {
		return err
	}
	c := &f.Config
	if *listen != "" {
		c.Listen = *listen
	}
	if *adminListen != "" {
		c.Admin.Listen = *adminListen
	}
	c.ApplyDefaults()

	logger := telemetry.NewLogger(env.stderr, c.Log.Level)
	metrics := telemetry.NewMetrics(version.String())
	store := gateway.NewMemoryStore(c.Store.MaxKeys, nil, metrics)
	g, problems := gateway.New(f, gateway.Options{Store: store, Metrics: metrics, Logger: logger})
	if problems = append(loadProblems, problems...); len(problems) > 0 {
		fmt.Fprintln(env.stderr, dedupe(problems).Error())
		return errReported
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var servers []*http.Server
	// However serve ends (a signal, a listener failing, a start-up error),
	// every server started is shut down: in-flight requests finish, for
	// at most 30 seconds.
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		for _, s := range servers {
			_ = s.Shutdown(sctx)
		}
	}()
	start := func(name, addr string, h http.Handler, tlsConf *tls.Config) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("%s listener: %w", name, err)
		}
		srv := newServer(h, logger)
		srv.TLSConfig = tlsConf
		servers = append(servers, srv)
		logger.Info("listening", "listener", name, "address", ln.Addr().String(), "tls", tlsConf != nil)
		go func() {
			serve := srv.Serve
			if tlsConf != nil {
				// Certificates are in TLSConfig; ServeTLS adds HTTP/2 by ALPN.
				serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
			}
			if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				cancel(fmt.Errorf("%s listener: %w", name, err))
			}
		}()
		return nil
	}
	if *sampleUp {
		for name, u := range c.Upstreams {
			pu, err := url.Parse(u.URL)
			if err != nil || !isLoopback(pu.Hostname()) {
				return fmt.Errorf("--sample-upstream: upstream %s (%s) is not a loopback http address", name, u.URL)
			}
			if err := start("sample upstream "+name, pu.Host, sample.Handler(name), nil); err != nil {
				return err
			}
		}
	}
	if c.Admin.Listen != "off" {
		if err := start("admin", c.Admin.Listen, admin.Handler(admin.Options{Gatherer: metrics.Registry}), nil); err != nil {
			return err
		}
	}
	var tlsConf *tls.Config
	if c.TLS.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.TLS.CertFile, c.TLS.KeyFile)
		if err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if err := start("public", c.Listen, g, tlsConf); err != nil {
		return err
	}
	logger.Warn("counters are in this process's memory: each gateway replica enforces every limit on its own, so N replicas admit up to N times each limit",
		"store", c.Store.URL, "max_keys", c.Store.MaxKeys)
	logger.Info("floodgate started", "version", version.String(), "config", f.Name, "env", f.Env, "mode", c.Mode)

	<-ctx.Done()
	cause := context.Cause(ctx)
	logger.Info("shutting down", "reason", cause.Error())
	if cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

// newServer returns an http.Server with timeouts that a slow client
// cannot exploit (slowloris) but that let long downloads finish.
func newServer(h http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          telemetry.ServerErrorLog(logger),
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
