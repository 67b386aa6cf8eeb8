// Package upstreamauth gives floodgate its own credentials to the API
// upstream: an OAuth2 client-credentials token from the API's
// token endpoint, cached, refreshed in the background before it expires,
// one fetch at a time, and retried with bounded exponential
// backoff after a failure. A Credential (Bearer) has the forwarding add
// the token to outbound requests and remove the browser's credentials
// from them and cookies and authentication challenges from the answers;
// one of a fixed header field (Header) or of none (None) does the same
// without a Source.
//
// # Token lifetime
//
// A token is used until EarlyExpiry (60 s by default) before the end of the
// lifetime the endpoint gave in expires_in; the first request after that
// starts a fetch of a new one in the background and, as every request
// until the fetch ends, is sent with the current token. If that fetch
// fails, the current token is still used until it really expires. A
// response without expires_in gets DefaultLifetime.
//
// expires_in is the token's lifetime in seconds (RFC 6749, section 5.1):
// 0 or less does not mean "absent" but "already over". A token that lives
// for no time cannot serve, and fetching one per request would storm the
// endpoint, so such a token is used for 30 s (minLifetime) and refreshed
// in the background after 15 s: at most one fetch per 15 s, and a warning
// in the log. If the upstream does refuse it, that refusal is handled as
// any other (see Credential).
//
// Lifetimes are measured on the Source's own clock (Options.Now) from the
// moment the answer arrived, not from the token's Expiry field.
//
// # Waiting for a token
//
// Only a request that finds no valid token at all (the first, or after
// the last one expired or was refused) waits for a fetch: at most
// MaxWait (5 s by default) and never past its own context. The fetch goes
// on without it, bounded by FetchTimeout, and serves the requests that
// come after.
//
// # Failures
//
// After a failed fetch, no request reaches the token endpoint for
// MinBackoff, then 2×, 4× … up to MaxBackoff; requests that need a token in
// the meantime fail at once with an error matching ErrBackoff, whose
// RetryAfter says when the next fetch will be tried. A success resets the
// backoff. Ready says whether a valid token can be had, for a readiness
// check. Errors and log records never contain the client secret, the
// token, or the endpoint's response body.
//
// A Source is safe for concurrent use.
package upstreamauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// TokenPath is the path of the Openverse API's token endpoint.
const TokenPath = "/v1/auth_tokens/token/"

// Defaults of Options.
const (
	DefaultEarlyExpiry  = 60 * time.Second
	DefaultMinBackoff   = time.Second
	DefaultMaxBackoff   = 5 * time.Minute
	DefaultFetchTimeout = 10 * time.Second
	DefaultMaxWait      = 5 * time.Second
	// DefaultLifetime is assumed for a token answered without expires_in.
	DefaultLifetime = 5 * time.Minute
	// minInvalidateAge is how old a token must be before Invalidate
	// drops it, so that a client the API rejects outright cannot make
	// every request fetch a new token.
	minInvalidateAge = 30 * time.Second
	// minLifetime is the lifetime of a token answered with expires_in 0
	// or less, for the same reason.
	minLifetime = minInvalidateAge
)

// ErrBackoff matches (with errors.Is) the error Token returns without
// contacting the token endpoint because an earlier fetch failed and the
// backoff has not elapsed.
var ErrBackoff = errors.New("upstreamauth: token endpoint in backoff")

// RetryAfter returns, for an error of Token or of a Credential that
// says (ok), how long until a request may find a token: the rest of the
// backoff after a failed fetch, or 0 when a fetch is under way. The
// gateway's 503 says it in Retry-After.
func RetryAfter(err error) (d time.Duration, ok bool) {
	if re, ok := errors.AsType[*retryError](err); ok {
		return re.after, true
	}
	return 0, false
}

// retryError is an error that says when to try again (RetryAfter).
type retryError struct {
	err   error
	after time.Duration
}

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// ErrNoToken matches (with errors.Is) every error of a Credential that
// comes from not having a token the upstream takes: the request was not
// sent (Authorize), or the upstream refused its token or fixed field
// (Refused, ErrRejected); the gateway answers 503.
var ErrNoToken = errors.New("upstreamauth: no token for the upstream")

// Options configure a Source. TokenURL, ClientID and ClientSecret are
// required.
type Options struct {
	// TokenURL is the token endpoint, e.g. TokenURL(apiUpstream).
	TokenURL string
	// ClientID and ClientSecret are the gateway's API application
	// credentials (API_CLIENT_ID, API_CLIENT_SECRET).
	ClientID, ClientSecret string
	// AuthStyle says how the credentials are sent. The zero value
	// (oauth2.AuthStyleAutoDetect) means oauth2.AuthStyleInParams:
	// client_id and client_secret in the form body, as the Openverse
	// API documents; oauth2.AuthStyleInHeader sends HTTP Basic auth.
	AuthStyle oauth2.AuthStyle
	// HTTPClient fetches tokens; default http.DefaultClient. Each fetch
	// is bounded by FetchTimeout regardless.
	HTTPClient *http.Client
	// EarlyExpiry is how long before its expiry a token is refreshed;
	// default DefaultEarlyExpiry (60 s).
	EarlyExpiry time.Duration
	// MinBackoff and MaxBackoff bound the wait after failed fetches;
	// defaults DefaultMinBackoff (1 s) and DefaultMaxBackoff (5 min).
	MinBackoff, MaxBackoff time.Duration
	// FetchTimeout bounds one fetch; default DefaultFetchTimeout (10 s).
	FetchTimeout time.Duration
	// MaxWait bounds how long a call of Token that finds no valid token
	// waits for a fetch (its context may end the wait sooner); default
	// DefaultMaxWait (5 s). The fetch goes on after it.
	MaxWait time.Duration
	// Now is the clock for lifetimes and backoff; default time.Now.
	Now func() time.Time
	// Logger receives fetch outcomes; default: discarded.
	Logger *slog.Logger
	// OnFetch, if set, is called after each fetch with whether it
	// succeeded (for a metric), once the Source holds the outcome.
	OnFetch func(ok bool)
}

// A Source fetches and caches the gateway's bearer token.
type Source struct {
	cfg     clientcredentials.Config
	secret  string
	client  *http.Client
	early   time.Duration
	minBack time.Duration
	maxBack time.Duration
	timeout time.Duration
	maxWait time.Duration
	now     func() time.Time
	log     *slog.Logger
	onFetch func(ok bool)

	// cur is the cached token, nil until the first success; read without
	// mu on the fast path, written under it.
	cur atomic.Pointer[token]

	mu sync.Mutex // guards what follows; held only briefly, never across a fetch
	// done is closed when the fetch under way ends; nil when none is.
	done  chan struct{}
	fails int
	retry time.Time // no fetch before this, after a failure
	// failure is the last fetch's error, nil after a success, and why
	// says what went wrong for Ready.
	failure error
	why     string
}

// token is a cached access token and its deadlines on the Source's clock.
type token struct {
	value string
	// bearer is the Authorization field's value: "Bearer " and value.
	bearer    string
	fetched   time.Time
	refreshAt time.Time
	expiresAt time.Time
	// rejected is set by Invalidate: the API refused the token, so a
	// caller waits for its replacement rather than send it again.
	rejected bool
}

// New returns a Source for o. It reports every problem with o at once and
// does not contact the token endpoint.
func New(o Options) (*Source, error) {
	var errs []error
	if o.TokenURL == "" {
		errs = append(errs, errors.New("upstreamauth: no token URL"))
	} else if u, err := url.Parse(o.TokenURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		errs = append(errs, fmt.Errorf("upstreamauth: token URL %q is not an http(s) URL without user info", o.TokenURL))
	}
	if o.ClientID == "" {
		errs = append(errs, errors.New("upstreamauth: no client id (API_CLIENT_ID)"))
	}
	if o.ClientSecret == "" {
		errs = append(errs, errors.New("upstreamauth: no client secret (API_CLIENT_SECRET)"))
	}
	if o.AuthStyle == oauth2.AuthStyleAutoDetect {
		o.AuthStyle = oauth2.AuthStyleInParams
	}
	def := func(d *time.Duration, v time.Duration, name string) {
		switch {
		case *d == 0:
			*d = v
		case *d < 0:
			errs = append(errs, fmt.Errorf("upstreamauth: %s %v is negative", name, *d))
		}
	}
	def(&o.EarlyExpiry, DefaultEarlyExpiry, "early expiry")
	def(&o.MinBackoff, DefaultMinBackoff, "min backoff")
	def(&o.MaxBackoff, DefaultMaxBackoff, "max backoff")
	def(&o.FetchTimeout, DefaultFetchTimeout, "fetch timeout")
	def(&o.MaxWait, DefaultMaxWait, "max wait")
	if o.MaxBackoff < o.MinBackoff {
		errs = append(errs, fmt.Errorf("upstreamauth: max backoff %v is below min backoff %v", o.MaxBackoff, o.MinBackoff))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Source{
		cfg: clientcredentials.Config{
			ClientID:     o.ClientID,
			ClientSecret: o.ClientSecret,
			TokenURL:     o.TokenURL,
			AuthStyle:    o.AuthStyle,
		},
		secret:  o.ClientSecret,
		client:  o.HTTPClient,
		early:   o.EarlyExpiry,
		minBack: o.MinBackoff,
		maxBack: o.MaxBackoff,
		timeout: o.FetchTimeout,
		maxWait: o.MaxWait,
		now:     o.Now,
		log:     o.Logger,
		onFetch: o.OnFetch,
	}, nil
}

// TokenURL returns the token endpoint of the API upstream at base, e.g.
// "https://api.openverse.org" → "https://api.openverse.org/v1/auth_tokens/token/".
func TokenURL(base string) (string, error) {
	u, err := url.JoinPath(base, TokenPath)
	if err != nil {
		return "", fmt.Errorf("upstreamauth: token URL from %q: %w", base, err)
	}
	return u, nil
}

// Token returns an access token: the cached one while it is valid (a
// fetch of its replacement starts in the background once it is due for
// refresh), else the one a fetch brings. A call that finds no valid token
// waits for the fetch at most MaxWait and until ctx ends; the fetch, once
// started, runs to its own FetchTimeout whoever waits for it, so that a
// cancelled browser request does not count as a failed fetch. An error
// matches ErrBackoff when no fetch was attempted because of an earlier
// failure.
func (s *Source) Token(ctx context.Context) (string, error) {
	t, err := s.token(ctx)
	if err != nil {
		return "", err
	}
	return t.value, nil
}

// token is Token, giving the cached token itself.
func (s *Source) token(ctx context.Context) (*token, error) {
	if t := s.cur.Load(); t != nil && !t.rejected && s.now().Before(t.refreshAt) {
		return t, nil
	}
	s.mu.Lock()
	now := s.now()
	t := s.cur.Load()
	if t.valid(now) {
		// Valid, and due for refresh unless a refresh has just ended:
		// it serves until its replacement has come.
		if !now.Before(t.refreshAt) {
			s.startLocked(now)
		}
		s.mu.Unlock()
		return t, nil
	}
	done := s.startLocked(now)
	if done == nil { // in backoff
		t, err := s.fallbackLocked(now, true)
		s.mu.Unlock()
		return t, err
	}
	s.mu.Unlock()

	wait := time.NewTimer(s.maxWait)
	defer wait.Stop()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("upstreamauth: wait for token: %w", ctx.Err())
	case <-wait.C:
		return nil, &retryError{err: fmt.Errorf("upstreamauth: no token yet: the token endpoint has not answered within %v", s.maxWait)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now = s.now()
	if t := s.cur.Load(); t.valid(now) {
		return t, nil
	}
	return s.fallbackLocked(now, false)
}

// valid reports whether t may be sent at now: not expired, and not
// refused by the upstream (Invalidate).
func (t *token) valid(now time.Time) bool {
	return t != nil && !t.rejected && now.Before(t.expiresAt)
}

// startLocked starts a fetch unless one is under way or a failure's
// backoff forbids it, and returns the channel closed when the fetch under
// way ends, or nil when there is none. s.mu is held.
func (s *Source) startLocked(now time.Time) chan struct{} {
	if s.done != nil {
		return s.done
	}
	if s.fails > 0 && now.Before(s.retry) {
		return nil
	}
	s.done = make(chan struct{})
	go s.run(s.done)
	return s.done
}

// fallbackLocked is what Token gives when there is no valid token: the
// cached one if the upstream refused it but it has not expired (fetches
// fail, and the refusal may have been the upstream's mistake), else an
// error: ErrBackoff when no fetch was tried (inBackoff), the last fetch's
// error otherwise. s.mu is held.
func (s *Source) fallbackLocked(now time.Time, inBackoff bool) (*token, error) {
	if t := s.cur.Load(); t != nil && now.Before(t.expiresAt) {
		return t, nil
	}
	after := max(s.retry.Sub(now), 0)
	if inBackoff || s.failure == nil {
		return nil, &retryError{after: after, err: fmt.Errorf("%w after %d failed fetches; next attempt in %v", ErrBackoff, s.fails, after.Round(time.Millisecond))}
	}
	return nil, &retryError{after: after, err: s.failure}
}

// run fetches a token, records the outcome and closes done.
func (s *Source) run(done chan struct{}) {
	t, why, err := s.fetchToken()
	now := s.now()
	s.mu.Lock()
	fails, delay := 0, time.Duration(0)
	if err != nil {
		s.fails++
		delay = s.maxBack
		if s.fails < 32 {
			delay = min(s.minBack<<(s.fails-1), s.maxBack)
		}
		s.retry, s.failure, s.why = now.Add(delay), err, why
		fails = s.fails
	} else {
		s.fails, s.failure, s.why = 0, nil, ""
		s.cur.Store(t)
	}
	s.mu.Unlock()
	// The outcome is logged and counted before the fetch is over: what
	// its waiters see next (a log line, the metric) is up to date.
	ctx := context.Background()
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "upstream token fetch failed",
			slog.Int("failures", fails), slog.String("retry_in", delay.String()), slog.String("error", err.Error()))
	} else {
		s.log.LogAttrs(ctx, slog.LevelInfo, "upstream token fetched",
			slog.String("lifetime", t.expiresAt.Sub(t.fetched).String()), slog.String("refresh_in", t.refreshAt.Sub(t.fetched).String()))
	}
	if s.onFetch != nil {
		s.onFetch(err == nil)
	}
	s.mu.Lock()
	s.done = nil
	s.mu.Unlock()
	close(done)
}

// fetchToken asks the token endpoint for a new token. Its errors are
// redacted, and why says what went wrong in words fit for an open
// endpoint (Ready): no secret, token, address or response body.
func (s *Source) fetchToken() (_ *token, why string, _ error) {
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, s.client)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ot, err := s.cfg.Token(ctx)
	if err != nil {
		return nil, s.reason(err), s.redact(err)
	}
	if typ := ot.Type(); !strings.EqualFold(typ, "Bearer") {
		return nil, "the token endpoint gave a token type other than Bearer", fmt.Errorf("upstreamauth: fetch token: token type %q, want Bearer", s.scrub(typ))
	}
	// What cannot go into an Authorization field would fail every
	// request for the token's lifetime: a failed fetch instead.
	if strings.ContainsFunc(ot.AccessToken, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return nil, "the token endpoint gave a token that cannot be sent", errors.New("upstreamauth: fetch token: access token contains white space or a control character")
	}
	now := s.now()
	life, over := lifetime(ot)
	if over {
		// A token that lives for no time would be fetched again for
		// every request: it serves for minLifetime instead. If the
		// upstream does refuse it, the refusal is answered as any other
		// (Credential), and fetches stay one per minLifetime/2.
		s.log.LogAttrs(ctx, slog.LevelWarn, "the token endpoint gave a token with expires_in 0 or less; using it for a short lifetime",
			slog.String("lifetime", life.String()))
	}
	return &token{
		value:     ot.AccessToken,
		bearer:    "Bearer " + ot.AccessToken,
		fetched:   now,
		refreshAt: now.Add(max(life-s.early, life/2)),
		expiresAt: now.Add(life),
	}, "", nil
}

// lifetime returns how long ot is valid, and over when the endpoint said
// its lifetime was 0 or less: then minLifetime. The clientcredentials
// package does not copy expires_in into Token.ExpiresIn, so it is read
// from the raw response, then from Expiry, then DefaultLifetime when the
// answer has none.
func lifetime(ot *oauth2.Token) (life time.Duration, over bool) {
	secs, given := ot.ExpiresIn, ot.ExpiresIn != 0
	switch v := ot.Extra("expires_in").(type) {
	case float64:
		if v < math.MaxInt32 {
			secs, given = int64(v), true
		}
	case string: // some servers send a string
		if n, err := strconv.ParseInt(v, 10, 32); err == nil {
			secs, given = n, true
		}
	}
	switch {
	case given && secs <= 0:
		return minLifetime, true
	case given:
		return time.Duration(secs) * time.Second, false
	case !ot.Expiry.IsZero() && time.Until(ot.Expiry) > 0:
		return time.Until(ot.Expiry), false
	}
	return DefaultLifetime, false
}

// redact turns a fetch error into one that says what failed without the
// response body and without the client secret.
func (s *Source) redact(err error) error {
	var msg string
	var re *oauth2.RetrieveError
	switch {
	case errors.As(err, &re) && re.Response != nil:
		msg = fmt.Sprintf("status %d", re.Response.StatusCode)
		if re.ErrorCode != "" {
			msg += " " + re.ErrorCode
		}
	case errors.As(err, &re):
		msg = "error " + re.ErrorCode
	default:
		msg = err.Error()
	}
	return fmt.Errorf("upstreamauth: fetch token from %s: %s", s.cfg.TokenURL, s.scrub(msg))
}

// reason says why a fetch failed with err, for Ready: the status and
// error code the endpoint answered (a code of letters and underscores
// only, as the OAuth2 ones are), that it did not answer in time, or that
// it could not be reached.
func (s *Source) reason(err error) string {
	re, ok := errors.AsType[*oauth2.RetrieveError](err)
	switch {
	case ok:
		msg := "the token endpoint answered"
		if re.Response != nil {
			msg += " " + strconv.Itoa(re.Response.StatusCode)
		}
		if c := re.ErrorCode; c != "" && len(c) <= 40 && !strings.ContainsFunc(c, func(r rune) bool { return (r < 'a' || r > 'z') && r != '_' }) {
			msg += " " + s.scrub(c)
		}
		return msg
	case errors.Is(err, context.DeadlineExceeded):
		return "the token endpoint did not answer within " + s.timeout.String()
	}
	return "the token endpoint could not be reached"
}

// scrub returns msg, text from or about the token endpoint's answer, with
// the client secret, as written or URL-encoded, replaced.
func (s *Source) scrub(msg string) string {
	if s.secret != "" {
		msg = strings.ReplaceAll(msg, s.secret, "[redacted]")
		msg = strings.ReplaceAll(msg, url.QueryEscape(s.secret), "[redacted]")
	}
	return msg
}

// Invalidate asks for a new token on the next call to Token if tok is the
// cached token and is at least 30 s old (so a client the API rejects
// cannot make every request fetch). Use it when the API upstream answers
// 401 to a request that carried tok. Until the new token has come, calls
// of Token wait for it; the old token is used again only if the fetch
// fails (the refusal may have been the upstream's mistake).
func (s *Source) Invalidate(tok string) { s.invalidate(tok) }

// invalidate is Invalidate, and returns how long until a call of Token
// may give a token other than tok: the rest of tok's first 30 s when it
// is kept, else the rest of the backoff if fetches fail, else 0.
func (s *Source) invalidate(tok string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	t := s.cur.Load()
	if t == nil || t.value != tok {
		if t.valid(now) {
			return 0 // replaced already
		}
	} else if !t.rejected {
		if age := now.Sub(t.fetched); age < minInvalidateAge {
			return minInvalidateAge - age
		}
		n := *t
		n.refreshAt, n.rejected = now, true
		s.cur.Store(&n)
	}
	if s.done == nil && s.fails > 0 && now.Before(s.retry) {
		return s.retry.Sub(now)
	}
	return 0
}

// Ready returns nil when the Source holds a valid token (not expired,
// not refused by the upstream) or gets one within ctx: where there is
// none, a fetch starts as for Token, unless a failed fetch's backoff
// forbids it, so that readiness probes never hammer the endpoint.
// Otherwise its error says why, without the client secret, the token or
// the endpoint's address: fit for an open readiness endpoint.
func (s *Source) Ready(ctx context.Context) error {
	s.Token(ctx) // what went wrong is read from the Source below
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	t := s.cur.Load()
	switch {
	case t.valid(now):
		return nil
	case s.done != nil:
		return errors.New("no token yet: a fetch is under way")
	case s.fails > 0:
		msg := fmt.Sprintf("no token: %d failed fetch", s.fails)
		if s.fails > 1 {
			msg += "es"
		}
		msg += ", the last: " + s.why
		if wait := s.retry.Sub(now); wait > 0 {
			msg += fmt.Sprintf("; next attempt in %v", (wait + time.Second - 1).Truncate(time.Second))
		}
		return errors.New(msg)
	case t != nil && t.rejected:
		return errors.New("no token: the upstream refused the last one")
	}
	return errors.New("no token")
}

// A Credential is what floodgate sends the API upstream in place of the
// browser's credentials: the bearer token of a Source (Bearer), a fixed
// header field (Header), or nothing (None: unauthenticated, a development
// setting, config upstreams.NAME.auth.optional). It implements
// internal/forward's Credential, which the lean forwarder and
// forward.Transport apply. With each:
//
//   - the browser's Cookie, Authorization and Proxy-Authorization (and a
//     field of the credential's name) are not forwarded, however spelled
//     (X_Api_Key for X-Api-Key: internal/forward drops those too);
//   - the upstream's Set-Cookie (and the obsolete Set-Cookie2), and
//     WWW-Authenticate and Authorization, which concern floodgate's
//     credential, not the browser's (a Basic challenge would make the
//     browser prompt for a password), do not reach the browser, nor does
//     a field of the credential's name (an upstream that echoes the key
//     it was sent would hand it to every client).
//
// A TRACE request, whose answer echoes it, goes without floodgate's
// credential (internal/forward does not ask Authorize for one).
//
// If no token can be had, Authorize fails with an error matching
// ErrNoToken, whose RetryAfter says when one may be: the request is not
// sent.
//
// A 401 to a request that carried floodgate's credential means the
// upstream no longer takes it (revoked, or rotated on its side): the
// client did nothing wrong, so the answer is not passed on. A bearer
// token is dropped (Invalidate) and, for a request that can be sent again
// (see replayable), a new one is had and the request sent once more with
// it; otherwise, or if the upstream refuses that one too, the request
// fails with an error matching ErrRejected and ErrNoToken, whose
// RetryAfter says when a token other than the refused one may be had. A
// fixed field cannot be replaced: its refusal is an error matching
// ErrRejected and ErrNoToken at once. Without a credential (None), the
// upstream's answers, a 401 included, are its answers to the request as
// sent.
//
// A Credential is safe for concurrent use.
type Credential struct {
	src         *Source
	name, value string   // the field that carries it; no name for None
	request     []string // the request fields not forwarded
	response    []string // the response fields not passed on
}

// Bearer returns the credential of s's bearer token.
func Bearer(s *Source) *Credential {
	return &Credential{src: s, name: "Authorization", request: clientFields, response: upstreamFields}
}

// Header returns the credential of a fixed field: name with value.
func Header(name, value string) *Credential {
	name = http.CanonicalHeaderKey(name)
	request, response := clientFields, upstreamFields
	if !slices.Contains(request, name) {
		request = append(slices.Clip(request), name)
	}
	if !slices.Contains(response, name) {
		response = append(slices.Clip(response), name)
	}
	return &Credential{name: name, value: value, request: request, response: response}
}

// None returns the credential of an upstream forwarded without floodgate's
// own: the browser's are removed all the same.
func None() *Credential { return &Credential{request: clientFields, response: upstreamFields} }

// clientFields are the browser's credentials, never forwarded to an
// upstream with a Credential.
var clientFields = []string{"Cookie", "Authorization", "Proxy-Authorization"}

// upstreamFields are the fields of an upstream's answer that never reach
// the browser (with a header credential's own field).
var upstreamFields = []string{"Set-Cookie", "Set-Cookie2", "Www-Authenticate", "Authorization"}

// Fields returns the request fields not forwarded and the response fields
// not passed on, by canonical name (forward.Credential).
func (c *Credential) Fields() (request, response []string) {
	return c.request, c.response
}

// Authorize returns the field to send r with: "Authorization" and the
// bearer token, waiting for one at most MaxWait and while r's context
// lasts; the fixed field; or none. Its error matches ErrNoToken.
func (c *Credential) Authorize(r *http.Request) (name, value string, err error) {
	if c.src == nil {
		return c.name, c.value, nil
	}
	t, err := c.src.token(r.Context())
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrNoToken, err)
	}
	return c.name, t.bearer, nil
}

// Refused is told that the upstream answered 401 to r sent with value
// (forward.Credential). For a bearer token, it drops the token and, when
// first and r can be sent again, returns a new one; otherwise, and for a
// fixed field, the error matches ErrRejected and ErrNoToken.
func (c *Credential) Refused(r *http.Request, value string, first bool) (next string, err error) {
	if c.src == nil {
		return "", fmt.Errorf("%w: %w", ErrNoToken, ErrRejected)
	}
	tok := strings.TrimPrefix(value, "Bearer ")
	wait := c.src.invalidate(tok)
	if first && wait == 0 && replayable(r) {
		// The upstream refused the token before doing anything: a
		// request without a body and with a safe method can go again,
		// once, with a new one. One with a body cannot (its body was
		// read), nor, for fear of doing it twice, one with an unsafe
		// method.
		t, err := c.src.token(r.Context())
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrNoToken, err)
		}
		if t.value != tok {
			return t.bearer, nil
		}
		wait = c.src.invalidate(tok)
	}
	return "", &retryError{after: wait, err: fmt.Errorf("%w: %w", ErrNoToken, ErrRejected)}
}

// ErrRejected matches (with errors.Is) the error of Credential.Refused
// when the upstream answered 401 to floodgate's own credential. It
// matches ErrNoToken too: the gateway answers 503.
var ErrRejected = errors.New("upstreamauth: the upstream refused floodgate's token")

// replayable reports whether r may be sent again after the upstream
// refused floodgate's token: a safe method (GET, HEAD, OPTIONS), and no
// body, which the first attempt would have consumed.
func replayable(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return r.Body == nil || r.Body == http.NoBody
	}
	return false
}
