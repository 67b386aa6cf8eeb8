package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/h1server"
	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/internal/telemetry"
)

// Server is the public listener's handler across configurations: it holds
// the live Gateway and swaps it atomically on reload. A request runs to
// its end on the Gateway it started on, so in-flight requests finish on
// the old rules. The store, the metrics, the key hasher and the run-time
// mode switch outlive reloads, so counters survive for every rule whose
// name, key and limit are unchanged (counter keys are made of those).
type Server struct {
	cur     atomic.Pointer[Gateway]
	opts    Options
	logOnly atomic.Bool
	log     *slog.Logger

	mu       sync.Mutex // serialises Reload and SetMode
	fileMode string     // the mode the last loaded file said
	hash     string
	// started holds the settings only a restart applies, as the process
	// started with them: a reload reports every one its file changes,
	// however many reloads ago the change was made.
	started config.Config
	// rejected is the last load's rejection, nil once a load succeeds.
	rejected *Rejection
	// hadTokens: CheckTokens has found a valid token for every upstream
	// that needs one since start.
	hadTokens atomic.Bool
}

// A Rejection is a configuration load that was refused: the previous
// configuration kept running.
type Rejection struct {
	Time     time.Time `json:"time"`
	Reason   string    `json:"reason"`   // what asked for the load: SIGHUP, file changed
	Problems string    `json:"problems"` // every problem, one a line, as the log has them
}

var (
	_ http.Handler             = (*Server)(nil)
	_ h1server.RefusalObserver = (*Server)(nil)
	_ h1server.RefusalObserver = internalHandler{}
	_ h1server.RefusalObserver = decideHandler{}
	_ h1server.RefusalObserver = (*Gateway)(nil)
)

// NewServer builds the first Gateway from f (defaults applied) and returns
// the Server holding it, or every problem of f.
func NewServer(f *config.File, data []byte, o Options) (*Server, config.Problems) {
	s := &Server{opts: o, log: o.Logger}
	if s.opts.KeyHasher == nil {
		s.opts.KeyHasher = telemetry.NewKeyHasher("")
	}
	s.opts.LogOnly = &s.logOnly
	if s.opts.Inflight == nil {
		s.opts.Inflight = new(rules.Inflight)
	}
	if s.opts.Shared == nil {
		s.opts.Shared = new(Shared)
	}
	if s.opts.Failures == nil {
		s.opts.Failures = telemetry.NewFailures(o.Logger, o.Metrics, telemetry.LogLimiterOptions{})
	}
	s.logOnly.Store(f.Config.Mode == config.ModeLogOnly)
	g, problems := New(f, s.opts)
	if len(problems) > 0 {
		return nil, problems
	}
	s.cur.Store(g)
	s.fileMode = f.Config.Mode
	s.started = restartSettings(&f.Config)
	s.setHash(data)
	o.Metrics.SetMode(s.logOnly.Load())
	o.Metrics.Reloaded(true, s.hash)
	return s, nil
}

// ServeHTTP hands the request to the live Gateway.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.cur.Load().ServeHTTP(w, r)
}

// Refused counts an answer the server gave a request of the public
// listener itself (h1server.RefusalObserver), on the live Gateway.
func (s *Server) Refused(code int) { s.cur.Load().Refused(code) }

// Internal returns the internal listener's handler: the live Gateway's
// ServeInternal, and its Refused.
func (s *Server) Internal() http.Handler { return internalHandler{s} }

type internalHandler struct{ s *Server }

func (h internalHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.s.cur.Load().ServeInternal(w, r)
}

// Refused counts a refusal of the internal listener's server: the
// listener label is the public listener's, as for its requests.
func (h internalHandler) Refused(code int) { h.s.cur.Load().Refused(code) }

// CheckTokens checks floodgate's own token for every upstream of the
// live configuration that has client credentials: err is nil when each
// holds a valid token or gets one within ctx (a fetch starts where there
// is none, unless a failed fetch's backoff forbids it). Otherwise err
// names each upstream without one and says why, with no secret, token or
// address in it, and ready says whether the gateway may take traffic all
// the same: not until a check has found every token valid once since
// start, so that a replica deployed with credentials the token endpoint
// refuses stays out of the load balancer; after that, yes, since every
// replica shares the token endpoint and the credentials, and failing
// them all at once would take down every route, not only the upstream's
// (which answers 503 meanwhile).
func (s *Server) CheckTokens(ctx context.Context) (ready bool, err error) {
	if err := s.cur.Load().checkTokens(ctx); err != nil {
		return s.hadTokens.Load(), err
	}
	s.hadTokens.Store(true)
	return true, nil
}

// Current returns the live Gateway.
func (s *Server) Current() *Gateway { return s.cur.Load() }

// Hash returns the live configuration's hash: "sha256:" and the first 16
// hex digits of the SHA-256 of the file's bytes.
func (s *Server) Hash() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hash
}

func (s *Server) setHash(data []byte) {
	sum := sha256.Sum256(data)
	s.hash = "sha256:" + hex.EncodeToString(sum[:8])
}

// Reload builds a Gateway from f (defaults applied; data is the file's
// bytes, for the hash) and swaps it in, or keeps the live one and returns
// every problem of f. It never interrupts a request. The run-time mode
// (SetMode) is kept unless the file's own mode changed since the last
// load, which then wins. Settings that only a restart applies (listeners,
// TLS, store, server) and that f sets otherwise than the process started
// with are reported in the returned list of ignored changes.
func (s *Server) Reload(f *config.File, data []byte) (ignored []string, problems config.Problems) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Shared.building()
	g, problems := New(f, s.opts)
	if len(problems) > 0 {
		s.opts.Metrics.Reloaded(false, s.hash)
		return nil, problems
	}
	old := s.cur.Load()
	ignored = restartOnly(&s.started, &f.Config)
	if f.Config.Mode != s.fileMode {
		s.fileMode = f.Config.Mode
		s.logOnly.Store(f.Config.Mode == config.ModeLogOnly)
		s.opts.Metrics.SetMode(s.logOnly.Load())
	}
	s.cur.Store(g)
	s.setHash(data)
	s.rejected = nil
	s.opts.Metrics.Reloaded(true, s.hash)
	s.opts.Metrics.KeepPlanClients(planClients(&f.Config))
	s.opts.Shared.keepUsed()
	old.closeIdle()
	return ignored, nil
}

// Rejected records that the load asked for by reason was refused for
// problems; the configuration in force is unchanged.
func (s *Server) Rejected(now time.Time, reason, problems string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejected = &Rejection{Time: now, Reason: reason, Problems: problems}
}

// LastRejection returns the last load's rejection, or nil when the last
// load was applied.
func (s *Server) LastRejection() *Rejection {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rejected
}

// LogOnly reports the run-time mode.
func (s *Server) LogOnly() bool { return s.logOnly.Load() }

// SetMode switches between enforcing (false) and log-only (true) without a
// restart; it lasts until a reload whose file changes its mode.
func (s *Server) SetMode(logOnly bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logOnly.Store(logOnly)
	s.opts.Metrics.SetMode(logOnly)
}

// restartSettings copies the settings of c that restartOnly compares.
func restartSettings(c *config.Config) config.Config {
	var r config.Config
	r.Listen, r.Admin.Listen, r.TLS, r.Store = c.Listen, c.Admin.Listen, c.TLS, c.Store
	r.Internal.Listen, r.Server = c.Internal.Listen, c.Server
	r.Decide.Listen = c.Decide.Listen
	r.Log.Level, r.Log.Access = c.Log.Level, c.Log.Access
	r.Reload = c.Reload
	return r
}

// restartOnly lists the settings that differ between a and b but that a
// reload cannot apply: the listeners, TLS, the store (but its failure
// policy), the HTTP servers' settings (read when the listeners start) and
// the log's level and access log (read when the process starts).
func restartOnly(a, b *config.Config) []string {
	var out []string
	if a.Listen != b.Listen {
		out = append(out, "listen")
	}
	if a.Admin.Listen != b.Admin.Listen {
		out = append(out, "admin.listen")
	}
	if a.TLS != b.TLS {
		out = append(out, "tls")
	}
	// The store's failure policy is the rules', compiled on every reload.
	as, bs := a.Store, b.Store
	as.FailurePolicy, bs.FailurePolicy = "", ""
	if as != bs {
		out = append(out, "store")
	}
	if a.Internal.Listen != b.Internal.Listen {
		out = append(out, "internal.listen")
	}
	if a.Decide.Listen != b.Decide.Listen {
		out = append(out, "decide.listen")
	}
	if a.Server.MaxHeaderBytes != b.Server.MaxHeaderBytes {
		out = append(out, "server.max_header_bytes")
	}
	for _, f := range []struct {
		name, a, b string
		duration   bool
	}{
		{"log.level", a.Log.Level, b.Log.Level, false},
		{"log.access", a.Log.Access, b.Log.Access, false},
		{"server.read_header_timeout", a.Server.ReadHeaderTimeout, b.Server.ReadHeaderTimeout, true},
		{"server.idle_timeout", a.Server.IdleTimeout, b.Server.IdleTimeout, true},
		{"server.shutdown_grace", a.Server.ShutdownGrace, b.Server.ShutdownGrace, true},
		{"server.engine", a.Server.Engine, b.Server.Engine, false},
		{"server.write_idle_timeout", a.Server.WriteIdleTimeout, b.Server.WriteIdleTimeout, true},
		{"reload.settle", a.Reload.Settle, b.Reload.Settle, true},
		{"server.max_connections", strconv.Itoa(a.Server.MaxConnections), strconv.Itoa(b.Server.MaxConnections), false},
	} {
		if f.a != f.b && !(f.duration && sameDuration(f.a, f.b)) {
			out = append(out, f.name)
		}
	}
	return out
}

// sameDuration reports whether a and b are the same duration written
// differently ("30s", "30000ms").
func sameDuration(a, b string) bool {
	da, errA := config.ParseTimeout(a)
	db, errB := config.ParseTimeout(b)
	return errA == nil && errB == nil && da == db
}

// planClients maps each configured API client to its plan.
func planClients(c *config.Config) map[string]string {
	m := make(map[string]string, len(c.APIClients.Clients))
	for _, cl := range c.APIClients.Clients {
		m[cl.ID] = cl.Plan
	}
	return m
}
