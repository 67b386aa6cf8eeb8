package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/forward"
	"github.com/floodgate/floodgate/internal/rules"
	"github.com/floodgate/floodgate/internal/session"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/internal/upstreamauth"
)

// Shared is the state that outlives configurations: the token cache of
// each upstream credential and the sessions-per-address tracker. A Server
// makes one; a Gateway made alone has its own.
type Shared struct {
	mu       sync.Mutex
	tokens   map[string]*upstreamauth.Source
	used     map[string]bool // the token sources the configuration being built asked for
	tracker  *session.IPTracker
	trackerO session.IPTrackerOptions
}

// tokenSource returns the token source of the upstream named for one set
// of client credentials, the same one across reloads as long as neither
// the name nor the credentials change, so that a reload does not fetch a
// new token. The name is part of the key because the source reports to
// o.OnFetch and o.Logger, which name the upstream: a renamed upstream
// gets a source of its own, whose fetches its new name counts.
func (s *Shared) tokenSource(upstream string, o upstreamauth.Options) (*upstreamauth.Source, error) {
	sum := sha256.Sum256([]byte(upstream + "\x00" + o.TokenURL + "\x00" + o.ClientID + "\x00" + o.ClientSecret))
	k := string(sum[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used == nil {
		s.used = map[string]bool{}
	}
	s.used[k] = true
	if src, ok := s.tokens[k]; ok {
		return src, nil
	}
	src, err := upstreamauth.New(o)
	if err != nil {
		return nil, err
	}
	if s.tokens == nil {
		s.tokens = map[string]*upstreamauth.Source{}
	}
	s.tokens[k] = src
	return src, nil
}

// building starts a configuration's build: what it asks for is noted,
// for keepUsed once it is in force.
func (s *Shared) building() {
	s.mu.Lock()
	s.used = nil
	s.mu.Unlock()
}

// keepUsed drops the token sources the configuration now in force did
// not ask for (credentials a reload changed or removed): without it, one
// would be kept for every set of credentials ever configured.
func (s *Shared) keepUsed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.tokens {
		if !s.used[k] {
			delete(s.tokens, k)
		}
	}
}

// ipTracker returns the sessions-per-address tracker for o, the same one
// across reloads while o is unchanged.
func (s *Shared) ipTracker(o session.IPTrackerOptions) (*session.IPTracker, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tracker != nil && s.trackerO.Window == o.Window && s.trackerO.MaxKeys == o.MaxKeys && s.trackerO.MaxNewPerWindow == o.MaxNewPerWindow {
		return s.tracker, nil
	}
	t, err := session.NewIPTracker(o)
	if err != nil {
		return nil, err
	}
	s.tracker, s.trackerO = t, o
	return t, nil
}

// sessions is a configuration's visitor sessions.
type sessions struct {
	m         *session.Manager
	issueWhen rules.Condition
	tracker   *session.IPTracker
	metrics   *telemetry.SessionMetrics
}

// newSessions builds the sessions of c, or nil when they are off.
func newSessions(f *config.File, o Options, shared *Shared) (*sessions, config.Problems) {
	c := &f.Config
	if !c.SessionsEnabled() {
		return nil, nil
	}
	var problems config.Problems
	s := &sessions{metrics: o.Metrics.Sessions()}
	maxAge, _ := config.ParseTimeout(c.Sessions.MaxAge)
	var secrets [][]byte
	for _, sec := range config.SplitSecrets(c.Sessions.Secret) {
		secrets = append(secrets, []byte(sec))
	}
	var err error
	if s.m, err = session.New(session.Options{Name: c.Sessions.Cookie, Secrets: secrets, MaxAge: maxAge, Now: o.Now}); err != nil {
		problems = append(problems, f.Problem("sessions", err.Error()))
	}
	if s.issueWhen, err = rules.CompileCondition(c.Sessions.IssueWhen); err != nil {
		problems = append(problems, f.Problem("sessions.issue_when", err.Error()))
	}
	window, _ := config.ParseTimeout(c.Sessions.PerIP.Window)
	if s.tracker, err = shared.ipTracker(session.IPTrackerOptions{
		Window: window, MaxKeys: c.Sessions.PerIP.MaxAddresses, MaxNewPerWindow: c.Sessions.PerIP.MaxNew, Now: o.Now,
	}); err != nil {
		problems = append(problems, f.Problem("sessions.per_ip", err.Error()))
	}
	if len(problems) > 0 {
		return nil, problems
	}
	s.metrics.SetTracker(s.tracker)
	return s, nil
}

// verify fills req's session fields from the request's cookie, and
// counts the cookie in the metrics when count is set.
func (s *sessions) verify(r *http.Request, req *rules.Request, count bool) {
	id, present, valid := s.m.Verify(r)
	req.SessionPresent, req.SessionValid = present, valid
	if valid {
		req.Session = id
	}
	switch {
	case !count:
	case valid:
		s.metrics.Valid.Inc()
	case present:
		s.metrics.Invalid.Inc()
	}
}

// maybeIssue gives a request without a valid session a new one when
// sessions.issue_when holds and its address is within
// sessions.per_ip.max_new: it returns the Set-Cookie value, or "". buf is
// scratch space for the client's grouped address.
func (s *sessions) maybeIssue(req *rules.Request, buf *[]byte) string {
	if req.SessionValid || !s.issueWhen.Holds(req) {
		return ""
	}
	*buf = req.ClientPrefix.AppendTo((*buf)[:0])
	if !s.tracker.Allow(string(*buf)) {
		s.metrics.Refused.Inc()
		return ""
	}
	_, c, err := s.m.New()
	if err != nil {
		return ""
	}
	s.metrics.Issued.Inc()
	return c.String()
}

// apiClient is a known API client.
type apiClient struct{ id, plan string }

// apiClients identifies API clients by the SHA-256 of their bearer token.
type apiClients struct {
	byToken map[[sha256.Size]byte]apiClient
	byID    map[string]apiClient
}

func newAPIClients(c *config.Config) apiClients {
	ac := apiClients{byID: map[string]apiClient{}}
	for _, cl := range c.APIClients.Clients {
		a := apiClient{id: cl.ID, plan: cl.Plan}
		ac.byID[cl.ID] = a
		if b, err := hex.DecodeString(cl.TokenSHA256); err == nil && len(b) == sha256.Size {
			if ac.byToken == nil {
				ac.byToken = map[[sha256.Size]byte]apiClient{}
			}
			ac.byToken[[sha256.Size]byte(b)] = a
		}
	}
	return ac
}

// fromBearer returns the client whose token the request carries in
// "Authorization: Bearer TOKEN", if any: an unknown token is no client.
func (ac *apiClients) fromBearer(h http.Header) (apiClient, bool) {
	if len(ac.byToken) == 0 {
		return apiClient{}, false
	}
	v := h["Authorization"]
	if len(v) != 1 {
		return apiClient{}, false
	}
	scheme, tok, ok := strings.Cut(v[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return apiClient{}, false
	}
	tok = strings.TrimSpace(tok)
	if tok == "" || len(tok) > 4096 {
		return apiClient{}, false
	}
	c, ok := ac.byToken[sha256.Sum256([]byte(tok))]
	return c, ok
}

// authCredential returns floodgate's own credential to the upstream name
// (none, when auth.optional leaves it empty), or nil when it has no auth,
// and the token source of client credentials, or nil.
func authCredential(f *config.File, name string, o Options, shared *Shared) (forward.Credential, *upstreamauth.Source, error) {
	up := f.Config.Upstreams[name]
	a := up.Auth
	switch a.Type {
	case config.AuthClientCredentials:
		if strings.TrimSpace(a.ClientID) == "" {
			o.Logger.Warn("forwarding without credentials: auth.optional and no client credentials set", "upstream", name)
			return upstreamauth.None(), nil, nil
		}
		tokenURL, err := config.ResolveTokenURL(up.URL, a.TokenURL)
		if err != nil {
			return nil, nil, err
		}
		src, err := shared.tokenSource(name, upstreamauth.Options{
			TokenURL: tokenURL, ClientID: a.ClientID, ClientSecret: a.ClientSecret,
			HTTPClient: tokenClient(), Logger: o.Logger.With("upstream", name), Now: o.Now,
			OnFetch: o.Metrics.TokenFetched(name),
		})
		if err != nil {
			return nil, nil, err
		}
		return upstreamauth.Bearer(src), src, nil
	case config.AuthHeader:
		if strings.TrimSpace(a.HeaderValue) == "" {
			o.Logger.Warn("forwarding without credentials: auth.optional and no header value set", "upstream", name)
			return upstreamauth.None(), nil, nil
		}
		// The upstream's 401 to it is answered 503 with the route's
		// Retry-After, counted and logged: the credential needs replacing,
		// and the client can do nothing about it.
		return upstreamauth.Header(a.HeaderName, a.HeaderValue), nil, nil
	}
	return nil, nil, nil
}

// upstreamToken is the token source of an upstream with floodgate's own
// client credentials.
type upstreamToken struct {
	upstream string
	src      *upstreamauth.Source
}

// checkTokens asks each upstream's token source whether it has a valid
// token (upstreamauth.Source.Ready: a fetch where there is none, the
// backoff permitting), all at once, within ctx. It returns nil, or what
// each upstream without one lacks, in upstream order.
func (g *Gateway) checkTokens(ctx context.Context) error {
	errs := make([]error, len(g.tokens))
	var wg sync.WaitGroup
	for i, ut := range g.tokens {
		wg.Go(func() {
			if err := ut.src.Ready(ctx); err != nil {
				errs[i] = fmt.Errorf("upstream %s: %w", ut.upstream, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// tokenClient is the HTTP client of token fetches: never an environment
// proxy, bounded dialing, and no redirect followed, since a 307 or 308
// would post the client secret again, to wherever it points (a redirect
// is a failed fetch that names its status).
func tokenClient() *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{
		Transport: &http.Transport{
			Proxy: nil, DialContext: d.DialContext, TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConnsPerHost: 2, IdleConnTimeout: 90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
