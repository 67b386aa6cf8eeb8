package cli

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/h1server"
	"github.com/floodgate/floodgate/internal/listen"
	"github.com/floodgate/floodgate/internal/memrelease"
	"github.com/floodgate/floodgate/internal/rawio"
	"github.com/floodgate/floodgate/internal/sample"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/internal/version"
	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/redisstore"
)

func init() {
	register("serve", 10, "--config FILE [--env NAME] [--store URL] [--listen ADDR] [--admin-listen ADDR] [--internal-listen ADDR] [--no-watch] [--sample-upstream]", runServe)
}

// serveFlags are the command-line settings that override the file's, on
// the first load and every reload.
type serveFlags struct {
	file, env, listen, adminListen, internalListen, store string
	// envFlag is the flag that chose env, named when the file does not
	// define it; "" when env is an argument (diff's) or built in.
	envFlag string
	// data, when set, is the configuration itself (file only names it):
	// `floodgate demo` serves its built-in example this way.
	data []byte
	// edit, when set, changes every load of the configuration before
	// defaults are applied (`floodgate demo`'s lowered limits).
	edit func(*config.Config)
}

// serveHooks are what `floodgate demo` adds to serve.
type serveHooks struct {
	noWatch, sampleUp bool
	// extra are more loopback servers to start with the gateway, by name
	// and address.
	extra []extraServer
	// started is called once every listener accepts connections.
	started func(srv *gateway.Server)
}

type extraServer struct {
	name, addr string
	h          http.Handler
}

func runServe(ctx context.Context, env environ, args []string) error {
	fs := newFlags(env, "serve", "--config FILE [--env NAME] [flags]")
	sf := serveFlags{envFlag: "--env"}
	fs.StringVar(&sf.file, "config", "", "configuration `file` (required)")
	fs.StringVar(&sf.env, "env", "", "environment `name` to apply from the file's environments")
	fs.StringVar(&sf.listen, "listen", "", "public listener `address`, overriding the file's listen")
	fs.StringVar(&sf.adminListen, "admin-listen", "", "admin listener `address` (or off), overriding admin.listen")
	fs.StringVar(&sf.internalListen, "internal-listen", "", "internal listener `address` (host:port, unix:/path or off), overriding internal.listen")
	fs.StringVar(&sf.store, "store", "", "store `URL` (memory, redis://host:port, rediss://…, redis://h1:p1,h2:p2,…), overriding store.url")
	noWatch := fs.Bool("no-watch", false, "reload only on SIGHUP, not when the file changes")
	sampleUp := fs.Bool("sample-upstream", false, "also serve a small JSON echo upstream at every loopback upstream URL, to try floodgate without an API")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if sf.file == "" {
		return usageError{errors.New("--config is required")}
	}
	return serve(ctx, env, sf, serveHooks{noWatch: *noWatch, sampleUp: *sampleUp})
}

// A flagOverride is a flag given that replaces a field of the file.
type flagOverride struct{ flag, field, value string }

// overrides are the flags given that replace fields of the file.
func (sf serveFlags) overrides() []flagOverride {
	var given []flagOverride
	for _, o := range []flagOverride{
		{"--listen", "listen", sf.listen},
		{"--admin-listen", "admin.listen", sf.adminListen},
		{"--internal-listen", "internal.listen", sf.internalListen},
		{"--store", "store.url", sf.store},
	} {
		if o.value != "" {
			given = append(given, o)
		}
	}
	return given
}

// checkFlags checks the values of the flags given as Validate checks the
// fields they replace. A value from the command line is a mistake there:
// a usage error naming the flag, never a problem at the line of the
// file's field, which may well be right.
func (sf serveFlags) checkFlags() error {
	for _, o := range sf.overrides() {
		var problem string
		var allowed []string
		if o.field == "store.url" {
			problem, allowed = config.CheckStoreURL(o.value), config.StoreURLForms
		} else {
			problem = config.ListenProblem(o.field, o.value)
		}
		if problem != "" {
			return usageError{config.Problem{Field: o.flag, Msg: problem, Allowed: allowed}}
		}
	}
	return nil
}

// flagProblem returns, as a usage error naming the flag, the first of
// problems at a field that a flag replaced: what only the whole
// configuration shows, such as an address another listener has (naming
// the flag that gave the other listener its address, if one did). An
// address of the file's that a flag gives a listener before it is the
// flag's mistake too.
func (sf serveFlags) flagProblem(c *config.Config, problems config.Problems) error {
	byField := sf.overridesByField()
	for _, o := range sf.overrides() {
		for _, p := range problems {
			if p.Field != o.field {
				continue
			}
			msg := p.Msg
			if other, problem := config.SharedListen(c, p.Field); problem != "" && p.Msg == problem {
				if theirs, ok := byField[other]; ok {
					msg += ", given by " + theirs.flag
				}
			}
			return usageError{config.Problem{Field: o.flag, Msg: msg, Allowed: p.Allowed}}
		}
	}
	for _, p := range problems {
		if o, fileField, ok := sf.sharedWithFlag(c, p); ok {
			return usageError{config.Problem{Field: o.flag,
				Msg: fmt.Sprintf("%q is also the %s listen address", o.value, config.ListenerName(fileField))}}
		}
	}
	return nil
}

// overridesByField returns the flags given, by the field each replaces.
func (sf serveFlags) overridesByField() map[string]flagOverride {
	byField := map[string]flagOverride{}
	for _, o := range sf.overrides() {
		byField[o.field] = o
	}
	return byField
}

// sharedWithFlag reports whether p is Validate's problem of two listeners
// at one address of which a flag gave one and the file the other, and
// returns the flag and the file's listener.
func (sf serveFlags) sharedWithFlag(c *config.Config, p config.Problem) (o flagOverride, fileField string, ok bool) {
	other, problem := config.SharedListen(c, p.Field)
	if problem == "" || p.Msg != problem {
		return flagOverride{}, "", false
	}
	byField := sf.overridesByField()
	mine, fieldByFlag := byField[p.Field]
	theirs, otherByFlag := byField[other]
	switch {
	case fieldByFlag && !otherByFlag:
		return mine, other, true
	case otherByFlag && !fieldByFlag:
		return theirs, p.Field, true
	}
	return flagOverride{}, "", false
}

// fileSideOfFlags returns problems with each address that the file gives
// a listener and a flag another placed at the file's listener, naming
// the flag: on a reload the flags are those serve started with, and the
// file is what changed.
func (sf serveFlags) fileSideOfFlags(f *config.File, problems config.Problems) config.Problems {
	out := slices.Clone(problems)
	for i, p := range out {
		if o, fileField, ok := sf.sharedWithFlag(&f.Config, p); ok {
			out[i] = f.Problem(fileField, fmt.Sprintf("%q is also the %s listen address, given by %s",
				o.value, config.ListenerName(o.field), o.flag))
		}
	}
	return out
}

// envError returns, as a usage error naming flag, the environment f was
// asked for when the file does not define it: a mistake on the command
// line, not at the file's environments key, which may well be right.
func envError(f *config.File, flag string) error {
	if p := f.EnvProblem(); p != "" {
		return usageError{config.Problem{Field: flag, Msg: p, Allowed: f.Environments}}
	}
	return nil
}

// serve runs the gateway until ctx ends or a listener fails.
func serve(ctx context.Context, env environ, sf serveFlags, hooks serveHooks) error {
	// SIGHUP reloads; subscribe first, before the file is even read, so
	// that a SIGHUP sent while floodgate starts (`systemctl reload` just
	// after `systemctl start`) never finds the default action (exit) in
	// place: it is a reload once floodgate runs.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if err := sf.checkFlags(); err != nil {
		return err
	}
	f, data, problems, err := sf.load(env)
	if err != nil {
		return err
	}
	if len(problems) == 0 {
		// The store is made before the gateway compiles (and validates)
		// the file: a store.url it cannot use is a problem at its line,
		// as validate says it, not the store's own error.
		problems = f.Validate()
	}
	if len(problems) > 0 {
		if err := sf.flagProblem(&f.Config, problems); err != nil {
			return err
		}
		// What only compiling finds too: every problem at once, as
		// validate prints them.
		_, more := compileCheck(f)
		reportProblems(env.stderr, sf.file, dedupe(append(problems, more...)))
		return errReported
	}
	c := &f.Config

	hasher, err := gatewayHasher(env)
	if err != nil {
		return err
	}
	logger := telemetry.NewLogger(env.stderr, c.Log.Level)
	metrics := telemetry.NewMetrics(version.String())
	store, closer, err := gateway.NewStore(&c.Store, metrics, logger)
	if err != nil {
		return err
	}
	defer closer.Close()
	opts := gateway.Options{Store: store, Metrics: metrics, Logger: logger, KeyHasher: hasher,
		Failures: telemetry.NewFailures(logger, metrics, telemetry.LogLimiterOptions{})}
	// Last, after the servers' shutdown: the failures counted since their
	// last line are written.
	defer opts.Failures.Limiter().Flush(true)
	// Go's servers' own messages go through the same limiter, and are
	// flushed with the failures.
	errLog := telemetry.ServerErrorLog(opts.Failures.Limiter())
	switch c.Log.Access {
	case "stdout":
		opts.AccessLog = telemetry.NewAccessLog(env.stdout)
	case "stderr":
		opts.AccessLog = telemetry.NewAccessLog(env.stderr)
	}
	srv, problems := gateway.NewServer(f, data, opts)
	if len(problems) > 0 {
		reportProblems(env.stderr, sf.file, dedupe(problems))
		return errReported
	}
	// The log's first line once the configuration is known good: a
	// broken one is reported above, alone, as text.
	stopGC, err := startGCFloor(env, logger)
	if err != nil {
		return err
	}
	defer stopGC()
	defer applyMemoryLimit(env, logger, cgroupMemoryLimit)()
	var draining atomic.Bool

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var servers []namedServer
	grace, _ := config.ParseTimeout(c.Server.ShutdownGrace)
	// However serve ends (a signal, a listener failing, a start-up error),
	// every server started is shut down: it stops accepting, and requests
	// in flight finish, for at most the shutdown grace. Those still running
	// then are cut off when the process exits: the log says how many.
	defer func() {
		draining.Store(true)
		sctx, scancel := context.WithTimeout(context.Background(), grace)
		defer scancel()
		var (
			mu   sync.Mutex
			busy []string
		)
		shutdown := func(gateway bool) {
			var wg sync.WaitGroup
			for _, s := range servers {
				if gatewayListeners[s.name] == gateway {
					wg.Go(func() {
						if s.Shutdown(sctx) != nil {
							mu.Lock()
							busy = append(busy, s.name)
							mu.Unlock()
						}
					})
				}
			}
			wg.Wait()
		}
		// The gateway's listeners together: none accepts a connection
		// once the drain has begun, and each request in flight has the
		// whole grace. Then the others: the admin listener, whose /readyz
		// answers 503 meanwhile, and the sample upstreams they may call.
		shutdown(true)
		shutdown(false)
		if len(busy) > 0 {
			slices.Sort(busy)
			logger.Warn("shutdown grace ran out: requests still in flight are cut off",
				"grace", grace.String(), "in_flight", metrics.InflightNow(), "listeners", busy)
		}
	}()
	// Client connections are capped before the process runs out of
	// descriptors (server.max_connections).
	var rejected prometheus.Counter
	maxConns := maxConnections(c.Server.MaxConnections)
	conns := listen.NewLimiter(maxConns, func() {
		rejected.Inc()
		// A line per interval with its count, as every failure that
		// repeats with each client: the operator sees clients refused
		// in the log, not only in the metric.
		opts.Failures.Limiter().Log("connections rejected", slog.LevelWarn,
			"connection refused: server.max_connections are open", slog.Int("max_connections", maxConns))
	})
	rejected = metrics.RegisterConnections(conns.Open)
	// Once a burst of connections has closed, their memory goes back to
	// the system within seconds, not minutes (internal/memrelease).
	stopRelease := memrelease.Watch(conns.Open, func(r memrelease.Release) {
		logger.Info("memory returned to the system after a burst of connections",
			"connections_peak", r.Peak, "connections_open", r.Open, "returned_mib", r.Returned>>20)
	})
	defer stopRelease()
	// start listens on addr; change says how to choose another address
	// when that fails ("" for listeners the user does not configure).
	start := func(name, addr, change string, s httpServer) error {
		network := "tcp"
		if path, ok := strings.CutPrefix(addr, "unix:"); ok {
			network, addr = "unix", path
			// A socket left by an earlier run (not any other file).
			if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
				_ = os.Remove(path)
			}
		}
		ln, err := net.Listen(network, addr)
		if err != nil {
			if change != "" {
				return fmt.Errorf("%s listener: %w (choose another address with %s)", name, err, change)
			}
			return fmt.Errorf("%s listener: %w", name, err)
		}
		// Reads and writes as raw system calls (rawio): the process,
		// idle between requests, is not woken twice for each.
		ln = rawio.Listener(ln)
		// A client that stops reading its answer is cut off (both engines).
		writeIdle, _ := config.ParseTimeout(c.Server.WriteIdleTimeout)
		ln = listen.WriteIdle(ln, writeIdle)
		if name == "public" || name == "internal" {
			ln = conns.Wrap(ln)
		}
		servers = append(servers, namedServer{name, s})
		hs, _ := s.(*http.Server)
		if ns, ok := s.(*h1server.NetHTTPServer); ok {
			hs = ns.Server
		}
		tls := hs != nil && hs.TLSConfig != nil
		engine := config.EngineFloodgate
		if hs != nil {
			engine = config.EngineNetHTTP
		}
		logger.Info("listening", "listener", name, "address", ln.Addr().String(), "tls", tls, "engine", engine)
		go func() {
			serve := s.Serve
			if tls {
				// Certificates are in TLSConfig; ServeTLS adds HTTP/2 by ALPN.
				serve = func(ln net.Listener) error { return hs.ServeTLS(ln, "", "") }
			}
			if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				cancel(fmt.Errorf("%s listener: %w", name, err))
			}
		}()
		return nil
	}
	for _, x := range hooks.extra {
		if err := start(x.name, x.addr, "", newServer(x.h, &c.Server, errLog)); err != nil {
			return err
		}
	}
	if hooks.sampleUp {
		for name, u := range c.Upstreams {
			pu, err := url.Parse(u.URL)
			if err != nil || !isLoopback(pu.Hostname()) {
				return fmt.Errorf("--sample-upstream: upstream %s (%s) is not a loopback http address", name, u.URL)
			}
			if err := start("sample upstream "+name, pu.Host, "upstreams."+name+".url in "+sf.file, newServer(sample.Handler(name), &c.Server, errLog)); err != nil {
				return err
			}
		}
	}
	public := newGatewayServer(srv, &c.Server, errLog)
	var cert *certificate
	if c.TLS.CertFile != "" {
		cert, err = loadCertificate(c.TLS.CertFile, c.TLS.KeyFile)
		if err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		metrics.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "floodgate_tls_certificate_expiry_timestamp_seconds",
			Help: "When the certificate the public listener serves expires, in Unix seconds; it follows reloads.",
		}, cert.expiry))
		s := newServer(h1server.RefuseConnect(srv), &c.Server, errLog)
		s.TLSConfig = &tls.Config{GetCertificate: cert.get, MinVersion: tls.VersionTLS12}
		public = s
	}
	if err := start("public", c.Listen, sf.change(data, "--listen", "listen", "FLOODGATE_LISTEN"), public); err != nil {
		return err
	}
	if c.InternalEnabled() {
		// Requests here are internal because of where they arrive, and
		// only that: bind it where only the frontend can reach it.
		if err := start("internal", c.Internal.Listen, sf.change(data, "--internal-listen", "internal.listen", "FLOODGATE_INTERNAL_LISTEN"), newGatewayServer(srv.Internal(), &c.Server, errLog)); err != nil {
			return err
		}
	}
	if c.DecideEnabled() {
		// Answers only the proxies in client_ip.trusted_proxies.
		if err := start("decide", c.Decide.Listen, sf.change(data, "", "decide.listen", "FLOODGATE_DECIDE_LISTEN"), newGatewayServer(srv.Decide(), &c.Server, errLog)); err != nil {
			return err
		}
	}
	// Reloads are taken before the admin listener starts: once /healthz
	// answers, a change to the file is seen.
	reload := func(reason string) {
		sf.reload(env, srv, metrics, logger, reason)
		if cert != nil {
			// A renewed certificate at the same paths: no restart needed.
			cert.reload(logger, reason)
		}
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reload("SIGHUP")
			}
		}
	}()
	if !hooks.noWatch && sf.data == nil {
		settle, _ := config.ParseTimeout(c.Reload.Settle)
		if err := watchFile(ctx, sf.file, sha256.Sum256(data), settle, func() { reload("file changed") }, logger); err != nil {
			logger.Warn("cannot watch the configuration file; reload with SIGHUP", "error", err.Error())
		}
	}

	// The admin listener last: once /healthz answers, every listener is
	// accepting connections.
	if c.Admin.Listen != config.ListenOff {
		// A store that can fail (Redis) must have decided once for the
		// replica to be ready: a wrong address or password in a deploy
		// stops there, and so does a Redis that answers PING but refuses
		// floodgate's decisions (an ACL user denied its keys, the address
		// of a read-only replica). After that, its outages are every
		// replica's, and the failure policy's to answer
		// (admin.Options.Store).
		pinger, canFail := any(store).(interface{ Ping(context.Context) error })
		var answered atomic.Bool
		var refusal atomic.Pointer[string] // the last refusal logged
		decides := func(ctx context.Context) bool {
			if st, ok := store.(interface{ Stats() redisstore.Stats }); ok {
				if st.Stats().Decided > 0 { // by Redis, since start
					answered.Store(true)
					return true
				}
			}
			_, err := store.Take(ctx, readinessKey, 1, readinessLimit)
			if err == nil {
				answered.Store(true)
				return true
			}
			// An unreachable store says so itself; a refusal is said once
			// for each new reason.
			if msg := config.MaskURLCredentials(err.Error()); !errors.Is(err, redisstore.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
				if old := refusal.Swap(&msg); old == nil || *old != msg {
					logger.Warn("the store refuses floodgate's decisions; not ready until it makes one", "error", msg)
				}
			}
			return false
		}
		opts := admin.Options{
			Gatherer: metrics.Registry,
			Server:   srv,
			Logger:   logger,
			Ready: func(ctx context.Context) error {
				if draining.Load() {
					return errors.New("shutting down")
				}
				if canFail && !answered.Load() && !decides(ctx) {
					// Not the error: it names the store's nodes, and
					// /readyz is open. The dashboard and the log say.
					return errors.New("the store has not answered since start (the log and the dashboard say why)")
				}
				return nil
			},
		}
		if canFail {
			opts.Store = func(ctx context.Context) error {
				if err := pinger.Ping(ctx); err != nil {
					policy := srv.Current().Config().Config.Store.FailurePolicy
					return fmt.Errorf("%w (store.failure_policy %s)", err, policy)
				}
				return nil
			}
		}
		h := admin.Handler(opts)
		if err := start("admin", c.Admin.Listen, sf.change(data, "--admin-listen", "admin.listen", "FLOODGATE_ADMIN_LISTEN"), newServer(h, &c.Server, errLog)); err != nil {
			return err
		}
	}
	if c.Store.URL == config.StoreMemory {
		logger.Warn("counters are in this process's memory: each gateway replica enforces every limit on its own, so N replicas admit up to N times each limit; use a Redis store (store.url, --store) to share them",
			"store", c.Store.URL, "max_keys", c.Store.MaxKeys)
	} else {
		logger.Info("counters are in Redis, shared by every gateway replica using it", "store", config.Redacted(*c).Store.URL,
			"timeout", gateway.StoreTimeout(&c.Store).String(), "failure_policy", c.Store.FailurePolicy)
	}
	logger.Info("floodgate started", "version", version.String(), "config", f.Name, "env", f.Env,
		"mode", c.Mode, "hash", srv.Hash())
	if hooks.started != nil {
		hooks.started(srv)
	}

	<-ctx.Done()
	cause := context.Cause(ctx)
	logger.Info("shutting down: no new connections; requests in flight may finish", "reason", cause.Error(), "grace", grace.String())
	if cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

// change says how to set a listener's address: the flag and, for a file
// of one's own, the configuration key, and the environment variable when
// the file takes the address from it (as the examples do). The demo's
// built-in file takes only the flag.
func (sf serveFlags) change(raw []byte, flag, key, envVar string) string {
	if sf.data != nil {
		return flag
	}
	var ways []string
	if flag != "" {
		ways = append(ways, flag)
	}
	if bytes.Contains(raw, []byte("${"+envVar)) {
		ways = append(ways, envVar)
	}
	ways = append(ways, key+" in "+sf.file)
	if len(ways) == 1 {
		return ways[0]
	}
	return strings.Join(ways[:len(ways)-1], ", ") + " or " + ways[len(ways)-1]
}

// load reads, parses, overrides with the flags, defaults and validates the
// configuration. Problems are returned, other failures (the file cannot be
// read) as the error.
func (sf serveFlags) load(env environ) (*config.File, []byte, config.Problems, error) {
	data := sf.data
	if data == nil {
		var err error
		if data, err = config.ReadFile(sf.file); err != nil {
			return nil, nil, nil, err
		}
	}
	f, err := config.Parse(sf.file, data, sf.env, env.lookup)
	if err := envError(f, sf.envFlag); err != nil {
		return nil, nil, nil, err
	}
	var problems config.Problems
	if err != nil && (!errors.As(err, &problems) || f == nil) {
		return nil, nil, nil, err
	}
	if sf.listen != "" {
		f.Config.Listen = sf.listen
	}
	if sf.adminListen != "" {
		f.Config.Admin.Listen = sf.adminListen
	}
	if sf.store != "" {
		f.Config.Store.URL = sf.store
	}
	if sf.internalListen != "" {
		f.Config.Internal.Listen = sf.internalListen
	}
	if sf.edit != nil {
		sf.edit(&f.Config)
	}
	f.Config.ApplyDefaults()
	return f, data, problems, nil
}

// reload loads the file again and swaps the gateway, or logs why not and
// keeps the running configuration.
func (sf serveFlags) reload(env environ, srv *gateway.Server, m *telemetry.Metrics, logger *slog.Logger, reason string) {
	f, data, problems, err := sf.load(env)
	if err == nil && len(problems) > 0 {
		_, more := compileCheck(f) // every problem in one record
		problems = append(problems, more...)
	}
	if err == nil && len(problems) == 0 {
		var ignored []string
		old := srv.Current().Config()
		ignored, problems = srv.Reload(f, data)
		if len(problems) == 0 {
			rc := diffRules(&old.Config, &f.Config)
			attrs := []any{"reason", reason, "hash", srv.Hash(),
				"rules_added", rc.added, "rules_removed", rc.removed, "rules_changed", rc.changed}
			if len(rc.removed) > 0 {
				// A half-written or truncated file looks like this too.
				logger.Warn("configuration reloaded without rules it had", attrs...)
			} else {
				logger.Info("configuration reloaded", attrs...)
			}
			if len(ignored) > 0 {
				logger.Warn("some changed settings apply only after a restart", "settings", ignored)
			}
			return
		}
	} else {
		m.Reloaded(false, "")
	}
	msg := ""
	var usage usageError
	switch {
	case errors.As(err, &usage):
		// --env names an environment the file no longer defines: the
		// flag is as serve started, the file is what changed, and it is
		// named as in every other problem of a reload.
		msg = sf.file + ": " + err.Error()
	case err != nil:
		msg = err.Error()
	default:
		msg = dedupe(sf.fileSideOfFlags(f, problems)).Error()
	}
	srv.Rejected(time.Now(), reason, msg)
	logger.Error("configuration rejected: the previous configuration keeps running",
		"reason", reason, "hash", srv.Hash(), "problems", msg)
}

// httpServer serves one listener: net/http's server or h1server's.
type httpServer interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
}

// gatewayListeners are the names of the listeners that serve the
// gateway's requests, shut down first and together.
var gatewayListeners = map[string]bool{"public": true, "internal": true, "decide": true}

// namedServer is a server started by serve, with its listener's name.
type namedServer struct {
	name string
	httpServer
}

// newGatewayServer returns the server of the public and internal
// listeners (plain text): h1server's unless server.engine says net/http,
// with the same timeouts and limits as newServer.
func newGatewayServer(h http.Handler, sc *config.Server, errLog *log.Logger) httpServer {
	s := newServer(h, sc, errLog)
	if sc.Engine == config.EngineNetHTTP {
		// Held to the request policy of floodgate's own server.
		return h1server.NewNetHTTPServer(s)
	}
	return &h1server.Server{
		Handler:           s.Handler,
		ReadHeaderTimeout: s.ReadHeaderTimeout,
		IdleTimeout:       s.IdleTimeout,
		MaxHeaderBytes:    s.MaxHeaderBytes,
		ErrorLog:          s.ErrorLog,
	}
}

// newServer returns an http.Server with timeouts that a slow client
// cannot exploit (slowloris: ReadHeaderTimeout) but that let long uploads
// and downloads finish (no overall read or write timeout).
func newServer(h http.Handler, sc *config.Server, errLog *log.Logger) *http.Server {
	header, _ := config.ParseTimeout(sc.ReadHeaderTimeout)
	idle, _ := config.ParseTimeout(sc.IdleTimeout)
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: header,
		IdleTimeout:       idle,
		MaxHeaderBytes:    cmp.Or(sc.MaxHeaderBytes, config.DefaultMaxHeaderBytes),
		ErrorLog:          errLog,
	}
}

// maxConnections is server.max_connections, or when it is 0 what the
// open files limit allows: two descriptors a request (the client's and an
// upstream's), less 256 for everything else (listeners, Redis, files).
func maxConnections(n int) int {
	if n > 0 {
		return n
	}
	if lim := openFilesLimit(); lim > 512 {
		return int((lim - 256) / 2)
	}
	return 0 // unknown: no cap
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// connected reports whether a Redis store has connected since it started
// (it reconnects by itself after that); false for any other store.
// readinessKey is the counter of the decision that makes a replica ready:
// floodgate's own, since every rule's counter keys begin with the rule's
// name, and readinessLimit admits every decision on it.
const readinessKey = "\x1freadiness"

var readinessLimit = ratelimit.Limit{Count: math.MaxInt32, Window: time.Second}
