package forward

import (
	"syscall"
	"time"

	"github.com/floodgate/floodgate/internal/rawio"
)

// On Linux an idle connection's socket joins an epoll set of the pool's
// own once it has been idle for watchAfter, and a goroutine waits on the
// set in a blocking epoll_wait: from then on, an upstream's unsolicited
// bytes, or its end of the connection, are found as soon as they arrive
// (bytes that came earlier are reported as it joins), as nginx's
// keepalive module does with its idle upstream connections. A connection
// taken sooner — every one under load — never joins: the peek before its
// reuse (pool.alive) finds what it holds. Joining at once cost every
// request two epoll_ctl calls, 8 µs of CPU a request and 16 % of the
// gateway's throughput (bench/gateway.sh's floodgate alone, GOMAXPROCS=1,
// 6 alternating wrk rounds: 27 600 → 23 400 req/s, 34 → 42 µs).
//
// The set is not in Go's poller (adding to a set another set watches makes
// the kernel check the nesting under a global lock each time); the
// waiting goroutine holds an OS thread while connections are pooled, one
// per upstream.
//
// A connection is in the set only while it is idle (under the pool's
// lock), registered for one event (EPOLLONESHOT): an event that races a
// request taking the connection is then never reported again.

// watchAfter is how long a connection is idle before it is watched.
const watchAfter = 20 * time.Millisecond

// idleConn is a connection's part of it: its descriptor and its event.
type idleConn struct {
	fd      int // -1 when it cannot be watched (not a socket Go lets one use)
	watched bool
	ev      syscall.EpollEvent
	// watchPeek is the watch's own peeker: a request may take the
	// connection while the watch looks at it.
	watchPeek *peeker
}

// idleWatch is the pool's epoll set, made when a connection is first
// watched and closed when none has been pooled for the idle timeout
// (sweep) or the pool is emptied (closeIdle), and the timer that adds
// the connections idle for watchAfter.
type idleWatch struct {
	epfd int // 0 while not watching
	// stop is the write end of a pipe whose read end is in the set: a
	// byte written ends the waiting goroutine, which closes the set.
	stop  int
	timer *time.Timer // runs join while a connection is idle unwatched
	armed bool
}

// watchEvents are what an idle connection is watched for: bytes, or the
// upstream's end of the connection (EPOLLHUP and EPOLLERR are reported
// whatever is asked).
const watchEvents = syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT

// stopMark is the event data of the pipe's read end.
const stopMark = -1

// watchIdle arms the timer that adds c, just pooled, to the set once it
// has been idle for watchAfter; the pool's lock is held.
func (p *pool) watchIdle(*conn) {
	if w := &p.watch; !w.armed {
		w.armed = true
		if w.timer == nil {
			w.timer = time.AfterFunc(watchAfter, p.join)
		} else {
			w.timer.Reset(watchAfter)
		}
	}
}

// join adds the connections idle for watchAfter to the set, and arms
// the timer again for the others. A connection that cannot be watched
// stays pooled: the peek before its next use finds what it holds then.
func (p *pool) join() {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := &p.watch
	now := monoNow()
	var next time.Duration = -1
	for _, c := range p.idle {
		if c.watched || c.watchPeek == nil && c.fd < 0 {
			continue
		}
		if left := watchAfter - time.Duration(now-c.idleAt); left > 0 {
			if next < 0 || left < next {
				next = left
			}
			continue
		}
		if w.epfd == 0 && !w.start(p) {
			break
		}
		if c.watchPeek == nil && !c.initWatch() {
			continue
		}
		c.watched = rawio.EpollCtl(uintptr(w.epfd), syscall.EPOLL_CTL_ADD, c.fd, &c.ev) == nil
	}
	if next >= 0 {
		w.timer.Reset(next)
	} else {
		w.armed = false
	}
}

// unwatch removes c, just taken from the idle connections, from the set;
// the pool's lock is held.
func (p *pool) unwatch(c *conn) {
	if c.watched {
		c.watched = false
		if p.watch.epfd != 0 {
			rawio.EpollCtl(uintptr(p.watch.epfd), syscall.EPOLL_CTL_DEL, c.fd, &c.ev)
		}
	}
}

// stopWatch ends the waiting goroutine, which closes the set; the pool's
// lock is held and no connection is idle.
func (p *pool) stopWatch() {
	if w := &p.watch; w.epfd != 0 {
		syscall.Write(w.stop, []byte{0})
		syscall.Close(w.stop)
		w.epfd, w.stop = 0, 0
	}
}

func (c *conn) initWatch() bool {
	c.fd = -1
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	if rc.Control(func(fd uintptr) { c.fd = int(fd) }) != nil || c.fd < 0 {
		return false
	}
	if c.watchPeek = newPeeker(c.nc); c.watchPeek == nil {
		return false
	}
	c.ev = syscall.EpollEvent{Events: watchEvents, Fd: int32(c.fd)}
	return true
}

// start makes the set and its goroutine; the pool's lock is held.
func (w *idleWatch) start(p *pool) bool {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return false
	}
	var pipe [2]int
	if err := syscall.Pipe2(pipe[:], syscall.O_CLOEXEC); err != nil {
		syscall.Close(epfd)
		return false
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: stopMark}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, pipe[0], &ev); err != nil {
		syscall.Close(epfd)
		syscall.Close(pipe[0])
		syscall.Close(pipe[1])
		return false
	}
	w.epfd, w.stop = epfd, pipe[1]
	go p.runWatch(epfd, pipe[0])
	return true
}

// runWatch drops each idle connection the set reports, until the stop
// pipe is written to or closed; then it closes the set and the pipe.
func (p *pool) runWatch(epfd, stop int) {
	defer syscall.Close(stop)
	defer syscall.Close(epfd)
	var events [16]syscall.EpollEvent
	for {
		n, err := syscall.EpollWait(epfd, events[:], -1)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return
		}
		for _, ev := range events[:n] {
			if ev.Fd == stopMark {
				return
			}
			p.reported(int(ev.Fd))
		}
	}
}

// reported looks at the idle connection with descriptor fd, reported by
// the set: one whose upstream sent bytes or closed it is dropped. The
// descriptor is matched under the pool's lock, where only idle
// connections are in the set; the peek decides, so a report that raced a
// request taking the connection, or its descriptor's reuse, is harmless.
func (p *pool) reported(fd int) {
	p.mu.Lock()
	var c *conn
	for _, ic := range p.idle {
		if ic.watched && ic.fd == fd {
			c = ic
			break
		}
	}
	p.mu.Unlock()
	if c == nil {
		return
	}
	if ok, unsolicited := c.watchPeek.alive(); !ok {
		p.dropIdle(c, unsolicited)
	}
}
