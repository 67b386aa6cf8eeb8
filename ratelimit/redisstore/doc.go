// Package redisstore provides the Redis ratelimit.Store, for gateway
// replicas that must share their counters: N replicas using one Redis (or
// Valkey, or a Redis Cluster) admit together exactly what one would.
//
//	o, err := redisstore.ParseURL("redis://:secret@10.0.0.5:6379/0?timeout=50ms")
//	if err != nil { … }
//	o.Logger = logger
//	s, err := redisstore.New(o) // fails only for invalid options, never because Redis is down
//	if err != nil { … }
//	defer s.Close()
//	d, err := s.Take(ctx, key, 1, limits...)
//
// It is the only package of floodgate that imports a Redis client
// (github.com/redis/rueidis).
//
// # Decisions
//
// Each Take is decided by a Lua script, run atomically by the Redis server
// that holds the key's counters: it reads the server's clock (TIME, so
// every replica decides with the same clock), reads every counter of the
// Take, decides with the same integer algorithms as package ratelimit
// (all or nothing across the limits; refused events are not recorded;
// n = 0 records nothing), writes the counters that changed with an expiry
// at the instant they are empty again, and returns the state it read and
// the server's instant. The Decision's Remaining, RetryAfter and
// ResetAfter are then computed in Go by ratelimit.Limit.Take on that state
// and instant, so they are the in-memory store's to the nanosecond, given
// the server's clock (whose resolution is a microsecond).
//
// A Take costs at most one round trip (two when a server has just
// restarted and lost its script cache: EVALSHA, then EVAL). On a single
// server, concurrent Takes share them: while one script run is on its way,
// the Takes that arrive are queued and sent together in the next, up to 64
// per run, each still all or nothing on its own and seeing the counters as
// the Takes before it left them. Alone, a Take is sent at once; under load,
// one run serves many, sharing the cost of a run (system calls on both
// sides, the server's TIME and script set-up) among them
// (docs/benchmarks.md).
// On a Redis Cluster, where different keys live on different nodes, each
// Take is its own run, and concurrent runs are pipelined on the
// connections. Stats.RoundTrips counts the runs.
//
// # Keys
//
// The caller's key is never stored: it is replaced by the first 128 bits
// of its SHA-256 (HMAC-SHA-256 with Options.KeySecret, which hides even
// guessable keys such as IPv4 addresses from whoever reads Redis),
// the same in every process. Each (key, limit) counter is one Redis string:
//
//	PREFIX{HASH}:A:COUNT:WINDOW_MS    fg:{lI_mA_YdwDa1xZbcCf484w}:s:1500:300000
//
// where PREFIX is Options.KeyPrefix ("fg:"), HASH the key's hash in
// base64url (22 characters), A the algorithm (s sliding window, g GCRA,
// f fixed window), then the limit's count and window in milliseconds. The
// braces are a Redis Cluster hash tag: all the counters of one key hash to
// one slot, so a Take with several limits is one script on one node. The
// value is three numbers packed in 24 bytes (see takeScript in script.go);
// each key expires (PX) when its counter is empty again, so idle keys cost
// nothing. A counter takes about 200 bytes of Redis memory.
//
// # The over-limit cache
//
// When a Take is refused, the store remembers (for at most
// Options.CacheSize keys) the counters of that Take as Redis held them and
// the server's clock. Later Takes of that key whose limits are all among
// them replay the algorithm at the latest instant the server's clock can
// have reached; while that refuses, they are refused without a round trip,
// with a RetryAfter that shrinks as time passes, and never after Redis
// would admit again: Redis can only hold more events than remembered,
// never fewer. As long as no other Take reached the key meanwhile, the
// Decision is the one Redis would give; if one did (another replica), the
// key is still over its limit and Redis's wait may be longer. A Take this
// process sees admitted drops its key. A cached refusal can outlive its
// counter only if Redis loses data (a restart without persistence, a
// FLUSHALL, eviction under maxmemory); the whole cache is dropped whenever
// Redis was unreachable. Refusals from the cache go on while Redis is
// down.
//
// # Failures
//
// No Take waits longer than Options.Timeout (100ms by default; Takes that
// start within a tenth of it share one deadline, so each waits at least
// nine tenths of it). When
// Redis does not answer in time or the connection fails, the Take
// returns an error, and for the next 50ms (doubling up to 1s while Redis
// stays unreachable) Takes fail at once with ErrUnavailable instead of
// each waiting out the timeout; then one Take probes Redis for all the
// others, and the first success ends it. On a cluster this is kept for
// each group of 64 hash slots, so a node that does not answer makes only
// the keys whose slots it owns fail fast (and those of a group that
// straddles the edge of its range); the other nodes' keys are decided as
// before. While any of them fails fast, the store pings every node each
// second and ends them all once every node answers, so a group whose
// clients do not come back does not stay failed. Error replies from a server that answered (such as LOADING
// after a restart, or OOM) fail their Take but not the next ones, except a
// refused password (WRONGPASS, NOAUTH), which every connection would meet. Deciding what a failed Take means (fail open or closed) is
// the caller's business.
//
// New never fails because Redis is down and never waits longer than
// Options.Timeout for it: it connects in the background until it
// succeeds. After that the client reconnects by itself, so a restarted
// Redis is used again without restarting the gateway. Stats counts
// decisions, round trips, cache hits, errors and fast failures.
package redisstore
