package redisstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/floodgate/floodgate/internal/rawio"
	"github.com/floodgate/floodgate/ratelimit"
)

// Errors a Take or Ping may wrap; test with errors.Is.
var (
	// ErrUnavailable means the store answered at once without asking
	// Redis, because Redis is not connected yet or failed recently (see
	// the package comment). The error's text says why.
	ErrUnavailable = errors.New("redisstore: redis unavailable")
	// ErrClosed is returned by every Take and Ping after Close.
	ErrClosed = errors.New("redisstore: store closed")
)

// Backoff between connection attempts, and between probes while Redis is
// unreachable.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = time.Second
)

// A Store is the Redis ratelimit.Store. Make one with New (the zero
// Store is not usable) and release it with Close. It is safe for
// concurrent use: concurrent Takes share connections, and on a single
// server share script runs (see the package comment).
type Store struct {
	opts    Options
	timeout time.Duration
	prefix  string
	hash    *hasher
	cache   *cache // nil: no cache
	logger  *slog.Logger

	client  atomic.Pointer[rueidis.Client] // nil until connected
	lastErr atomic.Pointer[error]          // why not connected, for messages

	// The breakers (see breakerFor): [0] for a single server, one for
	// each group of hash slots on a cluster; open counts those open.
	breakers [slotBreakers]breaker
	open     atomic.Int32
	// pingDown is set by a Ping that Redis did not answer and cleared by
	// the next answer (a Ping or a Take's round trip): a replica that
	// decides nothing still tells an outage its readiness checks find.
	pingDown atomic.Bool
	// replyErr is set by a Take that Redis answered with an error reply
	// (out of memory, LOADING) and cleared by the next decision it sends:
	// Redis is up, but deciding nothing (see Answering).
	replyErr atomic.Bool
	renewed  atomic.Int64 // mono() of the last renew, 0 for none
	// renewing is closed when the renewal that a broken connection
	// started ends (see renewSoon); nil while none runs.
	renewing atomic.Pointer[chan struct{}]
	renewals atomic.Uint64 // new clients that replaced the one in use

	start time.Time // mono() is the time since start

	shared atomic.Pointer[sharedDeadline] // see sharedDeadline
	batch  *batcher

	mu       sync.Mutex // guards closed, watching and the client's creation and closing
	closed   bool
	watching bool          // watchRecovery runs
	done     chan struct{} // closed by Close
	wg       sync.WaitGroup

	takes, roundTrips, cacheHits, errs, fastFails, decided atomic.Uint64

	localNow func() int64 // tests only: the cache's clock (see cacheNow)
}

var _ ratelimit.Charger = (*Store)(nil)

// New returns a Store for the Redis servers that o names. It fails only
// when o is invalid (no address, a malformed address, a negative DB or
// timeout, a database other than 0 with a cluster, braces in KeyPrefix),
// naming every problem. It does not fail when Redis is down: it tries to
// connect for at most o.Timeout, then goes on trying in the background,
// every 50ms at first and every second at most, until it succeeds or the
// Store is closed. Until then Take and Ping return ErrUnavailable.
//
// With one address the store asks the server whether it is a cluster
// node; with several, it treats them as nodes of one cluster.
func New(o Options) (*Store, error) {
	o, err := o.validate()
	if err != nil {
		return nil, fmt.Errorf("redisstore: %w", err)
	}
	s := &Store{
		opts:    o,
		timeout: o.Timeout,
		prefix:  o.KeyPrefix,
		hash:    newHasher(o.KeySecret),
		cache:   newCache(o.CacheSize),
		logger:  o.Logger,
		start:   time.Now(),
		done:    make(chan struct{}),
		batch:   newBatcher(),
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	for i := range s.breakers {
		s.breakers[i].backoff.Store(int64(minBackoff))
	}
	s.wg.Add(senders)
	for range senders {
		go s.sender()
	}
	first := make(chan struct{})
	s.wg.Add(1)
	go s.connect(first)
	select {
	case <-first:
	case <-time.After(o.Timeout):
	}
	return s, nil
}

// clientOption returns the rueidis options for o.
func clientOption(o Options) rueidis.ClientOption {
	return rueidis.ClientOption{
		InitAddress:  o.Addrs,
		Username:     o.Username,
		Password:     o.Password,
		SelectDB:     o.DB,
		TLSConfig:    o.TLS,
		ClientName:   "floodgate",
		DisableCache: true, // no client-side caching: counters change on every Take
		Dialer: net.Dialer{
			Timeout:   max(10*o.Timeout, time.Second),
			KeepAlive: time.Second,
		},
		DialCtxFn: dial,
		// A connection whose replies are this late is closed and dialled
		// again. Takes give up long before, after o.Timeout.
		ConnWriteTimeout: max(20*o.Timeout, 2*time.Second),
	}
}

// dial connects to a Redis node as rueidis would, and reads and writes
// the TCP connection with raw system calls (see internal/rawio): a
// sender's round trip then does not wake the runtime's monitor thread,
// nor move to another thread while its write runs the server's side of
// the loopback or network stack.
func dial(ctx context.Context, dst string, d *net.Dialer, tc *tls.Config) (net.Conn, error) {
	if d.Timeout > 0 {
		// The whole dial, TLS handshake included, as tls.Dialer bounds
		// it: a peer that accepts and never answers must not hold a
		// sender or the connecting goroutine for good.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	nc, err := d.DialContext(ctx, "tcp", dst)
	if err != nil {
		return nil, err
	}
	nc = rawio.Wrap(nc)
	if tc == nil {
		return nc, nil
	}
	if tc.ServerName == "" {
		tc = tc.Clone()
		tc.ServerName, _, _ = net.SplitHostPort(dst)
	}
	tlc := tls.Client(nc, tc)
	if err := tlc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return tlc, nil
}

// connect makes the rueidis client, retrying with backoff until it
// succeeds or the store is closed. It closes first after the first
// attempt.
func (s *Store) connect(first chan struct{}) {
	defer s.wg.Done()
	defer func() {
		select {
		case <-first:
		default:
			close(first)
		}
	}()
	backoff := minBackoff
	for attempt := 1; ; attempt++ {
		c, err := rueidis.NewClient(clientOption(s.opts))
		if err == nil {
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				c.Close()
				return
			}
			s.client.Store(&c)
			s.mu.Unlock()
			s.logger.LogAttrs(context.Background(), slog.LevelInfo, "redis store connected",
				slog.String("redis", s.opts.String()), slog.String("mode", string(c.Mode())), slog.Int("attempts", attempt))
			return
		}
		s.lastErr.Store(&err)
		if attempt == 1 {
			s.logger.LogAttrs(context.Background(), slog.LevelWarn, "redis store cannot connect; retrying in the background",
				slog.String("redis", s.opts.String()), slog.String("error", err.Error()))
			close(first)
		}
		select {
		case <-s.done:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// mono returns this process's monotonic clock, in ns since New.
func (s *Store) mono() int64 { return int64(time.Since(s.start)) }

// cacheNow returns the clock the over-limit cache reads: mono, or the
// tests' replacement.
func (s *Store) cacheNow() int64 {
	if s.localNow != nil {
		return s.localNow()
	}
	return s.mono()
}

// Take records n events for key under every limit in limits if all admit
// them, as ratelimit.Store documents, in one atomic script on the Redis
// server that holds key's counters, with that server's clock.
//
// A Take of a key whose last Take was refused may be refused by the
// over-limit cache without a round trip (see the package comment). A Take
// while Redis is known to be unreachable fails at once with an error
// wrapping ErrUnavailable. Otherwise Take waits at most Options.Timeout
// (or until ctx ends, if sooner) and returns an error if Redis has not
// answered by then; whether the events were recorded is then unknown
// (Redis may run the script after Take gave up).
//
// Take returns an error, without a round trip and recording nothing, for
// no limits (ratelimit.ErrNoLimits), a negative n, or an invalid limit;
// ErrClosed after Close; and otherwise an error that wraps the client's
// or server's (context.DeadlineExceeded on a timeout).
func (s *Store) Take(ctx context.Context, key string, n int64, limits ...ratelimit.Limit) (ratelimit.Decision, error) {
	return s.decide(ctx, key, n, limits, false)
}

// Charge records n events for key under every limit whether or not they
// fit, as ratelimit.Charger documents (a cost known once a request was
// served), in the same script as Take. It always asks Redis: the
// over-limit cache never answers it. Its errors are Take's.
func (s *Store) Charge(ctx context.Context, key string, n int64, limits ...ratelimit.Limit) (ratelimit.Decision, error) {
	return s.decide(ctx, key, n, limits, true)
}

// decide is Take, and Charge when charge is set.
func (s *Store) decide(ctx context.Context, key string, n int64, limits []ratelimit.Limit, charge bool) (ratelimit.Decision, error) {
	if err := check(n, limits); err != nil {
		return ratelimit.Decision{}, err
	}
	s.takes.Add(1)
	h := s.hash.sum(key)
	if s.cache != nil && n > 0 && !charge {
		if d, ok := s.cache.refuse(h, limits, n, s.cacheNow()); ok {
			s.cacheHits.Add(1)
			return d, nil
		}
	}
	cp := s.client.Load()
	if cp == nil {
		return ratelimit.Decision{}, s.fastFail()
	}
	cluster := (*cp).Mode() == rueidis.ClientModeCluster
	b := s.breakerFor(cluster, h)
	probe := false
	if fu := b.failUntil.Load(); fu != 0 {
		now := s.mono()
		if now < fu || !b.failUntil.CompareAndSwap(fu, now+b.backoff.Load()) {
			return ratelimit.Decision{}, s.fastFail()
		}
		probe = true // this Take finds out for the others whether Redis is back
		if ch := s.renewing.Load(); ch != nil {
			// New connections are being opened after one broke: the
			// probe uses them rather than another of the old ones,
			// which Redis may have dropped all at once (a restart, a
			// CLIENT KILL, a proxy in between going away).
			select {
			case <-*ch:
			case <-s.sharedDeadline().ctx.Done():
			case <-ctx.Done():
			}
			if cp = s.client.Load(); cp == nil {
				return ratelimit.Decision{}, s.fastFail()
			}
		}
	}
	d, err := s.take(ctx, *cp, cluster, h, n, limits, charge)
	switch {
	case err == nil:
		s.decided.Add(1)
		if probe || b.failUntil.Load() != 0 {
			s.recoverRenewed(b)
		}
		if s.pingDown.Load() {
			s.pingAnswered()
		}
		if s.replyErr.Load() {
			s.replyErr.Store(false)
		}
	case reachable(err):
		if probe {
			s.recovered(b)
		}
		s.replyErr.Store(true)
		s.errs.Add(1)
	case ctx.Err() != nil: // the caller gave up; says nothing about Redis
		s.errs.Add(1)
	default:
		s.failed(b, err, probe)
		s.errs.Add(1)
	}
	return d, err
}

// check validates Take's arguments.
func check(n int64, limits []ratelimit.Limit) error {
	if len(limits) == 0 {
		return ratelimit.ErrNoLimits
	}
	if n < 0 {
		return fmt.Errorf("redisstore: take %d events: n must not be negative", n)
	}
	for i, l := range limits {
		if err := l.Validate(); err != nil {
			return fmt.Errorf("redisstore: take: limit %d (%s): %w", i, l, err)
		}
	}
	return nil
}

// fastFail counts and returns the error of a Take not sent to Redis.
func (s *Store) fastFail() error {
	s.errs.Add(1)
	s.fastFails.Add(1)
	return s.unavailable()
}

// unavailable returns the error for "not asking Redis now", saying why.
func (s *Store) unavailable() error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if s.client.Load() == nil {
		if p := s.lastErr.Load(); p != nil {
			return fmt.Errorf("%w: not connected: %v", ErrUnavailable, *p)
		}
		return fmt.Errorf("%w: not connected yet", ErrUnavailable)
	}
	if p := s.lastErr.Load(); p != nil {
		return fmt.Errorf("%w: failed recently: %v", ErrUnavailable, *p)
	}
	return fmt.Errorf("%w: failed recently", ErrUnavailable)
}

// reachable reports whether err came from a Redis server's reply (so
// Redis is up, whatever went wrong, and the next Take may succeed: an
// out-of-memory refusal, LOADING, CLUSTERDOWN) or from decoding one. The
// reply is wrapped ("redisstore: take: …"), so it is looked for in the
// chain. A refused password is not reachable: the server sends it to a
// connection's handshake, and without failing fast every Take would dial
// and be refused again.
func reachable(err error) bool {
	var rerr *rueidis.RedisError
	if errors.As(err, &rerr) && rerr != rueidis.Nil {
		return !refusedCredentials(rerr.Error())
	}
	return errors.Is(err, errCorrupt)
}

// refusedCredentials reports whether msg, a Redis error reply, refuses a
// connection's credentials: none given to a server that needs them
// (NOAUTH), or a wrong user or password (WRONGPASS).
func refusedCredentials(msg string) bool {
	return strings.HasPrefix(msg, "NOAUTH") || strings.HasPrefix(msg, "WRONGPASS")
}

// failed opens b after err, which says Redis did not answer: Takes under
// b fail at once until the next probe. After a failed probe, the next one
// waits twice as long (up to maxBackoff).
func (s *Store) failed(b *breaker, err error, probe bool) {
	s.lastErr.Store(&err)
	if cp := s.client.Load(); cp != nil && (*cp).Mode() != rueidis.ClientModeCluster && !errors.Is(err, context.DeadlineExceeded) {
		// A connection broke (or was refused): its siblings may have
		// died with it, and each would fail a probe of its own. Not on
		// a cluster, where the failing node is one of several: a new
		// client would reconnect to the healthy nodes too, each second
		// while that one stays down.
		s.renewSoon()
	}
	now := s.mono()
	if probe {
		bo := min(2*b.backoff.Load(), int64(maxBackoff))
		b.backoff.Store(bo)
		// A success since the probe started may have closed b: opening
		// it again is then a transition like any other.
		if b.failUntil.Swap(now+bo) == 0 {
			s.opened(err)
		}
		return
	}
	if b.failUntil.CompareAndSwap(0, now+int64(minBackoff)) {
		b.backoff.Store(int64(minBackoff))
		s.opened(err)
	}
}

// opened counts a breaker that opened after err: the first one logs, and
// starts the watch that closes them all once every node answers (a slot
// group no Take asks for again would otherwise stay open, and Stats.Up
// false, for good).
func (s *Store) opened(err error) {
	if s.open.Add(1) != 1 {
		return
	}
	s.logger.LogAttrs(context.Background(), slog.LevelWarn, "redis store unreachable; failing fast until it answers again",
		slog.String("redis", s.opts.String()), slog.String("error", err.Error()))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.watching {
		return
	}
	s.watching = true
	s.wg.Add(1)
	go s.watchRecovery()
}

// watchRecovery pings every node each maxBackoff while a breaker is open,
// and closes them all when every node answers (Ping does).
func (s *Store) watchRecovery() {
	defer s.wg.Done()
	t := time.NewTicker(maxBackoff)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		if s.open.Load() <= 0 {
			s.mu.Lock()
			if s.open.Load() <= 0 { // opened starts another watch if one opens now
				s.watching = false
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
		}
		s.Ping(context.Background())
	}
}

// recovered closes b. Redis may have lost its data while unreachable (a
// restart), so the over-limit cache is dropped.
func (s *Store) recovered(b *breaker) {
	if b.failUntil.Swap(0) == 0 {
		return
	}
	b.backoff.Store(int64(minBackoff))
	if s.cache != nil {
		s.cache.clear()
	}
	if s.open.Add(-1) == 0 {
		s.logger.LogAttrs(context.Background(), slog.LevelInfo, "redis store reachable again",
			slog.String("redis", s.opts.String()))
	}
}

// callContext returns the context for one round trip started now on
// behalf of ctx: it ends when the shared deadline (see sharedDeadline)
// does, or at ctx's deadline if that is earlier. So a caller's
// cancellation that is not a deadline is seen when the round trip ends,
// within Timeout, rather than at once. The CancelFunc is nil when there
// is nothing to release.
func (s *Store) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	sh := s.sharedDeadline()
	if ctx.Done() == nil {
		return sh.ctx, nil
	}
	if d, ok := ctx.Deadline(); ok {
		if sd, _ := sh.ctx.Deadline(); d.Before(sd) {
			return context.WithTimeout(ctx, s.timeout)
		}
	}
	return callCtx{ctx, sh.ctx}, nil
}

// sharedDeadline returns a context that ends at most Options.Timeout from
// now, and at least 0.9×Timeout from now. Round trips that start within a
// tenth of Timeout of each other share one, which saves each the cost of
// its own timer (five allocations and a lock).
func (s *Store) sharedDeadline() *sharedDeadline {
	now := s.mono()
	sh := s.shared.Load()
	if sh != nil && now < sh.until {
		return sh
	}
	ctx, cancel := context.WithDeadline(context.Background(), s.start.Add(time.Duration(now)+s.timeout))
	next := &sharedDeadline{ctx: ctx, cancel: cancel, until: now + int64(s.timeout)/10}
	if s.shared.CompareAndSwap(sh, next) {
		return next
	}
	cancel()
	if sh = s.shared.Load(); sh != nil {
		return sh
	}
	return next // unreachable: shared is never set back to nil
}

// A sharedDeadline is a context that ends Options.Timeout after it was
// made, for the round trips that start before until (see callContext).
type sharedDeadline struct {
	ctx    context.Context
	cancel context.CancelFunc // released by its own timer, or by Close
	until  int64              // real monotonic ns since New
}

// callCtx is a caller's context with the deadline of a shared one: Done
// and Deadline are the shared context's, Err either's, Value the
// caller's.
type callCtx struct {
	context.Context
	deadline context.Context
}

func (c callCtx) Deadline() (time.Time, bool) { return c.deadline.Deadline() }
func (c callCtx) Done() <-chan struct{}       { return c.deadline.Done() }
func (c callCtx) Err() error {
	if err := c.deadline.Err(); err != nil {
		return err
	}
	return c.Context.Err()
}

// Ping checks that every Redis node the store knows answers PING within
// Options.Timeout (or before ctx ends), for readiness checks. It returns
// an error wrapping ErrUnavailable when not connected, ErrClosed after
// Close, or the first node's failure. A successful Ping also ends the
// fail-fast period of an earlier failure.
func (s *Store) Ping(ctx context.Context) error {
	cp := s.client.Load()
	if cp == nil {
		return s.unavailable()
	}
	c := *cp
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	for addr, node := range c.Nodes() {
		if err := node.Do(ctx, node.B().Ping().Build()).Error(); err != nil {
			if !reachable(err) && ctx.Err() != context.Canceled && !s.pingDown.Swap(true) && s.open.Load() <= 0 {
				s.lastErr.Store(&err)
				s.logger.LogAttrs(context.Background(), slog.LevelWarn, "redis store not answering a ping",
					slog.String("redis", s.opts.String()), slog.String("error", err.Error()))
			}
			return fmt.Errorf("redisstore: ping %s: %w", addr, err)
		}
	}
	if s.open.Load() > 0 || s.pingDown.Load() {
		s.renew()
	}
	for i := range s.breakers {
		s.recovered(&s.breakers[i])
	}
	if s.pingDown.Load() {
		s.pingAnswered()
	}
	return nil
}

// recoverRenewed closes b once the client is renewed (see renew), on a
// goroutine of its own: the Take that found Redis back has its answer and
// does not wait for a dial, and the Takes under b keep failing fast until
// the new connections are there, rather than meeting dead ones.
func (s *Store) recoverRenewed(b *breaker) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		s.renew()
		s.recovered(b)
	}()
}

// renewSoon renews the client (see renew) on a goroutine of its own,
// unless a renewal started that way still runs. The next probe waits for
// it (Take), at most Timeout.
func (s *Store) renewSoon() {
	s.mu.Lock()
	if s.closed || s.renewing.Load() != nil {
		s.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	s.renewing.Store(&ch)
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		s.renew()
		s.renewing.Store(nil)
		close(ch)
	}()
}

// renew replaces the client with a new one when Redis answers again
// after failing, before the Takes waiting on it are let through: the old
// client's connections may have died with the server (a restart), and
// the first round trip on each would fail (EOF) though Redis answers,
// which a fail_closed rule answers with 503. The senders take connections
// of their own from the new client (they drop any from another), and the
// old client is closed once the round trips it carries have had twice
// Timeout to end. At most one renewal a maxBackoff; a failed one (Redis
// still down) keeps the old client, and does not hold back the next.
func (s *Store) renew() {
	now := s.mono()
	last := s.renewed.Load()
	if last != 0 && now-last < int64(maxBackoff) || !s.renewed.CompareAndSwap(last, now) {
		return
	}
	c, err := rueidis.NewClient(clientOption(s.opts))
	if err != nil {
		s.renewed.CompareAndSwap(now, last)
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.Close()
		return
	}
	old := s.client.Swap(&c)
	s.renewals.Add(1)
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		select {
		case <-time.After(2 * s.timeout):
		case <-s.done:
		}
		if old != nil {
			(*old).Close()
		}
	}()
}

// pingAnswered clears pingDown after Redis answered, saying so if no
// breaker said it (recovered does when one closes).
func (s *Store) pingAnswered() {
	if s.pingDown.Swap(false) && s.open.Load() <= 0 {
		s.logger.LogAttrs(context.Background(), slog.LevelInfo, "redis store reachable again",
			slog.String("redis", s.opts.String()))
	}
}

// Up reports what Stats.Up does, without the counts: Redis was asked and
// answered last (no failing group of hash slots, no unanswered Ping).
func (s *Store) Up() bool {
	return s.client.Load() != nil && s.open.Load() <= 0 && !s.pingDown.Load()
}

// Answering reports whether Redis decided the last Take sent to it: Up,
// and no error reply (such as an out-of-memory refusal) since its last
// decision. A Take refused by the over-limit cache asks nothing of Redis:
// a caller that takes a Take without an error for Redis answering again
// asks this first.
func (s *Store) Answering() bool {
	return s.Up() && !s.replyErr.Load()
}

// Stats are counts about a Store since New, for metrics. Counts are
// read one by one, so they may be from slightly different instants.
type Stats struct {
	// Takes counts Take calls with valid arguments.
	Takes uint64
	// RoundTrips counts script runs sent to Redis: EVALSHA, and EVAL when
	// a server did not know the script yet (after a restart). Each is one
	// request and one reply, for one Take or a batch of concurrent ones
	// (see the package comment). RoundTrips/Takes is the round trips per
	// decision: at most 1, less under load, 0 for cached refusals.
	RoundTrips uint64
	// CacheHits counts Takes refused by the over-limit cache, without a
	// round trip.
	CacheHits uint64
	// Decided counts Takes that Redis decided: a round trip answered
	// without an error.
	Decided uint64
	// Errors counts Takes that returned an error other than for bad
	// arguments: timeouts, connection failures, Redis errors, and
	// FastFails.
	Errors uint64
	// FastFails counts the Errors returned at once, without asking Redis,
	// because it was not connected or had just failed.
	FastFails uint64
	// CacheEntries is the number of counters in the over-limit cache now.
	CacheEntries int
	// Connected reports whether the store has connected to Redis (once;
	// the client reconnects by itself after that).
	Connected bool
	// Up reports whether Takes are sent to Redis now: connected, and no
	// Take that Redis did not answer since the last answer (on a cluster,
	// in no group of hash slots: false while any node's keys fail fast),
	// nor a Ping that Redis did not answer since its last answer. An
	// error reply (out of memory, LOADING) is an answer; a refused
	// password is not.
	Up bool
	// Cluster reports whether the servers are a Redis Cluster.
	Cluster bool
}

// Stats returns the store's counts.
func (s *Store) Stats() Stats {
	st := Stats{
		Takes:      s.takes.Load(),
		RoundTrips: s.roundTrips.Load(),
		CacheHits:  s.cacheHits.Load(),
		Errors:     s.errs.Load(),
		FastFails:  s.fastFails.Load(),
		Decided:    s.decided.Load(),
	}
	if s.cache != nil {
		st.CacheEntries = s.cache.len()
	}
	if cp := s.client.Load(); cp != nil {
		st.Connected = true
		st.Up = s.Up()
		st.Cluster = (*cp).Mode() == rueidis.ClientModeCluster
	}
	return st
}

// Close stops connecting, closes the connections and makes later Takes
// and Pings return ErrClosed. Takes queued for a batch end with
// ErrClosed; a batch on its way is waited for (at most Timeout), and so is
// a connection attempt in progress (the first, or a sender taking a
// connection of its own after a success: at most the dial timeout,
// max(10×Timeout, 1s), TLS handshake included). Close always returns nil;
// calling it again does nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	s.mu.Unlock()
	s.wg.Wait()
	if sh := s.shared.Load(); sh != nil {
		sh.cancel()
	}
	if cp := s.client.Swap(nil); cp != nil {
		(*cp).Close()
	}
	return nil
}
