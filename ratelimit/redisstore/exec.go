package redisstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/redis/rueidis"

	"github.com/floodgate/floodgate/ratelimit"
)

// A call is one Take's part of a script run: what the script needs, and,
// once it ran, what it returned.
type call struct {
	h        keyHash
	n        int64
	charge   bool              // record the events whether or not they fit
	counters []ratelimit.Limit // the distinct limits
	uniq     []int             // uniq[i] is the index in counters of the Take's limits[i]
	keys     []string          // the counters' Redis keys
	args     []byte            // n, len(counters), charge, then eight numbers per counter

	// Set by exec.
	rep  reply
	sent int64 // the local instant the script was sent at
	err  error

	ready     chan struct{} // receives when exec is done, for batched calls
	abandoned atomic.Bool   // the Take stopped waiting
}

// A reply is what the script returned for one Take: the server's instant
// (Unix ns), whether it admitted, and the counters' states before it.
type reply struct {
	now      int64
	admitted bool
	states   []ratelimit.State
}

var callPool = sync.Pool{New: func() any { return &call{ready: make(chan struct{}, 1)} }}

// newCall prepares the script's part for a Take of n events for the key
// whose hash is h under limits.
func (s *Store) newCall(h keyHash, n int64, limits []ratelimit.Limit, charge bool) *call {
	c := callPool.Get().(*call)
	c.h, c.n, c.charge, c.err, c.sent = h, n, charge, nil, 0
	c.uniq = c.uniq[:0]
	if len(limits) == 1 {
		c.counters = append(c.counters[:0], limits[0])
		c.uniq = append(c.uniq, 0)
	} else {
		c.counters = c.counters[:0]
	next:
		for _, l := range limits {
			for j, m := range c.counters {
				if m == l {
					c.uniq = append(c.uniq, j)
					continue next
				}
			}
			c.uniq = append(c.uniq, len(c.counters))
			c.counters = append(c.counters, l)
		}
	}
	var tagBuf [24]byte
	tag := appendTag(tagBuf[:0], h)
	c.keys = c.keys[:0]
	mode := 0.0
	if charge {
		mode = 1
	}
	c.args = appendNumbers(c.args[:0], float64(min(n, maxScriptN)), float64(len(c.counters)), mode)
	for _, l := range c.counters {
		c.keys = append(c.keys, counterKey(s.prefix, tag, l))
		c.args = appendArgs(c.args, l, n)
	}
	return c
}

// release returns c to the pool, unless its Take abandoned it (exec may
// still hold it).
func (c *call) release() {
	if !c.abandoned.Load() {
		c.keys = c.keys[:0]
		callPool.Put(c)
	}
}

// A scripter runs commands: a rueidis Client, or one of its dedicated
// connections.
type scripter interface {
	B() rueidis.Builder
	Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult
}

// exec runs the script once for calls and fills in their replies, or
// their errors. ctx bounds the round trip.
func (s *Store) exec(ctx context.Context, cl scripter, calls []*call) {
	nkeys, nargs := 0, 8
	for _, c := range calls {
		nkeys += len(c.keys)
		nargs += len(c.args)
	}
	keys := make([]string, 0, nkeys)
	args := make([]byte, 0, nargs)
	args = appendNumbers(args, float64(len(calls)))
	for _, c := range calls {
		keys = append(keys, c.keys...)
		args = append(args, c.args...)
	}
	// args is not written again: rueidis may still be writing it to the
	// connection after Do returned on a timeout.
	arg := unsafe.String(unsafe.SliceData(args), len(args))
	sent := s.cacheNow() // the cache relates the server's clock to this one
	s.roundTrips.Add(1)
	res := cl.Do(ctx, cl.B().Evalsha().Sha1(takeScriptSHA).Numkeys(int64(len(keys))).Key(keys...).Arg(arg).Build())
	if rerr, ok := rueidis.IsRedisErr(res.Error()); ok && rerr.IsNoScript() {
		s.roundTrips.Add(1)
		res = cl.Do(ctx, cl.B().Eval().Script(takeScript).Numkeys(int64(len(keys))).Key(keys...).Arg(arg).Build())
	}
	b, err := res.AsBytes()
	if err == nil {
		err = decodeReplies(b, calls)
	} else {
		err = fmt.Errorf("redisstore: take: %w", err)
	}
	for _, c := range calls {
		c.sent = sent
		if err != nil {
			c.err = err
		}
	}
}

// decodeReplies decodes the script's reply b into calls' replies.
func decodeReplies(b []byte, calls []*call) error {
	want := 8
	for _, c := range calls {
		want += 8 + 24*len(c.counters)
	}
	if len(b) != want {
		return fmt.Errorf("%w: %d bytes, want %d", errCorrupt, len(b), want)
	}
	now, ok := number(b, 0)
	if !ok || now <= 0 {
		return fmt.Errorf("%w: time", errCorrupt)
	}
	i := 1 // the next number
	for _, c := range calls {
		admitted, ok := number(b, i)
		if !ok || admitted < 0 || admitted > 1 {
			return fmt.Errorf("%w: admitted", errCorrupt)
		}
		c.rep.now, c.rep.admitted = now*1000, admitted == 1
		c.rep.states = c.rep.states[:0]
		for j, l := range c.counters {
			x, ok1 := number(b, i+1+3*j)
			y, ok2 := number(b, i+2+3*j)
			z, ok3 := number(b, i+3+3*j)
			if !ok1 || !ok2 || !ok3 {
				return fmt.Errorf("%w: state", errCorrupt)
			}
			st, err := decodeState(l.Algorithm, x, y, z)
			if err != nil {
				return err
			}
			c.rep.states = append(c.rep.states, st)
		}
		i += 1 + 3*len(c.counters)
	}
	return nil
}

// take runs the script for one Take, batched with concurrent ones on a
// single server, alone on a cluster, and computes its Decision.
func (s *Store) take(ctx context.Context, cl rueidis.Client, cluster bool, h keyHash, n int64, limits []ratelimit.Limit, charge bool) (ratelimit.Decision, error) {
	if err := ctx.Err(); err != nil {
		return ratelimit.Decision{}, fmt.Errorf("redisstore: take: %w", err)
	}
	c := s.newCall(h, n, limits, charge)
	if cluster {
		// Keys of different clients are on different slots, which one
		// script cannot touch: no batching.
		cctx, cancel := s.callContext(ctx)
		s.exec(cctx, cl, []*call{c})
		if cancel != nil {
			cancel()
		}
	} else if err := s.batch.wait(ctx, s, c); err != nil {
		return ratelimit.Decision{}, err
	}
	defer c.release()
	if c.err != nil {
		return ratelimit.Decision{}, c.err
	}
	rep := c.rep
	// The script decided; the same algorithm on the same state and
	// instant gives the Decision's numbers.
	var d, di ratelimit.Decision
	for i, l := range limits {
		if charge {
			_, di = l.Charge(rep.states[c.uniq[i]], rep.now, n)
		} else {
			_, di = l.Take(rep.states[c.uniq[i]], rep.now, n)
		}
		d = ratelimit.Combine(d, i, di)
	}
	if d.Allowed != rep.admitted {
		return ratelimit.Decision{}, fmt.Errorf("%w: the script and the algorithm disagree (admitted %v, %v)", errCorrupt, rep.admitted, d.Allowed)
	}
	if charge && !d.Allowed {
		// Until one more event fits everywhere: a limit the events
		// fitted under may be full now, and refuse it for longer.
		for i, l := range c.counters {
			st, _ := l.Charge(rep.states[i], rep.now, n) // what Redis holds now
			if _, one := l.Take(st, rep.now, 1); !one.Allowed {
				d.RetryAfter = max(d.RetryAfter, one.RetryAfter)
			}
		}
	}
	if s.cache != nil {
		switch {
		case !d.Allowed:
			snaps := make([]counterSnap, len(c.counters))
			for i, l := range c.counters {
				snaps[i].l = l
				if charge {
					snaps[i].st, _ = l.Charge(rep.states[i], rep.now, n) // what Redis holds now
				} else {
					snaps[i].st, _ = l.Take(rep.states[i], rep.now, 0) // what Redis holds now: nothing was recorded
				}
			}
			// The server's clock read at most 1µs less than it was (TIME
			// has µs resolution): count that µs, so the estimate is never
			// behind.
			s.cache.put(h, snaps, rep.now+int64(time.Microsecond)-c.sent, c.sent)
		case n > 0:
			s.cache.drop(h) // the counters hold more than a snapshot would say
		}
	}
	return d, nil
}

// Batching, for a single server: a Take queues its call and wakes one of
// a few sender goroutines, which sends every call queued so far (up to
// maxBatch) in one script run. While a batch is on its way, the Takes that
// arrive queue for the next, so the number of script runs adapts to the
// load: alone, a Take is sent at once (a batch of one); under load, one
// run serves many, which spreads the cost of a run (the round trip, the
// server's TIME and script set-up, the client's system calls) over them.
// With senders batches in flight at once, the pipeline to Redis stays
// full.
const (
	senders          = 2
	maxBatch         = 64  // Takes per script run
	maxBatchCounters = 256 // counters per script run
)

// A batcher queues calls for the senders.
type batcher struct {
	mu    sync.Mutex
	queue []*call
	wake  chan struct{} // one wake-up pending at most
}

func newBatcher() *batcher { return &batcher{wake: make(chan struct{}, 1)} }

// wait queues c and waits until a sender ran it, or until the round trip's
// deadline (Options.Timeout) passes, ctx ends or the store is closed. It
// returns an error in the latter cases, and c must not be used again.
func (b *batcher) wait(ctx context.Context, s *Store, c *call) error {
	d := s.sharedDeadline()
	b.mu.Lock()
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	select {
	case <-c.ready:
		return nil
	case <-d.ctx.Done():
		c.abandoned.Store(true)
		return fmt.Errorf("redisstore: take: %w", d.ctx.Err())
	case <-ctx.Done():
		c.abandoned.Store(true)
		return fmt.Errorf("redisstore: take: %w", ctx.Err())
	case <-s.done:
		c.abandoned.Store(true)
		return ErrClosed
	}
}

// grab takes the next batch off the queue, leaving out abandoned calls.
func (b *batcher) grab(batch []*call) []*call {
	b.mu.Lock()
	defer b.mu.Unlock()
	counters, i := 0, 0
	for ; i < len(b.queue) && len(batch) < maxBatch; i++ {
		c := b.queue[i]
		if c.abandoned.Load() {
			continue
		}
		if counters += len(c.counters); counters > maxBatchCounters && len(batch) > 0 {
			break
		}
		batch = append(batch, c)
	}
	n := copy(b.queue, b.queue[i:])
	clear(b.queue[n:])
	b.queue = b.queue[:n]
	if n > 0 { // more for another sender
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
	return batch
}

// A conn is a sender's own connection to the server: its batches are
// written and their replies read by the sender itself, without the
// hand-offs to and from the client's pipelining goroutines. (rueidis
// still switches a connection to those goroutines for good if a call
// meets another on it, such as its own keep-alive PING: a cost, not an
// error.)
type conn struct {
	of      *rueidis.Client // the client it was taken from
	c       rueidis.DedicatedClient
	release func()
}

// close gives the connection back to its client's pool.
func (c *conn) close() {
	if c.release != nil {
		c.release()
	}
	*c = conn{}
}

// send runs the script for batch on the sender's connection to the
// store's server. Without one (at first, after an error, after the client
// changed) the batch goes through the client, which dials within the
// batch's deadline, and the sender takes a connection of its own only
// after that succeeded: a dial of its own is bounded by the dial timeout
// alone, which a hung server must not make every queued Take wait out.
func (s *Store) send(own *conn, batch []*call) {
	cp := s.client.Load()
	switch {
	case cp == nil:
		err := s.unavailable()
		for _, c := range batch {
			c.err = err
		}
	case own.of == cp:
		s.exec(s.sharedDeadline().ctx, own.c, batch)
		if batch[0].err != nil {
			own.close() // perhaps broken: the next batch goes through the client
		}
	default:
		own.close()
		s.exec(s.sharedDeadline().ctx, *cp, batch)
		if batch[0].err == nil {
			for _, c := range batch {
				c.ready <- struct{}{} // before the dial below
			}
			own.c, own.release = (*cp).Dedicate()
			own.of = cp
			return
		}
	}
	for _, c := range batch {
		c.ready <- struct{}{}
	}
}

// sender sends batches until the store is closed, then fails the calls
// still queued.
func (s *Store) sender() {
	defer s.wg.Done()
	var own conn
	defer own.close()
	var batch []*call
	for {
		select {
		case <-s.batch.wake:
		case <-s.done:
			for batch = s.batch.grab(batch[:0]); len(batch) > 0; batch = s.batch.grab(batch[:0]) {
				for _, c := range batch {
					c.err = ErrClosed
					c.ready <- struct{}{}
				}
			}
			return
		}
		for batch = s.batch.grab(batch[:0]); len(batch) > 0; batch = s.batch.grab(batch[:0]) {
			s.send(&own, batch)
			clear(batch)
		}
	}
}
