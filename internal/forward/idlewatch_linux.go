package forward

import (
	"os"
	"syscall"

	"github.com/floodgate/floodgate/internal/rawio"
)

// On Linux the idle connections' sockets are in an epoll set of the
// pool's own, itself waited on by Go's poller (the set's descriptor is
// readable while it holds events): an upstream's unsolicited bytes, or
// its end of the connection, are found as soon as they arrive, with no
// goroutine or thread waiting per connection and nothing to do while
// nothing arrives. As nginx's keepalive module does with its idle
// upstream connections. A request pays two epoll_ctl calls: one when its
// connection is pooled, one when it is taken.
//
// A connection is in the set exactly while it is idle (under the pool's
// lock), registered for one event (EPOLLONESHOT): an event that races a
// request taking the connection is then never reported again.

// idleConn is a connection's part of it: its descriptor, and the calls
// that add it to the set and remove it, made once so that neither
// allocates.
type idleConn struct {
	fd     int
	add    func(epfd uintptr)
	remove func(epfd uintptr)
	ev     syscall.EpollEvent
	err    error // of the last add
	// peek is the watch's own peeker: a request may take the connection
	// while the watch looks at it.
	watchPeek *peeker
}

// idleWatch is the pool's epoll set, made when a connection is first
// pooled and closed when none has been for the idle timeout (sweep) or
// the pool is emptied (closeIdle).
type idleWatch struct {
	ep *os.File // nil while not watching
	rc syscall.RawConn
}

// watchEvents are what an idle connection is watched for: bytes, or the
// upstream's end of the connection (EPOLLHUP and EPOLLERR are reported
// whatever is asked).
const watchEvents = syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT

// watchIdle adds c, just pooled, to the set; the pool's lock is held. A
// connection that cannot be watched is still pooled: the peek before its
// next use (pool.alive) finds what it holds then.
func (p *pool) watchIdle(c *conn) {
	w := &p.watch
	if w.ep == nil && !w.start(p) {
		return
	}
	if c.add == nil {
		if !c.initWatch() {
			return
		}
	}
	if err := w.rc.Control(c.add); err != nil || c.err != nil {
		c.fd = -1 // nothing to remove
	}
}

// unwatch removes c, just taken from the idle connections, from the set;
// the pool's lock is held.
func (p *pool) unwatch(c *conn) {
	if p.watch.ep != nil && c.remove != nil && c.fd >= 0 {
		p.watch.rc.Control(c.remove)
	}
}

// stopWatch closes the set, which ends its goroutine; the pool's lock is
// held and no connection is idle.
func (p *pool) stopWatch() {
	if p.watch.ep != nil {
		p.watch.ep.Close()
		p.watch = idleWatch{}
	}
}

func (c *conn) initWatch() bool {
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	c.fd = -1
	if rc.Control(func(fd uintptr) { c.fd = int(fd) }) != nil || c.fd < 0 {
		return false
	}
	if c.watchPeek = newPeeker(c.nc); c.watchPeek == nil {
		return false
	}
	fd := c.fd
	c.ev = syscall.EpollEvent{Events: watchEvents, Fd: int32(fd)}
	c.add = func(epfd uintptr) { c.err = rawio.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, fd, &c.ev) }
	c.remove = func(epfd uintptr) { rawio.EpollCtl(epfd, syscall.EPOLL_CTL_DEL, fd, &c.ev) }
	return true
}

// start makes the set and its goroutine; the pool's lock is held.
func (w *idleWatch) start(p *pool) bool {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return false
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		syscall.Close(epfd)
		return false
	}
	// Non-blocking, so os registers it with Go's poller.
	ep := os.NewFile(uintptr(epfd), "idle upstream connections")
	rc, err := ep.SyscallConn()
	if err != nil {
		ep.Close()
		return false
	}
	w.ep, w.rc = ep, rc
	go p.runWatch(rc)
	return true
}

// runWatch drops each idle connection the set reports, until the set is
// closed.
func (p *pool) runWatch(rc syscall.RawConn) {
	var events [16]syscall.EpollEvent
	n := 0
	wait := func(epfd uintptr) bool {
		var err error
		n, err = syscall.EpollWait(int(epfd), events[:], 0)
		if err == syscall.EINTR || err == nil && n == 0 {
			return false // park until the set is readable
		}
		return true
	}
	for {
		if err := rc.Read(wait); err != nil || n < 0 {
			return // closed (stopWatch)
		}
		for _, ev := range events[:n] {
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
		if ic.fd == fd && ic.add != nil {
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
