package upstreamauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/floodgate/floodgate/internal/forward"
)

const (
	clientID     = "floodgate-frontend"
	clientSecret = "s3cret-Vx9+/&=value"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// clock is a settable test clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t0.Add(d) }

// tokenServer is a real token endpoint on loopback, modelled on the
// Openverse API's: form-encoded client credentials in, JSON token out.
type tokenServer struct {
	*httptest.Server
	fetches   atomic.Int64
	expiresIn int64
	// fail, when set, returns the status to answer for fetch n (1-based),
	// or 0 to succeed.
	fail func(n int64) int
	// gate, when non-nil, holds each fetch from number gateFrom (0: all)
	// until it is closed; entered is closed when the first one is held.
	gate      chan struct{}
	gateFrom  int64
	entered   chan struct{}
	enterOnce sync.Once

	mu   sync.Mutex
	seen []string // "params" or "basic" per fetch
}

func newTokenServer(t *testing.T) *tokenServer {
	ts := &tokenServer{expiresIn: 36000}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != TokenPath || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		n := ts.fetches.Add(1)
		if ts.gate != nil && n >= ts.gateFrom {
			if ts.entered != nil {
				ts.enterOnce.Do(func() { close(ts.entered) })
			}
			<-ts.gate
		}
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
			http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
			return
		}
		style := "params"
		id, secret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		if u, p, ok := r.BasicAuth(); ok {
			style = "basic"
			id, _ = url.QueryUnescape(u) // RFC 6749 section 2.3.1
			secret, _ = url.QueryUnescape(p)
		}
		ts.mu.Lock()
		ts.seen = append(ts.seen, style)
		ts.mu.Unlock()
		if ts.fail != nil {
			if code := ts.fail(n); code != 0 {
				// A hostile endpoint that echoes the credentials back.
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(code)
				fmt.Fprintf(w, `{"error":"server_error","error_description":"bad secret %s","echo":%q}`, secret, secret)
				return
			}
		}
		if id != clientID || secret != clientSecret {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"Bearer","expires_in":%d,"scope":"read write"}`, n, ts.expiresIn)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func newSource(t *testing.T, ts *tokenServer, c *clock, mod func(*Options)) *Source {
	t.Helper()
	u, err := TokenURL(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{TokenURL: u, ClientID: clientID, ClientSecret: clientSecret, Now: c.Now, HTTPClient: ts.Client()}
	if mod != nil {
		mod(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func wantToken(t *testing.T, s *Source, want string) {
	t.Helper()
	got, err := s.Token(context.Background())
	if err != nil || got != want {
		t.Fatalf("Token() = %q, %v; want %q, nil", got, err, want)
	}
}

// settle waits for the fetch under way, if any, to end.
func settle(s *Source) {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done != nil {
		<-done
	}
}

func TestTokenReusedAndRefreshedBeforeExpiry(t *testing.T) {
	ts := newTokenServer(t)
	ts.expiresIn = 3600
	c := &clock{t: t0}
	s := newSource(t, ts, c, nil)
	steps := []struct {
		at      time.Duration
		token   string
		fetches int64 // once the fetch the call started, if any, has ended
	}{
		{0, "tok-1", 1},
		{time.Minute, "tok-1", 1},
		{3600*time.Second - DefaultEarlyExpiry - time.Second, "tok-1", 1},
		{3600*time.Second - DefaultEarlyExpiry, "tok-1", 2}, // 60 s before expiry: refreshed in the background
		{3600*time.Second - DefaultEarlyExpiry, "tok-2", 2},
		{3540*time.Second + 3539*time.Second, "tok-2", 2},
		{3540*time.Second + 3540*time.Second, "tok-2", 3},
		{3540*time.Second + 3540*time.Second, "tok-3", 3},
	}
	for _, st := range steps {
		c.Set(st.at)
		wantToken(t, s, st.token)
		settle(s)
		if n := ts.fetches.Load(); n != st.fetches {
			t.Errorf("at t0+%v: %d fetches, want %d", st.at, n, st.fetches)
		}
	}
}

func TestShortLifetimeIsNotRefetchedEveryTime(t *testing.T) {
	ts := newTokenServer(t)
	ts.expiresIn = 30 // shorter than the early expiry: refresh at half-life
	c := &clock{t: t0}
	s := newSource(t, ts, c, nil)
	wantToken(t, s, "tok-1")
	c.Set(14 * time.Second)
	wantToken(t, s, "tok-1")
	settle(s)
	if n := ts.fetches.Load(); n != 1 {
		t.Errorf("%d fetches before half-life, want 1", n)
	}
	c.Set(15 * time.Second)
	wantToken(t, s, "tok-1") // starts the refresh
	settle(s)
	wantToken(t, s, "tok-2")
}

// TestNoLifetimeIsAShortOne: a token answered with expires_in 0 or less
// (already over, as the field is a lifetime in seconds) is neither cached
// for DefaultLifetime nor fetched again for every request: it serves for
// minLifetime, and is refreshed in the background at half of that.
func TestNoLifetimeIsAShortOne(t *testing.T) {
	for _, expiresIn := range []int64{0, -1, -3600} {
		ts := newTokenServer(t)
		ts.expiresIn = expiresIn
		var logs bytes.Buffer
		c := &clock{t: t0}
		s := newSource(t, ts, c, func(o *Options) { o.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
		steps := []struct {
			at      time.Duration
			token   string
			fetches int64
		}{
			{0, "tok-1", 1},
			{time.Second, "tok-1", 1},
			{minLifetime/2 - time.Second, "tok-1", 1},
			{minLifetime / 2, "tok-1", 2}, // due: refreshed in the background
			{minLifetime / 2, "tok-2", 2},
			{minLifetime - time.Second, "tok-2", 2},
		}
		for _, st := range steps {
			c.Set(st.at)
			for range 3 {
				wantToken(t, s, st.token)
			}
			settle(s)
			if n := ts.fetches.Load(); n != st.fetches {
				t.Errorf("expires_in %d, at t0+%v: %d fetches, want %d", expiresIn, st.at, n, st.fetches)
			}
		}
		if !strings.Contains(logs.String(), `"lifetime":"30s"`) || !strings.Contains(logs.String(), "expires_in") {
			t.Errorf("expires_in %d: the log does not say the lifetime was taken as 30s:\n%s", expiresIn, logs.String())
		}
	}
}

func TestAuthStyles(t *testing.T) {
	for _, tt := range []struct {
		style oauth2.AuthStyle
		want  string
	}{
		{oauth2.AuthStyleAutoDetect, "params"}, // the default: Openverse's documented form
		{oauth2.AuthStyleInParams, "params"},
		{oauth2.AuthStyleInHeader, "basic"},
	} {
		ts := newTokenServer(t)
		s := newSource(t, ts, &clock{t: t0}, func(o *Options) { o.AuthStyle = tt.style })
		wantToken(t, s, "tok-1")
		if len(ts.seen) != 1 || ts.seen[0] != tt.want {
			t.Errorf("AuthStyle %v: endpoint saw %v, want [%s]", tt.style, ts.seen, tt.want)
		}
	}
}

func TestConcurrentRequestsFetchOnce(t *testing.T) {
	ts := newTokenServer(t)
	ts.gate = make(chan struct{})
	ts.entered = make(chan struct{})
	var sawBearer atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer tok-1" {
			sawBearer.Add(1)
		}
	}))
	defer api.Close()
	s := newSource(t, ts, &clock{t: t0}, nil)
	client := &http.Client{Transport: &forward.Transport{Credential: Bearer(s), Base: api.Client().Transport}}

	const n = 50
	var start, done sync.WaitGroup
	start.Add(n)
	done.Add(n)
	errs := make(chan error, n)
	for range n {
		go func() {
			defer done.Done()
			start.Done()
			resp, err := client.Get(api.URL + "/v1/images/")
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
		}()
	}
	start.Wait()
	<-ts.entered // one fetch is in flight; the others queue behind it
	close(ts.gate)
	done.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("request: %v", err)
	}
	if got := ts.fetches.Load(); got != 1 {
		t.Errorf("%d concurrent requests caused %d token fetches, want 1", n, got)
	}
	if got := sawBearer.Load(); got != n {
		t.Errorf("API saw the bearer token on %d requests, want %d", got, n)
	}
}

func TestBackoffAndRecovery(t *testing.T) {
	ts := newTokenServer(t)
	ts.fail = func(n int64) int {
		if n <= 4 {
			return http.StatusInternalServerError
		}
		return 0
	}
	var logs bytes.Buffer
	c := &clock{t: t0}
	s := newSource(t, ts, c, func(o *Options) {
		o.MinBackoff, o.MaxBackoff = time.Second, 4*time.Second
		o.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	steps := []struct {
		at      time.Duration
		backoff bool // want ErrBackoff
		ok      bool
		fetches int64
		retry   time.Duration // RetryAfter of the error
	}{
		{0, false, false, 1, time.Second},                                // fails: backoff 1 s
		{500 * time.Millisecond, true, false, 1, 500 * time.Millisecond}, // fails fast
		{time.Second, false, false, 2, 2 * time.Second},                  // fails: backoff 2 s
		{2 * time.Second, true, false, 2, time.Second},
		{3 * time.Second, false, false, 3, 4 * time.Second}, // fails: backoff 4 s
		{6 * time.Second, true, false, 3, time.Second},
		{7 * time.Second, false, false, 4, 4 * time.Second}, // fails: backoff stays 4 s (max)
		{10 * time.Second, true, false, 4, time.Second},
		{11 * time.Second, false, true, 5, 0}, // recovers
		{12 * time.Second, false, true, 5, 0}, // cached
	}
	var errs []error
	for _, st := range steps {
		c.Set(st.at)
		tok, err := s.Token(context.Background())
		if got := errors.Is(err, ErrBackoff); got != st.backoff {
			t.Errorf("at t0+%v: Token error %v, want ErrBackoff %v", st.at, err, st.backoff)
		}
		if (err == nil) != st.ok || (st.ok && tok != "tok-5") {
			t.Errorf("at t0+%v: Token() = %q, %v; want ok %v", st.at, tok, err, st.ok)
		}
		if n := ts.fetches.Load(); n != st.fetches {
			t.Errorf("at t0+%v: %d fetches, want %d", st.at, n, st.fetches)
		}
		if err != nil {
			errs = append(errs, err)
			if d, ok := RetryAfter(err); !ok || d != st.retry {
				t.Errorf("at t0+%v: RetryAfter(%v) = %v, %v; want %v, true", st.at, err, d, ok, st.retry)
			}
		}
	}
	for _, e := range errs {
		assertClean(t, "error", e.Error())
	}
	assertClean(t, "log", logs.String())
	if !strings.Contains(errs[0].Error(), "status 500") {
		t.Errorf("fetch error %q does not say the status", errs[0])
	}
	if strings.Contains(logs.String(), "tok-5") {
		t.Errorf("log contains the token:\n%s", logs.String())
	}
	// Durations read as the log's others do ("10s"), not in nanoseconds.
	for _, want := range []string{`"retry_in":"1s"`, `"retry_in":"4s"`, `"lifetime":"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, logs.String())
		}
	}
}

func TestRefreshFailureKeepsOldTokenUntilExpiry(t *testing.T) {
	ts := newTokenServer(t)
	ts.expiresIn = 3600
	c := &clock{t: t0}
	s := newSource(t, ts, c, nil)
	wantToken(t, s, "tok-1")
	ts.fail = func(int64) int { return http.StatusBadGateway }
	c.Set(3550 * time.Second) // due for refresh, still valid
	wantToken(t, s, "tok-1")
	settle(s)
	if n := ts.fetches.Load(); n != 2 {
		t.Errorf("%d fetches, want 2 (the failed refresh)", n)
	}
	c.Set(3550*time.Second + 500*time.Millisecond) // in backoff: no fetch, old token
	wantToken(t, s, "tok-1")
	if n := ts.fetches.Load(); n != 2 {
		t.Errorf("%d fetches during backoff, want 2", n)
	}
	c.Set(3600 * time.Second) // expired, refresh fails
	if tok, err := s.Token(context.Background()); err == nil {
		t.Errorf("Token() after expiry with a failing endpoint = %q, want an error", tok)
	}
}

func TestWrongCredentials(t *testing.T) {
	ts := newTokenServer(t)
	s := newSource(t, ts, &clock{t: t0}, func(o *Options) { o.ClientSecret = "wrong-" + clientSecret })
	_, err := s.Token(context.Background())
	if err == nil || !strings.Contains(err.Error(), "status 401 invalid_client") {
		t.Fatalf("Token() error = %v, want status 401 invalid_client", err)
	}
	assertClean(t, "error", err.Error())
}

// TestTokenThatCannotBeSentIsAFailedFetch: an access token with a control
// character cannot go into an Authorization header; it is a failed fetch
// (backoff, retried), not a token cached for its whole lifetime while
// every request to the upstream fails.
func TestTokenThatCannotBeSentIsAFailedFetch(t *testing.T) {
	for _, tok := range []string{`tok\u0001bad`, `tok\u007f`, `tok\u0000`, `tok\r\nX-Injected: 1`} {
		var fetches atomic.Int64
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if fetches.Add(1) == 1 {
				fmt.Fprintf(w, `{"access_token":"%s","token_type":"Bearer","expires_in":36000}`, tok)
				return
			}
			io.WriteString(w, `{"access_token":"good","token_type":"Bearer","expires_in":36000}`)
		}))
		c := &clock{t: t0}
		s, err := New(Options{TokenURL: ts.URL + TokenPath, ClientID: clientID, ClientSecret: clientSecret, Now: c.Now, HTTPClient: ts.Client()})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.Token(context.Background()); err == nil {
			t.Errorf("access token %s: Token() = %q, nil; want an error", tok, got)
		}
		c.Set(DefaultMinBackoff)
		if got, err := s.Token(context.Background()); err != nil || got != "good" {
			t.Errorf("access token %s, after the backoff: Token() = %q, %v; want the next fetch's", tok, got, err)
		}
		ts.Close()
	}
}

// TestEchoedSecretInTokenTypeIsRedacted: an endpoint that answers 200 with
// the client secret as the token type gets a failed fetch whose error and
// log line do not hold the secret.
func TestEchoedSecretInTokenTypeIsRedacted(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"tok","token_type":%q,"expires_in":3600}`, r.PostForm.Get("client_secret"))
	}))
	defer ts.Close()
	var logs bytes.Buffer
	s, err := New(Options{TokenURL: ts.URL + TokenPath, ClientID: clientID, ClientSecret: clientSecret,
		HTTPClient: ts.Client(), Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Token(context.Background())
	if err == nil {
		t.Fatal("Token() with a token type that is not Bearer succeeded")
	}
	assertClean(t, "error", err.Error())
	assertClean(t, "log", logs.String())
}

func TestUnreachableEndpointErrorIsClean(t *testing.T) {
	ts := newTokenServer(t)
	ts.Close()
	s := newSource(t, ts, &clock{t: t0}, nil)
	_, err := s.Token(context.Background())
	if err == nil {
		t.Fatal("Token() from a closed endpoint succeeded")
	}
	assertClean(t, "error", err.Error())
}

func TestWaitHonoursContext(t *testing.T) {
	ts := newTokenServer(t)
	ts.gate = make(chan struct{})
	ts.entered = make(chan struct{})
	s := newSource(t, ts, &clock{t: t0}, nil)
	first := make(chan error, 1)
	go func() { _, err := s.Token(context.Background()); first <- err }()
	<-ts.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Token(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Token(cancelled ctx) during a fetch = %v, want context.Canceled", err)
	}
	close(ts.gate)
	if err := <-first; err != nil {
		t.Errorf("first Token() = %v", err)
	}
}

// TestFetchingCallerHonoursContext: the caller whose request started a
// fetch waits for it no longer than its own context, as the others do;
// the fetch goes on, and its token is not lost nor counted as a failure.
func TestFetchingCallerHonoursContext(t *testing.T) {
	ts := newTokenServer(t)
	ts.gate = make(chan struct{})
	ts.entered = make(chan struct{})
	fetched := make(chan bool, 4)
	s := newSource(t, ts, &clock{t: t0}, func(o *Options) { o.OnFetch = func(ok bool) { fetched <- ok } })
	defer releaseOnce(ts.gate)()
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { _, err := s.Token(ctx); res <- err }()
	<-ts.entered
	cancel() // the browser went away while its request waited for the token
	select {
	case err := <-res:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Token(cancelled ctx) = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second): // a bound, not a measure
		t.Fatal("the caller that started the fetch waited for it past its context")
	}
	releaseOnce(ts.gate)()
	if ok := <-fetched; !ok {
		t.Error("the fetch whose caller left was counted as a failure")
	}
	wantToken(t, s, "tok-1")
	if n := ts.fetches.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
}

// TestRefreshRunsInBackground: a token due for refresh but still valid
// serves every caller, the one whose call starts the refresh included,
// while a slow token endpoint answers the refresh; the new token serves
// once it has come.
func TestRefreshRunsInBackground(t *testing.T) {
	ts := newTokenServer(t)
	ts.expiresIn = 3600
	ts.gate, ts.gateFrom, ts.entered = make(chan struct{}), 2, make(chan struct{})
	fetched := make(chan bool, 4)
	c := &clock{t: t0}
	s := newSource(t, ts, c, func(o *Options) { o.OnFetch = func(ok bool) { fetched <- ok } })
	defer releaseOnce(ts.gate)()
	wantToken(t, s, "tok-1")
	<-fetched
	c.Set(3600*time.Second - DefaultEarlyExpiry) // due for refresh, valid for 60 s more

	got := make(chan string, 1)
	go func() { tok, _ := s.Token(context.Background()); got <- tok }()
	select {
	case tok := <-got:
		if tok != "tok-1" {
			t.Errorf("the call that starts the refresh: Token() = %q, want the valid tok-1", tok)
		}
	case <-time.After(10 * time.Second): // a bound, not a measure
		t.Fatal("the call that started the refresh waited for the token endpoint")
	}
	<-ts.entered // the refresh is at the endpoint, held
	for range 3 {
		wantToken(t, s, "tok-1")
	}
	if n := ts.fetches.Load(); n != 2 {
		t.Errorf("%d fetches during the refresh, want 2 (one refresh at a time)", n)
	}
	releaseOnce(ts.gate)()
	if ok := <-fetched; !ok {
		t.Fatal("the refresh failed")
	}
	wantToken(t, s, "tok-2")
}

// TestWaitForFirstTokenIsBounded: with no token at all and a token
// endpoint that does not answer, a call waits MaxWait, not FetchTimeout,
// then fails; the fetch goes on, and its token serves the next call.
func TestWaitForFirstTokenIsBounded(t *testing.T) {
	ts := newTokenServer(t)
	ts.gate, ts.entered = make(chan struct{}), make(chan struct{})
	fetched := make(chan bool, 4)
	s := newSource(t, ts, &clock{t: t0}, func(o *Options) {
		o.MaxWait = 10 * time.Millisecond
		o.FetchTimeout = time.Hour // what bounds the wait is MaxWait
		o.OnFetch = func(ok bool) { fetched <- ok }
	})
	defer releaseOnce(ts.gate)()
	for i := range 2 {
		res := make(chan error, 1)
		go func() { _, err := s.Token(context.Background()); res <- err }()
		select {
		case err := <-res:
			if err == nil || errors.Is(err, ErrBackoff) || !strings.Contains(err.Error(), "has not answered within 10ms") {
				t.Errorf("call %d: Token() with the endpoint silent = %v, want an error naming the wait", i+1, err)
			}
			if d, ok := RetryAfter(err); !ok || d != 0 {
				t.Errorf("call %d: RetryAfter(%v) = %v, %v; want 0, true: a fetch is under way", i+1, err, d, ok)
			}
		case <-time.After(10 * time.Second): // a bound, not a measure
			t.Fatalf("call %d waited for a silent token endpoint past MaxWait", i+1)
		}
	}
	<-ts.entered
	if n := ts.fetches.Load(); n != 1 {
		t.Errorf("%d fetches, want 1: the second call joins the fetch under way", n)
	}
	releaseOnce(ts.gate)()
	if ok := <-fetched; !ok {
		t.Fatal("the fetch failed")
	}
	wantToken(t, s, "tok-1")
}

// TestReady: Ready fetches where there is no valid token, never during
// the backoff, and says why there is none without the secret or the
// endpoint's address.
func TestReady(t *testing.T) {
	ts := newTokenServer(t)
	ts.fail = func(n int64) int {
		if n <= 2 {
			return http.StatusUnauthorized
		}
		return 0
	}
	c := &clock{t: t0}
	s := newSource(t, ts, c, nil)
	u, _ := url.Parse(ts.URL)
	steps := []struct {
		at      time.Duration
		want    string // "": ready
		fetches int64
	}{
		{0, "no token: 1 failed fetch, the last: the token endpoint answered 401 server_error; next attempt in 1s", 1},
		{300 * time.Millisecond, "no token: 1 failed fetch, the last: the token endpoint answered 401 server_error; next attempt in 1s", 1},
		{time.Second, "no token: 2 failed fetches, the last: the token endpoint answered 401 server_error; next attempt in 2s", 2},
		{2 * time.Second, "no token: 2 failed fetches, the last: the token endpoint answered 401 server_error; next attempt in 1s", 2},
		{3 * time.Second, "", 3},
		{4 * time.Second, "", 3},
		{36003 * time.Second, "", 4}, // expired: fetched again
	}
	for _, st := range steps {
		c.Set(st.at)
		err := s.Ready(context.Background())
		if got := fmt.Sprint(err); (st.want == "" && err != nil) || (st.want != "" && got != st.want) {
			t.Errorf("at t0+%v: Ready() = %v, want %q", st.at, err, st.want)
		}
		if err != nil {
			assertClean(t, "Ready's error", err.Error())
			if strings.Contains(err.Error(), u.Host) {
				t.Errorf("Ready's error names the endpoint: %v", err)
			}
		}
		if n := ts.fetches.Load(); n != st.fetches {
			t.Errorf("at t0+%v: %d fetches, want %d", st.at, n, st.fetches)
		}
	}
}

// TestReadyDuringAFetch: a Ready whose context ends while the fetch it
// started is held says so; the fetch goes on.
func TestReadyDuringAFetch(t *testing.T) {
	ts := newTokenServer(t)
	ts.gate, ts.entered = make(chan struct{}), make(chan struct{})
	s := newSource(t, ts, &clock{t: t0}, nil)
	defer releaseOnce(ts.gate)()
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { res <- s.Ready(ctx) }()
	<-ts.entered
	cancel()
	if err := <-res; fmt.Sprint(err) != "no token yet: a fetch is under way" {
		t.Errorf("Ready() with the fetch held = %v, want a fetch under way", err)
	}
	releaseOnce(ts.gate)()
	if err := s.Ready(context.Background()); err != nil {
		t.Errorf("Ready() once the fetch is done = %v", err)
	}
	if n := ts.fetches.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
}

// releaseOnce returns a func that closes gate, once however often called.
func releaseOnce(gate chan struct{}) func() {
	return func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	}
}

// A carrier sends requests to the API upstream with a Credential: the
// lean forwarder (http upstreams) or forward.Transport under Go's
// transport (https, and what the forwarder leaves to a ReverseProxy).
type carrier struct {
	name string
	// new returns what sends a request, built with http.NewRequest, to
	// api with c: the upstream's answer, or the error the request failed
	// with.
	new func(t *testing.T, c *Credential, api *httptest.Server) func(*http.Request) (*http.Response, error)
}

var _ forward.Credential = (*Credential)(nil)

var carriers = []carrier{
	{"Forwarder", func(t *testing.T, c *Credential, api *httptest.Server) func(*http.Request) (*http.Response, error) {
		u, err := url.Parse(api.URL)
		if err != nil {
			t.Fatal(err)
		}
		var failed error
		f, err := forward.New(u, forward.Options{Credential: c, OnError: func(w http.ResponseWriter, r *http.Request, err error) {
			failed = err
			w.WriteHeader(http.StatusBadGateway)
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.CloseIdle)
		return func(req *http.Request) (*http.Response, error) {
			// The request as a server hands it to the gateway.
			in := httptest.NewRequest(req.Method, req.URL.RequestURI(), req.Body)
			in.Header, in.ContentLength = req.Header, req.ContentLength
			failed = nil
			rec := httptest.NewRecorder()
			f.ServeHTTP(rec, in)
			if failed != nil {
				return nil, failed
			}
			return rec.Result(), nil
		}
	}},
	{"Transport", func(t *testing.T, c *Credential, api *httptest.Server) func(*http.Request) (*http.Response, error) {
		tr := &forward.Transport{Credential: c, Base: api.Client().Transport}
		return tr.RoundTrip
	}},
}

func TestCredentialStripsCredentials(t *testing.T) {
	type seen struct{ auth, cookie, proxyAuth, key string }
	got := make(chan seen, 1)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header.Get("Authorization"), r.Header.Get("Cookie"), r.Header.Get("Proxy-Authorization"), r.Header.Get("X-Api-Key")}
		http.SetCookie(w, &http.Cookie{Name: "csrftoken", Value: "x"})
		w.Header().Set("WWW-Authenticate", `Basic realm="api"`)
		w.Header().Set("Authorization", "Bearer upstream")
		w.Header().Set("X-Kept", "1")
	}))
	defer api.Close()
	for _, ca := range carriers {
		ts := newTokenServer(t)
		s := newSource(t, ts, &clock{t: t0}, nil)
		for _, tt := range []struct {
			name string
			c    *Credential
			want seen
		}{
			{"bearer", Bearer(s), seen{auth: "Bearer tok-1"}},
			{"header", Header("x-api-key", "floodgate-key"), seen{key: "floodgate-key"}},
			{"header Authorization", Header("Authorization", "Token floodgate-key"), seen{auth: "Token floodgate-key"}},
			{"none", None(), seen{}},
		} {
			name := ca.name + "/" + tt.name
			req, _ := http.NewRequest("GET", api.URL+"/v1/images/?q=cat", nil)
			req.Header.Set("Cookie", "ovSession=abc; other=1")
			req.Header.Set("Authorization", "Bearer browser-token")
			req.Header.Set("Proxy-Authorization", "Basic Zm9vOmJhcg==")
			req.Header.Set("X-Api-Key", "browser-key")
			if tt.c.name == "" || tt.c.name == "Authorization" {
				tt.want.key = "browser-key" // not a credential of this upstream's
			}
			resp, err := ca.new(t, tt.c, api)(req)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			resp.Body.Close()
			if g := <-got; g != tt.want {
				t.Errorf("%s: API upstream saw %+v, want %+v", name, g, tt.want)
			}
			for _, h := range []string{"Set-Cookie", "WWW-Authenticate", "Authorization"} {
				if v := resp.Header.Values(h); len(v) != 0 {
					t.Errorf("%s: response kept %s: %q", name, h, v)
				}
			}
			if resp.Header.Get("X-Kept") != "1" {
				t.Errorf("%s: response lost an unrelated header", name)
			}
			if req.Header.Get("Authorization") != "Bearer browser-token" || req.Header.Get("X-Api-Key") != "browser-key" {
				t.Errorf("%s: the request was modified", name)
			}
		}
	}
}

// TestCredentialFieldNotEchoed: an upstream that echoes the fixed field
// it was sent (a debugging header, a misconfigured CORS exposure) would
// hand floodgate's key to every client: the field of a header credential's
// name is stripped from answers, as Authorization is for a bearer token.
func TestCredentialFieldNotEchoed(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Api-Key", r.Header.Get("X-Api-Key"))
		w.Header().Set("X-Kept", "1")
	}))
	defer api.Close()
	for _, ca := range carriers {
		req, _ := http.NewRequest("GET", api.URL+"/v1/images/", nil)
		resp, err := ca.new(t, Header("x-api-key", "floodgate-key"), api)(req)
		if err != nil {
			t.Fatalf("%s: %v", ca.name, err)
		}
		resp.Body.Close()
		if v := resp.Header.Values("X-Api-Key"); len(v) != 0 {
			t.Errorf("%s: the answer carried the credential's field: %q", ca.name, v)
		}
		if resp.Header.Get("X-Kept") != "1" {
			t.Errorf("%s: the answer lost an unrelated field", ca.name)
		}
	}
}

// TestCredentialAnswersRefusedTokenAsNoToken: a 401 to a request that
// carried floodgate's own token is not the client's answer: the token is
// dropped (when at least 30 s old) and the request fails with
// ErrRejected, matching ErrNoToken, with RetryAfter saying when a token
// may be had. A request without a body whose method is safe is sent once
// more with a new token first; one with a body never is.
func TestCredentialAnswersRefusedTokenAsNoToken(t *testing.T) {
	for _, ca := range carriers {
		t.Run(ca.name, func(t *testing.T) { testRefusedToken(t, ca) })
	}
}

func testRefusedToken(t *testing.T, ca carrier) {
	ts := newTokenServer(t)
	var refused atomic.Int64 // tok-N for N up to it are refused
	var refuseAll atomic.Bool
	var mu sync.Mutex
	var seen []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		auth := r.Header.Get("Authorization")
		mu.Lock()
		seen = append(seen, r.Method+" "+auth+" "+string(body))
		mu.Unlock()
		var n int64
		fmt.Sscanf(auth, "Bearer tok-%d", &n)
		if refuseAll.Load() || n <= refused.Load() {
			w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"detail":"Invalid token."}`)
		}
	}))
	defer api.Close()
	c := &clock{t: t0}
	s := newSource(t, ts, c, nil)
	send := ca.new(t, Bearer(s), api)
	steps := []struct {
		name    string
		at      time.Duration
		method  string
		refused int64 // tokens refused from this step on
		all     bool
		code    int           // 0: the request fails with ErrRejected
		retry   time.Duration // its RetryAfter
		sent    []string      // what the API saw
		fetches int64
	}{
		{"fresh token", 0, "GET", 0, false, 200, 0, []string{"GET Bearer tok-1 "}, 1},
		{"POST, token revoked", time.Minute, "POST", 1, false, 0, 0, []string{"POST Bearer tok-1 body"}, 1},
		{"the next request fetches", time.Minute, "GET", 1, false, 200, 0, []string{"GET Bearer tok-2 "}, 2},
		{"GET, token revoked: sent again", 2 * time.Minute, "GET", 2, false, 200, 0, []string{"GET Bearer tok-2 ", "GET Bearer tok-3 "}, 3},
		{"HEAD likewise", 3 * time.Minute, "HEAD", 3, false, 200, 0, []string{"HEAD Bearer tok-3 ", "HEAD Bearer tok-4 "}, 4},
		{"all refused, token 10 s old: kept", 3*time.Minute + 10*time.Second, "GET", 4, true, 0, 20 * time.Second, []string{"GET Bearer tok-4 "}, 4},
		{"all refused, token 30 s old", 3*time.Minute + 30*time.Second, "GET", 4, true, 0, 30 * time.Second, []string{"GET Bearer tok-4 ", "GET Bearer tok-5 "}, 5},
		{"all refused, no fetch per request", 3*time.Minute + 30*time.Second, "GET", 4, true, 0, 30 * time.Second, []string{"GET Bearer tok-5 "}, 5},
		{"POST, all refused", 3*time.Minute + 45*time.Second, "POST", 4, true, 0, 15 * time.Second, []string{"POST Bearer tok-5 body"}, 5},
	}
	for _, st := range steps {
		c.Set(st.at)
		refused.Store(st.refused)
		refuseAll.Store(st.all)
		mu.Lock()
		seen = nil
		mu.Unlock()
		var body io.Reader
		if st.method == "POST" {
			body = strings.NewReader("body")
		}
		req, _ := http.NewRequest(st.method, api.URL+"/v1/images/", body)
		resp, err := send(req)
		switch {
		case st.code != 0 && (err != nil || resp.StatusCode != st.code):
			t.Errorf("%s: sent = %v, %v; want %d", st.name, resp, err, st.code)
		case st.code == 0 && (err == nil || !errors.Is(err, ErrRejected) || !errors.Is(err, ErrNoToken)):
			t.Errorf("%s: sent = %v, %v; want ErrRejected and ErrNoToken", st.name, resp, err)
		case st.code == 0:
			if d, ok := RetryAfter(err); !ok || d != st.retry {
				t.Errorf("%s: RetryAfter(%v) = %v, %v; want %v", st.name, err, d, ok, st.retry)
			}
		}
		if resp != nil {
			resp.Body.Close()
		}
		mu.Lock()
		if !slices.Equal(seen, st.sent) {
			t.Errorf("%s: the API saw %q, want %q", st.name, seen, st.sent)
		}
		mu.Unlock()
		if n := ts.fetches.Load(); n != st.fetches {
			t.Errorf("%s: %d fetches, want %d", st.name, n, st.fetches)
		}
	}
}

// TestCredentialRefusedHeader: a fixed field the upstream refuses cannot
// be replaced: the request fails at once with ErrRejected, matching
// ErrNoToken, and no RetryAfter, and is not sent again.
func TestCredentialRefusedHeader(t *testing.T) {
	var sent atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"detail":"invalid key"}`)
	}))
	defer api.Close()
	for _, ca := range carriers {
		sent.Store(0)
		req, _ := http.NewRequest("GET", api.URL, nil)
		resp, err := ca.new(t, Header("X-Api-Key", "floodgate-key"), api)(req)
		if err == nil || !errors.Is(err, ErrRejected) || !errors.Is(err, ErrNoToken) {
			t.Errorf("%s: sent = %v, %v; want ErrRejected and ErrNoToken", ca.name, resp, err)
		}
		if d, ok := RetryAfter(err); ok {
			t.Errorf("%s: RetryAfter(%v) = %v, true; want none", ca.name, err, d)
		}
		if n := sent.Load(); n != 1 {
			t.Errorf("%s: the API got the request %d times, want 1", ca.name, n)
		}
	}
}

// TestCredentialNoneKeeps401: without floodgate's own credential, a 401
// answers the request as sent and passes through, body and all.
func TestCredentialNoneKeeps401(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"detail":"Authentication credentials were not provided."}`)
	}))
	defer api.Close()
	for _, ca := range carriers {
		req, _ := http.NewRequest("GET", api.URL, nil)
		resp, err := ca.new(t, None(), api)(req)
		if err != nil {
			t.Fatalf("%s: %v", ca.name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "not provided") {
			t.Errorf("%s: %d %s, want the upstream's 401", ca.name, resp.StatusCode, body)
		}
	}
}

// TestCredentialNoToken: while no token can be had, the request is not
// sent, and fails with ErrNoToken and RetryAfter the rest of the backoff.
func TestCredentialNoToken(t *testing.T) {
	var sent atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sent.Add(1) }))
	defer api.Close()
	for _, ca := range carriers {
		ts := newTokenServer(t)
		ts.fail = func(int64) int { return http.StatusInternalServerError }
		s := newSource(t, ts, &clock{t: t0}, nil)
		send := ca.new(t, Bearer(s), api)
		for i, want := range []time.Duration{time.Second, time.Second} { // failed, then in backoff
			req, _ := http.NewRequest("GET", api.URL, nil)
			resp, err := send(req)
			if err == nil || !errors.Is(err, ErrNoToken) {
				t.Fatalf("%s: request %d = %v, %v; want ErrNoToken", ca.name, i+1, resp, err)
			}
			if d, ok := RetryAfter(err); !ok || d != want {
				t.Errorf("%s: request %d: RetryAfter(%v) = %v, %v; want %v", ca.name, i+1, err, d, ok, want)
			}
		}
		if n := ts.fetches.Load(); n != 1 {
			t.Errorf("%s: %d fetches, want 1", ca.name, n)
		}
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("%d requests reached the API without a token", n)
	}
}

func TestNewValidates(t *testing.T) {
	_, err := New(Options{TokenURL: "ftp://x", MinBackoff: time.Minute, MaxBackoff: time.Second})
	if err == nil {
		t.Fatal("New accepted bad options")
	}
	for _, want := range []string{"ftp://x", "API_CLIENT_ID", "API_CLIENT_SECRET", "max backoff"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New error %q does not mention %q", err, want)
		}
	}
	if _, err := New(Options{TokenURL: "https://id:" + clientSecret + "@api.example/", ClientID: "a", ClientSecret: "b"}); err == nil {
		t.Errorf("New accepted a token URL with user info")
	}
}

func TestTokenURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.openverse.org":  "https://api.openverse.org/v1/auth_tokens/token/",
		"https://api.openverse.org/": "https://api.openverse.org/v1/auth_tokens/token/",
		"http://127.0.0.1:8000/base": "http://127.0.0.1:8000/base/v1/auth_tokens/token/",
	} {
		if got, err := TokenURL(in); err != nil || got != want {
			t.Errorf("TokenURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// assertClean fails if s shows the client secret in any common encoding.
func assertClean(t *testing.T, what, s string) {
	t.Helper()
	for _, form := range []string{clientSecret, "s3cret-Vx9%2B%2F%26%3Dvalue", "s3cret"} {
		if strings.Contains(s, form) {
			t.Errorf("%s contains the client secret (%q): %s", what, form, s)
		}
	}
}

func TestCachedTokenDoesNotAllocate(t *testing.T) {
	ts := newTokenServer(t)
	s := newSource(t, ts, &clock{t: t0}, nil)
	ctx := context.Background()
	wantToken(t, s, "tok-1")
	if n := testing.AllocsPerRun(1000, func() { s.Token(ctx) }); n != 0 {
		t.Errorf("Token with a cached token allocs = %v, want 0", n)
	}
}

func BenchmarkTokenCachedParallel(b *testing.B) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"tok","token_type":"Bearer","expires_in":36000}`)
	}))
	defer ts.Close()
	s, err := New(Options{TokenURL: ts.URL + TokenPath, ClientID: clientID, ClientSecret: clientSecret, HTTPClient: ts.Client()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Token(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestConcurrentRefusals: while the upstream refuses the token in use,
// many requests at once (GETs, and POSTs with a body) are each sent at
// most twice, the POSTs once; the token is fetched once per refusal, not
// once per refused request; every GET is answered (with the new token),
// and a POST either is (it came with the new token) or fails with
// ErrRejected; and the race detector finds nothing (go test -race), over
// either carrier.
func TestConcurrentRefusals(t *testing.T) {
	for _, ca := range []string{"Forwarder", "Transport"} {
		t.Run(ca, func(t *testing.T) {
			ts := newTokenServer(t)
			var refused atomic.Int64 // tok-N for N up to it are refused
			var mu sync.Mutex
			sends := map[string]int{} // by request
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				mu.Lock()
				sends[r.URL.RawQuery]++
				mu.Unlock()
				var n int64
				fmt.Sscanf(r.Header.Get("Authorization"), "Bearer tok-%d", &n)
				if n == 0 || n <= refused.Load() {
					w.WriteHeader(http.StatusUnauthorized)
					io.WriteString(w, `{"detail":"Invalid token."}`)
					return
				}
				io.WriteString(w, "ok")
			}))
			defer api.Close()
			c := &clock{t: t0}
			s := newSource(t, ts, c, nil)
			cred := Bearer(s)
			var do func(*http.Request) (int, error)
			switch ca {
			case "Forwarder":
				u, _ := url.Parse(api.URL)
				f, err := forward.New(u, forward.Options{Credential: cred, OnError: func(w http.ResponseWriter, r *http.Request, err error) {
					if errors.Is(err, ErrRejected) {
						w.WriteHeader(http.StatusServiceUnavailable)
						return
					}
					t.Errorf("%s %s: %v", r.Method, r.URL, err)
					w.WriteHeader(http.StatusBadGateway)
				}})
				if err != nil {
					t.Fatal(err)
				}
				defer f.CloseIdle()
				gw := httptest.NewServer(f)
				defer gw.Close()
				client := gw.Client()
				do = func(req *http.Request) (int, error) {
					req.URL.Host = strings.TrimPrefix(gw.URL, "http://")
					resp, err := client.Do(req)
					if err != nil {
						return 0, err
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					return resp.StatusCode, nil
				}
			default:
				client := &http.Client{Transport: &forward.Transport{Credential: cred, Base: api.Client().Transport}}
				do = func(req *http.Request) (int, error) {
					resp, err := client.Do(req)
					if errors.Is(err, ErrRejected) {
						return http.StatusServiceUnavailable, nil
					}
					if err != nil {
						return 0, err
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					return resp.StatusCode, nil
				}
			}
			const n = 24
			for round := range int64(4) {
				c.Set(time.Duration(round) * time.Minute)
				refused.Store(round) // the token in use, tok-round, is refused
				var wg sync.WaitGroup
				codes := make(chan string, 2*n)
				for i := range n {
					for _, method := range []string{"GET", "POST"} {
						wg.Go(func() {
							var body io.Reader
							if method == "POST" {
								body = strings.NewReader("body")
							}
							req, _ := http.NewRequest(method, fmt.Sprintf("%s/?%s-%d-%d", api.URL, method, round, i), body)
							code, err := do(req)
							if err != nil {
								t.Errorf("%s: %v", req.URL.RawQuery, err)
							}
							codes <- fmt.Sprint(method, " ", code)
						})
					}
				}
				wg.Wait()
				close(codes)
				got := map[string]int{}
				for c := range codes {
					got[c]++
				}
				// After a refusal, some POSTs may have come with the new
				// token; the others failed.
				posts := got["POST 200"] + got["POST 503"]
				if got["GET 200"] != n || posts != n || len(got) > 3 || round == 0 && got["POST 200"] != n {
					t.Errorf("round %d: answers %v, want %d GETs 200 and %d POSTs 200 or (after a refusal) 503", round, got, n, n)
				}
				if f := ts.fetches.Load(); f != round+1 {
					t.Errorf("round %d: %d token fetches, want %d", round, f, round+1)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for req, k := range sends {
				if k > 2 || strings.HasPrefix(req, "POST") && k > 1 {
					t.Errorf("%s was sent %d times", req, k)
				}
			}
		})
	}
}

// TestCredentialRefusedUnsafeSentOnce: a refused request that is not a
// bodiless GET, HEAD or OPTIONS is never sent again, whatever else makes
// it look harmless: a POST or DELETE without a body, a PUT with an
// Idempotency-Key, a GET with a body. It fails with ErrRejected.
func TestCredentialRefusedUnsafeSentOnce(t *testing.T) {
	for _, ca := range carriers {
		var sent atomic.Int64
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			sent.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
		}))
		ts := newTokenServer(t)
		c := &clock{t: t0}
		send := ca.new(t, Bearer(newSource(t, ts, c, nil)), api)
		for i, tc := range []struct {
			method, body string
			header       []string
		}{
			{method: "POST"},
			{method: "DELETE"},
			{method: "PUT", body: "x", header: []string{"Idempotency-Key", "k1"}},
			{method: "GET", body: "x"},
		} {
			c.Set(time.Duration(i+1) * time.Minute) // each token old enough to be dropped
			sent.Store(0)
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, _ := http.NewRequest(tc.method, api.URL+"/v1/images/", body)
			for j := 0; j+1 < len(tc.header); j += 2 {
				req.Header.Set(tc.header[j], tc.header[j+1])
			}
			resp, err := send(req)
			if err == nil || !errors.Is(err, ErrRejected) {
				t.Errorf("%s: %s with body %q: %v, %v; want ErrRejected", ca.name, tc.method, tc.body, resp, err)
			}
			if n := sent.Load(); n != 1 {
				t.Errorf("%s: %s with body %q was sent %d times, want 1", ca.name, tc.method, tc.body, n)
			}
		}
		api.Close()
	}
}
